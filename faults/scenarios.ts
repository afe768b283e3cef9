// Each capability's real scenario, one round at a time: set up once, then per
// round drive the cluster through the remediation while the round's fault
// strikes, wait for things to settle, and check the invariants over what the
// audit log and the run itself recorded.
import type * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { mergePatch, strategicMergePatch } from '../src/kube/api.ts';
import { TEND_USER } from '../src/sandbox/sandbox.ts';
import { listQuery, REPAIR_QUEUE_WORKFLOW_ID } from '../src/repair/messages.ts';
import type { RepairQueueEntry } from '../src/repair/entry.ts';
import { nodeWorkflowId } from '../src/taint/messages.ts';
import { LABEL_APP } from '../src/apps/types.ts';
import { waitFor } from '../test/harness/wait.ts';
import { runTend } from '../test/harness/cli.ts';
import { appObject, createApp, getApp, patchAppSpec, settled, webProcess } from '../test/harness/apps.ts';
import { backoffRemainingMs, crashLooping } from '../test/harness/weeder.ts';
import { deployment, isReady, service } from '../test/harness/kube.ts';
import type { Write } from './audit.ts';
import { checkApps, checkRepair, checkTaint, checkWeeder, peakInFlight, replicaSetStatuses, serviceReadiness, type Violation } from './invariants.ts';
import type { WriteMatch } from './proxy.ts';
import type { Capability } from './report.ts';
import { retry, writeTendConfig, type Fault, type World } from './world.ts';

export interface RoundResult {
  violations: Violation[];
  notes: string[];
}

export interface Scenario {
  capability: Capability;
  /** The writes of tend's an injected API error may fail. */
  writes: WriteMatch[];
  /** How long after the round's action begins the fault may strike. */
  windowMs: number;
  /** Whether the capability has a watcher (the repair queue has none: `tend watcher` has nothing to do). */
  watcher: boolean;
  /** Creates what the rounds need; returns tend's configuration file. */
  setup(w: World): Promise<string>;
  round(w: World, fault: Fault, random: () => number): Promise<RoundResult>;
  teardown(w: World): Promise<void>;
}

const suffix = () => randomBytes(3).toString('hex');
const live = (pods: k8s.V1Pod[]) => pods.filter((p) => !p.metadata?.deletionTimestamp);
const tendsIn = (writes: Write[], ns: string) => writes.filter((x) => x.user === TEND_USER && x.namespace === ns);

async function createNamespace(w: World, prefix: string): Promise<string> {
  const ns = `${prefix}-${suffix()}`;
  await w.kube.core.createNamespace({ body: { metadata: { name: ns, labels: { 'faults.tend.dev/run': 'true' } } } });
  return ns;
}

async function deleteNamespace(w: World, ns: string) {
  await w.kube.core.deleteNamespace({ name: ns }).catch(() => undefined);
}

const runningIds = async (w: World, capability: string) => {
  const ids: string[] = [];
  for await (const wf of w.temporal.workflow.list({ query: `TendCapability="${capability}" AND ExecutionStatus="Running"` })) ids.push(wf.workflowId);
  return ids;
};

/**
 * Terminates the running workflows of a capability: those left by earlier runs (another task queue,
 * another configuration), and, once the run's tend has stopped, any its watcher started again after
 * endRun (the taint watcher's resync starts a coordinator it finds gone).
 */
export async function endRunning(w: World, capability: string) {
  for (const id of await runningIds(w, capability)) {
    await w.temporal.workflow.getHandle(id).terminate('fault run: a fresh start').catch(() => undefined);
  }
}

/**
 * At the end of a capability's rounds, while its tend still runs: cancels the
 * workflows the run left (so they lift their cordons and clear their
 * conditions), waits for them to close, and terminates any still running
 * after timeoutMs. Nothing of the run is left on the Temporal server for
 * whatever uses it next with another task queue.
 */
export async function endRun(w: World, capability: string, timeoutMs = 60_000): Promise<void> {
  for (const id of await runningIds(w, capability)) await w.temporal.workflow.getHandle(id).cancel().catch(() => undefined);
  // The repair queue goes on when cancelled (it would lose its entries): it is not waited for, only terminated below.
  const waitedFor = async () => (await runningIds(w, capability)).filter((id) => id !== REPAIR_QUEUE_WORKFLOW_ID);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && (await waitedFor()).length) await new Promise((r) => setTimeout(r, 1000));
  await endRunning(w, capability);
}

