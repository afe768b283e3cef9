// `npm run fuzz -- [--messages N] [--seed S] [--time-limit SECONDS] [--batch N] [--concurrency N]`: the message fuzzer.
// On a sandbox of its own (or a running one it reuses, with kube-apiserver's
// audit log turned on), with tend's worker and watcher running all four
// capabilities at small limits, it sends generated messages to every handler
// and start input of every workflow type tend hosts, in batches, each beside
// normal operation (a repair, a taint, an App restart, a Service recovery),
// and after each batch checks the invariants (fuzz/invariants.ts). Prints a
// table per workflow type and handler, and exits 1 on any violation. Leaves
// nothing running. Bounded in time: no message is sent past --time-limit, and
// the run ends (the batch in hand checked, everything it started ended) within
// TAIL_MS after it, or stops itself saying so. See docs/security.md.
import { open, readFile, writeFile, mkdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { TEND_USER } from '../src/sandbox/sandbox.ts';
import { kubeClients, loadKubeConfig } from '../src/kube/client.ts';
import { freeLoopbackPort } from '../src/workers/runtime.ts';
import { REPAIR_QUEUE_WORKFLOW_ID, enableUpdate, listQuery } from '../src/repair/messages.ts';
import { SLOTS_WORKFLOW_ID, slotsStatusQuery } from '../src/taint/messages.ts';
import { SAFETY_WORKFLOW_ID } from '../src/safety/messages.ts';
import { getApp } from '../test/harness/apps.ts';
import { waitFor } from '../test/harness/wait.ts';
import { auditedSandbox } from '../faults/sandbox.ts';
import { peakInFlight, replacingMarks, replicaSetStatuses } from '../faults/invariants.ts';
import { Tend } from '../faults/world.ts';
import { Draw } from './generate.ts';
import { type Context, exportedBounds, type Message, nextMessage, targets } from './targets.ts';
import { commandRuns, cordons, historySize, identity, outsideConfiguration, repairLimit, stuckTask, taskFailures, type Violation } from './invariants.ts';
import { bounded, eachAtMost, fuzzClient, Lanes, send } from './send.ts';
import { cordonedNodes, MAX_CONCURRENT_REPAIRS, MAX_CONCURRENT_REPLACEMENTS, probeApps, probeRepair, probeTaint, probeWeeder, setUp, startSafety, taintLater, TASK_QUEUE, uncordon, untaint, untaintLater, type ProbeResult, type Setup } from './world.ts';
import { expectedId, formatReport, type Row, rowKey } from './report.ts';

/** What --report writes: the table's rows and every violation (the e2e test reads it). */
export interface FuzzReport {
  seed: number;
  /** Messages asked for (--messages), and sent. */
  total: number;
  sent: number;
  batches: number;
  /** Sending stopped at --time-limit, before `total` were sent. */
  timeLimited: boolean;
  /** The run's time, from its start to its report. */
  seconds: number;
  rows: Row[];
  violations: (Violation & { batch: number })[];
  /** The run itself failed (the sandbox, tend, a probe's setup): its stack. */
  error?: string;
}

const repo = fileURLToPath(new URL('..', import.meta.url));
/**
 * After the time limit, at most: the batch in hand's sends still in flight (20 s), its probe round
 * (PROBE_MAX_MS, 4 min), its checks (the later taint lifted, a cordon waited out, the histories
 * read: 2 min) and the run's end (the watcher stopped, its workflows given a minute to end, the
 * worker stopped: 2.5 min), with room to spare.
 */
const TAIL_MS = 10 * 60_000;
const usage = `usage: npm run fuzz -- [--messages N] [--seed S] [--time-limit SECONDS] [--batch N] [--concurrency N]
                     [--state-dir DIR] [--port-offset N] [--report FILE] [--down]
  --time-limit  no message is sent past it (default 3600); the run then checks the batch in hand
                and ends what it started, within ${TAIL_MS / 60_000} more minutes, or stops itself saying so
  --batch       messages per batch, each beside one round of normal operation, then checked (default 1000)
  --concurrency messages in flight at once, to different workflows (default 16)`;

function fail(message: string): never {
  console.error(`fuzz: ${message}\n${usage}`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      messages: { type: 'string', default: '2000' },
      seed: { type: 'string' },
      'time-limit': { type: 'string', default: '3600' },
      batch: { type: 'string', default: '1000' },
      concurrency: { type: 'string', default: '16' },
      'state-dir': { type: 'string', default: join(repo, '.tend', 'fuzz') },
      'port-offset': { type: 'string', default: '90' },
      report: { type: 'string' },
      down: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
} catch (err) {
  fail((err as Error).message);
}
const { values: opts } = parsed;
if (opts.help) {
  console.log(usage);
  process.exit(0);
}
const whole = (name: string, text: string, least: number) => {
  if (!/^\d{1,9}$/.test(text) || Number(text) < least) fail(`--${name} must be a whole number of at least ${least} (got "${text}")`);
  return Number(text);
};
const total = whole('messages', opts.messages, 1);
const seed = opts.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : whole('seed', opts.seed, 0);
const timeLimitMs = whole('time-limit', opts['time-limit'], 1) * 1000;
const batchSize = whole('batch', opts.batch, 1);
const concurrency = whole('concurrency', opts.concurrency, 1);
const offset = whole('port-offset', opts['port-offset'], 0);
const stateDir = resolve(opts['state-dir']);
const began = Date.now();
const deadline = began + timeLimitMs;

const say = (m: string) => console.error(`[fuzz ${new Date().toISOString().slice(11, 19)}] ${m}`);
say(`seed ${seed} (repeat with --seed ${seed}); ${total} message(s) in batches of ${batchSize}, ${concurrency} at once; `
  + `sending for at most ${timeLimitMs / 1000} s, ending within ${(timeLimitMs + TAIL_MS) / 1000} s`);

// The sandbox: reused when it runs, else started; its audit log on.
const { info, audit } = await auditedSandbox(stateDir, offset, say);
say(`sandbox ${stateDir}: kube-apiserver ${info.apiserver}, Temporal ${info.temporalAddress} (loopback); audit log ${audit.path}`);

const kube = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));
const client = await fuzzClient(info.temporalAddress);
const dir = join(stateDir, 'fuzz-runs', new Date().toISOString().replace(/[:.]/g, '-'));
await mkdir(dir, { recursive: true, mode: 0o700 });

