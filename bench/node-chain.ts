// The node repair chain's benchmark (not a test), on sandboxes of its own with tend run on
// deploy/demo/node-repair.yaml (its own task queue, tend's own credentials and the rights `tend
// rbac` generates for it). Two phases:
//   - single: one Node's heartbeats stop; the time from the stop to each stage of the chain
//     (Ready=Unknown, the unreachable taint, the first pod marked NodeTaintDetected, the managed pods
//     replaced, the repair entry listed, its command run, the Node Ready, the taint lifted, the
//     conditions cleared, the entry succeeded), and the Temporal actions of the incident, counted from
//     the histories of the Node's workflows (TendNode = NODE, taint/NODE, node/NODE, repair/<index>)
//     and of the repair queue while it lasted;
//   - outage: a zone's Nodes (a third) stop at once on the largest sandbox; the repair entries
//     queued and the refusals by reason, from the repair queue's list, the countdowns' answers and
//     the Nodes' Events (NodeRepairQueued, NodeRepairRefused); the managed pods marked and replaced.
// A stage never reached is reported as null; the JSON goes to stdout (docs/bench/repair.md, "The node repair chain").
//
//   node bench/node-chain.ts [--phase single|outage|both] [--nodes 3] [--outage-nodes 1024]
//     [--outage-pods 60] [--state-dir DIR] [--port-offset 500] [--stage-timeout 300]
//     [--manual-entry] [--keep]
//
// --manual-entry: the benchmark adds the repair entry itself (`tend repair-queue add`) once the
// Node has been Unknown for the configured duration and no entry is listed: the chain after the
// entry can be timed where nothing queues it (the entry's stage is then the benchmark's own).
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { get } from 'node:http';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { parse as parseYaml, parseAllDocuments, stringify as toYaml } from 'yaml';
import { kubeClients, loadKubeConfig, type KubeClients } from '../src/kube/client.ts';
import { applyObjects, grantRightsFor } from '../src/sandbox/bootstrap.ts';
import { down, up, type SandboxInfo } from '../src/sandbox/sandbox.ts';
import { HEARTBEAT_ANNOTATION } from '../src/sandbox/kubelet/annotations.ts';
import { startHeartbeats, stopHeartbeats } from '../src/sandbox/kubelet/index.ts';
import { MAX_NODES } from '../src/sandbox/kubelet/ipam.ts';
import { ZONES } from '../src/sandbox/kubelet/node-status.ts';
import { listEntries } from '../src/starters/repair-commands.ts';
import { DETECTED } from '../src/taint/messages.ts';
import type { RepairQueueEntry } from '../src/repair/entry.ts';
import { REPAIR_QUEUE_WORKFLOW_ID } from '../src/repair/messages.ts';
import { pool, say, sleep, waitFor } from './lib/taint-support.ts';
import { spawnTend } from './lib/tend-process.ts';
import { ensureWorkflowBundle } from '../src/workers/worker.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const tendBin = join(repo, 'bin', 'tend');
const { values: opts } = parseArgs({ options: {
  phase: { type: 'string', default: 'both' },
  nodes: { type: 'string', default: '3' },
  'outage-nodes': { type: 'string', default: String(MAX_NODES) },
  'outage-pods': { type: 'string', default: '60' },
  'state-dir': { type: 'string', default: join(repo, '.tend', 'bench-node-chain') },
  'port-offset': { type: 'string', default: '500' },
  'stage-timeout': { type: 'string', default: '300' },
  'manual-entry': { type: 'boolean', default: false },
  keep: { type: 'boolean', default: false },
} });
const PHASES = ['single', 'outage', 'both'];
if (!PHASES.includes(opts.phase)) {
  console.error(`bench node-chain: --phase must be one of ${PHASES.join(', ')}`);
  process.exit(2);
}
const STAGE_TIMEOUT_MS = Number(opts['stage-timeout']) * 1000;
const DEMO_CONFIG = join(repo, 'deploy/demo/node-repair.yaml');
const DEMO_PODS = join(repo, 'deploy/demo/taint.yaml');
const TASK_QUEUE = 'tend-bench-node-chain';
const UNREACHABLE = 'node.kubernetes.io/unreachable';
const NS = 'demo-taint';
const STORE = 'store';
const run = promisify(execFile);
/** --manual-entry adds the entry this long after the Node's condition has lasted its duration. */
const MANUAL_GRACE_MS = 10_000;

