// What the taint benchmarks share: waiting for a condition, bounded
// concurrency, the memory of a child process, and Temporal actions counted
// from histories. Not a benchmark itself (bench/run.ts lists bench/*.ts only).
import { execFile, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { Client } from '@temporalio/client';
import type * as k8s from '@kubernetes/client-node';
import type { KubeClients } from '../../src/kube/client.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { pool } from '../../src/pool.ts';

export { pool };

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const say = (m: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}`);

/** Calls `probe` every `everyMs` until it returns something other than undefined or false; throws after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch((err: Error) => (say(`${what}: ${err.message}`), undefined));
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s: ${what}`);
    await sleep(everyMs);
  }
}


/** A process's resident memory now (VmRSS) or at its peak (VmHWM), in MiB. */
export async function memOf(pid: number, field: 'VmHWM' | 'VmRSS'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
}

/** Samples the peak VmRSS of child processes every second, until stopped. */
export function rssSampler(children: Record<string, ChildProcess>) {
  const peak: Record<string, number> = Object.fromEntries(Object.keys(children).map((k) => [k, 0]));
  const timer = setInterval(() => {
    for (const [name, child] of Object.entries(children)) {
      void memOf(child.pid!, 'VmRSS').then((m) => {
        peak[name] = Math.max(peak[name]!, m);
      }).catch(() => undefined);
    }
  }, 1000);
  return {
    peak,
    reset: () => {
      for (const k of Object.keys(peak)) peak[k] = 0;
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * History events Temporal bills as actions (starts, signals received and sent, timers, activities, continue-as-new);
 * a local activity is billed too, and is in the history as a marker (LOCAL_ACTIVITY_MARKER), counted as `localActivity`.
 */
const BILLED = ['workflowExecutionStarted', 'workflowExecutionSignaled', 'timerStarted', 'activityTaskScheduled',
  'signalExternalWorkflowExecutionInitiated', 'workflowExecutionContinuedAsNew'];
/** The marker's name a local activity's result is recorded under (a patch's marker is not billed). */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

export interface HistoryCount {
  /** Billed actions by `group.eventType`. */
  actions: Record<string, number>;
  /** Runs (a continue-as-new makes a new run) by group, and their history events. */
  runs: Record<string, { runs: number; events: number; maxEvents: number }>;
}

/**
 * Reads the history of every workflow `query` lists (each run of it) and
 * counts its billed actions and events, grouped by `groupOf(workflowId)`.
 */
export async function countHistories(client: Client, query: string, groupOf: (workflowId: string) => string, concurrency = 8): Promise<HistoryCount> {
  const listed: { workflowId: string; runId: string }[] = [];
  for await (const wf of client.workflow.list({ query })) listed.push({ workflowId: wf.workflowId, runId: wf.runId });
  const out: HistoryCount = { actions: {}, runs: {} };
  await pool(listed, concurrency, async ({ workflowId, runId }) => {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const group = groupOf(workflowId);
    const events = history.events ?? [];
    const r = (out.runs[group] ??= { runs: 0, events: 0, maxEvents: 0 });
    r.runs++;
    r.events += events.length;
    r.maxEvents = Math.max(r.maxEvents, events.length);
    for (const e of events) {
      const type = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
      let name = type?.replace(/EventAttributes$/, '') ?? '';
      if (name === 'markerRecorded' && e.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER) name = 'localActivity';
      if (BILLED.includes(name) || name === 'localActivity') out.actions[`${group}.${name}`] = (out.actions[`${group}.${name}`] ?? 0) + 1;
    }
  });
  return out;
}

/** The sum of the actions of one group. */
export const actionsOf = (count: HistoryCount, group: string) =>
  Object.entries(count.actions).filter(([k]) => k.startsWith(`${group}.`)).reduce((a, [, v]) => a + v, 0);

/**
 * What kube-apiserver's flow control (APF) did for one priority level, read
 * from its /metrics: requests dispatched and refused, the seats they were
 * estimated to take (a LIST of a resource with thousands of objects takes up to
 * 10, a write 1) and their execution time. Two snapshots give a phase's share.
 */
export interface ApfSnapshot {
  dispatched: number;
  rejected: number;
  seats: number;
  executionSeconds: number;
  waitSeconds: number;
  /** Requests by verb and resource (every client: for the phases when tend alone is busy). */
  requests: Record<string, number>;
}

export async function apfSnapshot(kubectl: string, kubeconfig: string, priorityLevel = 'workload-low'): Promise<ApfSnapshot> {
  const { execFile } = await import('node:child_process');
  const text = await new Promise<string>((resolve, reject) => execFile(kubectl, ['get', '--raw', '/metrics'], { env: { ...process.env, KUBECONFIG: kubeconfig }, maxBuffer: 256 << 20 },
    (err, stdout) => (err ? reject(err) : resolve(stdout))));
  const sum = (name: string, filter: (labels: string) => boolean = () => true) => text.split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(`priority_level="${priorityLevel}"`) && filter(l))
    .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const requests: Record<string, number> = {};
  for (const l of text.split('\n')) {
    if (!l.startsWith('apiserver_request_total{')) continue;
    const verb = /verb="([^"]+)"/.exec(l)?.[1];
    const resource = /resource="([^"]*)"/.exec(l)?.[1];
    const sub = /subresource="([^"]*)"/.exec(l)?.[1];
    if (!verb || !resource || !['pods', 'nodes'].includes(resource)) continue;
    const key = `${verb} ${resource}${sub ? `/${sub}` : ''}`;
    requests[key] = (requests[key] ?? 0) + Number(l.slice(l.lastIndexOf(' ') + 1));
  }
  return {
    dispatched: sum('apiserver_flowcontrol_dispatched_requests_total'),
    rejected: sum('apiserver_flowcontrol_rejected_requests_total'),
    seats: sum('apiserver_flowcontrol_work_estimated_seats_sum'),
    executionSeconds: sum('apiserver_flowcontrol_request_execution_seconds_sum'),
    waitSeconds: sum('apiserver_flowcontrol_request_wait_duration_seconds_sum', (l) => l.includes('execute="true"')),
    requests,
  };
}

