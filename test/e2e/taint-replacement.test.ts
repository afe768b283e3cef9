// Taint replacement end to end: the real watcher and worker (`tend run`, under
// tend's own ServiceAccount), the real API server, scheduler and controllers,
// the simulated kubelet, the real Temporal dev server.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { runTend, TendProcess } from '../harness/cli.ts';
import { admin, deployment, isReady, podsOf, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { temporalCli as temporalCliRaw } from '../harness/temporal.ts';
import { condition, cleanUpTaintTest, managedLabel, readPod, startTaintTend, taint, taintStatusJson, TASK_QUEUE, untaint } from '../harness/taint.ts';
// The waits read the status in-process: a CLI process per probe takes its CPU from the tend it waits for.
import { taintStatusNow } from '../harness/in-process-reads.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const MAINTENANCE = 'example.org/maintenance';

const temporalCli = async (args: string[]) => (await temporalCliRaw(args)).stdout;
const DISCONNECTED = 'example.org/disconnected';

describe('taint replacement', function () {
  this.timeout(180_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string | undefined;
  const tainted = new Set<string>();

  before(async () => {
    kube = admin();
  });
  beforeEach(async () => {
    ns = await tempNamespace(kube, 'taint');
  });
  afterEach(async function () {
    await cleanUpTaintTest({ kube, ns, tend, config, tainted, settleMs: 20_000 });
    tend = undefined;
    config = undefined;
  });

  const taintNode = async (node: string, key: string, effect: 'NoSchedule' | 'NoExecute' = 'NoSchedule', timeAdded?: Date) => {
    tainted.add(`${node}|${key}`);
    await taint(kube, node, { key, value: 'x', effect, timeAdded });
  };

  const startTend = async (section: Record<string, unknown>) => {
    const started = await startTaintTend(ns, section);
    ({ config, tend } = started);
    return started.config;
  };

  const readyPods = async (name: string, replicas: number) =>
    waitFor(`${replicas} ready pod(s) of ${name}`, async () => {
      const pods = (await podsOf(kube, ns, `app=${name}`)).filter((p) => isReady(p) && !p.metadata?.deletionTimestamp);
      return pods.length === replicas && pods;
    }, { timeoutMs: 60_000 });

  const createDeployment = async (name: string, replicas: number, tolerations?: k8s.V1Toleration[]) => {
    const body = deployment({ namespace: ns, name, replicas, labels: managedLabel(ns) });
    if (tolerations) body.spec!.template.spec!.tolerations = tolerations;
    await kube.apps.createNamespacedDeployment({ namespace: ns, body });
    return readyPods(name, replicas);
  };

  it('marks at once, Replacing after durationInSeconds, evicts after taintReplacementTimeSeconds more; the controller brings it back elsewhere', async () => {
    // Long enough that `tend taint status`, a process of its own, reads the pod still Detected on a busy machine.
    const config = await startTend({ taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 10 }], taintReplacementTimeSeconds: 3 });
    const [pod] = await createDeployment('db', 1);
    const node = pod!.spec!.nodeName!;
    const name = pod!.metadata!.name!;
    const uid = pod!.metadata!.uid!;

    const t0 = Date.now();
    await taintNode(node, MAINTENANCE);

    const detected = await waitFor('NodeTaintDetected', async () => condition(await readPod(kube, ns, name), 'NodeTaintDetected'), { timeoutMs: 10_000 });
    const detectedSeen = Date.now() - t0;
    assert.ok(detectedSeen < 4000, `Detected at once (seen after ${detectedSeen} ms)`);
    assert.equal(condition(await readPod(kube, ns, name), 'NodeTaintReplacing'), undefined, 'not Replacing yet');
    // The kubelet's own conditions are still there next to ours.
    assert.ok(isReady((await readPod(kube, ns, name))!), 'Ready kept');
    assert.match(detected.message ?? '', /example\.org\/maintenance/);

    let status = await taintStatusJson(config);
    const row = status.pods.find((p) => p.pod === name);
    assert.ok(row, JSON.stringify(status));
    assert.equal(row.node, node);
    assert.equal(row.taint, `${MAINTENANCE}:NoSchedule`);
    assert.equal(row.condition, 'NodeTaintDetected');
    assert.equal(row.state, 'Detected');
    const replaceAt = Date.parse(row.replaceAt) - t0;
    assert.ok(replaceAt >= 13_000 && replaceAt < 15_000, `replacement planned ~13 s after the taint (${replaceAt} ms)`);

    await waitFor('NodeTaintReplacing', async () => condition(await readPod(kube, ns, name), 'NodeTaintReplacing'), { timeoutMs: 20_000, intervalMs: 100 });
    const replacingSeen = Date.now() - t0;
    assert.ok(replacingSeen >= 10_000, `Replacing not before 10 s (seen after ${replacingSeen} ms)`);
    const stillThere = await readPod(kube, ns, name);
    assert.equal(stillThere?.metadata?.uid, uid);
    assert.ok(!stillThere?.metadata?.deletionTimestamp, 'not evicted yet');

    await waitFor('the pod to be evicted', async () => {
      const p = await readPod(kube, ns, name);
      return !p || p.metadata?.uid !== uid || !!p.metadata?.deletionTimestamp;
    }, { timeoutMs: 15_000, intervalMs: 100 });
    const evictedSeen = Date.now() - t0;
    assert.ok(evictedSeen >= 13_000, `evicted not before 13 s (seen after ${evictedSeen} ms)`);

    const [replacement] = await readyPods('db', 1);
    assert.notEqual(replacement!.metadata!.uid, uid);
    assert.notEqual(replacement!.spec!.nodeName, node, 'the replacement runs on an untainted node');
    assert.equal(condition(replacement, 'NodeTaintDetected'), undefined);

    // The node workflow gives its slot back after it records the pod Replaced: read at once, the
    // status can show both the pod Replaced and its slot still in flight.
    status = await waitFor('status to show the pod Replaced and its slot given back', async () => {
      const s = await taintStatusNow(TASK_QUEUE);
      return s.pods.find((p) => p.pod === name)?.state === 'Replaced' && s.slots?.inFlight.length === 0 && s;
    }, { timeoutMs: 30_000 });
    const evictedAt = Date.parse(status.pods.find((p) => p.pod === name)!.replaceAt) - t0;
    assert.ok(evictedAt >= 13_000, `the workflow evicted at >= 13 s (${evictedAt} ms)`);
  });

  it('a node workflow that ended while its node stays tainted is started again by the watcher\'s resync', async () => {
    await startTend({ taintReplacementOptions: [{ key: 'example.org/maintenance', durationInSeconds: 3600 }] });
    const [pod] = await createDeployment('db', 1);
    const node = pod!.spec!.nodeName!;
    await taintNode(node, 'example.org/maintenance');
    await waitFor('Detected', async () => condition(await readPod(kube, ns, pod!.metadata!.name!), 'NodeTaintDetected'), { timeoutMs: 30_000 });
    await temporalCliRaw(['workflow', 'terminate', '--workflow-id', `taint/${node}`, '--reason', 'test: ended behind the watcher\'s back']);
    await waitFor('the node gone from the status', async () => !(await taintStatusNow(TASK_QUEUE)).nodes.includes(node), { timeoutMs: 30_000 });
    // No event changes the Node: only the periodic resync can notice.
    await waitFor('a new taint workflow for the node', async () =>
      (await taintStatusNow(TASK_QUEUE)).pods.some((p) => p.node === node && p.pod === pod!.metadata!.name!), { timeoutMs: 150_000, intervalMs: 500 });
  });

  it('an exact key beats the wildcard', async () => {
    await startTend({
      taintReplacementOptions: [{ key: '*', durationInSeconds: 1 }, { key: MAINTENANCE, durationInSeconds: 3600 }],
      taintReplacementTimeSeconds: 1,
    });
    const pods = await createDeployment('db', 2);
    const [a, b] = pods as [k8s.V1Pod, k8s.V1Pod];
    const nodeA = a.spec!.nodeName!;
    await taintNode(nodeA, MAINTENANCE);
    await waitFor('Detected under the exact key', async () => condition(await readPod(kube, ns, a.metadata!.name!), 'NodeTaintDetected'), { timeoutMs: 10_000 });
    // Another key falls to the wildcard: Replacing after 1 s.
    const other = b.spec!.nodeName! !== nodeA ? b : undefined;
    const target = other ?? a;
    await taintNode(target.spec!.nodeName!, DISCONNECTED);
    await waitFor('Replacing under the wildcard', async () => condition(await readPod(kube, ns, target.metadata!.name!), 'NodeTaintReplacing'), { timeoutMs: 10_000 });
    if (other) {
      // The exact key's hour has not passed: still only Detected.
      const p = await readPod(kube, ns, a.metadata!.name!);
      assert.ok(condition(p, 'NodeTaintDetected'));
      assert.equal(condition(p, 'NodeTaintReplacing'), undefined);
    }
  });

  it('a taint removed early clears the conditions and evicts nothing', async () => {
    await startTend({ taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 2 }], taintReplacementTimeSeconds: 60 });
    const [pod] = await createDeployment('db', 1);
    const node = pod!.spec!.nodeName!;
    const name = pod!.metadata!.name!;
    await taintNode(node, MAINTENANCE);
    await waitFor('Replacing', async () => condition(await readPod(kube, ns, name), 'NodeTaintReplacing'), { timeoutMs: 10_000 });
    await untaint(kube, node, MAINTENANCE);
    tainted.clear();
    await waitFor('conditions cleared', async () => {
      const p = await readPod(kube, ns, name);
      return !condition(p, 'NodeTaintDetected') && !condition(p, 'NodeTaintReplacing') && p;
    }, { timeoutMs: 10_000 });
    const p = await readPod(kube, ns, name);
    assert.equal(p?.metadata?.uid, pod!.metadata!.uid);
    assert.ok(!p?.metadata?.deletionTimestamp);
    assert.ok(isReady(p!));
    await waitFor('the node workflow to end', async () => (await taintStatusNow(TASK_QUEUE)).nodes.length === 0, { timeoutMs: 15_000 });
  });

  it('a timeAdded in the past counts from it', async () => {
    await startTend({ taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 600 }], taintReplacementTimeSeconds: 2 });
    // Tolerated, so that the taint eviction controller leaves the pod to tend.
    const [pod] = await createDeployment('db', 1, [{ key: MAINTENANCE, operator: 'Exists', effect: 'NoExecute' }]);
    const name = pod!.metadata!.name!;
    const uid = pod!.metadata!.uid!;
    const t0 = Date.now();
    await taintNode(pod!.spec!.nodeName!, MAINTENANCE, 'NoExecute', new Date(Date.now() - 601_000));
    const replacing = await waitFor('Replacing at once: the 600 s have passed', async () => {
      const p = await readPod(kube, ns, name);
      return condition(p, 'NodeTaintReplacing');
    }, { timeoutMs: 5_000, intervalMs: 100 });
    assert.ok(Math.abs(new Date(replacing.lastTransitionTime as unknown as string).getTime() - t0) < 5_000, 'Replacing since the pod was marked');
    await waitFor('the pod to be evicted 2 s later', async () => {
      const p = await readPod(kube, ns, name);
      return !p || p.metadata?.uid !== uid || !!p.metadata?.deletionTimestamp;
    }, { timeoutMs: 15_000, intervalMs: 100 });
    assert.ok(Date.now() - t0 >= 2000);
  });

  it('pods scheduled on the node later get their conditions; status as a table; the run found by its search attributes', async () => {
    const config = await startTend({ taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 3600 }], taintReplacementTimeSeconds: 60 });
    const [first] = await createDeployment('db', 1);
    const node = first!.spec!.nodeName!;
    await taintNode(node, MAINTENANCE);
    await waitFor('the first pod marked', async () => condition(await readPod(kube, ns, first!.metadata!.name!), 'NodeTaintDetected'), { timeoutMs: 10_000 });
    // A workload that tolerates the taint and is pinned to the node lands there afterwards.
    const late = deployment({ namespace: ns, name: 'late', replicas: 2, labels: managedLabel(ns) });
    late.spec!.template.spec!.tolerations = [{ key: MAINTENANCE, operator: 'Exists' }];
    late.spec!.template.spec!.nodeSelector = { 'kubernetes.io/hostname': node };
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: late });
    const latePods = await readyPods('late', 2);
    await waitFor('the late pods marked', async () => {
      const marked = await Promise.all(latePods.map(async (p) => condition(await readPod(kube, ns, p.metadata!.name!), 'NodeTaintDetected')));
      return marked.every(Boolean);
    }, { timeoutMs: 15_000 });

    const table = await runTend(['taint', 'status', '--config', config]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /NODE\s+POD\s+TAINT\s+CONDITION\s+SINCE\s+REPLACE AT\s+STATE/);
    for (const p of [first!, ...latePods]) {
      assert.match(table.stdout, new RegExp(`${node}\\s+${ns}/${p.metadata!.name}\\s+example\\.org/maintenance:NoSchedule\\s+NodeTaintDetected`));
    }
    assert.match(table.stdout, /slots: 0\/1 in flight/);

    const temporal = await temporalCli(['workflow', 'list', '--query', `TendCapability="taint" AND TendTarget="${node}" AND ExecutionStatus="Running"`, '-o', 'json']);
    const runs = JSON.parse(temporal) as { execution: { workflowId: string } }[];
    assert.deepEqual(runs.map((r) => r.execution.workflowId), [`taint/${node}`]);
  });

  for (const c of [
    { what: 'a coordinator left running on another task queue', type: 'taintReplacementsWorkflow', queue: 'elsewhere', found: /runs on task queue "elsewhere", not on "tend-taint"/ },
    { what: 'a workflow of another type under the coordinator\'s id', type: 'impostorWorkflow', queue: 'tend-taint', found: /is of type "impostorWorkflow", not taintReplacementsWorkflow/ },
  ]) {
    it(`${c.what} is named in the log, with how to end it, and no node workflow is started`, async () => {
      // The coordinator of the tests before (on this file's task queue) makes way for the stranded one.
      await temporalCli(['workflow', 'terminate', '--workflow-id', 'taint-replacements', '--reason', 'test set-up']).catch(() => undefined);
      await temporalCli(['workflow', 'start', '--type', c.type, '--task-queue', c.queue,
        '--workflow-id', 'taint-replacements', '--input', '{}', '--search-attribute', 'TendCapability="taint"']);
      const node = 'sim-1';
      try {
        await taintNode(node, MAINTENANCE);
        await startTend({ taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 3600 }] });
        await waitFor('the impostor named in the log', async () => {
          const line = tend!.logs.split('\n').find((l) => l.includes('workflow taint-replacements'));
          return !!line && c.found.test(line) && /not tend's.*temporal workflow terminate --workflow-id taint-replacements/.test(line);
        }, { timeoutMs: 60_000 });
        const runs = JSON.parse(await temporalCli(['workflow', 'list', '--query', `TendCapability="taint" AND TendTarget="${node}" AND ExecutionStatus="Running"`, '-o', 'json'])) as unknown[] | null;
        assert.deepEqual(runs ?? [], [], 'no node workflow started while an impostor holds the coordinator\'s id');
      } finally {
        await temporalCli(['workflow', 'terminate', '--workflow-id', 'taint-replacements', '--reason', 'test done']).catch(() => undefined);
      }
    });
  }
});