interface Phase {
  info: SandboxInfo;
  kube: KubeClients;
  client: Client;
  config: string;
  tend: ChildProcess;
  /** The configured Ready=Unknown duration (ms). */
  durationMs: number;
  /** nodeRepair's limits, as configured. */
  limits: unknown;
  close: () => Promise<void>;
}

/** A sandbox of `nodes` Nodes, the demo's managed pods (`pods` of them), and tend run on the demo's node repair configuration. */
async function phase(name: string, nodes: number, offset: number, pods?: number): Promise<Phase> {
  const stateDir = resolve(opts['state-dir'], name);
  const p = (port: number) => port + offset;
  say(`${name}: sandbox of ${nodes} nodes in ${stateDir}`);
  // A Node an interrupted run left stopped would keep the sandbox from coming up (it waits for every Node Ready).
  await restartNodes(join(stateDir, 'kubeconfig')).catch(() => undefined);
  const info = await up({
    stateDir,
    settings: {
      nodes, timeScale: 0.1,
      ports: { etcdClient: p(24790), etcdPeer: p(25800), apiserver: p(17443), controllerManager: p(11357), scheduler: p(11359), temporal: p(7333), temporalUi: p(8333) },
    },
    progress: (m) => say(m),
  });
  const kube = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));

  // The demo's managed pods (deploy/demo/taint.yaml), scaled for the phase.
  const objects = parseAllDocuments(await readFile(DEMO_PODS, 'utf8')).map((d) => d.toJS() as k8s.KubernetesObject).filter((o) => o?.kind);
  if (pods !== undefined) {
    for (const o of objects) if (o.kind === 'Deployment') (o as k8s.V1Deployment).spec!.replicas = pods;
  }
  await applyObjects(info.kubeconfig, objects);
  const replicas = (await kube.apps.readNamespacedDeployment({ namespace: NS, name: STORE })).spec!.replicas!;
  await waitFor(`${replicas} ${STORE} pods ready`, async () => (await storePods(kube)).filter((x) => ready(x) && !x.metadata?.deletionTimestamp).length >= replicas, 10 * 60_000, 1000);

  // The demo's configuration, on this sandbox: its Temporal, tend's own credentials, a task queue of its own.
  const demo = parseYaml(await readFile(DEMO_CONFIG, 'utf8')) as Record<string, unknown> & { temporal?: object; nodeRepair: { unhealthyConditions: { duration: string }[]; limits: unknown } };
  const dir = join(stateDir, 'bench');
  await mkdir(dir, { recursive: true });
  const config = join(dir, 'tend.yaml');
  await writeFile(config, toYaml({
    ...demo,
    temporal: { ...demo.temporal, address: info.temporalAddress, taskQueue: TASK_QUEUE },
    kubernetes: { kubeconfig: info.tendKubeconfig },
  }));
  await grantRightsFor(info.kubeconfig, config, 'tend-bench-node-chain');
  const durationMs = goSeconds(demo.nodeRepair.unhealthyConditions[0]!.duration) * 1000;

  const connection = await Connection.connect({ address: info.temporalAddress });
  const client = new Client({ connection });
  // A clean start: no run of an earlier benchmark left running, the repair queue with its entries
  // included (started again empty by the first add or ask; a kept sandbox's queue may also have run
  // other code than this).
  for await (const wf of client.workflow.list({ query: 'ExecutionStatus = "Running"' })) {
    await client.workflow.getHandle(wf.workflowId).terminate('benchmark restart').catch(() => undefined);
  }

  // tend as the demo runs it: the commands find `tend` on PATH and the sandbox in TEND_SANDBOX_DIR.
  const httpPort = 19490 + (offset % 500);
  await ensureWorkflowBundle();
  const tend = spawnTend(['run', '--config', config, '--http-address', `127.0.0.1:${httpPort}`], {
    env: { PATH: `${join(repo, 'bin')}:${process.env.PATH ?? ''}`, TEND_SANDBOX_DIR: stateDir, TEND_LOG_LEVEL: 'warn', TEND_LOG_FORMAT: 'text' },
  });
  // Its warnings, each line cut short (an activity's failure repeats the worker's whole list of activities).
  tend.stderr!.on('data', (d: Buffer) => {
    for (const line of String(d).split('\n')) if (line.trim()) process.stderr.write(`[tend] ${line.slice(0, 400)}\n`);
  });
  process.on('exit', () => tend.kill('SIGKILL'));
  await waitFor('tend ready (/readyz)', () => httpOk(httpPort, '/readyz'), 120_000, 1000);

  return {
    info, kube, client, config, tend, durationMs, limits: demo.nodeRepair.limits,
    close: async () => {
      tend.kill('SIGTERM');
      await connection.close();
      if (!opts.keep) await down(stateDir);
    },
  };
}