const running = async (w: World, id: string) =>
  (await w.temporal.workflow.getHandle(id).describe().then((d) => d.status.name, () => 'NONE')) === 'RUNNING';

// ---------------------------------------------------------------------------

/**
 * Weeder: Service `db` (1 pod) and three `api` pods that crash-loop while it
 * has no ready endpoint. A round takes db down until every api pod is deep in
 * back-off, brings it back, and expects each api pod deleted once by the window.
 */
export class WeederScenario implements Scenario {
  readonly capability = 'weeder' as const;
  readonly writes: WriteMatch[] = [{ description: 'pod deletion', method: 'DELETE', path: /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+$/ }];
  readonly windowMs = 20_000;
  readonly watcher = true;
  private ns = '';
  private readonly watch = 10;

  async setup(w: World): Promise<string> {
    await endRunning(w, 'weeder');
    const ns = this.ns = await createNamespace(w, 'faults-weeder');
    await w.kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 1 }) });
    await w.kube.core.createNamespacedService({ namespace: ns, body: service(ns, 'db', { app: 'db' }) });
    const api = deployment({ namespace: ns, name: 'api', replicas: 3, labels: { role: 'api' }, annotations: { 'sim.tend.dev/depends-on': 'db' } });
    api.spec!.template.spec!.terminationGracePeriodSeconds = 0;
    await w.kube.apps.createNamespacedDeployment({ namespace: ns, body: api });
    return writeTendConfig(w, 'weeder', {
      weeder: { watchDuration: `${this.watch}s`, namespaces: [ns], servicesAndDependantSelectors: { db: { podSelectors: [{ matchLabels: { role: 'api' } }] } } },
    });
  }

  private pods = async (w: World, app: string) => (await w.kube.core.listNamespacedPod({ namespace: this.ns, labelSelector: `app=${app}` })).items;
  private scale = (w: World, replicas: number) => retry('scale db', () =>
    w.kube.apps.patchNamespacedDeploymentScale({ namespace: this.ns, name: 'db', body: { spec: { replicas } } }, mergePatch));

  async round(w: World, fault: Fault): Promise<RoundResult> {
    const id = `weeder/${this.ns}/db`;
    await waitFor('db and three api pods ready', async () =>
      live(await this.pods(w, 'db')).filter(isReady).length === 1 && live(await this.pods(w, 'api')).filter(isReady).length === 3, { timeoutMs: 120_000 });
    await waitFor(`no window open for db (${id})`, async () => !(await running(w, id)), { timeoutMs: 120_000 });
    const mark = await w.audit.mark();
    fault.arm();
    await this.scale(w, 0);
    // Deep enough in back-off that no api pod can restart by itself before the weeder acts.
    const due = await waitFor('every api pod deep in CrashLoopBackOff', async () => {
      const pods = live(await this.pods(w, 'api'));
      return pods.length === 3 && pods.every((p) => crashLooping(p) && backoffRemainingMs(p) >= 5000) && pods;
    }, { timeoutMs: 120_000, intervalMs: 100 });
    await this.scale(w, 1);
    const recovered = new Map<string, number>();
    await waitFor('each crash-looping api pod weeded, or recovered by itself', async () => {
      const pods = await this.pods(w, 'api');
      for (const d of due) {
        const p = pods.find((x) => x.metadata?.uid === d.metadata!.uid);
        if (p && !p.metadata?.deletionTimestamp && isReady(p) && !recovered.has(d.metadata!.name!)) recovered.set(d.metadata!.name!, Date.now());
      }
      return due.every((d) => {
        const p = pods.find((x) => x.metadata?.uid === d.metadata!.uid);
        return !p || p.metadata?.deletionTimestamp || recovered.has(d.metadata!.name!);
      });
    }, { timeoutMs: 120_000, intervalMs: 200 }).catch(() => undefined);
    await fault.done();
    const notes: string[] = [];
    await waitFor('the window to close', async () => !(await running(w, id)), { timeoutMs: 120_000 })
      .catch(() => notes.push(`the window ${id} was still open 120 s after the round`));
    await waitFor('three api pods ready', async () => live(await this.pods(w, 'api')).filter(isReady).length === 3, { timeoutMs: 90_000 })
      .catch(() => notes.push('api pods not all ready at the end of the round'));
    await sleep(500);
    const writes = await w.audit.since(mark);
    const deletes = tendsIn(writes, this.ns).filter((x) => x.resource === 'pods' && x.verb === 'delete');
    notes.push(`${due.length} api pods crash-looping when db came back; tend deleted pods ${deletes.filter((x) => x.code < 300).length} time(s)`);
    if (recovered.size) notes.push(`${recovered.size} api pod(s) restarted by themselves before being weeded: ${[...recovered.keys()].join(', ')}`);
    const violations = checkWeeder({
      service: `${this.ns}/db`,
      due: due.map((p) => ({ name: p.metadata!.name!, uid: p.metadata!.uid!, recoveredAt: recovered.get(p.metadata!.name!) })),
      readiness: serviceReadiness(writes, this.ns, 'db', true),
      initiallyReady: true,
      deletes,
      excuse: fault.struckAt !== undefined && ['kill-worker', 'restart-temporal', 'restart-apiserver', 'api-error'].includes(fault.kind)
        ? { kind: fault.kind, at: fault.struckAt } : undefined,
    });
    return { violations, notes };
  }

  async teardown(w: World) {
    await deleteNamespace(w, this.ns);
  }
}

