// `tend node describe NODE`: one view of what tend did for a Node, in time order: the runs
// Temporal's visibility lists for it (TendNode, or the well-known ids of runs started before
// TendNode existed), the running countdown's status, and the Events on the Node and those tend
// wrote on the pods that were on it (docs/web-ui.md, docs/events.md). Everything it prints comes
// from the namespace and the cluster, where others can write too: ids, types and notes are shown
// as they are only when short and printable, else through preview.
import type { Command } from 'commander';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type * as k8s from '@kubernetes/client-node';
import type { Config } from '../config/load.ts';
import type { NodeRepairStatus } from '../noderepair/messages.ts';
import { preview } from '../checks/preview.ts';
import { pastLimits } from '../checks/limits.ts';
import { OperatorError, readerConfig, taskQueueOption, UsageError, withConfigOptions, type ReadFlags } from './cli-support.ts';
import { columns, outputOption, printOutput, type OutputFormat } from './output.ts';

/** One workflow run that concerns the Node, as visibility lists it. */
export interface RunView {
  id: string;
  runId?: string;
  type: string;
  taskQueue?: string;
  /** Temporal's status name: RUNNING, COMPLETED, CONTINUED_AS_NEW... */
  status: string;
  /** Epoch ms. */
  start: number;
  close?: number;
  /** Its TendCapability, when it has one. */
  capability?: string;
}

/** One Kubernetes Event about the Node, or about a pod on it. */
export interface EventView {
  /** Epoch ms: its first occurrence. */
  time: number;
  /** Epoch ms: its last occurrence, when it repeated. */
  last?: number;
  count: number;
  reason: string;
  note: string;
  type: string;
  /** What it is about. */
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
  /** A related object (a drain's pod Events name the Node there). */
  related?: { kind: string; name: string };
  /** Who wrote it: its reporting controller, or its source component. */
  reporter: string;
  /** Written by tend (docs/events.md). */
  tend: boolean;
}

/** What the running countdown answered to its status query, and when. */
export interface StatusView {
  id: string;
  /** Epoch ms: when it was asked. */
  at: number;
  status: NodeRepairStatus;
}

export interface NodeDescribeRow {
  /** RFC 3339. */
  time: string;
  /** taint, node, repair... for tend's steps; the reporting component for Kubernetes' own Events. */
  capability: string;
  what: string;
  /** Where the row comes from: `workflow ID`, `query ID`, `Event on KIND NAME`. */
  source: string;
}

export interface NodeDescribe {
  node: string;
  rows: NodeDescribeRow[];
  /** What could not be read, or was cut short. */
  notes: string[];
}

/** The most runs and Events read: a Node's incident has tens; a namespace or a cluster that has more is cut, and says so. */
export const MAX_RUNS = 1000;
export const MAX_EVENTS = 5000;
const EVENT_PAGE = 500;
/** How long the countdown's status query may take: a worker that does not answer leaves the row out. */
const STATUS_QUERY_MS = 3000;

/** A value from the namespace or the cluster: as it is when short and printable, else its preview. */
export function shown(value: unknown, max = 300): string {
  return typeof value === 'string' && value.length <= max && /^[\x20-\x7e]*$/.test(value) ? value : preview(value, max);
}

const iso = (ms: number) => new Date(ms).toISOString();
/** The table's time: to the second. */
const clock = (time: string) => time.replace(/\.\d+Z$/, 'Z');

const statusWords: Record<string, string> = {
  COMPLETED: 'completed', FAILED: 'failed', CANCELLED: 'cancelled', TERMINATED: 'terminated', TIMED_OUT: 'timed out',
  CONTINUED_AS_NEW: 'continued as new', RUNNING: 'running',
};

/** The capability of a run: its TendCapability, else the prefix of its id (`taint/sim-1`: taint). */
function runCapability(r: RunView): string {
  if (r.capability) return shown(r.capability, 40);
  const slash = r.id.indexOf('/');
  return slash > 0 ? shown(r.id.slice(0, slash), 40) : 'tend';
}