// ----------------------------------------------------------------------------- single Node

/** Milliseconds from the stop to each stage; null where it was not reached. */
const STAGES = ['readyUnknown', 'unreachableTaint', 'firstPodMarked', 'firstPodReplaced', 'podsReplaced', 'entryQueued', 'repairCommandRun',
  'nodeReady', 'taintLifted', 'conditionsCleared', 'entrySucceeded'] as const;
type Stage = (typeof STAGES)[number];

async function single(ph: Phase) {
  const { kube, client } = ph;
  // A Node holding the fewest managed pods, one at least: the demo's PodDisruptionBudget (minAvailable
  // 2 of 3) lets one pod go at a time, so the pods of a Node holding two would stay until it is back.
  const byNode = new Map<string, k8s.V1Pod[]>();
  for (const pod of await storePods(kube)) byNode.set(pod.spec!.nodeName!, [...(byNode.get(pod.spec!.nodeName!) ?? []), pod]);
  const [node, onNode] = [...byNode.entries()].sort((a, b) => a[1].length - b[1].length || a[0].localeCompare(b[0]))[0]!;
  const address = internalIP(await kube.core.readNode({ name: node }))!;
  const originals = new Set(onNode.map((x) => x.metadata!.uid!));
  const replicas = (await kube.apps.readNamespacedDeployment({ namespace: NS, name: STORE })).spec!.replicas!;
  say(`single: stopping ${node} (${address}), which holds ${onNode.length} of the ${replicas} managed pods`);

  const at: Partial<Record<Stage, number>> = {};
  let entry: RepairQueueEntry | undefined;
  let added = false;
  let replaced = 0;
  const t0 = Date.now();
  const start = new Date(t0);
  await stopHeartbeats(loadKubeConfig({ kubeconfig: ph.info.kubeconfig }), node);
  const seen = (stage: Stage, when: boolean) => {
    if (when && at[stage] === undefined) {
      at[stage] = Date.now() - t0;
      say(`single: ${stage} at ${(at[stage]! / 1000).toFixed(1)} s`);
    }
  };
  let lastEntries = 0;
  const deadline = t0 + STAGE_TIMEOUT_MS * 3;
  while (at.entrySucceeded === undefined && Date.now() < deadline) {
    const n = await kube.core.readNode({ name: node });
    const readyStatus = n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
    const tainted = Boolean(n.spec?.taints?.some((x) => x.key === UNREACHABLE));
    const pods = await storePods(kube);
    seen('readyUnknown', readyStatus === 'Unknown');
    seen('unreachableTaint', tainted);
    seen('firstPodMarked', pods.some((x) => originals.has(x.metadata!.uid!) && marked(x)));
    const left = pods.filter((x) => originals.has(x.metadata!.uid!) && !x.metadata?.deletionTimestamp).length;
    const serving = pods.filter((x) => !originals.has(x.metadata!.uid!) && ready(x) && !x.metadata?.deletionTimestamp).length;
    // Replaced: evicted, and as many ready elsewhere as before (a pod left while the Node came back first is not).
    replaced = Math.max(replaced, originals.size - left);
    seen('firstPodReplaced', left < originals.size && serving >= replicas - left);
    seen('podsReplaced', left === 0 && serving >= replicas);
    if (Date.now() - lastEntries >= 1000) {
      lastEntries = Date.now();
      const entries = await listEntries(client).catch(() => undefined);
      entry = entries?.find((e) => e.nodename === node || e.address === address) ?? entry;
      seen('entryQueued', entry !== undefined);
      seen('entrySucceeded', entry?.status === 'succeeded');
      if (entry?.status === 'failed') {
        say(`single: entry ${entry.index} failed`);
        break;
      }
      // MANUAL_GRACE_MS past the duration, so that tend's own entry, when it comes, comes first.
      if (opts['manual-entry'] && !added && !entry && at.readyUnknown !== undefined && Date.now() - t0 - at.readyUnknown >= ph.durationMs + MANUAL_GRACE_MS) {
        added = true;
        const r = await tendCli(['repair-queue', 'add', '--config', ph.config, 'unreachable', 'sim', address]);
        say(`single: entry added by the benchmark: ${r.stdout.trim()}`);
      }
    }
    seen('repairCommandRun', entry !== undefined && at.readyUnknown !== undefined && !n.metadata?.annotations?.[HEARTBEAT_ANNOTATION]);
    seen('nodeReady', at.readyUnknown !== undefined && readyStatus === 'True');
    seen('taintLifted', at.unreachableTaint !== undefined && !tainted);
    seen('conditionsCleared', at.nodeReady !== undefined && !pods.some((x) => x.spec?.nodeName === node && marked(x)));
    await sleep(250);
  }
  const missing = STAGES.filter((s) => at[s] === undefined);
  if (missing.length) say(`single: not reached within ${((deadline - t0) / 1000).toFixed(0)} s: ${missing.join(', ')}`);
  // The Node comes back whatever happened, so the sandbox can be used again.
  await startHeartbeats(loadKubeConfig({ kubeconfig: ph.info.kubeconfig }), node);

  // The incident's runs end (the countdown on recovery, taint/NODE once no managed pod is marked) before they are counted.
  const ids = [`taint/${node}`, `node/${node}`, ...(entry ? [`repair/${entry.index}`, `repair/${entry.index}/lift`] : [])];
  const byId = ids.map((id) => `WorkflowId = "${id}"`).join(' OR ');
  const query = `(TendNode = "${node}" OR ${byId}) AND StartTime >= "${start.toISOString()}"`;
  await waitFor('the incident\'s runs closed', async () => {
    const open = (await incidentRuns(client, query, byId, start)).filter((r) => r.status === 'RUNNING');
    return open.length === 0;
  }, 60_000, 2000).catch(() => say('single: some of the incident\'s runs still run; counted as they are'));
  const end = new Date();
  const runs = await incidentRuns(client, query, byId, start);
  const actions = await countActions(client, runs, (id) => id.split('/')[0]!);
  const queue = await countActions(client, [{ workflowId: REPAIR_QUEUE_WORKFLOW_ID }], () => 'repair-queue', { from: start, to: end });
  return {
    node, address, managedPodsOnNode: onNode.length, managedPodsReplaced: replaced, replicas,
    readyUnknownDuration: `${ph.durationMs / 1000}s`, entryAddedByBenchmark: added,
    entry: entry && { index: entry.index, status: entry.status, step: entry.step, stepStatus: entry.step_status },
    stagesMs: Object.fromEntries(STAGES.map((s) => [s, at[s] ?? null])),
    runs: runs.map((r) => `${r.workflowId} (${r.type})`),
    actions: { incident: actions, repairQueueMeanwhile: queue },
  };
}