// ---------------------------------------------------------------------------

const DUE_KEY = 'faults.tend.dev/due';
const BRIEF_KEY = 'faults.tend.dev/brief';
const TAINT_CONDITIONS = ['NodeTaintDetected', 'NodeTaintReplacing'];

async function editTaints(w: World, node: string, edit: (t: k8s.V1Taint[]) => k8s.V1Taint[]) {
  await retry(`taints of ${node}`, async () => {
    const n = await w.kube.core.readNode({ name: node });
    n.spec = { ...n.spec, taints: edit(n.spec?.taints ?? []) };
    await w.kube.core.replaceNode({ name: node, body: n });
  });
}
const addTaint = (w: World, node: string, key: string) =>
  editTaints(w, node, (ts) => [...ts.filter((t) => t.key !== key), { key, value: 'x', effect: 'NoSchedule' }]);
const removeTaint = (w: World, node: string, key: string) => editTaints(w, node, (ts) => ts.filter((t) => t.key !== key));

/**
 * Taint replacement: four managed pods. A round taints the node with most of
 * them with a key due after 2 s (each pod marked, then evicted one at a time),
 * and another node with a key due only after 10 min, untainted once its pods
 * are marked; then the first taint goes too.
 */
export class TaintScenario implements Scenario {
  readonly capability = 'taint' as const;
  readonly writes: WriteMatch[] = [
    { description: 'eviction', method: 'POST', path: /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/eviction$/ },
    { description: 'pod condition write', method: 'PATCH', path: /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/status$/ },
  ];
  readonly windowMs = 12_000;
  readonly watcher = true;
  private ns = '';
  private readonly limit = 1;
  private readonly replacementTime = 2;
  private nodes: string[] = [];

  async setup(w: World): Promise<string> {
    await endRunning(w, 'taint');
    const ns = this.ns = await createNamespace(w, 'faults-taint');
    const d = deployment({ namespace: ns, name: 'db', replicas: 4, labels: { 'faults.tend.dev/managed': 'true' } });
    d.spec!.template.spec!.terminationGracePeriodSeconds = 0;
    await w.kube.apps.createNamespacedDeployment({ namespace: ns, body: d });
    this.nodes = (await w.kube.core.listNode({ labelSelector: 'sim.tend.dev/node=true' })).items.map((n) => n.metadata!.name!);
    for (const n of this.nodes) for (const key of [DUE_KEY, BRIEF_KEY]) await removeTaint(w, n, key);
    return writeTendConfig(w, 'taint', {
      taintReplacement: {
        podSelector: { matchLabels: { 'faults.tend.dev/managed': 'true' } },
        namespaces: [ns],
        taintReplacementOptions: [{ key: DUE_KEY, durationInSeconds: 2 }, { key: BRIEF_KEY, durationInSeconds: 600 }],
        taintReplacementTimeSeconds: this.replacementTime,
        maxConcurrentReplacements: this.limit,
        breaker: { maxTaintedNodes: '100%' },
      },
    });
  }