/** What happened between two snapshots. */
export type ApfDelta = ReturnType<typeof apfDelta>;
export function apfDelta(a: ApfSnapshot, b: ApfSnapshot) {
  const round = (x: number) => Math.round(x * 10) / 10;
  const requests = Object.fromEntries(Object.entries(b.requests).map(([k, v]) => [k, v - (a.requests[k] ?? 0)]).filter(([, v]) => (v as number) > 0));
  return {
    dispatched: b.dispatched - a.dispatched, rejected: b.rejected - a.rejected, seats: round(b.seats - a.seats),
    executionSeconds: round(b.executionSeconds - a.executionSeconds), waitSeconds: round(b.waitSeconds - a.waitSeconds), requests,
  };
}

/**
 * Rewrites a Node's taints with `edit`: one merge patch of spec.taints (a list the API
 * server replaces whole) on the condition that the Node is still at the resourceVersion it
 * was read at: `known` (as a list just read it) when given, else a read of it. A conflict
 * reads it again; up to a dozen tries.
 */
export async function editTaints(kube: KubeClients, node: string, edit: (ts: k8s.V1Taint[]) => k8s.V1Taint[], known?: k8s.V1Node): Promise<void> {
  let current = known;
  for (let i = 0; ; i++) {
    current ??= await kube.core.readNode({ name: node });
    try {
      await kube.core.patchNode({
        name: node,
        body: { metadata: { resourceVersion: current.metadata?.resourceVersion }, spec: { taints: edit(current.spec?.taints ?? []) } },
      }, mergePatch);
      return;
    } catch (err) {
      if (i > 10) throw err;
      current = undefined;
    }
  }
}

/** A process's memory by part, from what it serves on /metrics (MiB), and the workflows its worker caches. */
export interface MemoryParts {
  rss: number;
  /** The main thread's V8 heap (activities, clients, the SDK's own JavaScript), used and reserved. */
  heapUsed: number;
  heapTotal: number;
  /** Memory V8 objects hold outside the heap (Buffers, ArrayBuffers). */
  external: number;
  /** The rest: the workflow thread's V8 heap, the SDK's Rust core, code. */
  rest: number;
  /** Workflows in the worker's cache (temporal_sticky_cache_size); undefined outside a worker. */
  cachedWorkflows?: number;
}

