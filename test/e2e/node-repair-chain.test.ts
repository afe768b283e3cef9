// Node repair end to end on the sandbox, from a Node whose heartbeats stop to a repaired machine:
// Kubernetes marks it Ready=Unknown and taints it unreachable; taint replacement marks and
// replaces its managed pod; node/<name>'s countdown runs out and the repair queue queues an entry
// for its InternalIP; the entry's command (`tend sandbox node start ADDRESS`) resumes the Node;
// the health check sees it Ready; Kubernetes lifts the taint, tend clears the pod conditions, the
// entry succeeds. Then the same with the worker and the watcher each killed (SIGKILL) mid-chain,
// and a zone outage beyond minHealthy: no entry while too few Nodes are healthy, each refusal
// said in an Event, and the entry once enough are back. Configuration: deploy/demo/node-repair.yaml.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import { runTend, TendProcess } from '../harness/cli.ts';
import { repoRoot, testStateDir } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, deployment, grantConfiguredRights, isReady, podsOf, tempNamespace } from '../harness/kube.ts';
import { resetRepairQueue } from '../harness/repair.ts';
import { condition, managedLabel, readPod } from '../harness/taint.ts';
import { temporalCli } from '../harness/temporal.ts';
import { queueEntries, terminateRunning, workflowStatus } from '../harness/in-process-reads.ts';
import { waitFor } from '../harness/wait.ts';

/** Each test's tend on a task queue of its own: a worker of an earlier test still shutting down never takes its tasks. */
let queues = 0;
const UNREACHABLE = 'node.kubernetes.io/unreachable';
/**
 * How soon taint replacement evicts a marked pod (seconds tainted, then seconds marked) and how long a
 * Node stays Ready=Unknown before its entry is queued: the countdown well past the replacement, so
 * that the pods are replaced before the repair brings the Node back, as on a cluster where a countdown
 * lasts minutes. QUICK: 6 s, then the demo's 20 s countdown. KILLED: with a worker killed as the
 * countdown starts, the replacement comes once the new worker is up and the killed one's sticky
 * tasks have timed out (seconds on a busy machine): the demo's 15 s, and a countdown of 45 s.
 */
interface Timing { taintedSeconds: number; markedSeconds: number; countdown: string }
const QUICK: Timing = { taintedSeconds: 2, markedSeconds: 4, countdown: '20s' };
const KILLED: Timing = { taintedSeconds: 5, markedSeconds: 10, countdown: '45s' };
/**
 * Two Nodes stopped one after the other are tainted seconds apart (each CLI call, each Node's own
 * grace): the first's pod is due for eviction well after the second is tainted, so that what holds
 * it is the breaker, not the timing.
 */
const STORM: Timing = { taintedSeconds: 20, markedSeconds: 4, countdown: '20s' };

/** deploy/demo/node-repair.yaml for this sandbox and namespace, a shorter watch, and `timing`. */
async function chainConfig(ns: string, timing: Timing): Promise<string> {
  const demo = parse(readFileSync(join(repoRoot, 'deploy/demo/node-repair.yaml'), 'utf8')) as Record<string, Record<string, unknown>>;
  const dir = mkdtempSync(join(tmpdir(), 'tend-node-repair-'));
  const file = join(dir, 'tend.yaml');
  const nodeRepair = demo.nodeRepair!;
  writeFileSync(file, stringify({
    temporal: { address: sandbox().temporalAddress, taskQueue: `tend-node-repair-${++queues}` },
    kubernetes: { kubeconfig: sandbox().tendKubeconfig },
    // watch_seconds 30 -> 6 s.
    repair: { ...demo.repair, time_scale: 0.2, state_dir: join(dir, 'state') },
    taintReplacement: {
      ...demo.taintReplacement, namespaces: [ns], podSelector: { matchLabels: managedLabel(ns) },
      taintReplacementOptions: [{ key: UNREACHABLE, durationInSeconds: timing.taintedSeconds }], taintReplacementTimeSeconds: timing.markedSeconds,
    },
    nodeRepair: { ...nodeRepair, unhealthyConditions: [{ type: 'Ready', status: 'Unknown', duration: timing.countdown }] },
  }));
  await grantConfiguredRights(file);
  return file;
}

/** The worker's environment for the repair commands: tend on PATH, this sandbox's state folder. */
const commandEnv = () => ({ PATH: `${join(repoRoot, 'bin')}:${process.env.PATH ?? ''}`, TEND_SANDBOX_DIR: testStateDir });