// ----------------------------------------------------------------------------- zone outage

async function outage(ph: Phase) {
  const { kube, client } = ph;
  const all = (await kube.core.listNode()).items;
  const zone = ZONES[0];
  const stopped = all.filter((n) => n.metadata?.labels?.['topology.kubernetes.io/zone'] === zone).map((n) => n.metadata!.name!);
  const stoppedAddresses = new Set(all.filter((n) => stopped.includes(n.metadata!.name!)).map(internalIP));
  const onStopped = (await storePods(kube)).filter((x) => stopped.includes(x.spec?.nodeName ?? ''));
  const originals = new Set(onStopped.map((x) => x.metadata!.uid!));
  say(`outage: stopping ${zone}: ${stopped.length} of ${all.length} Nodes, holding ${onStopped.length} managed pods`);
  const t0 = Date.now();
  const start = new Date(t0);
  const kc = loadKubeConfig({ kubeconfig: ph.info.kubeconfig });
  await pool(stopped, 25, (n) => stopHeartbeats(kc, n));

  // Every stopped Node's countdown has answered (its duration passed), or the time is up.
  const decided = async () => {
    const events = await nodeRepairEvents(kube, new Set(stopped), start);
    const nodesWithEvent = new Set(events.map((e) => e.node));
    say(`outage: ${nodesWithEvent.size}/${stopped.length} Nodes with a NodeRepairQueued/Refused Event`);
    return nodesWithEvent.size >= stopped.length ? events : false;
  };
  await waitFor('a decision for every stopped Node', decided, STAGE_TIMEOUT_MS, 5000).catch(() => say('outage: not every stopped Node has a decision'));
  const decidedMs = Date.now() - t0;
  const pods = await storePods(kube);
  const markedPods = pods.filter((x) => originals.has(x.metadata!.uid!) && marked(x)).length;
  const replacedPods = [...originals].filter((uid) => !pods.some((x) => x.metadata!.uid === uid && !x.metadata?.deletionTimestamp)).length;
  // The entries queued run to their end; the others stay refused while those entries are in the queue (until deleted).
  const ourEntries = async () => (await listEntries(client).catch(() => [] as RepairQueueEntry[]))
    .filter((e) => stopped.includes(e.nodename) || stoppedAddresses.has(e.address));
  await waitFor('the queued entries finished', async () => {
    const entries = await ourEntries();
    return entries.length > 0 && entries.every((e) => e.status === 'succeeded' || e.status === 'failed');
  }, STAGE_TIMEOUT_MS, 2000).catch(() => say('outage: not every queued entry finished'));
  const finishedMs = Date.now() - t0;
  const ours = await ourEntries();
  const events = await nodeRepairEvents(kube, new Set(stopped), start);
  // The countdowns' own last answers (the reason of a refusal, as the Web UI shows it).
  const answers: Record<string, number> = {};
  await pool(stopped, 8, async (n) => {
    const s = await client.workflow.getHandle(`node/${n}`).query<{ answer?: { decision: string; reason?: string } }>('status').catch(() => undefined);
    const key = s?.answer ? `${s.answer.decision}${s.answer.reason ? `/${s.answer.reason}` : ''}` : 'none';
    answers[key] = (answers[key] ?? 0) + 1;
  });

  await pool(stopped, 25, (n) => startHeartbeats(kc, n));
  return {
    nodes: all.length, stoppedNodes: stopped.length, managedPodsOnStopped: onStopped.length,
    limits: ph.limits,
    // From the stop: every stopped Node's countdown answered once; the queued entries finished.
    decidedMs, entriesFinishedMs: finishedMs,
    entriesQueued: ours.length,
    entriesByStatus: countBy(ours.map((e) => e.status)),
    events: countBy(events.map((e) => `${e.reason}${e.limiter ? `/${e.limiter}` : ''}`)),
    countdownAnswers: answers,
    // When every stopped Node had been answered once.
    managedPods: { marked: markedPods, replaced: replacedPods },
  };
}