  /** Every managed pod seen during the round, and the node it was on. */
  private seen = new Map<string, string>();
  private pods = async (w: World) => {
    const pods = (await w.kube.core.listNamespacedPod({ namespace: this.ns, labelSelector: 'app=db' })).items;
    for (const p of pods) if (p.spec?.nodeName) this.seen.set(p.metadata!.name!, p.spec.nodeName);
    return pods;
  };
  private marked = (p: k8s.V1Pod) => (p.status?.conditions ?? []).filter((c) => TAINT_CONDITIONS.includes(c.type) && c.status === 'True').map((c) => c.type);

  async round(w: World, fault: Fault): Promise<RoundResult> {
    const notes: string[] = [];
    // Conditions an earlier round left (reported then) would stall every later round: cleared, and said so.
    const stale = await waitFor('no NodeTaint* condition left from an earlier round', async () => {
      const left = live(await this.pods(w)).filter((p) => this.marked(p).length);
      return left.length === 0 || undefined;
    }, { timeoutMs: 30_000 }).then(() => [] as k8s.V1Pod[], async () => live(await this.pods(w)).filter((p) => this.marked(p).length));
    for (const p of stale) {
      await retry('clear conditions', () => w.kube.core.patchNamespacedPodStatus({
        namespace: this.ns, name: p.metadata!.name!,
        body: { status: { conditions: TAINT_CONDITIONS.map((type) => ({ type, $patch: 'delete' })) } },
      }, strategicMergePatch));
    }
    if (stale.length) notes.push(`cleared conditions an earlier round left on ${stale.map((p) => p.metadata!.name).join(', ')}`);
    const start = await waitFor('four managed pods ready, none marked', async () => {
      const pods = live(await this.pods(w));
      return pods.length === 4 && pods.every(isReady) && pods.every((p) => !this.marked(p).length) && pods;
    }, { timeoutMs: 120_000 });
    const byNode = new Map<string, string[]>();
    for (const p of start) byNode.set(p.spec!.nodeName!, [...(byNode.get(p.spec!.nodeName!) ?? []), p.metadata!.name!]);
    const ranked = [...byNode.entries()].sort((a, b) => b[1].length - a[1].length);
    const dueNode = ranked[0]![0];
    const briefNode = ranked[1]?.[0];
    const briefPods = ranked[1]?.[1] ?? [];
    this.seen = new Map(start.map((p) => [p.metadata!.name!, p.spec!.nodeName!]));
    const mark = await w.audit.mark();
    fault.arm();
    await addTaint(w, dueNode, DUE_KEY);
    if (briefNode) await addTaint(w, briefNode, BRIEF_KEY);
    if (briefNode) {
      await waitFor('the pods on the briefly tainted node marked', async () => {
        const pods = await this.pods(w);
        return briefPods.every((n) => this.marked(pods.find((p) => p.metadata?.name === n) ?? {}).includes('NodeTaintDetected'));
      }, { timeoutMs: 30_000 }).catch(() => notes.push(`pods on ${briefNode} were not marked within 30 s`));
      await removeTaint(w, briefNode, BRIEF_KEY);
    }
    const briefSeen = new Set([...this.seen].filter(([, n]) => n === briefNode).map(([p]) => p));
    await waitFor('every pod on the due node evicted and replaced', async () => {
      const pods = live(await this.pods(w));
      return !pods.some((p) => p.spec?.nodeName === dueNode) && pods.filter(isReady).length === 4;
    }, { timeoutMs: 120_000 }).catch(() => notes.push(`not every pod on ${dueNode} was replaced within 120 s`));
    await fault.done();
    await removeTaint(w, dueNode, DUE_KEY);
    // Due: every managed pod seen on the due node while it was tainted (a replacement the scheduler put there too).
    const due = [...this.seen].filter(([, n]) => n === dueNode).map(([p]) => p);
    const notDue = [...briefSeen].filter((p) => !due.includes(p));
    let left: { pod: string; conditions: string[] }[] = [];
    await waitFor('no NodeTaint* condition left', async () => {
      left = live(await this.pods(w)).map((p) => ({ pod: p.metadata!.name!, conditions: this.marked(p) })).filter((l) => l.conditions.length);
      return left.length === 0;
    }, { timeoutMs: 60_000 }).catch(() => undefined);
    const violations: Violation[] = [];
    for (const node of [dueNode, briefNode].filter((n): n is string => !!n)) {
      await waitFor(`${nodeWorkflowId(node)} to end`, async () => !(await running(w, nodeWorkflowId(node))), { timeoutMs: 60_000 })
        .catch(() => violations.push({ invariant: 'taint: node workflows end once their taint is gone', detail: `${nodeWorkflowId(node)} still running 60 s after the untaint` }));
    }
    await sleep(500);
    const writes = (await w.audit.since(mark)).filter((x) => x.namespace === this.ns);
    violations.push(...checkTaint({
      limit: this.limit, replacementTimeMs: this.replacementTime * 1000, due, notDue,
      writes: writes.filter((x) => x.user === TEND_USER), replicaSets: replicaSetStatuses(writes, this.ns), leftConditions: left,
    }));
    const evictions = writes.filter((x) => x.user === TEND_USER && x.subresource === 'eviction' && x.code < 300);
    const peak = peakInFlight(evictions, replicaSetStatuses(writes, this.ns)).peak;
    notes.push(`due: ${due.join(', ')} on ${dueNode}; untainted in time: ${notDue.join(', ') || '-'}; ${evictions.length} eviction(s), at most ${peak} in flight`);
    return { violations, notes };
  }