/** Workflows on tend-fuzz's task queue still running (`everywhere`: on any task queue). */
async function running(everywhere = false): Promise<{ workflowId: string; runId: string; taskQueue: string }[]> {
  const out: { workflowId: string; runId: string; taskQueue: string }[] = [];
  await bounded(60_000, 'the list of running workflows', (async () => {
    for await (const wf of client.workflow.list({ query: `${everywhere ? '' : `TaskQueue="${TASK_QUEUE}" AND `}ExecutionStatus="Running"` })) {
      out.push({ workflowId: wf.workflowId, runId: wf.runId, taskQueue: wf.taskQueue });
    }
  })());
  return out;
}
async function terminate(wfs: { workflowId: string; runId: string }[], why: string) {
  await eachAtMost(8, wfs, async (wf) => {
    await bounded(10_000, 'terminate', client.workflow.getHandle(wf.workflowId, wf.runId).terminate(why)).catch(() => undefined);
  });
}
const terminateAll = async (why: string) => terminate(await running(), why);

/**
 * A fresh start: nothing of an earlier run cut short, and nothing under tend's well-known ids or its
 * per-Node and per-entry ids on any task queue (an earlier test's, on a shared test sandbox): tend
 * fails closed on such a workflow, and the run's queries and updates to it would wait for a worker.
 */
const tendsId = (id: string) => [REPAIR_QUEUE_WORKFLOW_ID, SLOTS_WORKFLOW_ID, SAFETY_WORKFLOW_ID].includes(id) || /^(repair|taint)\//.test(id);
const leftovers = (await running(true)).filter((wf) => wf.taskQueue === TASK_QUEUE || tendsId(wf.workflowId));
if (leftovers.length) say(`ending what was left running: ${leftovers.map((wf) => `${wf.workflowId} (task queue ${wf.taskQueue})`).join(', ')}`);
await terminate(leftovers, 'fuzz: a fresh start');
await deleteRunNamespaces();

const ts = targets();
const bounds = exportedBounds();
const typeOf = new Map(ts.map((t) => [t.workflowType, t.type]));
const rows = new Map<string, Row>();
for (const t of ts) {
  for (const h of t.handlers) rows.set(rowKey(t.type, h.name, h.kind), { type: t.type, handler: h.name, kind: h.kind, sent: 0, refused: 0, ignored: 0, accepted: 0, delivered: 0, violations: 0, families: {} });
  rows.set(rowKey(t.type, 'start', 'start'), { type: t.type, handler: 'start', kind: 'start', sent: 0, refused: 0, ignored: 0, accepted: 0, delivered: 0, violations: 0, families: {} });
}
const violations: (Violation & { batch: number })[] = [];
const refusals = new Map<string, string>();
const d = new Draw(seed);

let setup: Setup | undefined;
let tend: Tend | undefined;
/**
 * A hand start under one of tend's own ids: it keeps tend's workflow out while it runs (until `to`).
 * The probes of the capabilities it holds up are allowed their watcher's resync after it.
 */
