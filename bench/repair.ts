// The repair queue benchmark (not a test): on a running sandbox, N entries
// (500) with trivial commands at max_concurrent_repairs 20, through the real
// `tend run` worker and `tend repair-queue add-file`. Prints throughput, the
// per-entry overhead beyond the commands' own time, and the Temporal actions
// per entry counted from the workflows' histories.
//
//   node bench/repair.ts [--state-dir DIR] [--entries 500] [--concurrency 20] [--cpu-prof DIR]
//
// Also printed, to tell where the time goes without guessing: the CPU seconds
// each process used during the run (the worker, the commands it spawned, the
// Temporal server, kube-apiserver, etcd: /proc, independent of the machine's
// load), the load average, how many of the slots were in use on average, and
// the queue's workflow tasks (how many, their latencies, what each handled).
// --cpu-prof DIR writes a V8 CPU profile of the worker (`tend run`) there.
//
// Each entry: a health check (unhealthy), the repair command (touch), a watch
// whose first check is healthy. Addresses are 198.18.x.y (not Nodes: no drain).
import { Connection, Client } from '@temporalio/client';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify as toYaml } from 'yaml';
import { currentSandbox } from '../src/sandbox/sandbox.ts';
import { grantRightsFor } from '../src/sandbox/bootstrap.ts';
import { runOnce } from '../src/activities/repair.ts';
import { listQuery, REPAIR_QUEUE_WORKFLOW_ID } from '../src/repair/messages.ts';
import type { RepairQueueEntry } from '../src/repair/entry.ts';
import { freeLoopbackPort } from '../src/workers/runtime.ts';
import { ensureWorkflowBundle, workflowBundleOptions } from '../src/workers/worker.ts';
import { pgCounters, pgCountersSettled, persistenceRates } from './lib/persistence.ts';
import { memOf, partsSampler, rssSampler } from './lib/taint-support.ts';
import { spawnTend, stopTend } from './lib/tend-process.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const cli = join(repo, 'src/starters/cli.ts');
const { values: opts } = parseArgs({ options: {
  'state-dir': { type: 'string' },
  entries: { type: 'string', default: '500' },
  concurrency: { type: 'string', default: '20' },
  'cpu-prof': { type: 'string' },
  /** Another Temporal than the sandbox's (e.g. a dev server started with other options), for comparison. */
  'temporal-address': { type: 'string' },
  /** Its pid, for its CPU seconds. */
  'temporal-pid': { type: 'string' },
} });
const N = Number(opts.entries);
const CONCURRENCY = Number(opts.concurrency);

const sandboxInfo = await currentSandbox(opts['state-dir'] ?? process.env.TEND_SANDBOX_DIR);
if (!sandboxInfo) throw new Error('no sandbox: run `tend sandbox up` (or give --state-dir)');
const info = { ...sandboxInfo, temporalAddress: opts['temporal-address'] ?? sandboxInfo.temporalAddress };

const dir = await mkdtemp(join(tmpdir(), 'tend-repair-bench-'));
const repairCommand = ['sh', '-c', `touch ${dir}/"$0"`];
const healthCommand = ['sh', '-c', `test -f ${dir}/"$0" && echo true || echo false`];
const taskQueue = `tend-repair-bench-${Date.now()}`;
const config = join(dir, 'tend.yaml');
await writeFile(config, toYaml({
  temporal: { address: info.temporalAddress, taskQueue },
  kubernetes: { kubeconfig: info.tendKubeconfig },
  repair: {
    max_concurrent_repairs: CONCURRENCY,
    repair_procedures: [{ machine_types: ['bench'], repair_operations: [{ operation: 'fix', repair_steps: [{ repair_command: repairCommand, watch_seconds: 60 }], health_check_command: healthCommand }] }],
  },
}));// The rights `tend rbac` generates for this configuration, as an operator would apply them.
await grantRightsFor(info.kubeconfig, config, 'tend-bench');