// ----------------------------------------------------------------------------- helpers

/** Resumes the heartbeats of every stopped Node of the sandbox whose admin kubeconfig this is. */
async function restartNodes(kubeconfig: string): Promise<void> {
  const kc = loadKubeConfig({ kubeconfig });
  const stopped = (await kubeClients(kc).core.listNode()).items.filter((n) => n.metadata?.annotations?.[HEARTBEAT_ANNOTATION]);
  await pool(stopped, 25, (n) => startHeartbeats(kc, n.metadata!.name!));
}

const storePods = async (kube: KubeClients) => (await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `app=${STORE}` })).items;
const ready = (pod: k8s.V1Pod) => Boolean(pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
const marked = (pod: k8s.V1Pod) => Boolean(pod.status?.conditions?.some((c) => c.type === DETECTED && c.status === 'True'));
const internalIP = (n: k8s.V1Node) => n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;

function countBy(items: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of items) out[x] = (out[x] ?? 0) + 1;
  return out;
}

/** Seconds of a Go duration as the demo writes it (`20s`, `5m`, `1m30s`). */
function goSeconds(text: string): number {
  const unit: Record<string, number> = { h: 3600, m: 60, s: 1 };
  let total = 0;
  for (const [, n, u] of text.matchAll(/(\d+(?:\.\d+)?)(h|m|s)/g)) total += Number(n) * unit[u!]!;
  return total;
}