interface Squat { id: string; capabilities: ProbeResult['capability'][]; from: number; to?: number }
const squats: Squat[] = [];
/** The longest a watcher takes to look again (the apps watch's resync; the taint watch's, and its wait after a recent start). */
const RESYNC_MS = 60_000;
const CAPABILITIES = ['repair', 'taint', 'apps', 'weeder'] as const;
/** The capabilities whose workflow would run under this id (tend-safety's: every one, as their pause reader fails closed). */
function heldUp(id: string): ProbeResult['capability'][] {
  if (id === SAFETY_WORKFLOW_ID) return [...CAPABILITIES];
  if (id === REPAIR_QUEUE_WORKFLOW_ID || id.startsWith('repair/')) return ['repair'];
  if (id === SLOTS_WORKFLOW_ID || id.startsWith('taint/')) return ['taint'];
  if (id.startsWith('app/')) return ['apps'];
  if (id.startsWith('weeder/')) return ['weeder'];
  return [];
}
/**
 * What a probe of `capability` begun at `from` is allowed past its usual time: the resync after the
 * last hand start that held it up (under its one-of-a-kind ids, or under `ids`, the probe's own).
 */
const allowanceFor = (capability: ProbeResult['capability']) => (from: number, ids?: string[]) => {
  const now = Date.now();
  let extra = 0;
  for (const q of squats) {
    const mine = !ids || ids.includes(q.id) || [SAFETY_WORKFLOW_ID, REPAIR_QUEUE_WORKFLOW_ID, SLOTS_WORKFLOW_ID].includes(q.id);
    if (mine && q.capabilities.includes(capability)) extra = Math.max(extra, (q.to ?? now) + RESYNC_MS - from);
  }
  return extra;
};

/** Hand starts still to be looked at and ended, with when each was started. */
let handStarts: { m: Message; runId: string; at: number; squat?: Squat }[] = [];
/** Each run's last event looked at; runs closed and looked at are done. */
const seenEvents = new Map<string, number>();
const done = new Set<string>();
/** Runs whose size or stuck task was reported already. */
const reported = new Set<string>();
let sent = 0;
let batches = 0;

/** What a read of the run's facts gets when no answer comes (a workflow on a task queue nobody polls never answers a query). */
const answered = <T>(what: string, p: Promise<T>, otherwise: T) => bounded(10_000, what, p).catch(() => otherwise);

async function readContext(s: Setup): Promise<Context> {
  const c: Context = {
    taskQueue: TASK_QUEUE, namespace: s.namespace, outside: 'kube-system', nodes: s.nodes, service: 'db', app: 'web',
    appGeneration: 1, repairIndexes: [], runningEntries: [], pods: [], inFlight: [], running: {}, seed,
  };
  await answered('the list of running workflows', (async () => {
    for await (const wf of client.workflow.list({ query: `TaskQueue="${TASK_QUEUE}" AND ExecutionStatus="Running"` })) {
      (c.running[wf.type] ??= []).push(wf.workflowId);
    }
  })(), undefined);
  const app = await answered('App web', getApp(kube, s.namespace, 'web'), undefined);
  if (app) {
    c.appGeneration = app.metadata.generation ?? 1;
    c.appUid = (app.metadata as { uid?: string }).uid;
  }
  const list = await answered('the queue\'s list', client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(listQuery), []);
  c.repairIndexes = list.map((e) => e.index);
  const queue = await answered('the queue\'s description', client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).describe(), undefined);
  c.queueChain = (queue?.raw.workflowExecutionInfo as { firstRunId?: string } | undefined)?.firstRunId ?? undefined;
  for (const e of list) if (e.status === 'processing' && c.queueChain) c.runningEntries.push({ index: e.index, queue: c.queueChain });
  const pods = (await answered('the managed pods', kube.core.listNamespacedPod({ namespace: s.namespace, labelSelector: 'fuzz.tend.dev/managed=true' }), { items: [] })).items;
  c.pods = pods.filter((x) => x.spec?.nodeName).map((x) => ({ node: x.spec!.nodeName!, uid: x.metadata!.uid!, pod: `${s.namespace}/${x.metadata!.name}` }));
  const slots = await answered('the coordinator\'s status', client.workflow.getHandle(SLOTS_WORKFLOW_ID).query(slotsStatusQuery), undefined);
  c.inFlight = (slots?.inFlight ?? []).map((g) => ({ node: g.node, uid: g.uid, pod: g.pod }));
  return c;
}

/** A file's text from byte `from` on (the worker's log grows to many MB over a long run: its start is not read again). */
async function textFrom(file: string, from: number): Promise<string> {
  const fh = await open(file, 'r').catch(() => undefined);
  if (!fh) return '';
  try {
    const size = (await fh.stat()).size;
    const buf = Buffer.alloc(Math.max(0, size - from));
    await fh.read(buf, 0, buf.length, from);
    return buf.toString('utf8');
  } finally {
    await fh.close();
  }
}