describe('node repair: the chain from a stopped Node to a repaired machine (e2e)', function () {
  this.timeout(420_000);
  let kube: KubeClients;
  let ns: string;
  let config: string;
  const procs: TendProcess[] = [];
  const stopped = new Set<string>();

  const start = (args: string[], ready: string) => {
    const p = new TendProcess([...args, '--config', config], commandEnv());
    procs.push(p);
    return waitFor(`tend ${args[0]}: ${ready}`, () => p.output.includes(ready) && p, { timeoutMs: 90_000 });
  };
  const readyOf = async (node: string) => (await kube.core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status;
  const tainted = async (node: string) => ((await kube.core.readNode({ name: node })).spec?.taints ?? []).some((t) => t.key === UNREACHABLE);
  const addressOf = async (node: string) => (await kube.core.readNode({ name: node })).status!.addresses!.find((a) => a.type === 'InternalIP')!.address;
  const stopNode = async (node: string) => {
    stopped.add(node);
    const r = await runTend(['sandbox', 'node', 'stop', node, '--state-dir', testStateDir]);
    assert.equal(r.code, 0, r.stderr);
  };
  /** What `tend repair-queue list` prints, read in the test process (test/harness/in-process-reads.ts), every second in a wait. */
  const LIST_EVERY_MS = 1000;
  const entries = (): Promise<RepairQueueEntry[]> => queueEntries();
  /** The node repair Events on a Node recorded since `since` (an earlier test's stay): reason and note, oldest first. */
  const nodeEvents = async (node: string, since: number) => {
    const list = await kube.events.listNamespacedEvent({ namespace: 'default', fieldSelector: `regarding.kind=Node,regarding.name=${node}` });
    // A repeat is counted in its series: when it was last seen is the series' time, else the Event's.
    const seen = (e: (typeof list.items)[number]) => new Date(e.series?.lastObservedTime ?? e.eventTime ?? e.metadata?.creationTimestamp ?? 0).getTime();
    return list.items.filter((e) => /^NodeRepair/.test(e.reason ?? '') && seen(e) >= since - 1000)
      .sort((a, b) => seen(a) - seen(b))
      .map((e) => ({ reason: e.reason!, note: e.note ?? '' }));
  };
  /** A managed Deployment of one pod per Node (preferred spread): the pod on `node`, once all are ready. */
  const managedPodOn = async (name: string, node: string) => {
    const body = deployment({ namespace: ns, name, replicas: sandbox().settings.nodes, labels: managedLabel(ns) });
    body.spec!.template.spec!.affinity = { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: name } } } }] } };
    await kube.apps.createNamespacedDeployment({ namespace: ns, body });
    return waitFor(`a ready pod of ${name} on ${node}`, async () => {
      const pods = (await podsOf(kube, ns, `app=${name}`)).filter((p) => isReady(p) && !p.metadata?.deletionTimestamp);
      return pods.length === sandbox().settings.nodes && pods.find((p) => p.spec?.nodeName === node);
    }, { timeoutMs: 90_000 });
  };

  before(async () => {
    kube = admin();
  });
  beforeEach(async () => {
    await resetRepairQueue();
    ns = await tempNamespace(kube, 'node-repair');
  });
  afterEach(async () => {
    for (const node of stopped) await runTend(['sandbox', 'node', 'start', node, '--state-dir', testStateDir]);
    stopped.clear();
    await Promise.all(procs.splice(0).map((p) => p.stop()));
    // The coordinator, and the Nodes' taint and countdown workflows a test that failed midway leaves on
    // its task queue, where no worker serves them any more: the next file's tend would find them under its ids.
    await terminateRunning('WorkflowId="taint-replacements" OR TendCapability="node" OR TendCapability="taint"', 'test over');
    await resetRepairQueue();
    await deleteNamespace(kube, ns);
  });

  /**
   * The whole chain for `node`, with `during` run at the named moments (a kill and a restart):
   * returns once the entry has succeeded and the Node's pod conditions are cleared.
   */
  async function chain(node: string, timing: Timing, during: { counting?: () => Promise<void>; queued?: () => Promise<void> } = {}) {
    const since = Date.now();
    const address = await addressOf(node);
    const pod = await managedPodOn('db', node);
    await stopNode(node);
    // Kubernetes: the node lifecycle controller marks it Unknown and taints it unreachable.
    await waitFor(`${node} Ready=Unknown and tainted`, async () => (await readyOf(node)) === 'Unknown' && tainted(node), { timeoutMs: 60_000 });
    // Taint replacement marks the managed pod, then replaces it (a worker killed meanwhile: its activity's retry comes after its 1 min timeout).
    await waitFor('the pod marked NodeTaintDetected', async () => condition(await readPod(kube, ns, pod.metadata!.name!), 'NodeTaintDetected'), { timeoutMs: 60_000 });
    await waitFor('the node\'s countdown running', async () => (await workflowStatus(`node/${node}`)) === 'RUNNING', { timeoutMs: 60_000 });
    await during.counting?.();
    await waitFor('the pod replaced (evicted, a new one ready elsewhere)', async () => {
      const old = await readPod(kube, ns, pod.metadata!.name!);
      const ready = (await podsOf(kube, ns, 'app=db')).filter((p) => isReady(p) && !p.metadata?.deletionTimestamp && p.spec?.nodeName !== node);
      return (!old || old.metadata?.deletionTimestamp) && ready.length === sandbox().settings.nodes;
    }, { timeoutMs: 180_000 });
    // The countdown ran out: one entry, for the Node's address, CKE's operation for Ready=Unknown.
    const queued = await waitFor('an entry queued for the node', async () => (await entries()).find((e) => e.address === address), { timeoutMs: 90_000, intervalMs: LIST_EVERY_MS });
    assert.deepEqual([queued.operation, queued.machine_type], ['unreachable', 'sim']);
    await during.queued?.();
    const done = await waitFor('the entry finished', async () => {
      const e = (await entries()).find((x) => x.index === queued.index);
      return e && (e.status === 'succeeded' || e.status === 'failed') && e;
    }, { timeoutMs: 180_000, intervalMs: LIST_EVERY_MS });
    assert.equal(done.status, 'succeeded', JSON.stringify(done));
    stopped.delete(node);
    assert.equal(await readyOf(node), 'True');
    await waitFor('the unreachable taint lifted', async () => !(await tainted(node)), { timeoutMs: 60_000 });
    await waitFor('the countdown ended (the Node recovered)', async () => (await workflowStatus(`node/${node}`)) === 'COMPLETED', { timeoutMs: 60_000 });
    await waitFor('no pod of the namespace carries a taint condition', async () =>
      (await podsOf(kube, ns, 'app=db')).every((p) => !condition(p, 'NodeTaintDetected') && !condition(p, 'NodeTaintReplacing')), { timeoutMs: 60_000 });
    // Exactly one entry for the incident, and its Event on the Node.
    assert.deepEqual((await entries()).map((e) => e.address), [address]);
    const events = await nodeEvents(node, since);
    assert.deepEqual(events.map((e) => e.reason), ['NodeRepairQueued'], JSON.stringify(events));
    assert.match(events[0]!.note, new RegExp(`repair entry ${queued.index} queued for Node ${node}: ${address.replace(/\./g, '\\.')} \\(unreachable, Ready=Unknown for ${timing.countdown}\\)`));
    return { address, queued };
  }

  it('a stopped Node: marked, replaced, queued, repaired by its command, Ready, conditions cleared, the entry succeeded', async () => {
    config = await chainConfig(ns, QUICK);
    await start(['run'], 'worker started');
    const node = `sim-${sandbox().settings.nodes}`;
    const t0 = Date.now();
    const { queued } = await chain(node, QUICK);
    // One view of the incident: the Node's runs carry TendNode.
    const { stdout } = await temporalCli(['workflow', 'list', '--query', `TendNode="${node}"`, '--output', 'json']);
    const ids = new Set(((stdout.trim() ? JSON.parse(stdout) as { execution: { workflowId: string } }[] : null) ?? []).map((r) => r.execution.workflowId));
    for (const id of [`taint/${node}`, `node/${node}`]) assert.ok(ids.has(id), `${id} among ${[...ids].join(', ')}`);
    assert.ok(ids.has(`repair/${queued.index}`), `the repair entry among ${[...ids].join(', ')}`);
    // tend node describe: each capability's part, in time order.
    // As an operator runs it: with their own kubeconfig (tend's ServiceAccount may not list Events).
    const r = await runTend(['node', 'describe', node, '--config', config, '--kubeconfig', sandbox().kubeconfig, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const rows = (JSON.parse(r.stdout) as { rows: { time: string; capability: string; what: string; source: string }[] }).rows;
    const times = rows.map((x) => Date.parse(x.time));
    assert.deepEqual(times, [...times].sort((a, b) => a - b), 'rows in time order');
    const at = (source: string, what: RegExp) => rows.find((x) => x.source === source && what.test(x.what) && Date.parse(x.time) >= t0);
    const steps = [
      at(`workflow taint/${node}`, /started/), at(`workflow node/${node}`, /started/),
      at(`Event on Node ${node}`, /^NodeRepairQueued/), at(`workflow repair/${queued.index}`, /started/),
    ];
    assert.ok(steps.every(Boolean), JSON.stringify(rows, null, 1));
    assert.deepEqual(steps.map((x) => x!.capability), ['taint', 'node', 'node', 'repair']);
  });

  it('the same outcome with the worker killed during the countdown and the watcher killed once the entry is queued', async () => {
    config = await chainConfig(ns, KILLED);
    let worker = await start(['worker'], 'worker started');
    let watcher = await start(['watcher'], 'watcher started');
    const node = `sim-${sandbox().settings.nodes - 1}`;
    await chain(node, KILLED, {
      counting: async () => {
        await worker.stop('SIGKILL');
        worker = await start(['worker'], 'worker started');
      },
      queued: async () => {
        await watcher.stop('SIGKILL');
        watcher = await start(['watcher'], 'watcher started');
      },
    });
  });

  it('a zone outage beyond minHealthy: no entry while too few Nodes are healthy, each refusal said; the entry once enough are back', async () => {
    config = await chainConfig(ns, STORM);
    await start(['run'], 'worker started');
    const n = sandbox().settings.nodes;
    // Two of three Nodes down: one healthy, fewer than minHealthy 51% (2 of 3).
    const [a, b] = [`sim-${n}`, `sim-${n - 1}`];
    const pod = await managedPodOn('db', a);
    const since = Date.now();
    await stopNode(a);
    await stopNode(b);
    for (const node of [a, b]) {
      await waitFor(`${node}: a storm refusal recorded`, async () => (await nodeEvents(node, since)).some((e) => e.reason === 'NodeRepairRefused' && /fewer than minHealthy 51% \(2\)/.test(e.note)), { timeoutMs: 90_000 });
    }
    assert.deepEqual(await entries(), [], 'nothing queued during the storm');
    // The taint limits hold as before: two of three Nodes tainted is past the breaker's 50%, nothing is
    // evicted, though the first Node's pod is past its time (tainted + marked seconds from its taint).
    const taintedAt = async (node: string) => Math.min(...((await kube.core.readNode({ name: node })).spec?.taints ?? [])
      .filter((t) => t.key === UNREACHABLE).map((t) => new Date(t.timeAdded ?? Date.now()).getTime()));
    const [ta, tb] = [await taintedAt(a), await taintedAt(b)];
    const due = ta + (STORM.taintedSeconds + STORM.markedSeconds) * 1000;
    assert.ok(tb < due - 2000, `${b} tainted ${((tb - ta) / 1000).toFixed(1)} s after ${a}: too late to tell the breaker from the timing`);
    // What must not happen is checked once its time has passed (5 s past it): a wait on time, not on a condition.
    await sleep(Math.max(0, due + 5000 - Date.now()));
    const held = await readPod(kube, ns, pod.metadata!.name!);
    assert.ok(held && !held.metadata?.deletionTimestamp, 'the managed pod on a stopped Node is not evicted while the breaker is open');
    assert.ok(condition(held, 'NodeTaintDetected'), 'but it is marked');
    // The Web UI shows why: the countdown's status.
    const { stdout } = await temporalCli(['workflow', 'query', '--workflow-id', `node/${a}`, '--type', 'status', '--output', 'json']);
    assert.match(stdout, /"reason": ?"storm"/);
    // One Node back by hand: two of three healthy, the other's next ask queues its entry, which repairs it.
    await runTend(['sandbox', 'node', 'start', b, '--state-dir', testStateDir]);
    stopped.delete(b);
    const address = await addressOf(a);
    const done = await waitFor('the remaining Node\'s entry succeeded', async () => {
      const e = (await entries()).find((x) => x.address === address);
      return e?.status === 'succeeded' && e;
    }, { timeoutMs: 180_000, intervalMs: LIST_EVERY_MS });
    assert.equal(done.operation, 'unreachable');
    stopped.delete(a);
    assert.deepEqual((await entries()).map((e) => e.address), [address], 'one entry, for the Node still down');
    await waitFor(`${b}'s countdown ended`, async () => (await workflowStatus(`node/${b}`)) === 'COMPLETED', { timeoutMs: 60_000 });
  });
});