  async teardown(w: World) {
    for (const n of this.nodes) for (const key of [DUE_KEY, BRIEF_KEY]) await removeTaint(w, n, key).catch(() => undefined);
    await deleteNamespace(w, this.ns);
  }
}

// ---------------------------------------------------------------------------

/**
 * Repair queue: two entries per round, each draining a Node (pods of a
 * Deployment on it) and running a repair command that holds a lock for 3 s;
 * a run that finds the lock taken (another run for the same machine still
 * alive) records an overlap. max_concurrent_repairs 1: one entry at a time.
 */
export class RepairScenario implements Scenario {
  readonly capability = 'repair' as const;
  readonly writes: WriteMatch[] = [
    { description: 'Node cordon/uncordon patch', method: 'PATCH', path: /^\/api\/v1\/nodes\/[^/]+$/ },
    { description: 'pod deletion (drain)', method: 'DELETE', path: /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+$/ },
  ];
  readonly windowMs = 15_000;
  readonly watcher = false;
  private ns = '';
  private config = '';
  private dir = '';
  private overlapsRead = 0;

  async setup(w: World): Promise<string> {
    await endRunning(w, 'repair');
    const ns = this.ns = await createNamespace(w, 'faults-repair');
    const d = deployment({ namespace: ns, name: 'filler', replicas: 3 });
    d.spec!.template.spec!.terminationGracePeriodSeconds = 0;
    await w.kube.apps.createNamespacedDeployment({ namespace: ns, body: d });
    const dir = this.dir = join(w.dir, 'repair');
    mkdirSync(dir, { recursive: true });
    const script = join(dir, 'repair.sh');
    writeFileSync(script, [
      '#!/bin/sh',
      '# The repair command of the fault run: one run per machine at a time, or an overlap is recorded.',
      'a="$1"',
      `d='${dir}'`,
      'exec 9>>"$d/$a.lock"',
      'if ! flock -n 9; then echo "$(date +%s%3N) $a" >> "$d/overlaps"; exit 1; fi',
      'echo "start $(date +%s%3N)" >> "$d/$a.runs"',
      'sleep 3',
      'touch "$d/$a.healthy"',
      'echo "end $(date +%s%3N)" >> "$d/$a.runs"',
      '',
    ].join('\n'), { mode: 0o755 });
    const health = ['sh', '-c', `test -f '${dir}'/"$0".healthy && echo true || echo false`];
    this.config = await writeTendConfig(w, 'repair', {
      repair: {
        max_concurrent_repairs: 1,
        time_scale: 0.05,
        eviction_timeout_seconds: 200,
        state_dir: join(dir, 'state'),
        repair_procedures: [{
          machine_types: ['sim'],
          repair_operations: [{
            operation: 'fix',
            repair_steps: [{ repair_command: ['sh', script], watch_seconds: 20, need_drain: true }],
            health_check_command: health,
          }],
        }],
      },
    });
    return this.config;
  }