/** Worker log lines since `from` that say a signal was ignored: per type and handler. */
async function ignoredSince(logFile: string, from: number): Promise<Map<string, number>> {
  const text = await textFrom(logFile, from);
  const names = [...new Set(ts.flatMap((t) => t.handlers.filter((h) => h.kind === 'signal').map((h) => h.name)))].sort((a, b) => b.length - a.length);
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!/ignored|refused/i.test(line)) continue;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    const msg = String(entry.msg ?? '');
    const handler = names.find((n) => msg.includes(n));
    const type = typeOf.get(String(entry.workflowType ?? ''));
    if (!handler || !type) continue;
    out.set(rowKey(type, handler, 'signal'), (out.get(rowKey(type, handler, 'signal')) ?? 0) + 1);
  }
  return out;
}

/** When the histories were last looked at: a run closed before it was looked at then. */
let historiesAt = began;

/**
 * Every run on tend's task queue since the fuzzer began: its task failures, its size, a task stuck
 * failing. A run's history is read again only when it grew; runs closed and looked at are done.
 */
async function checkHistories(): Promise<Violation[]> {
  const out: Violation[] = [];
  const since = new Date(began - 60_000).toISOString();
  // Closed runs from a while before the last look on (visibility follows a close by a moment).
  const closedSince = new Date(historiesAt - 5 * 60_000).toISOString();
  historiesAt = Date.now();
  const runs: { workflowId: string; runId: string; type: string; status: string }[] = [];
  for await (const wf of client.workflow.list({ query: `TaskQueue="${TASK_QUEUE}" AND StartTime > "${since}" AND (ExecutionStatus="Running" OR CloseTime > "${closedSince}")` })) {
    if (!done.has(wf.runId)) runs.push({ workflowId: wf.workflowId, runId: wf.runId, type: wf.type, status: wf.status.name });
  }
  await eachAtMost(4, runs, async (r) => {
    const type = typeOf.get(r.type) ?? r.type;
    const h = client.workflow.getHandle(r.workflowId, r.runId);
    try {
      const desc = await bounded(30_000, 'its description', h.describe());
      const raw = desc.raw as { workflowExecutionInfo?: { historyLength?: unknown; historySizeBytes?: unknown }; pendingWorkflowTask?: { attempt?: number } | null };
      const length = Number(raw.workflowExecutionInfo?.historyLength ?? 0);
      // Each run's size and stuck task once: they last.
      const lasting = [
        ...historySize(type, r.workflowId, length, Number(raw.workflowExecutionInfo?.historySizeBytes ?? 0)),
        ...stuckTask(type, r.workflowId, raw.pendingWorkflowTask?.attempt),
      ];
      if (lasting.length && !reported.has(r.runId)) out.push(...lasting);
      if (lasting.length) reported.add(r.runId);
      const seen = seenEvents.get(r.runId) ?? 0;
      if (length > seen) {
        const events = (await bounded(60_000, 'its history', h.fetchHistory())).events ?? [];
        out.push(...taskFailures(type, r.workflowId, events, seen));
        seenEvents.set(r.runId, Number(events.at(-1)?.eventId ?? 0));
      }
      if (desc.status.name !== 'RUNNING') done.add(r.runId);
    } catch (err) {
      say(`  could not read ${r.workflowId}: ${(err as Error).message}`);
    }
  });
  return out;
}

/** A hand start on tend's task queue under an id not its own is given this long to refuse to run... */
const HAND_START_REFUSE_MS = 10_000;
/** ...and one whose first workflow task has not run is judged by this age all the same. */
const HAND_START_JUDGE_MS = 60_000;
/** How often hand starts are looked at while a batch runs. */
const HAND_START_LOOK_MS = 2_000;

type HandStart = (typeof handStarts)[number];

/**
 * A hand start's fate: refused (it failed or was never started), taken (it ran or runs); one still
 * running is ended, unless it runs as tend's own workflow (tend's task queue, its own id); 'later'
 * while it may still refuse (`all`: judged now, whatever its state).
 * Each is ended as soon as it can be judged (one on another task queue at once: nothing will run it):
 * one under a tend workflow's id keeps that workflow out while it runs (tend fails closed on it, and
 * its watcher looks again only at its next resync; docs/security.md), and the probes beside the
 * messages measure tend's usual times.
 */