const addresses = Array.from({ length: N }, (_, i) => `198.18.${Math.floor(i / 250)}.${(i % 250) + 1}`);
// The queue takes at most 100 requests per add: the entries go in files of 100, added one after another.
const files: string[] = [];
for (let i = 0; i < addresses.length; i += 100) {
  const file = join(dir, `requests-${files.length}.txt`);
  await writeFile(file, addresses.slice(i, i + 100).map((a) => `fix bench ${a}`).join('\n') + '\n');
  files.push(file);
}

// The commands' own time: each entry runs the health check twice and the repair command once.
const t0 = performance.now();
for (let i = 0; i < 20; i++) {
  await runOnce(healthCommand, `bench-probe-${i}`, 30);
  await runOnce(repairCommand, `bench-probe-${i}`, 30);
  await runOnce(healthCommand, `bench-probe-${i}`, 30);
}
const commandMs = (performance.now() - t0) / 20;

const connection = await Connection.connect({ address: info.temporalAddress });
const client = new Client({ connection });
// A fresh queue on this run's task queue.
await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).terminate('repair benchmark').catch(() => undefined);

/** CPU seconds a process used so far (user + system), and its reaped children's (the commands it ran). */
const CLOCK_TICK = 100;
async function cpuOf(pid: number): Promise<{ own: number; children: number } | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    // Fields 14-17 of stat (utime, stime, cutime, cstime): 11-14 after the state.
    return { own: (f[11]! + f[12]!) / CLOCK_TICK, children: (f[13]! + f[14]!) / CLOCK_TICK };
  } catch {
    return undefined;
  }
}
/** The sandbox's processes, from their pid files. */
const sandboxPids: Record<string, number> = {};
for (const f of await readdir(join(info.stateDir, 'run')).catch(() => [] as string[])) {
  if (!f.endsWith('.pid')) continue;
  const rec = JSON.parse(await readFile(join(info.stateDir, 'run', f), 'utf8')) as { name: string; pid: number };
  sandboxPids[rec.name] = rec.pid;
}
if (opts['temporal-pid']) sandboxPids.temporal = Number(opts['temporal-pid']);
const cpuSnapshot = async (workerPid: number | undefined) => {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(sandboxPids)) {
    const c = await cpuOf(pid);
    if (c) out[name] = c.own;
  }
  const w = workerPid ? await cpuOf(workerPid) : undefined;
  if (w) Object.assign(out, { worker: w.own, 'worker commands': w.children });
  // The worker's command launcher (a child it keeps), and the commands it reaped.
  for (const child of workerPid ? await childrenOf(workerPid) : []) {
    const c = await cpuOf(child);
    if (!c) continue;
    out.launcher = (out.launcher ?? 0) + c.own;
    out['worker commands'] = (out['worker commands'] ?? 0) + c.children;
  }
  return out;
};
async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const t of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const text = await readFile(`/proc/${pid}/task/${t}/children`, 'utf8').catch(() => '');
    out.push(...text.split(/\s+/).filter(Boolean).map(Number));
  }
  return out;
}

const profileArgs = opts['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', opts['cpu-prof']] : [];
// On the cluster sandbox (not with --temporal-address): what PostgreSQL does for an idle Temporal, then for the run.
const sandboxTemporal = opts['temporal-address'] === undefined;
const idleBefore = sandboxTemporal ? await pgCounters(info) : undefined;
if (idleBefore) await sleep(20_000);
const idleAfter = idleBefore && await pgCounters(info);
// Its own HTTP port, so that the benchmark runs beside a tend already serving the default one.
const httpPort = await freeLoopbackPort();
await ensureWorkflowBundle();
// Through bin/tend, as an operator runs it (and so with the Node.js and glibc settings it sets).
const tend = spawnTend(['run', '--config', config, '--http-address', `127.0.0.1:${httpPort}`], { nodeFlags: profileArgs, env: { TEND_LOG_LEVEL: 'warn' } });
let tendErr = '';
let rss: ReturnType<typeof rssSampler> | undefined;
let parts: ReturnType<typeof partsSampler> | undefined;
tend.stderr!.on('data', (d) => (tendErr += d));
const run = (args: string[]) => new Promise<string>((resolve, reject) => {
  const c = spawn(process.execPath, [cli, ...args, '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  c.stdout.on('data', (d) => (out += d));
  c.stderr.on('data', (d) => (out += d));
  c.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`tend ${args.join(' ')}: exit ${code}: ${out}`))));
});

