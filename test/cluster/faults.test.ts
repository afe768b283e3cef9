// Faults only a production-shaped Temporal has (`npm run test:cluster`: Temporal's own services
// on PostgreSQL, src/sandbox/temporal-cluster.ts): the history service killed in the middle of a
// taint countdown and of a repair drain, and PostgreSQL restarted while a weeder window is open.
// Each time the remediation goes on to its end once the part is back.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { TendProcess } from '../harness/cli.ts';
import { testStateDir, testTemporal } from '../harness/env.ts';
import { admin, deleteNamespace, deployment, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { cleanUpTaintTest, condition, readPod, readyPodsOn, startTaintTend, taint } from '../harness/taint.ts';
import { add, entry, nodeUnschedulable, podGone, release, repairWorld, resetRepairQueue, stuckPod, temporalCli } from '../harness/repair.ts';
import { crashLooping, weederConfigFile } from '../harness/weeder.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { restartComponent, status } from '../../src/sandbox/sandbox.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const MAINTENANCE = 'example.org/maintenance';
const say = (m: string) => process.stderr.write(`      sandbox: ${m}\n`);

describe('cluster faults: Temporal\'s services and PostgreSQL restarted mid-remediation (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;

  before(async () => {
    kube = admin();
    // These faults need the cluster's separate processes.
    assert.equal(testTemporal, 'cluster', 'run with TEND_TEST_TEMPORAL=cluster (npm run test:cluster)');
    const running = new Set((await status(testStateDir)).filter((c) => c.running).map((c) => c.name));
    for (const c of ['postgres', 'temporal-history', 'temporal-matching', 'temporal-frontend', 'temporal-worker']) assert.ok(running.has(c), `${c} is not running`);
  });

  describe('taint: the history service killed mid-countdown', () => {
    let ns: string;
    let tend: TendProcess | undefined;
    let config: string | undefined;
    const tainted = new Set<string>();
    after(async () => cleanUpTaintTest({ kube, ns, tend, config, tainted, settleMs: 30_000 }));

    it('the countdown goes on and both pods are evicted', async () => {
      ns = await tempNamespace(kube, 'cluster-taint');
      ({ config, tend } = await startTaintTend(ns, {
        taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 15 }], taintReplacementTimeSeconds: 1, maxConcurrentReplacements: 2,
      }));
      const pods = await readyPodsOn(kube, ns, 'db', 'sim-1', 2);
      tainted.add(`sim-1|${MAINTENANCE}`);
      await taint(kube, 'sim-1', { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });
      await waitFor('both pods marked NodeTaintDetected', async () => {
        const marked = await Promise.all(pods.map(async (p) => condition(await readPod(kube, ns, p.metadata!.name!), 'NodeTaintDetected')));
        return marked.every(Boolean);
      }, { timeoutMs: 30_000 });
      // Mid-countdown (15 s from the taint): history down 5 s, killed.
      await restartComponent(testStateDir, 'temporal-history', { kill: true, downMs: 5000, progress: say });
      await waitFor('both pods evicted', async () => {
        const now = await Promise.all(pods.map((p) => readPod(kube, ns, p.metadata!.name!)));
        return now.every((n, i) => !n || n.metadata?.uid !== pods[i]!.metadata!.uid || !!n.metadata?.deletionTimestamp);
      }, { timeoutMs: 120_000 });
    });
  });

  describe('repair: the history service killed mid-drain', () => {
    let ns: string;
    let tend: TendProcess | undefined;
    after(async () => {
      await tend?.stop();
      if (ns) {
        await release(kube, ns, 'held-1');
        await deleteNamespace(kube, ns);
      }
    });

    it('the drain goes on once the held pod is released, and the entry succeeds', async () => {
      await resetRepairQueue();
      const world = repairWorld({ eviction_timeout_seconds: 1500, time_scale: 0.02 });
      ns = await tempNamespace(kube, 'cluster-repair');
      tend = new TendProcess(['run', '--config', world.config]);
      await waitFor('worker started', () => tend!.output.includes('worker started'), { timeoutMs: 120_000 });
      const held = await stuckPod(kube, ns, 'held-1', 'sim-2');
      const e = await add(world, 'drain', '10.88.0.2');
      await waitFor('draining, the held pod Terminating', async () =>
        (await entry(world, e.index))?.step_status === 'draining' &&
        Boolean((await kube.core.readNamespacedPod({ namespace: ns, name: 'held-1' })).metadata?.deletionTimestamp), { timeoutMs: 60_000 });
      await restartComponent(testStateDir, 'temporal-history', { kill: true, downMs: 5000, progress: say });
      assert.equal(await nodeUnschedulable('sim-2'), true, 'the node was uncordoned while its drain went on');
      await release(kube, ns, 'held-1');
      await waitFor('the held pod gone', () => podGone(kube, ns, held.metadata!.uid!), { timeoutMs: 30_000 });
      const done = await waitFor('succeeded', async () => {
        const x = await entry(world, e.index);
        return x?.status === 'succeeded' && x;
      }, { timeoutMs: 120_000 });
      assert.equal(done.drain_backoff_count ?? 0, 0, 'the drain was abandoned and backed off');
      assert.equal(await nodeUnschedulable('sim-2'), false, 'left cordoned');
    });
  });

  describe('weeder: PostgreSQL restarted while a window is open', () => {
    let ns: string;
    let tend: TendProcess | undefined;
    after(async () => {
      await tend?.stop();
      if (ns) await deleteNamespace(kube, ns);
    });

    it('the window goes on and deletes the dependant that crash-loops after the restart', async () => {
      ns = await tempNamespace(kube, 'cluster-weeder');
      await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 1 }) });
      await kube.core.createNamespacedService({ namespace: ns, body: service(ns, 'db', { app: 'db' }) });
      await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'api', replicas: 1, labels: { role: 'api' } }) });
      const config = await weederConfigFile({
        watchDuration: '5m', namespaces: [ns], servicesAndDependantSelectors: { db: { podSelectors: [{ matchLabels: { role: 'api' } }] } },
      });
      tend = new TendProcess(['run', '--config', config]);
      await waitFor('tend started', () => /worker started/.test(tend!.output) && /weeder watching/.test(tend!.output), { timeoutMs: 120_000 });
      // db first seen ready: a window opens (its workflow runs for watchDuration).
      await waitFor('a window for db', async () => {
        const d = await temporalCli(['workflow', 'describe', '--workflow-id', `weeder/${ns}/db`, '-o', 'json']).catch(() => undefined);
        return d !== undefined && /"status":\s*"(WORKFLOW_EXECUTION_STATUS_)?RUNNING"/.test(d.stdout);
      }, { timeoutMs: 60_000 });
      const api = await waitFor('api running', async () => (await podsOf(kube, ns, 'role=api')).find((p) => isReady(p)), { timeoutMs: 60_000 });
      await restartComponent(testStateDir, 'postgres', { kill: false, downMs: 3000, progress: say });
      // The dependant starts crash-looping inside the open window.
      await kube.core.patchNamespacedPod({ namespace: ns, name: api.metadata!.name!, body: { metadata: { annotations: { 'sim.tend.dev/fail': 'true' } } } }, mergePatch);
      await waitFor('api crash-looping', async () => {
        const p = (await podsOf(kube, ns, 'role=api')).find((x) => x.metadata?.uid === api.metadata!.uid);
        return !p || crashLooping(p as k8s.V1Pod);
      }, { timeoutMs: 60_000 });
      await waitFor('the crash-looping api pod deleted by the window', async () =>
        !(await podsOf(kube, ns, 'role=api')).some((p) => p.metadata?.uid === api.metadata!.uid && !p.metadata?.deletionTimestamp), { timeoutMs: 90_000 });
    });
  });
});