async function settleHandStart(start: HandStart, all: boolean): Promise<Violation[] | 'later'> {
  const { m, runId, at } = start;
  const age = Date.now() - at;
  const h = client.workflow.getHandle(m.workflowId, runId);
  const desc = await bounded(10_000, 'a hand start\'s description', h.describe()).catch(() => undefined);
  const st = desc?.status.name ?? 'UNKNOWN';
  if (!all && st === 'RUNNING' && m.start!.taskQueue === TASK_QUEUE) {
    const firstTaskRun = !(desc?.raw as { pendingWorkflowTask?: unknown } | undefined)?.pendingWorkflowTask;
    if (!firstTaskRun && age < HAND_START_JUDGE_MS) return 'later';
    if (expectedId(m) !== m.workflowId && age < HAND_START_REFUSE_MS) return 'later';
  }
  const row = rows.get(rowKey(m.type, 'start', 'start'))!;
  if (st === 'FAILED' || st === 'TERMINATED' || st === 'TIMED_OUT' || st === 'CANCELLED') {
    row.refused++;
  } else {
    row.accepted++;
  }
  // One that runs on tend's task queue under its own id is tend's workflow (it serves what its id names,
  // its input ignored): left running, as a terminate would be an operator's act, not a message's.
  const tends = st === 'RUNNING' && m.start!.taskQueue === TASK_QUEUE && expectedId(m) === m.workflowId;
  if (st === 'RUNNING' && !tends) await bounded(10_000, 'terminate', h.terminate('fuzz: a hand start is ended once looked at')).catch(() => undefined);
  if (start.squat) start.squat.to = Date.now();
  return m.start!.taskQueue === TASK_QUEUE && expectedId(m) !== m.workflowId ? identity(m.type, m.workflowId, st, m.note) : [];
}

/** Every hand start not judged yet, looked at again (`all`: judged now). */
async function settleHandStarts(all: boolean): Promise<Violation[]> {
  const out: Violation[] = [];
  const starts = handStarts;
  handStarts = [];
  await eachAtMost(8, starts, async (start) => {
    const r = await settleHandStart(start, all);
    if (r === 'later') handStarts.push(start);
    else out.push(...r);
  });
  return out;
}

/** Operator's commands a broken message got through: not violations (the sender could send them valid), listed. */
const operatorTaken: string[] = [];
async function undoOperator() {
  await bounded(10_000, 'enable', client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).executeUpdate(enableUpdate, { args: [] })).catch(() => undefined);
  await bounded(10_000, 'resume', startSafety(client)).catch(() => undefined);
}

/** Namespaces of this run, and of runs cut short before they removed theirs. */
async function deleteRunNamespaces() {
  const list = await kube.core.listNamespace({ labelSelector: 'fuzz.tend.dev/run=true' }).catch(() => ({ items: [] }));
  for (const n of list.items) await kube.core.deleteNamespace({ name: n.metadata!.name! }).catch(() => undefined);
}

/** The non-valid messages sent to these types in the 5 s before `at`, newest first. */
const said = (x: { m: Message; at: number }) => `${x.m.kind} ${x.m.handler} to ${x.m.workflowId} ${x.m.family} (${x.m.note}) at ${new Date(x.at).toISOString().slice(11, 23)}`;

function justBefore(sent: { m: Message; at: number }[], at: number, types: string[]): string {
  const near = sent.filter((x) => x.m.family !== 'valid' && types.includes(x.m.type) && x.at <= at && x.at >= at - 5000).sort((a, b) => b.at - a.at);
  return near.slice(0, 6).map(said).join('; ') || 'none';
}

/** What was sent to these types while a probe ran: hand starts first (one under a tend id keeps tend's workflow out), then the non-valid messages. */
function during(sent: { m: Message; at: number }[], from: number, to: number, types: string[]): string {
  const near = sent.filter((x) => types.includes(x.m.type) && x.at >= from && x.at <= to);
  const starts = near.filter((x) => x.m.kind === 'start');
  const others = near.filter((x) => x.m.kind !== 'start' && x.m.family !== 'valid');
  return `${starts.length} hand start(s) and ${others.length} non-valid message(s), e.g. ${[...starts, ...others].slice(0, 6).map(said).join('; ') || 'none'}`;
}

const capabilityRow: Record<ProbeResult['capability'], string> = { repair: 'repair-queue', taint: 'taint-replacements', apps: 'app', weeder: 'weeder' };
const capabilityTypes: Record<ProbeResult['capability'], string[]> = {
  repair: ['repair-queue', 'repair/<index>'], taint: ['taint-replacements', 'taint/<node>'], apps: ['app'], weeder: ['weeder'],
};

/**
 * The longest a probe may take, whatever it waits for (the weeder's is the longest: its dependants
 * ready, crash-looping, then weeded): past it, it failed.
 */
const PROBE_MAX_MS = 240_000;