try {
  // The clock starts once the worker polls (it may bundle the workflows first: not the queue's time).
  const ready = performance.now();
  for (;;) {
    const d = await connection.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, taskQueueType: 1 });
    if ((d.pollers ?? []).length > 0) break;
    if (tend.exitCode !== null) throw new Error(`tend run exited: ${tendErr.slice(-2000)}`);
    if (performance.now() - ready > 180_000) throw new Error('the worker did not poll within 3 minutes');
    await sleep(200);
  }
  // `tend run`'s resident memory (the worker and the watcher, one process as the Deployment runs them), every second.
  rss = rssSampler({ tend });
  parts = partsSampler(httpPort);
  const loadBefore = loadavg();
  const cpuBefore = await cpuSnapshot(tend.pid);
  const start = performance.now();
  const startedAt = Date.now();
  for (const file of files) console.log((await run(['repair-queue', 'add-file', file])).trim());
  let list: RepairQueueEntry[] = [];
  let queryTimeouts = 0;
  for (;;) {
    // A query waits for the worker to answer it: on a loaded machine it can time out, and the next poll asks again.
    const answer = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(listQuery).catch((err: Error) => {
      if (!/DEADLINE_EXCEEDED|timed out/.test(`${err.message} ${(err.cause as Error | undefined)?.message}`)) throw err;
      queryTimeouts++;
      return undefined;
    });
    if (answer) list = answer;
    if (list.length === N && list.every((e) => e.status === 'succeeded' || e.status === 'failed')) break;
    if (performance.now() - start > 30 * 60_000) throw new Error('not finished after 30 min');
    // Not too often: each query is served by the queue's workflow on the worker (the end time comes from the entries' close times).
    await sleep(1000);
  }
  const polledS = (performance.now() - start) / 1000;
  rss.stop();
  parts!.stop();
  const vmHwm = await memOf(tend.pid!, 'VmHWM');
  const cpuAfter = await cpuSnapshot(tend.pid);
  const loadAfter = loadavg();
  // Before the histories are read, so that their reads are not counted.
  const pgAfter = idleAfter && await pgCountersSettled(info);
  const failed = list.filter((e) => e.status !== 'succeeded').length;

  // Actions and durations from histories (a sample of entries, and every run of the queue).
  const actionEvents = new Set([
    'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED', 'EVENT_TYPE_TIMER_STARTED', 'EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
    'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED', 'EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
    'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW',
  ]);
  const proto = (await import('@temporalio/proto')).default;
  const EventType = proto.temporal.api.enums.v1.EventType;
  const msOf = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => (t ? Number(t.seconds) * 1000 + (t.nanos ?? 0) / 1e6 : 0);
  /** The queue's workflow tasks: schedule-to-start and start-to-complete (ms), and how many of each event one task handled. */
  const queueTasks = { scheduleToStart: [] as number[], startToComplete: [] as number[], events: 0, handled: {} as Record<string, number[]> };
  const count = async (workflowId: string, runId?: string, tasks?: typeof queueTasks) => {
    const h = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const by: Record<string, number> = {};
    const times = new Map<number, number>();
    let handled: Record<string, number> = {};
    for (const ev of h.events ?? []) {
      const name = EventType[ev.eventType as number] as string;
      const key = `EVENT_TYPE_${name}`.replace('EVENT_TYPE_EVENT_TYPE_', 'EVENT_TYPE_');
      if (actionEvents.has(key)) by[key] = (by[key] ?? 0) + 1;
      if (!tasks) continue;
      tasks.events++;
      const t = msOf(ev.eventTime);
      times.set(Number(ev.eventId), t);
      if (key === 'EVENT_TYPE_WORKFLOW_TASK_STARTED') {
        tasks.scheduleToStart.push(t - times.get(Number(ev.workflowTaskStartedEventAttributes!.scheduledEventId))!);
        for (const [k, v] of Object.entries(handled)) (tasks.handled[k] ??= []).push(v);
        handled = {};
      } else if (key === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED') {
        tasks.startToComplete.push(t - times.get(Number(ev.workflowTaskCompletedEventAttributes!.startedEventId))!);
      } else if (['EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED', 'EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED', 'EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED'].includes(key)) {
        const short = key.replace('EVENT_TYPE_', '').toLowerCase();
        handled[short] = (handled[short] ?? 0) + 1;
      }
    }
    return by;
  };
  const dist = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const sum = s.reduce((a, b) => a + b, 0);
    return { n: s.length, mean: Math.round(sum / Math.max(1, s.length)), p50: Math.round(s[Math.floor(s.length / 2)] ?? 0), p90: Math.round(s[Math.floor(s.length * 0.9)] ?? 0), max: Math.round(s[s.length - 1] ?? 0) };
  };
  const sample = list.filter((_, i) => i % Math.max(1, Math.floor(N / 25)) === 0);
  // Slot use: how many entries ran at once, on average over the run, from every entry's start and close.
  const edges: [number, number][] = [];
  for await (const w of client.workflow.list({ query: `WorkflowType="repairEntryWorkflow" AND TaskQueue="${taskQueue}"` })) {
    edges.push([w.startTime.getTime(), 1]);
    if (w.closeTime) edges.push([w.closeTime.getTime(), -1]);
  }
  edges.sort((a, b) => a[0] - b[0]);
  let runningNow = 0;
  let area = 0;
  for (let i = 0; i < edges.length; i++) {
    if (i > 0) area += runningNow * (edges[i]![0] - edges[i - 1]![0]);
    runningNow += edges[i]![1];
  }
  const slotsInUse = edges.length > 1 ? area / (edges[edges.length - 1]![0] - edges[0]![0]) : 0;
  // From the add to the last entry's end (the server's close time): not rounded up to the next poll.
  const wallS = edges.length > 0 ? (edges[edges.length - 1]![0] - startedAt) / 1000 : polledS;
  const entryTotals: Record<string, number> = {};
  const durations: number[] = [];
  for (const e of sample) {
    const by = await count(`repair/${e.index}`);
    for (const [k, v] of Object.entries(by)) entryTotals[k] = (entryTotals[k] ?? 0) + v / sample.length;
    const d = await client.workflow.getHandle(`repair/${e.index}`).describe();
    durations.push(d.closeTime!.getTime() - d.startTime.getTime());
  }
  // Every run of the queue (continue-as-new chain) that served this benchmark.
  const queueTotals: Record<string, number> = {};
  let queueRuns = 0;
  const queueRunIds: string[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId="${REPAIR_QUEUE_WORKFLOW_ID}" AND TaskQueue="${taskQueue}"` })) {
    queueRuns++;
    queueRunIds.push(w.runId);
    for (const [k, v] of Object.entries(await count(w.workflowId, w.runId, queueTasks))) queueTotals[k] = (queueTotals[k] ?? 0) + v;
  }
  // Every run of the queue and the sampled entries replay against the workflow code: a change that made them
  // nondeterministic (it shows only when a worker rebuilds a run from its history) fails the benchmark.
  const { bundleWorkflowCode, Worker } = await import('@temporalio/worker');
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  const { code } = await bundleWorkflowCode({ ...workflowBundleOptions(), logger: quiet });
  const replayFailures: string[] = [];
  const toReplay = [...queueRunIds.map((runId) => ({ workflowId: REPAIR_QUEUE_WORKFLOW_ID, runId })), ...sample.map((e) => ({ workflowId: `repair/${e.index}`, runId: undefined }))];
  for (const w of toReplay) {
    const history = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { code } }, history, w.workflowId)
      .catch((err: unknown) => replayFailures.push(`${w.workflowId} ${w.runId ?? ''}: ${String((err as Error).message).slice(0, 300)}`));
  }
  if (replayFailures.length > 0) process.exitCode = 1;
  const perEntry = Object.values(entryTotals).reduce((a, b) => a + b, 0);
  const queuePerEntry = Object.values(queueTotals).reduce((a, b) => a + b, 0) / N;
  const mean = durations.reduce((a, b) => a + b, 0) / durations.length;
  const sorted = [...durations].sort((a, b) => a - b);
  console.log(JSON.stringify({
    entries: N, concurrency: CONCURRENCY, failed, queryTimeouts, wallSeconds: +wallS.toFixed(1), entriesPerSecond: +(N / wallS).toFixed(2),
    entryDurationMs: { mean: Math.round(mean), p50: sorted[Math.floor(sorted.length / 2)], max: sorted[sorted.length - 1] },
    commandsOwnMs: Math.round(commandMs),
    overheadPerEntryMs: Math.round(mean - commandMs),
    actionsPerEntry: { entryWorkflow: Object.fromEntries(Object.entries(entryTotals).map(([k, v]) => [k.replace('EVENT_TYPE_', ''), +v.toFixed(2)])), queueShare: +queuePerEntry.toFixed(2), total: +(perEntry + queuePerEntry).toFixed(2) },
    queue: {
      runs: queueRuns, actions: queueTotals, events: queueTasks.events,
      workflowTasks: {
        scheduleToStartMs: dist(queueTasks.scheduleToStart), startToCompleteMs: dist(queueTasks.startToComplete),
        handledPerTask: Object.fromEntries(Object.entries(queueTasks.handled).map(([k, v]) => [k, { tasks: v.length, mean: +(v.reduce((a, b) => a + b, 0) / v.length).toFixed(1), max: Math.max(...v) }])),
      },
    },
    slotsInUse: +slotsInUse.toFixed(1),
    memoryMiB: { tendRunPeakRss: Math.round(rss.peak.tend!), tendRunVmHWM: Math.round(vmHwm), goal: 400, atPeak: parts!.atPeak, mostWorkflowsCached: parts!.maxCached },
    cpuSeconds: Object.fromEntries(Object.entries(cpuAfter).map(([k, v]) => [k, +(v - (cpuBefore[k] ?? 0)).toFixed(1)])),
    cpuMsPerEntry: Math.round(Object.entries(cpuAfter).reduce((a, [k, v]) => a + v - (cpuBefore[k] ?? 0), 0) / N * 1000),
    loadavg: { before: loadBefore.map((x) => +x.toFixed(2)), after: loadAfter.map((x) => +x.toFixed(2)) },
    persistence: persistenceRates(idleAfter, pgAfter, Math.round((perEntry + queuePerEntry) * N), idleBefore && idleAfter && { before: idleBefore, after: idleAfter }),
    replay: replayFailures.length === 0 ? `${toReplay.length} histories (every run of the queue, the sampled entries) replay` : replayFailures,
    heartbeats: 'none reach the server for activities shorter than 1 s (the first heartbeat is sent after 1 s)',
  }, null, 2));
} finally {
  rss?.stop();
  parts?.stop();
  await stopTend(tend);
  await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).terminate('repair benchmark done').catch(() => undefined);
  await connection.close();
  const failures = tendErr.split('\n').filter((l) => /^\{"level":"(error|fatal)"/.test(l));
  if (failures.length > 0) console.error(failures.slice(0, 5).join('\n'));
}
process.exit(process.exitCode ?? 0);