/** Reads one process's memory by part from its /metrics. */
export async function memoryParts(port: number): Promise<MemoryParts> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  const value = (name: string): number | undefined => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const mib = (name: string) => (value(name) ?? 0) / 2 ** 20;
  const rss = mib('process_resident_memory_bytes');
  const heapTotal = mib('nodejs_heap_size_total_bytes');
  const external = mib('nodejs_external_memory_bytes');
  const cached = value('temporal_sticky_cache_size');
  return {
    rss, heapUsed: mib('nodejs_heap_size_used_bytes'), heapTotal, external, rest: rss - heapTotal - external,
    ...(cached !== undefined ? { cachedWorkflows: cached } : {}),
  };
}

/** Memory parts rounded to whole MiB. */
export const roundParts = (m: MemoryParts) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Math.round(v)])) as unknown as MemoryParts;

/** Samples memoryParts every `everyMs` and keeps the sample with the largest RSS, and the most workflows cached. */
export function partsSampler(port: number, everyMs = 2000) {
  let atPeak: MemoryParts | undefined;
  let maxCached = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void memoryParts(port).then((m) => {
      if (!atPeak || m.rss > atPeak.rss) atPeak = m;
      maxCached = Math.max(maxCached, m.cachedWorkflows ?? 0);
    }).catch(() => undefined).finally(() => (busy = false));
  }, everyMs);
  return {
    get atPeak() { return atPeak && roundParts(atPeak); },
    get maxCached() { return maxCached; },
    reset: () => {
      atPeak = undefined;
      maxCached = 0;
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * How long tasks waited for the worker (Temporal's schedule-to-start latency, from the worker's
 * /metrics, where the SDK's core writes it): the mean of activity tasks and of workflow tasks, in
 * seconds, and how many; a snapshot, to be subtracted from a later one.
 */
export async function taskWaits(port: number): Promise<Record<'activity' | 'workflowTask', { sum: number; count: number }>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const total = (prefix: string, suffix: 'sum' | 'count') => text.split('\n')
    .filter((l) => l.startsWith(`${prefix}`) && new RegExp(`_${suffix}(\\{|\\s)`).test(l))
    .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const of = (prefix: string) => ({ sum: total(prefix, 'sum'), count: total(prefix, 'count') });
  return { activity: of('temporal_activity_schedule_to_start_latency'), workflowTask: of('temporal_workflow_task_schedule_to_start_latency') };
}

/** The mean wait (s) and the count of tasks between two taskWaits snapshots. */
export function waitsBetween(a: Awaited<ReturnType<typeof taskWaits>>, b: Awaited<ReturnType<typeof taskWaits>>) {
  const one = (k: 'activity' | 'workflowTask') => {
    const count = b[k].count - a[k].count;
    return { tasks: count, meanWaitSeconds: count > 0 ? +((b[k].sum - a[k].sum) / count).toFixed(2) : 0 };
  };
  return { activity: one('activity'), workflowTask: one('workflowTask') };
}

/** The kernel's clock ticks a second (USER_HZ): the unit of utime and stime in /proc/PID/stat. */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user and system, every thread) a process has used so far; undefined when it is gone. */
export async function cpuSecondsOf(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!stat) return undefined;
  // The command name (field 2) may hold spaces and parentheses: the fields after it start at the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line: 12 and 13 after the state (field 3).
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** CPU seconds of named processes: `take()` now, and `since(earlier)` the difference, by name. */
export function cpuMeter(pids: () => Record<string, number | undefined>) {
  const take = async (): Promise<Record<string, number>> => {
    const out: Record<string, number> = {};
    for (const [name, pid] of Object.entries(pids())) {
      const s = pid === undefined ? undefined : await cpuSecondsOf(pid);
      if (s !== undefined) out[name] = s;
    }
    return out;
  };
  const since = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(Object.keys(b).filter((k) => k in a).map((k) => [k, +(b[k]! - a[k]!).toFixed(2)]));
  return { take, since };
}

/**
 * Binds every thread of a process to the given CPUs (taskset -a); the threads it starts later
 * inherit the binding from the thread that starts them.
 */
export async function pinTo(pid: number, cpus: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    execFile('taskset', ['-a', '-p', '-c', cpus, String(pid)], (err, _out, stderr) => {
      if (!err) resolve();
      else if ((err as NodeJS.ErrnoException).code === 'ENOENT') reject(new Error('taskset (util-linux) is not on PATH: it binds processes to CPUs'));
      else reject(new Error(`taskset -a -p -c ${cpus} ${pid}: ${stderr.trim() || err.message}`));
    });
  });
}