/** One round of normal operation: each capability's probe, side by side; each result with its time. */
async function probeRound(s: Setup, k: number): Promise<(ProbeResult & { from: number; ms: number })[]> {
  const timed = (capability: ProbeResult['capability'], probe: () => Promise<ProbeResult>) => {
    const t = Date.now();
    return bounded(PROBE_MAX_MS, `the ${capability} probe`, probe())
      .catch((err: Error) => ({ capability, ok: false, detail: `the probe failed: ${err.message}` })).then((r) => ({ ...r, from: t, ms: Date.now() - t }));
  };
  return Promise.all([
    timed('repair', () => probeRepair(client, s, k, allowanceFor('repair'))),
    timed('taint', () => probeTaint(kube, s, allowanceFor('taint'))),
    timed('apps', () => probeApps(kube, s, allowanceFor('apps'))),
    timed('weeder', () => probeWeeder(kube, s, allowanceFor('weeder'))),
  ]);
}

/** Probe rounds run so far (each picks the next Nodes to repair). */
let roundsRun = 0;

async function batch(s: Setup, n: number, logFile: string): Promise<void> {
  const t0 = Date.now();
  // Hand starts long over hold no probe up.
  for (let i = squats.length - 1; i >= 0; i--) if (squats[i]!.to !== undefined && squats[i]!.to! < t0 - RESYNC_MS - PROBE_MAX_MS) squats.splice(i, 1);
  const mark = await audit.mark();
  const runsFrom = (await readFile(s.runsFile, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
  const logFrom = await stat(logFile).then((x) => x.size, () => 0);
  // A Node's workflow that lives through the batch, for messages to reach.
  const held = s.nodes[(n + 2) % s.nodes.length]!.name;
  await taintLater(kube, held);
  // Normal operation beside the messages, all along: each capability's probe, round after round until the sending ends.
  const results: (ProbeResult & { from: number; ms: number })[] = [];
  let sending = true;
  const operation = (async () => {
    do results.push(...await probeRound(s, roundsRun++));
    while (sending);
  })();
  // Forged reports want a running entry to name: wait for one, briefly.
  await waitFor('a running repair entry', async () => (await readContext(s)).runningEntries.length > 0, { timeoutMs: 15_000 }).catch(() => undefined);
  let c = await readContext(s);
  const t1 = Date.now();
  const delivered = new Map<string, number>();
  /** When each message was sent, to name the ones just before a limit was passed or while a probe failed. */
  const sentAt: { m: Message; at: number }[] = [];
  const lanes = new Lanes(concurrency);
  // Hand starts looked at and ended while the batch runs.
  const settled: Violation[] = [];
  let sendingEnded!: () => void;
  const sendingOver = new Promise<void>((resolve) => (sendingEnded = resolve));
  const settling = (async () => {
    while (sending) {
      await Promise.race([sleep(HAND_START_LOOK_MS), sendingOver]);
      if (sending) settled.push(...await settleHandStarts(false));
    }
  })();
  /** The run's facts read again every 25 messages, beside the sending. */
  let reading: Promise<void> | undefined;
  const before = sent;
  const count = Math.min(batchSize, total - sent);
  for (let i = 0; i < count && Date.now() < deadline; i++) {
    if (i > 0 && i % 25 === 0 && !reading) {
      reading = readContext(s).then((x) => {
        c = x;
      }, () => undefined).finally(() => (reading = undefined));
    }
    const m = nextMessage(ts, c, d, bounds, 'tend-fuzz-elsewhere');
    if (!m) continue;
    const row = rows.get(rowKey(m.type, m.handler, m.kind))!;
    row.sent++;
    row.families[m.family] = (row.families[m.family] ?? 0) + 1;
    sent++;
    await lanes.add(m.workflowId, async () => {
      sentAt.push({ m, at: Date.now() });
      const o = await send(client, m);
      // An operator's command taken from a broken message (a pause, a disable) is undone at once, as an operator would.
      if (m.operator && o.outcome !== 'refused') {
        operatorTaken.push(`${m.type} ${m.handler} ${m.family} (${m.note})`);
        await undoOperator();
      }
      if (o.outcome === 'refused') {
        row.refused++;
        if (!refusals.has(rowKey(m.type, m.handler, m.kind))) refusals.set(rowKey(m.type, m.handler, m.kind), `${m.family} (${m.note}): ${o.reason}`);
      } else if (o.outcome === 'accepted') row.accepted++;
      else if (o.outcome === 'delivered') delivered.set(rowKey(m.type, m.handler, m.kind), (delivered.get(rowKey(m.type, m.handler, m.kind)) ?? 0) + 1);
      else {
        // Looked at at once: one on another task queue is ended straight away.
        const capabilities = heldUp(m.workflowId);
        const squat = capabilities.length ? { id: m.workflowId, capabilities, from: Date.now() } : undefined;
        if (squat) squats.push(squat);
        const start = { m, runId: o.runId, at: Date.now(), squat };
        const r = await settleHandStart(start, false);
        if (r === 'later') handStarts.push(start);
        else settled.push(...r);
      }
    });
  }
  await lanes.drain();
  await reading;
  const t2 = Date.now();
  sending = false;
  sendingEnded();
  await settling;
  await operation;
  const t3 = Date.now();
  await untaintLater(kube, held);
  const found: Violation[] = [];
  for (const r of results) {
    if (r.ok) continue;
    found.push({
      type: capabilityRow[r.capability], handler: '(liveness)', invariant: `${r.capability} does its job on a normal event within its usual time`,
      detail: `${r.detail} (the probe ran from ${new Date(r.from).toISOString().slice(11, 19)}); while it ran, its workflows were sent ${during(sentAt, r.from, r.from + r.ms, capabilityTypes[r.capability])}`,
    });
  }
  // The last hand starts, each judged once it can be (by HAND_START_JUDGE_MS after it was sent at the latest).
  for (;;) {
    settled.push(...await settleHandStarts(false));
    if (!handStarts.length) break;
    await sleep(1000);
  }
  found.push(...settled);
  // Signals: taken or ignored, as the worker logged it.
  const ignored = await ignoredSince(logFile, logFrom);
  for (const [key, n] of delivered) {
    const row = rows.get(key)!;
    const ign = Math.min(n, ignored.get(key) ?? 0);
    row.ignored += ign;
    row.accepted += n - ign;
    row.delivered += n;
  }
  found.push(...await checkHistories());
  const writes = await audit.since(mark);
  const now = Date.now();
  const runLines = (await readFile(s.runsFile, 'utf8').catch(() => '')).split('\n').filter(Boolean).slice(runsFrom);
  found.push(...repairLimit(MAX_CONCURRENT_REPAIRS, commandRuns(runLines, now), cordons(writes, TEND_USER, now)));
  // Replacements: evictions of managed pods tend marked NodeTaintReplacing (a drain's evictions are the repair's).
  const mine = writes.filter((w) => w.namespace === s.namespace);
  const marked = replacingMarks(mine.filter((w) => w.user === TEND_USER));
  const evictions = mine.filter((w) => w.user === TEND_USER && w.subresource === 'eviction' && w.verb === 'create' && w.code < 300 && marked.has(w.name ?? ''));
  const peak = peakInFlight(evictions, replicaSetStatuses(mine.filter((w) => w.name?.startsWith('managed-')), s.namespace));
  if (peak.peak > MAX_CONCURRENT_REPLACEMENTS) {
    found.push({
      type: 'taint-replacements', handler: '(invariants)', invariant: 'no limit exceeded: maxConcurrentReplacements',
      detail: `${peak.peak} replacements in flight at ${new Date(peak.at!).toISOString().slice(11, 23)} (limit ${MAX_CONCURRENT_REPLACEMENTS}): ${peak.pods.join(', ')}; `
        + `sent to taint workflows in the 5 s before: ${justBefore(sentAt, peak.at!, ['taint-replacements', 'taint/<node>'])}`,
    });
  }
  found.push(...outsideConfiguration(writes, TEND_USER, [s.namespace], cordons(writes, TEND_USER, now)));
  // A Node tend left cordoned after its entries ended: a violation, and uncordoned for the next batch.
  const left = await cordonedNodes(kube);
  if (left.length) {
    await waitFor('no Node left cordoned', async () => (await cordonedNodes(kube)).length === 0, { timeoutMs: 30_000 }).catch(async () => {
      const still = await cordonedNodes(kube);
      found.push({ type: 'repair-queue', handler: '(invariants)', invariant: 'no Node left cordoned', detail: `${still.join(', ')} still cordoned 30 s after the batch's repairs` });
      for (const node of still) await uncordon(kube, node);
    });
  }
  for (const v of found) {
    violations.push({ ...v, batch: n });
    const row = v.kind ? rows.get(rowKey(v.type, v.handler, v.kind)) : [...rows.values()].find((r) => r.type === v.type && r.handler === v.handler);
    if (row) row.violations++;
  }
  const secs = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
  const slowest = CAPABILITIES.map((cap) => {
    const mine = results.filter((r) => r.capability === cap);
    return `${cap} ${mine.every((r) => r.ok) ? 'ok' : `FAILED ${mine.filter((r) => !r.ok).length}×`} (≤ ${secs(Math.max(...mine.map((r) => r.ms)))})`;
  });
  say(`batch ${n + 1}: ${sent - before} message(s) (${sent}/${total}) in ${secs(t2 - t1)}; ${results.length / 4} probe round(s): ${slowest.join(', ')}; `
    + `${found.length} violation(s); ${secs(Date.now() - t0)} in all (prepared ${secs(t1 - t0)}, probes after sending ${secs(t3 - t2)}, checked ${secs(Date.now() - t3)})`);
  for (const v of found) say(`  VIOLATION ${v.type} ${v.handler}: ${v.invariant}: ${v.detail}`);
}

let error: string | undefined;
let timeLimited = false;

/** The table, the report file, the exit code: at the end, or when the run outlasts its bound. */
async function finish(): Promise<never> {
  const report = formatReport([...rows.values()], violations, seed, sent, batches, refusals);
  console.log(`\n${report}`);
  if (timeLimited) console.log(`\ntime limit: ${sent} of ${total} message(s) sent in ${timeLimitMs / 1000} s`);
  if (operatorTaken.length) console.log(`\nOPERATOR'S COMMANDS TAKEN FROM A BROKEN MESSAGE (undone at once; not violations)\n${operatorTaken.map((x) => `- ${x}`).join('\n')}`);
  if (error) console.log(`\nTHE RUN FAILED: ${error}`);
  console.log(`\nrepeat: npm run fuzz -- --messages ${total} --seed ${seed} --batch ${batchSize} --concurrency ${concurrency} --state-dir ${stateDir}`);
  const seconds = Math.round((Date.now() - began) / 1000);
  if (opts.report) await writeFile(opts.report, JSON.stringify({ seed, total, sent, batches, timeLimited, seconds, rows: [...rows.values()], violations, error } satisfies FuzzReport, null, 2));
  return process.exit(error ? 2 : violations.length ? 1 : 0);
}

// The run's bound, held: past it, tend is killed and the run reports what it has, as failed (what it started is left to the next run's fresh start).
setTimeout(() => {
  error = `the run outlasted its bound: ${(timeLimitMs + TAIL_MS) / 1000} s (--time-limit ${timeLimitMs / 1000} s and ${TAIL_MS / 1000} s to end); stopped`;
  say(error);
  for (const part of tend?.parts ?? []) part.child?.kill('SIGKILL');
  void finish();
}, timeLimitMs + TAIL_MS).unref();

try {
  setup = await setUp(kube, info, dir);
  say(`namespace ${setup.namespace}; tend's configuration ${setup.config}; its logs in ${dir}`);
  const worker = await freeLoopbackPort();
  let watcher = await freeLoopbackPort();
  while (watcher === worker) watcher = await freeLoopbackPort();
  tend = new Tend(setup.config, dir, 'fuzz', true, { worker, watcher });
  tend.start();
  await tend.serving(300_000);
  await bounded(60_000, 'tend-safety started', startSafety(client));
  while (sent < total && Date.now() < deadline) {
    await batch(setup, batches, tend.worker.log);
    batches++;
    for (const part of tend.parts) {
      if (!part.running) {
        violations.push({ type: '(any)', handler: '(invariants)', invariant: 'tend keeps running', detail: `tend ${part.part} exited during batch ${batches} (see ${part.log}); started again`, batch: batches - 1 });
        part.start();
        await tend.serving(300_000);
      }
    }
  }
  timeLimited = sent < total;
  if (timeLimited) say(`time limit reached: ${sent} of ${total} message(s) sent`);
} catch (err) {
  error = (err as Error).stack ?? String(err);
  say(`the run failed: ${error}`);
} finally {
  // Nothing left running: hand starts, every workflow on tend-fuzz's queue (cancelled first, so that cordons are lifted), tend itself.
  // The watcher first, so that it starts none again; the queue goes on after a cancel (it is terminated with the rest).
  const t = Date.now();
  await tend?.watcher.stop('SIGTERM');
  await settleHandStarts(true).catch(() => undefined);
  const goOn = (wf: { workflowId: string }) => wf.workflowId === SAFETY_WORKFLOW_ID || wf.workflowId === REPAIR_QUEUE_WORKFLOW_ID;
  await eachAtMost(8, (await running().catch(() => [])).filter((wf) => wf.workflowId !== SAFETY_WORKFLOW_ID), async (wf) => {
    await bounded(10_000, 'cancel', client.workflow.getHandle(wf.workflowId, wf.runId).cancel()).catch(() => undefined);
  });
  await waitFor('the run\'s workflows to end', async () => (await running()).every(goOn), { timeoutMs: 60_000 }).catch(async () => {
    say(`still running a minute after they were cancelled, terminated: ${(await running().catch(() => [])).filter((wf) => !goOn(wf)).map((wf) => wf.workflowId).join(', ')}`);
  });
  await terminateAll('fuzz: the run is over').catch(() => undefined);
  await tend?.stop();
  if (setup) {
    for (const n of setup.nodes) {
      await untaint(kube, n.name).catch(() => undefined);
      await uncordon(kube, n.name).catch(() => undefined);
    }
  }
  await deleteRunNamespaces();
  say(`ended what the run started in ${Math.round((Date.now() - t) / 1000)} s`);
}

await client.connection.close();
if (opts.down) {
  const { down } = await import('../src/sandbox/sandbox.ts');
  await down(stateDir, { progress: (m) => say(`sandbox: ${m}`) });
}
await finish();