  async round(w: World, fault: Fault, random: () => number): Promise<RoundResult> {
    const notes: string[] = [];
    const nodes = (await w.kube.core.listNode({ labelSelector: 'sim.tend.dev/node=true' })).items;
    // Left cordoned by an earlier round (reported then): a clean start.
    for (const n of nodes.filter((x) => x.spec?.unschedulable)) {
      await retry('uncordon', () => w.kube.core.patchNode({ name: n.metadata!.name!, body: { spec: { unschedulable: null } } }, mergePatch));
    }
    const first = Math.floor(random() * nodes.length);
    const picked = [nodes[first]!, nodes[(first + 1) % nodes.length]!];
    const addresses = picked.map((n) => n.status!.addresses!.find((a) => a.type === 'InternalIP')!.address);
    for (const a of addresses) rmSync(join(this.dir, `${a}.healthy`), { force: true });
    await waitFor('three filler pods ready', async () =>
      live((await w.kube.core.listNamespacedPod({ namespace: this.ns })).items).filter(isReady).length === 3, { timeoutMs: 60_000 });
    // One `tend repair-queue add-file` for both entries, as an operator would (one CLI start on a busy machine).
    const requests = join(this.dir, 'requests.txt');
    writeFileSync(requests, addresses.map((a) => `fix sim ${a}`).join('\n') + '\n');
    const r = await runTend(['repair-queue', 'add-file', '--config', this.config, requests], { timeoutMs: 120_000 });
    if (r.code !== 0) throw new Error(`repair-queue add-file: exit ${r.code}: ${r.stderr.trim()}`);
    const added = /added \d+ entr(?:y|ies): (\d+)\.\.(\d+)/.exec(r.stdout);
    if (!added) throw new Error(`repair-queue add-file: unexpected output: ${r.stdout.trim()}`);
    const indexes = Array.from({ length: Number(added[2]) - Number(added[1]) + 1 }, (_, i) => String(Number(added[1]) + i));
    fault.arm();
    let list: RepairQueueEntry[] = [];
    const final = (e?: RepairQueueEntry) => e?.status === 'succeeded' || e?.status === 'failed';
    const allFinal = async () => {
      list = await w.temporal.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(listQuery);
      return indexes.every((i) => final(list.find((e) => e.index === i)));
    };
    await waitFor('the round\'s entries to finish', allFinal, { timeoutMs: 150_000, intervalMs: 500 }).catch(() => undefined);
    await fault.done();
    await waitFor('the round\'s entries to finish', allFinal, { timeoutMs: 30_000, intervalMs: 500 }).catch(() => undefined);
    const entries = indexes.map((i) => list.find((e) => e.index === i) ?? ({ index: i, address: '?', status: 'missing from the queue' } as unknown as RepairQueueEntry));
    const cordoned = (await retry('list nodes', () => w.kube.core.listNode({ labelSelector: 'sim.tend.dev/node=true' }))).items
      .filter((n) => n.spec?.unschedulable).map((n) => n.metadata!.name!);
    const file = join(this.dir, 'overlaps');
    const lines = existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
    const overlaps = lines.slice(this.overlapsRead);
    this.overlapsRead = lines.length;
    notes.push(`entries: ${entries.map((e) => `${e.index} ${e.address} ${e.status}`).join('; ')}`);
    return { violations: checkRepair({ entries, cordoned, overlaps }), notes };
  }

  async teardown(w: World) {
    await deleteNamespace(w, this.ns);
  }
}

// ---------------------------------------------------------------------------

/**
 * Apps: App `web` with two instances. A round restarts it twice the way
 * kubectl would (spec.desiredState STOPPED, then STARTED a random 0-1.5 s
 * later) and expects the pods rolled exactly once per restart.
 */