/** tend's Events by their reason (docs/events.md); observe mode's `Would...` by what the note says it would do. */
function eventCapability(e: EventView): string {
  if (!e.tend) return shown(e.reporter || 'kubernetes', 60);
  if (e.reason.startsWith('NodeRepair')) return 'node';
  if (e.reason.startsWith('Taint')) return 'taint';
  if (e.reason.startsWith('Repair')) return 'repair';
  if (e.reason.startsWith('Weed')) return 'weeder';
  if (e.reason.startsWith('Would')) {
    if (e.note.includes('repair queue entry')) return 'repair';
    if (/would enqueue/i.test(e.note)) return 'node';
    if (/taint/i.test(e.note)) return 'taint';
  }
  return 'tend';
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Whether a note names the Node (`node sim-1 has taint ...`, `evicted from node sim-1 (taint ...`), and not a longer name that begins with it. */
export function mentionsNode(note: string, node: string): boolean {
  return new RegExp(`(^|[^a-z0-9.-])node ${escapeRegExp(node)}(?![a-z0-9-]|\\.[a-z0-9])`).test(note);
}

/**
 * The Events that concern the Node: every Event on the Node itself; tend's Events on a pod that
 * name the Node (in the note, or as the related object); and tend's taint Events on those same
 * pods that do not name it (TaintEvictionRefused says only what the budget answered).
 */
export function eventsOfNode(node: string, events: readonly EventView[]): EventView[] {
  const onNode = (e: EventView) => e.kind === 'Node' && e.name === node;
  const naming = (e: EventView) => e.tend && e.kind === 'Pod' && (mentionsNode(e.note, node) || (e.related?.kind === 'Node' && e.related.name === node));
  const pods = new Set(events.filter(naming).map((e) => e.uid ?? `${e.namespace}/${e.name}`));
  return events.filter((e) => onNode(e) || naming(e) ||
    (e.tend && e.kind === 'Pod' && e.reason.startsWith('Taint') && pods.has(e.uid ?? `${e.namespace}/${e.name}`)));
}

function statusWhat(s: NodeRepairStatus): string {
  const parts = [`phase ${shown(s.phase, 20)}`];
  if (typeof s.reason === 'string') parts.push(shown(s.reason, 120));
  if (typeof s.until === 'number' && Number.isFinite(s.until) && Math.abs(s.until) < 8.64e15) parts.push(`until ${clock(iso(s.until))}`);
  if (s.answer && typeof s.answer === 'object') parts.push(`the queue's last answer: ${shown(s.answer.decision, 20)}: ${shown(s.answer.sentence, 300)}`);
  if (typeof s.refusals === 'number' && s.refusals > 0) parts.push(`${s.refusals} refusal(s)`);
  return parts.join('; ');
}

/**
 * The rows, oldest first: a run's start (or its continuation) and its close; an Event at its
 * first occurrence, its repeats counted; the countdown's status when it was asked. Rows at the
 * same time keep that order: runs, then Events, then the status.
 */
export function nodeDescribeRows(node: string, runs: readonly RunView[], events: readonly EventView[], statuses: readonly StatusView[] = []): NodeDescribeRow[] {
  const rows: { at: number; order: number; row: NodeDescribeRow }[] = [];
  const add = (at: number, row: Omit<NodeDescribeRow, 'time'>) => rows.push({ at, order: rows.length, row: { time: iso(at), ...row } });
  const byStart = [...runs].sort((a, b) => a.start - b.start);
  for (const [i, r] of byStart.entries()) {
    const id = shown(r.id, 300);
    const capability = runCapability(r);
    const source = `workflow ${id}`;
    const continued = byStart.slice(0, i).some((p) => p.id === r.id && p.status === 'CONTINUED_AS_NEW');
    add(r.start, { capability, what: continued ? `${id} continued as new` : `${id} started (${shown(r.type, 100)})`, source });
    if (r.close !== undefined && r.status !== 'CONTINUED_AS_NEW') {
      add(r.close, { capability, what: `${id} ${statusWords[r.status] ?? shown(r.status.toLowerCase(), 40)}`, source });
    }
  }
  for (const e of eventsOfNode(node, events)) {
    const on = e.kind === 'Node' ? `Node ${shown(e.name, 253)}` : `${shown(e.kind, 40)} ${e.namespace ? `${shown(e.namespace, 63)}/` : ''}${shown(e.name, 253)}`;
    const repeats = e.count > 1 ? ` (x${e.count}${e.last !== undefined ? `, last ${clock(iso(e.last))}` : ''})` : '';
    const warning = e.type === 'Warning' ? ' (Warning)' : '';
    const about = e.kind === 'Node' ? '' : ` on ${on}`;
    add(e.time, { capability: eventCapability(e), what: `${shown(e.reason, 80)}${warning}${about}: ${shown(e.note, 1024)}${repeats}`, source: `Event on ${on}` });
  }
  for (const s of statuses) {
    const id = shown(s.id, 300);
    add(s.at, { capability: 'node', what: `${id} now: ${statusWhat(s.status)}`, source: `query ${id}` });
  }
  return rows.sort((a, b) => a.at - b.at || a.order - b.order).map((r) => r.row);
}

/** The table (wide: the source of each row too), and a line when nothing was found; the notes after it. */
export function formatNodeDescribe(d: NodeDescribe, wide = false): string {
  const table = columns(['TIME', 'CAPABILITY', ...(wide ? ['SOURCE'] : []), 'WHAT'],
    d.rows.map((r) => [clock(r.time), r.capability, ...(wide ? [r.source] : []), r.what]));
  const lines = [table];
  if (d.rows.length === 0) lines.push(`nothing found for node ${d.node}: no workflow run for it in Temporal's visibility, no Event on it or on its pods among those read`);
  for (const n of d.notes) lines.push(`note: ${n}`);
  return lines.join('\n');
}

/** Why `node` cannot be described (not a Node's name), or undefined. Checked before anything connects: it goes into a visibility query. */
export async function nodeArgumentProblem(node: string): Promise<string | undefined> {
  const { dns1123SubdomainProblem } = await import('../config/kube-names.ts');
  const problem = node === '' ? 'is empty' : dns1123SubdomainProblem(node);
  return problem && `node ${preview(node, 80)} is not a Node's name: it ${problem}`;
}

const epochOf = (v: unknown): number | undefined => {
  const ms = v instanceof Date ? v.getTime() : typeof v === 'string' ? Date.parse(v) : NaN;
  return Number.isFinite(ms) ? ms : undefined;
};

/** An Event as the API server lists it (events.k8s.io/v1), reduced to what a row shows. */
export function eventViewOf(e: k8s.EventsV1Event, tendReporter: string): EventView | undefined {
  const time = epochOf(e.eventTime) ?? epochOf(e.deprecatedFirstTimestamp) ?? epochOf(e.metadata?.creationTimestamp);
  if (time === undefined || !e.regarding?.name) return undefined;
  const last = epochOf(e.series?.lastObservedTime) ?? epochOf(e.deprecatedLastTimestamp);
  const count = e.series?.count ?? e.deprecatedCount ?? 1;
  const reporter = e.reportingController || e.deprecatedSource?.component || '';
  return {
    time, ...(last !== undefined && last > time ? { last } : {}), count: Number.isSafeInteger(count) && count > 0 ? count : 1,
    reason: e.reason ?? '', note: e.note ?? '', type: e.type ?? 'Normal',
    kind: e.regarding.kind ?? '', ...(e.regarding.namespace ? { namespace: e.regarding.namespace } : {}), name: e.regarding.name,
    ...(e.regarding.uid ? { uid: e.regarding.uid } : {}),
    ...(e.related?.kind && e.related.name ? { related: { kind: e.related.kind, name: e.related.name } } : {}),
    reporter, tend: reporter === tendReporter,
  };
}

export function registerNodeCommands(program: Command): void {
  const node = program.command('node').description("one view of a Node's incident: what each capability did for it, in time order");
  withConfigOptions(node
    .command('describe')
    .description("what tend did for a Node, in time order: its workflow runs (Temporal's visibility), the countdown's status, the Events on it and on its pods")
    .argument('<node>', 'the Node\'s name, e.g. worker-3'))
    .addOption(taskQueueOption())
    .addOption(outputOption())
    .action(async (name: string, flags: ReadFlags & { output: OutputFormat }) => {
      const problem = await nodeArgumentProblem(name);
      if (problem) throw new UsageError(problem);
      const { config } = await readerConfig(flags);
      const d = await describeNode(config, name);
      await printOutput(flags.output, d, (wide) => formatNodeDescribe(d, wide), () => [`node/${name}`]);
    });
}

/**
 * Whether Temporal refused a call for want of TendNode in the namespace: INVALID_ARGUMENT, the
 * attribute named in the cause (`no mapping defined for search attribute TendNode` on a start,
 * `column name 'TendNode' is not a valid search attribute` in a query).
 */
export function lacksNodeAttribute(err: unknown): boolean {
  const e = err as { message?: unknown; cause?: { message?: unknown } } | null | undefined;
  const text = `${e?.message} ${e?.cause?.message}`;
  return /search attribute/.test(text) && /\bTendNode\b/.test(text);
}

/** Reads both sources (Temporal, then Kubernetes) and merges them. */
export async function describeNode(config: Config, node: string): Promise<NodeDescribe> {
  const { connectClient } = await import('../temporal/connection.ts');
  const notes: string[] = [];
  const client = await connectClient(config.temporal);
  let runs: RunView[];
  let statuses: StatusView[];
  try {
    runs = await runsOfNode(client, node, notes);
    statuses = await countdownStatus(client, node, runs, config.temporal.taskQueue, notes);
  } finally {
    await client.connection.close();
  }
  const events = await clusterEvents(config, node, notes);
  return { node, rows: nodeDescribeRows(node, runs, events, statuses), notes };
}

/**
 * Every run visibility lists for the Node. A namespace without TendNode registered (`tend setup
 * temporal` not run since it was added) is asked for the well-known ids alone, and a note says so.
 */
async function runsOfNode(client: Client, node: string, notes: string[]): Promise<RunView[]> {
  const { TendCapability } = await import('../search-attributes.ts');
  // The node is a DNS subdomain (checked): nothing in it can end the quoted string.
  const byId = `WorkflowId = "taint/${node}" OR WorkflowId = "node/${node}"`;
  const read = async (query: string) => {
    const runs: RunView[] = [];
    for await (const wf of client.workflow.list({ query, pageSize: 200 })) {
      if (runs.length >= MAX_RUNS) {
        notes.push(`only the first ${MAX_RUNS} workflow runs are shown`);
        break;
      }
      runs.push(runViewOf(wf, wf.typedSearchAttributes.get(TendCapability)));
    }
    return runs;
  };
  try {
    return await read(`TendNode = "${node}" OR ${byId}`);
  } catch (err) {
    if (!lacksNodeAttribute(err)) throw err;
    notes.push('the namespace has no search attribute TendNode (run `tend setup temporal`): only the runs under taint/NODE and node/NODE are listed');
    return await read(byId);
  }
}

function runViewOf(wf: WorkflowExecutionInfo, capability: unknown): RunView {
  return {
    id: wf.workflowId, runId: wf.runId, type: wf.type, taskQueue: wf.taskQueue, status: wf.status.name,
    start: wf.startTime.getTime(), ...(wf.closeTime ? { close: wf.closeTime.getTime() } : {}),
    ...(typeof capability === 'string' ? { capability } : {}),
  };
}

/** The running countdown's status, when it is tend's and answers within STATUS_QUERY_MS. */
async function countdownStatus(client: Client, node: string, runs: readonly RunView[], taskQueue: string, notes: string[]): Promise<StatusView[]> {
  const { nodeRepairStatusQuery, nodeRepairWorkflowId, NODE_REPAIR_WORKFLOW_TYPE } = await import('../noderepair/messages.ts');
  const { impostor } = await import('../temporal/identity.ts');
  const id = nodeRepairWorkflowId(node);
  const running = runs.find((r) => r.id === id && r.status === 'RUNNING');
  if (!running) return [];
  const why = impostor(id, running, { type: NODE_REPAIR_WORKFLOW_TYPE, taskQueues: [taskQueue] });
  if (why) {
    notes.push(`${why}: its status is not shown`);
    return [];
  }
  try {
    const status = await client.withDeadline(Date.now() + STATUS_QUERY_MS, () => client.workflow.getHandle(id, running.runId).query(nodeRepairStatusQuery));
    const past = pastLimits(status);
    if (past || typeof status !== 'object' || status === null) {
      notes.push(`${id} answered its status query with what is not a status${past ? ` (${past})` : ''}`);
      return [];
    }
    return [{ id, at: Date.now(), status }];
  } catch (err) {
    notes.push(`${id} did not answer its status query within ${STATUS_QUERY_MS / 1000}s: ${preview((err as Error)?.message ?? err, 200)}`);
    return [];
  }
}

/**
 * The Events on the Node (namespace default, where Nodes' Events are written) and tend's Events on
 * pods anywhere, read in pages up to MAX_EVENTS each.
 */
async function clusterEvents(config: Config, node: string, notes: string[]): Promise<EventView[]> {
  const { kubeClients, loadKubeConfig, serverOf, statusOf, unreachableError } = await import('../kube/client.ts');
  const { CLUSTER_EVENTS_NAMESPACE, REPORTING_CONTROLLER } = await import('../kube/events.ts');
  const kc = loadKubeConfig(config.kubernetes);
  const { events } = kubeClients(kc);
  const views: EventView[] = [];
  const read = async (what: string, list: (page: { limit: number; _continue?: string }) => Promise<k8s.EventsV1EventList>) => {
    let next: string | undefined;
    let read = 0;
    try {
      do {
        const page = await list({ limit: EVENT_PAGE, ...(next ? { _continue: next } : {}) });
        for (const e of page.items) {
          const v = eventViewOf(e, REPORTING_CONTROLLER);
          if (v) views.push(v);
        }
        read += page.items.length;
        next = page.metadata?._continue || undefined;
      } while (next && read < MAX_EVENTS);
    } catch (err) {
      const unreachable = unreachableError(kc, err);
      if (unreachable) throw unreachable;
      const status = statusOf(err);
      if (status === undefined) throw err;
      const answer = `the API server at ${serverOf(kc)} answered ${status}`;
      // Credentials that may list some Events and not others still get the rest of the view.
      if (status !== 401 && status !== 403) throw new OperatorError(`cannot list ${what}: ${answer}`);
      notes.push(`${what} not read: ${answer} (the credentials may not list events.k8s.io Events there)`);
      return;
    }
    if (next) notes.push(`only the first ${read} of ${what} were read`);
  };
  await read(`the Events on node ${node}`, (page) =>
    events.listNamespacedEvent({ namespace: CLUSTER_EVENTS_NAMESPACE, fieldSelector: `regarding.kind=Node,regarding.name=${node}`, ...page }));
  await read("tend's Events on pods", (page) =>
    events.listEventForAllNamespaces({ fieldSelector: `regarding.kind=Pod,reportingController=${REPORTING_CONTROLLER}`, ...page }));
  return views;
}
