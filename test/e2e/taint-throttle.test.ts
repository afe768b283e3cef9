// Taint replacement under pressure and failure: the cluster-wide limit, a
// blocking PodDisruptionBudget, the breaker, a node whose heartbeats stop,
// a worker killed and the Temporal server restarted, and disabling.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { runTend, TendProcess } from '../harness/cli.ts';
import { testStateDir } from '../harness/env.ts';
import { admin, deployment, isReady, podsOf, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { temporalCli } from '../harness/temporal.ts';
import { budget, condition, cleanUpTaintTest, managedLabel, readPod, startTaintTend, taint, taintConfig, taintStatusFor, untaint } from '../harness/taint.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const MAINTENANCE = 'example.org/maintenance';
const UNREACHABLE = 'node.kubernetes.io/unreachable';

describe('taint replacement: limits and failures', function () {
  this.timeout(240_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string | undefined;
  const tainted = new Set<string>();
  const stoppedNodes = new Set<string>();

  before(async () => {
    kube = admin();
  });
  beforeEach(async () => {
    ns = await tempNamespace(kube, 'taint');
  });
  afterEach(async function () {
    await cleanUpTaintTest({ kube, ns, tend, config, tainted, stoppedNodes, settleMs: 60_000 });
    tend = undefined;
    config = undefined;
  });

  const taintNode = async (node: string, key = MAINTENANCE) => {
    tainted.add(`${node}|${key}`);
    await taint(kube, node, { key, value: 'x', effect: 'NoSchedule' });
  };

  const start = async (section: Record<string, unknown>) => {
    const started = await startTaintTend(ns, section);
    ({ config, tend } = started);
    return started.config;
  };

  const livePods = async (name: string) => (await podsOf(kube, ns, `app=${name}`)).filter((p) => !p.metadata?.deletionTimestamp);
  const readyPods = async (name: string, replicas: number, timeoutMs = 60_000) =>
    waitFor(`${replicas} ready pod(s) of ${name}`, async () => {
      const pods = (await livePods(name)).filter(isReady);
      return pods.length === replicas && pods;
    }, { timeoutMs });
  const createDeployment = async (name: string, replicas: number) => {
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name, replicas, labels: managedLabel(ns) }) });
    return readyPods(name, replicas);
  };
  /** Stops the Temporal dev server (SIGTERM, waited for); its database stays. */
  const stopTemporal = async () => {
    const { pid } = JSON.parse(await readFile(join(testStateDir, 'run', 'temporal.pid'), 'utf8')) as { pid: number };
    process.kill(pid, 'SIGTERM');
    await waitFor('temporal to stop', () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, { timeoutMs: 30_000 });
  };
  const startTemporal = async () => {
    const up = await runTend(['sandbox', 'up', '--state-dir', testStateDir], { timeoutMs: 120_000 });
    assert.equal(up.code, 0, up.stderr);
  };
  const runTemporal = (args: string[]) => temporalCli(args);
  const temporalRunId = async (id: string) =>
    (JSON.parse((await temporalCli(['workflow', 'describe', '--workflow-id', id, '-o', 'json'])).stdout) as { workflowExecutionInfo: { execution: { runId: string } } })
      .workflowExecutionInfo.execution.runId;
  const evicted = (p: k8s.V1Pod | undefined, uid: string) => !p || p.metadata?.uid !== uid || !!p.metadata?.deletionTimestamp;

  it('maxConcurrentReplacements 1: pods on two tainted nodes are replaced one at a time', async () => {
    const cfg = await start({
      taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 1,
      maxConcurrentReplacements: 1, breaker: { maxTaintedNodes: 2 },
    });
    const pods = await createDeployment('db', 5);
    const nodes = [...new Set(pods.map((p) => p.spec!.nodeName!))].sort();
    assert.ok(nodes.length >= 2, `pods spread over nodes: ${nodes.join(',')}`);
    const byNode = (n: string) => pods.filter((p) => p.spec!.nodeName === n).length;
    const [spare] = [...nodes].sort((a, b) => byNode(a) - byNode(b));
    const doomedNodes = nodes.filter((n) => n !== spare);
    const doomed = pods.filter((p) => doomedNodes.includes(p.spec!.nodeName!));
    assert.ok(doomed.length >= 2, 'several pods to replace');
    const t0 = Date.now();
    for (const n of doomedNodes) await taintNode(n);

    // Watch from outside: evicted originals minus ready replacements is what is in flight.
    let peak = 0;
    let firstEviction: number | undefined;
    await waitFor('every pod on the tainted nodes replaced', async () => {
      const all = await podsOf(kube, ns, 'app=db');
      const gone = doomed.filter((d) => evicted(all.find((p) => p.metadata!.uid === d.metadata!.uid), d.metadata!.uid!)).length;
      if (gone > 0) firstEviction ??= Date.now();
      const fresh = all.filter((p) => !pods.some((o) => o.metadata!.uid === p.metadata!.uid) && isReady(p) && !p.metadata?.deletionTimestamp).length;
      peak = Math.max(peak, gone - fresh);
      return gone === doomed.length && fresh === doomed.length;
    }, { timeoutMs: 120_000, intervalMs: 100 });
    assert.ok(peak <= 1, `never more than one in flight (peak ${peak})`);
    const status = await taintStatusFor(cfg);
    // One at a time, seen from inside too: the coordinator never had two in flight.
    assert.equal(status.slots?.peakInFlight, 1);
    assert.ok(firstEviction! - t0 >= 2000, `no eviction before its deadline: 1 s tainted, then 1 s marked (first after ${firstEviction! - t0} ms)`);
  });

  it('a blocking PodDisruptionBudget is retried with back-off, visible, and never violated', async () => {
    const cfg = await start({ taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 1 });
    const pods = await createDeployment('db', 2);
    await budget(kube, ns, 'db', 2);
    const victim = pods[0]!;
    await taintNode(victim.spec!.nodeName!);
    const row = await waitFor('the eviction shown blocked after retries', async () => {
      const s = await taintStatusFor(cfg);
      const r = s.pods.find((p) => p.pod === victim.metadata!.name);
      return r && r.state === 'Blocked' && r.attempts >= 2 && r;
    }, { timeoutMs: 30_000 });
    assert.match(row.lastError ?? '', /disruption budget/i);
    assert.ok(!evicted(await readPod(kube, ns, victim.metadata!.name!), victim.metadata!.uid!), 'the PDB held');
    assert.equal((await livePods('db')).filter(isReady).length, 2);
    // Relax the budget: the next retry goes through.
    await kube.policy.patchNamespacedPodDisruptionBudget(
      { namespace: ns, name: 'db', body: [{ op: 'replace', path: '/spec/minAvailable', value: 1 }] });
    await waitFor('the eviction to go through', async () => evicted(await readPod(kube, ns, victim.metadata!.name!), victim.metadata!.uid!), { timeoutMs: 60_000 });
    await readyPods('db', 2);
  });

  it('the coordinator terminated while a replacement holds the only slot: started again, it counts that slot, and the next pod waits for it', async () => {
    const cfg = await start({
      taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 1,
      maxConcurrentReplacements: 1, breaker: { maxTaintedNodes: 3 },
    });
    const pinned = async (name: string, node: string) => {
      const body = deployment({ namespace: ns, name, replicas: 1, labels: managedLabel(ns) });
      // Pinned, and tolerating the taint so that its replacement can come back on the same node.
      body.spec!.template.spec!.nodeSelector = { 'kubernetes.io/hostname': node };
      body.spec!.template.spec!.tolerations = [{ key: MAINTENANCE, operator: 'Exists' }];
      await kube.apps.createNamespacedDeployment({ namespace: ns, body });
      return (await readyPods(name, 1))[0]!;
    };
    const [a, b] = await Promise.all([pinned('a', 'sim-1'), pinned('b', 'sim-2')]);
    await budget(kube, ns, 'a', 1);
    await taintNode('sim-1');
    await waitFor('a holding the only slot, its eviction blocked', async () => {
      const s = await taintStatusFor(cfg);
      return s.pods.find((p) => p.pod === a.metadata!.name)?.state === 'Blocked' && s.slots?.inFlight.length === 1;
    }, { timeoutMs: 60_000 });

    const before = await temporalRunId('taint-replacements');
    await runTemporal(['workflow', 'terminate', '--workflow-id', 'taint-replacements', '--reason', 'ended by hand']);
    await waitFor('the watcher to start the coordinator again, and it to count a in flight', async () => {
      const s = await taintStatusFor(cfg);
      return (await temporalRunId('taint-replacements')) !== before && s.slots?.inFlight.some((g) => g.pod.endsWith(a.metadata!.name!));
    }, { timeoutMs: 90_000 });
    await taintNode('sim-2');
    await waitFor('b waiting for a slot', async () => (await taintStatusFor(cfg)).pods.find((p) => p.pod === b.metadata!.name)?.state === 'Queued',
      { timeoutMs: 60_000 });
    const s = await taintStatusFor(cfg);
    assert.equal(s.slots?.inFlight.length, 1, 'one in flight, the limit');
    assert.ok(!evicted(await readPod(kube, ns, b.metadata!.name!), b.metadata!.uid!), 'b not evicted while a holds the only slot');

    await kube.policy.deleteNamespacedPodDisruptionBudget({ namespace: ns, name: 'a' });
    await waitFor('a evicted once its budget is gone', async () => evicted(await readPod(kube, ns, a.metadata!.name!), a.metadata!.uid!),
      { timeoutMs: 120_000 });
    await waitFor('b granted the slot a gave back, and evicted', async () => evicted(await readPod(kube, ns, b.metadata!.name!), b.metadata!.uid!),
      { timeoutMs: 120_000 });
  });

  it('the breaker holds replacements while too many nodes are tainted, and lets go when it closes', async () => {
    const cfg = await start({
      taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 1,
      maxConcurrentReplacements: 3, breaker: { maxTaintedNodes: 1 },
    });
    const pods = await createDeployment('db', 3);
    const nodes = [...new Set(pods.map((p) => p.spec!.nodeName!))].sort();
    assert.ok(nodes.length >= 2);
    for (const n of nodes.slice(0, 2)) await taintNode(n);
    const onTainted = pods.filter((p) => nodes.slice(0, 2).includes(p.spec!.nodeName!));
    await waitFor('pods queued behind the open breaker', async () => {
      const s = await taintStatusFor(cfg);
      return s.slots?.breakerOpen && onTainted.every((p) => s.pods.find((r) => r.pod === p.metadata!.name)?.state === 'Queued');
    }, { timeoutMs: 60_000 });
    for (const p of onTainted) {
      const now = await readPod(kube, ns, p.metadata!.name!);
      assert.ok(!evicted(now, p.metadata!.uid!), 'nothing evicted while the breaker is open');
      assert.ok(condition(now, 'NodeTaintReplacing'), 'still marked');
    }
    // One node recovers: 1 tainted node is within the limit, the other's pods go.
    await untaint(kube, nodes[0]!, MAINTENANCE);
    tainted.delete(`${nodes[0]}|${MAINTENANCE}`);
    const still = pods.filter((p) => p.spec!.nodeName === nodes[1]);
    await waitFor('the remaining tainted node\'s pods replaced', async () => {
      const checks = await Promise.all(still.map(async (p) => evicted(await readPod(kube, ns, p.metadata!.name!), p.metadata!.uid!)));
      return checks.every(Boolean);
    }, { timeoutMs: 30_000 });
    const back = pods.filter((p) => p.spec!.nodeName === nodes[0]);
    for (const p of back) {
      const now = await waitFor('the recovered node\'s pods cleared', async () => {
        const q = await readPod(kube, ns, p.metadata!.name!);
        return !condition(q, 'NodeTaintDetected') && q;
      }, { timeoutMs: 10_000 });
      assert.ok(!evicted(now, p.metadata!.uid!), 'the recovered node keeps its pods');
    }
  });

  it('handles the NoExecute unreachable taint of the real node lifecycle controller', async () => {
    const cfg = await start({ taintReplacementOptions: [{ key: UNREACHABLE, durationInSeconds: 2 }], taintReplacementTimeSeconds: 2 });
    const [pod] = await createDeployment('db', 1);
    const node = pod!.spec!.nodeName!;
    stoppedNodes.add(node);
    const r = await runTend(['sandbox', 'node', 'stop', node, '--state-dir', testStateDir]);
    assert.equal(r.code, 0, r.stderr);
    const detected = await waitFor('NodeTaintDetected from the unreachable taint', async () => {
      const p = await readPod(kube, ns, pod!.metadata!.name!);
      return condition(p, 'NodeTaintDetected');
    }, { timeoutMs: 60_000 });
    assert.match(detected.message ?? '', /node\.kubernetes\.io\/unreachable/);
    // Well before the taint eviction controller's 300 s toleration runs out.
    await waitFor('tend to evict the pod', async () => evicted(await readPod(kube, ns, pod!.metadata!.name!), pod!.metadata!.uid!), { timeoutMs: 30_000 });
    const [replacement] = await readyPods('db', 1);
    assert.notEqual(replacement!.spec!.nodeName, node);
    await waitFor('the replacement counted done', async () => {
      const s = await taintStatusFor(cfg);
      return s.pods.find((p) => p.pod === pod!.metadata!.name)?.state === 'Replaced';
    }, { timeoutMs: 60_000 });
    await runTend(['sandbox', 'node', 'start', node, '--state-dir', testStateDir]);
    stoppedNodes.delete(node);
  });

  it('Temporal down while several nodes are tainted: every node\'s failed start is retried, and all their pods are marked once it is back', async () => {
    await start({ taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 3600 }] });
    const pods = await createDeployment('db', 4);
    const nodes = [...new Set(pods.map((p) => p.spec!.nodeName!))].sort();
    assert.ok(nodes.length >= 2, `pods spread over nodes: ${nodes.join(',')}`);
    await stopTemporal();
    try {
      for (const n of nodes) await taintNode(n);
      await waitFor('every node\'s start seen failing, waiting for its retry', () => nodes.every((n) =>
        tend!.logs.split('\n').some((l) => l.includes('failed; retrying') && l.includes(n))), { timeoutMs: 60_000 });
    } finally {
      await startTemporal();
    }
    // Retried every RETRY_MS until Temporal answers: well before the next periodic resync would notice.
    await waitFor('every pod on the tainted nodes marked', async () => {
      const marked = await Promise.all(pods.map(async (p) => condition(await readPod(kube, ns, p.metadata!.name!), 'NodeTaintDetected')));
      return marked.every(Boolean);
    }, { timeoutMs: 60_000 });
    const status = await taintStatusFor(config!);
    assert.deepEqual(status.nodes, nodes, 'one workflow per tainted node');
  });

  it('worker killed after detection and Temporal restarted: the deadline holds and the pod is replaced once', async () => {
    const section = { taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 3 }], taintReplacementTimeSeconds: 3 };
    const cfg = await start(section);
    const [pod] = await createDeployment('db', 1);
    const name = pod!.metadata!.name!;
    const uid = pod!.metadata!.uid!;
    const t0 = Date.now();
    await taintNode(pod!.spec!.nodeName!);
    await waitFor('Detected', async () => condition(await readPod(kube, ns, name), 'NodeTaintDetected'), { timeoutMs: 10_000 });
    await tend!.stop('SIGKILL');

    // Restart the Temporal dev server on its persistent database.
    await stopTemporal();
    await startTemporal();
    assert.ok(!evicted(await readPod(kube, ns, name), uid), 'nothing happens while tend is down');

    // Back after the deadline passed: marked now, replaced taintReplacementTimeSeconds later, exactly once.
    const seen = new Set<string>();
    const back = Date.now();
    tend = new TendProcess(['run', '--config', cfg]);
    await waitFor('the pod replaced', async () => {
      for (const p of await podsOf(kube, ns, 'app=db')) seen.add(p.metadata!.uid!);
      return evicted(await readPod(kube, ns, name), uid);
    }, { timeoutMs: 60_000, intervalMs: 100 });
    assert.ok(Date.now() - t0 >= 6000);
    await readyPods('db', 1);
    await waitFor('the replacement counted done', async () => {
      const s = await taintStatusFor(cfg);
      return s.pods.find((p) => p.pod === name)?.state === 'Replaced' && s;
    }, { timeoutMs: 60_000 });
    for (const p of await podsOf(kube, ns, 'app=db')) seen.add(p.metadata!.uid!);
    assert.equal(seen.size, 2, `one original and one replacement, never a second eviction (${[...seen].join(', ')})`);
    const replacing = condition(await readPod(kube, ns, name), 'NodeTaintReplacing');
    if (replacing) {
      // The condition says since when the pod was visibly marked: when the late worker wrote it
      // (the API server keeps whole seconds), not back-dated to when it was due.
      const at = new Date(replacing.lastTransitionTime as unknown as string).getTime();
      assert.ok(at >= back - 1000, `NodeTaintReplacing since ${new Date(at).toISOString()}, not before tend came back (${new Date(back).toISOString()})`);
    }
    const row = (await taintStatusFor(cfg)).pods.find((p) => p.pod === name)!;
    assert.ok(Date.parse(row.replaceAt) - Date.parse(row.since) >= 3000,
      `marked at ${row.since}, evicted at ${row.replaceAt}: at least taintReplacementTimeSeconds (3 s) apart`);
  });

  it('disabling the feature clears the conditions and cancels pending replacements', async () => {
    await start({ taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 60 });
    const [pod] = await createDeployment('db', 1);
    const name = pod!.metadata!.name!;
    await taintNode(pod!.spec!.nodeName!);
    await waitFor('Replacing', async () => condition(await readPod(kube, ns, name), 'NodeTaintReplacing'), { timeoutMs: 10_000 });
    await tend!.stop();
    const off = await taintConfig({
      enabled: false, podSelector: { matchLabels: managedLabel(ns) }, namespaces: [ns],
      taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 60,
    });
    config = off;
    tend = new TendProcess(['run', '--config', off]);
    await waitFor('conditions cleared', async () => {
      const p = await readPod(kube, ns, name);
      return !condition(p, 'NodeTaintDetected') && !condition(p, 'NodeTaintReplacing');
    }, { timeoutMs: 30_000 });
    await waitFor('no taint workflow left', async () => {
      const s = await taintStatusFor(off);
      return s.nodes.length === 0 && !s.slots;
    }, { timeoutMs: 30_000 });
    const p = await readPod(kube, ns, name);
    assert.equal(p?.metadata?.uid, pod!.metadata!.uid);
    assert.ok(!p?.metadata?.deletionTimestamp, 'not replaced');
  });
});