export class AppsScenario implements Scenario {
  readonly capability = 'apps' as const;
  readonly writes: WriteMatch[] = [
    { description: 'Deployment creation', method: 'POST', path: /^\/apis\/apps\/v1\/namespaces\/[^/]+\/deployments$/ },
    { description: 'Deployment deletion', method: 'DELETE', path: /^\/apis\/apps\/v1\/namespaces\/[^/]+\/deployments\/[^/]+$/ },
    { description: 'App status write', method: 'PATCH', path: /^\/apis\/tend\.dev\/v1alpha1\/namespaces\/[^/]+\/apps\/[^/]+\/status$/ },
  ];
  // Two restarts take 5-15 s when nothing fails.
  readonly windowMs = 8_000;
  readonly watcher = true;
  private ns = '';
  private readonly restarts = 2;

  async setup(w: World): Promise<string> {
    await endRunning(w, 'apps');
    const ns = this.ns = await createNamespace(w, 'faults-apps');
    const config = await writeTendConfig(w, 'apps', { apps: { namespaces: [ns] } });
    await createApp(w.kube, appObject(ns, 'web', [webProcess(2)]));
    return config;
  }

  private pods = async (w: World) => (await w.kube.core.listNamespacedPod({ namespace: this.ns, labelSelector: `${LABEL_APP}=web` })).items;
  private settled = async (w: World) => settled(await getApp(w.kube, this.ns, 'web'));

  async round(w: World, fault: Fault, random: () => number): Promise<RoundResult> {
    const notes: string[] = [];
    const gaps = Array.from({ length: this.restarts }, () => Math.round(random() * 1500));
    const before = await waitFor('App web running on two ready pods', async () => {
      const pods = live(await this.pods(w));
      return (await this.settled(w)) && pods.length === 2 && pods.every(isReady) && pods;
    }, { timeoutMs: 120_000 });
    const mark = await w.audit.mark();
    fault.arm();
    let prior = new Set(before.map((p) => p.metadata!.uid!));
    const made: { stop: number; start: number }[] = [];
    for (const gap of gaps) {
      const stop = Date.now();
      await retry('stop App web', () => patchAppSpec(w.kube, this.ns, 'web', { desiredState: 'STOPPED' }));
      await sleep(gap);
      await retry('start App web', () => patchAppSpec(w.kube, this.ns, 'web', { desiredState: 'STARTED' }));
      made.push({ stop, start: Date.now() });
      const rolled = await waitFor('App web running again on new pods', async () => {
        const pods = live(await this.pods(w));
        return (await this.settled(w)) && pods.length === 2 && pods.every((p) => isReady(p) && !prior.has(p.metadata!.uid!)) && pods;
      }, { timeoutMs: 45_000 }).catch(() => undefined);
      notes.push(`restart with ${gap} ms between stop and start: ${rolled ? 'rolled' : 'not rolled within 45 s'}`);
      prior = new Set(live(await this.pods(w)).map((p) => p.metadata!.uid!));
    }
    await fault.done();
    const ok = await waitFor('App web settled', () => this.settled(w), { timeoutMs: 60_000 }).catch(() => false);
    await sleep(500);
    const writes = (await w.audit.since(mark)).filter((x) => x.namespace === this.ns);
    const oldIds = new Set(before.map((p) => p.metadata!.uid!));
    const oldPodsLeft = live(await this.pods(w)).filter((p) => oldIds.has(p.metadata!.uid!)).map((p) => p.metadata!.name!);
    const outage = await fault.outage();
    const unobservable = outage?.part === 'watcher' ? made.filter((m) => m.stop >= outage.from && m.start <= outage.to).length : 0;
    if (unobservable) notes.push(`${unobservable} restart(s) made while the watcher was down (killed, not yet watching)`);
    notes.push(`${writes.filter((x) => x.resource === 'replicasets' && x.verb === 'create' && x.code < 300).length} ReplicaSet(s) created (rolls)`);
    return {
      violations: checkApps({ app: `${this.ns}/web`, restarts: this.restarts, unobservable, processes: 1, writes, settled: ok, oldPodsLeft }),
      notes,
    };
  }

  async teardown(w: World) {
    await deleteNamespace(w, this.ns);
  }
}

export function scenarioFor(c: Capability): Scenario {
  switch (c) {
    case 'weeder': return new WeederScenario();
    case 'taint': return new TaintScenario();
    case 'repair': return new RepairScenario();
    case 'apps': return new AppsScenario();
  }
}