function httpOk(port: number, path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.once('error', () => resolve(false));
    req.once('timeout', () => req.destroy());
  });
}

function tendCli(args: string[]) {
  return run(tendBin, args, { env: { ...process.env, TEND_LOG_FORMAT: 'text' } });
}

/** The limiter a refusal's sentence names (src/noderepair/decide.ts words them), for counting. */
function limiterOf(note: string): string | undefined {
  if (/already has an entry for/.test(note)) return 'recent-entry';
  if (/in a planned reboot/.test(note)) return 'rebooting';
  if (/the repair queue has \d+ entries/.test(note)) return 'cluster-limit';
  if (/Nodes nodeSelector selects are healthy/.test(note)) return 'storm';
  return undefined;
}

/** tend's NodeRepairQueued and NodeRepairRefused Events on these Nodes since `since`, each counted as often as it was seen. */
async function nodeRepairEvents(kube: KubeClients, nodes: ReadonlySet<string>, since: Date) {
  const out: { node: string; reason: string; limiter?: string }[] = [];
  let _continue: string | undefined;
  do {
    const page = await kube.events.listEventForAllNamespaces({ limit: 500, ...(_continue && { _continue }) });
    for (const e of page.items) {
      if (e.reason !== 'NodeRepairQueued' && e.reason !== 'NodeRepairRefused') continue;
      const node = e.regarding?.name ?? '';
      const last = e.series?.lastObservedTime ?? e.eventTime ?? e.metadata?.creationTimestamp;
      if (e.regarding?.kind !== 'Node' || !nodes.has(node) || (last && new Date(last as unknown as string) < since)) continue;
      const limiter = e.reason === 'NodeRepairRefused' ? limiterOf(e.note ?? '') ?? 'other' : undefined;
      for (let i = 0; i < (e.series?.count ?? 1); i++) out.push({ node, reason: e.reason, ...(limiter && { limiter }) });
    }
    _continue = page.metadata?._continue;
  } while (_continue);
  return out;
}

interface Run { workflowId: string; runId?: string; type?: string; status?: string }

/** The incident's runs: by TendNode and by their ids, or by their ids alone where TendNode is not registered. */
async function incidentRuns(client: Client, query: string, byId: string, start: Date): Promise<Run[]> {
  const list = async (q: string) => {
    const out: Run[] = [];
    for await (const wf of client.workflow.list({ query: q })) out.push({ workflowId: wf.workflowId, runId: wf.runId, type: wf.type, status: wf.status.name });
    return out;
  };
  try {
    return await list(query);
  } catch (err) {
    if (!/TendNode/.test((err as Error).message)) throw err;
    return list(`(${byId}) AND StartTime >= "${start.toISOString()}"`);
  }
}

/** The history events that are Temporal actions, by kind. */
const ACTION_KINDS: Record<string, string> = {
  workflowExecutionStarted: 'workflowsStarted',
  workflowExecutionContinuedAsNew: 'continuedAsNew',
  startChildWorkflowExecutionInitiated: 'childWorkflowsStarted',
  activityTaskScheduled: 'activities',
  workflowExecutionSignaled: 'signalsReceived',
  signalExternalWorkflowExecutionInitiated: 'signalsSent',
  workflowExecutionUpdateAccepted: 'updates',
  timerStarted: 'timers',
  upsertWorkflowSearchAttributes: 'searchAttributeUpserts',
};
/** The marker a local activity's result is recorded under (a patch's marker is not an action). */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/** Actions by `group.kind` and their sum by group; with `window`, only the events within it (a shared workflow's). */
async function countActions(client: Client, runs: readonly Run[], groupOf: (id: string) => string, window?: { from: Date; to: Date }) {
  const out: Record<string, number> = {};
  await pool([...runs], 4, async (r) => {
    const history = await client.workflow.getHandle(r.workflowId, r.runId).fetchHistory().catch(() => undefined);
    for (const e of history?.events ?? []) {
      const time = e.eventTime?.seconds ? Number(e.eventTime.seconds) * 1000 : undefined;
      if (window && time !== undefined && (time < window.from.getTime() - 1000 || time > window.to.getTime())) continue;
      const type = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
      const name = type?.replace(/EventAttributes$/, '') ?? '';
      const kind = name === 'markerRecorded' && e.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER ? 'localActivities' : ACTION_KINDS[name];
      if (!kind) continue;
      const key = `${groupOf(r.workflowId)}.${kind}`;
      out[key] = (out[key] ?? 0) + 1;
    }
  });
  const total: Record<string, number> = {};
  for (const [k, v] of Object.entries(out)) total[k.split('.')[0]!] = (total[k.split('.')[0]!] ?? 0) + v;
  return { byKind: Object.fromEntries(Object.entries(out).sort()), byGroup: total, total: Object.values(out).reduce((a, b) => a + b, 0) };
}

// ----------------------------------------------------------------------------- main

// Interrupted, it takes its tend with it (the exit hooks above).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));
const offset = Number(opts['port-offset']);
const result: Record<string, unknown> = {
  startedAt: new Date().toISOString(), config: 'deploy/demo/node-repair.yaml', manualEntry: opts['manual-entry'],
};
if (opts.phase !== 'outage') {
  const ph = await phase('single', Number(opts.nodes), offset);
  try {
    result.single = await single(ph);
  } finally {
    await ph.close();
  }
}
if (opts.phase !== 'single') {
  // Ports of their own, so that a single phase kept with --keep can run beside it.
  const ph = await phase('outage', Number(opts['outage-nodes']), offset + 10, Number(opts['outage-pods']));
  try {
    result.outage = await outage(ph);
  } finally {
    await ph.close();
  }
}
console.log(JSON.stringify(result, null, 2));
process.exit(0);
