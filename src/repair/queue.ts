// The repair queue's state machine as pure functions (CKE's DecideOps shape):
// each takes the queue's state and what happened (an add, a delete, an
// entry's report, an entry workflow's end, the worker's settings) and returns
// the next state and the operations the workflow must carry out (start an
// entry, cancel one, signal running ones, log). The workflow only waits and
// acts. Pure: imported by workflow code, table-tested in test/unit.
import { defineQuery } from '@temporalio/workflow';
import { decideStarts } from './decide.ts';
import { isFinished, ZERO_TIME, type RepairQueueEntry, type RepairRequest } from './entry.ts';
import { MAX_INDEX, type EntryReport } from './messages.ts';

/**
 * What the queue carries across continue-as-new: entries and switches, never
 * configuration. `closing`: index -> address of deleted entries whose
 * workflows are still cleaning up (they hold a slot and their address).
 * `deleting`: those entries as they were when deleted, listed with CKE's
 * `deleted: true` until then (absent in states carried by older runs).
 */
export interface QueueState {
  entries: RepairQueueEntry[];
  nextIndex: number;
  enabled: boolean;
  closing: Record<string, string>;
  deleting?: RepairQueueEntry[];
  /**
   * index -> the end a processing entry's own report announced. Display only: the entry
   * stays processing, holding its slot, until its workflow has ended (entryEnded), which
   * then takes this status (absent in states carried by older runs).
   */
  reported?: Record<string, FinalStatus>;
}

/**
 * Everything the queue would carry across continue-as-new (entries, enabled flag, next index,
 * deletions in flight): what a live tend reads before it starts the queue again on its own task
 * queue when the tend whose task queue it ran on is gone (src/workers/singletons.ts).
 */
export const carriedQuery = defineQuery<QueueState>('carried');

/** How an entry ends. */
export type FinalStatus = 'succeeded' | 'failed';

/** How an entry's workflow ended, as the queue saw it: its result's status, or cancelled (the entry leaves the queue). */
export type EndedAs = FinalStatus | 'cancelled';

export type QueueOp =
  /** Start `repair/<index>` (the entry is processing already). */
  | { op: 'start'; index: string }
  /** Cancel `repair/<index>`: it uncordons and reports its end. */
  | { op: 'cancel'; index: string }
  | { op: 'signal-enabled'; index: string; enabled: boolean }
  | { op: 'signal-reset-backoff'; index: string }
  | { op: 'log'; level: 'info' | 'warn'; message: string; fields: Record<string, unknown> };

export interface Step<T = undefined> {
  state: QueueState;
  ops: QueueOp[];
  value?: T;
}

const iso = (ms: number) => new Date(ms).toISOString();
const clone = (s: QueueState): QueueState => ({
  ...s, entries: s.entries.map((e) => ({ ...e })), closing: { ...s.closing }, ...(s.deleting ? { deleting: s.deleting.map((e) => ({ ...e })) } : {}),
  ...(s.reported ? { reported: { ...s.reported } } : {}),
});

/** A deleted entry's workflow has cleaned up (or is gone): its slot and address are free, and it leaves the list. */
function forget(s: QueueState, index: string): void {
  delete s.closing[index];
  if (s.deleting) s.deleting = s.deleting.filter((e) => e.index !== index);
  if (s.reported) delete s.reported[index];
}

/**
 * What `list` shows, as CKE's queue holds it: every entry with `deleted`,
 * including those deleted while processing whose workflow is still cleaning
 * up (`deleted: true`), in index order.
 */
export function listEntries(s: QueueState): RepairQueueEntry[] {
  const deleting = (s.deleting ?? []).filter((e) => e.index in s.closing).map((e) => ({ ...e, deleted: true }));
  return [...s.entries.map((e) => ({ ...e, deleted: false })), ...deleting].sort((a, b) => Number(a.index) - Number(b.index));
}

/** A deleted entry still cleaning up, as it was when deleted (CKE: deleting it again changes nothing). */
export function findDeleting(s: QueueState, index: string): RepairQueueEntry | undefined {
  return index in s.closing ? s.deleting?.find((e) => e.index === index) : undefined;
}
const warn = (message: string, fields: Record<string, unknown>): QueueOp => ({ op: 'log', level: 'warn', message, fields });

/**
 * The next index the queue may give: `nextIndex` when it is a safe integer of at most MAX_INDEX,
 * else past the queue's own entries (a start input read from a workflow id planted past the
 * bound cannot make indexes unsafe, nor longer than an index may be).
 */
export function saneNextIndex(s: QueueState): number {
  if (Number.isSafeInteger(s.nextIndex) && s.nextIndex >= 1 && s.nextIndex <= MAX_INDEX + 1) return s.nextIndex;
  let highest = 0;
  for (const e of [...s.entries, ...(s.deleting ?? [])]) highest = Math.max(highest, Number(e.index));
  for (const index of Object.keys(s.closing)) highest = Math.max(highest, Number(index));
  return highest + 1;
}

export function emptyQueue(nextIndex = 1): QueueState {
  return { entries: [], nextIndex, enabled: true, closing: {} };
}

export function findEntry(s: QueueState, index: string): RepairQueueEntry | undefined {
  return s.entries.find((e) => e.index === index);
}

/** Processing entries and deleted ones still cleaning up: each holds a slot. */
export function running(s: QueueState): number {
  return s.entries.filter((e) => e.status === 'processing').length + Object.keys(s.closing).length;
}

/** Indexes whose workflows may be running: processing entries and closing ones. */
export function liveIndexes(s: QueueState): string[] {
  return [...s.entries.filter((e) => e.status === 'processing').map((e) => e.index), ...Object.keys(s.closing)];
}

/** Whether a start may be possible now (so that the worker's settings are worth reading). */
export function mayStart(s: QueueState, maxConcurrent: number | undefined): boolean {
  return s.enabled && s.entries.some((e) => e.status === 'queued') && (maxConcurrent === undefined || running(s) < maxConcurrent);
}

/**
 * Queues the requests (checked already), in order, with the next indexes. `nodename`: the Node a
 * request is for, when the queue knows it (request-node-repair); '' otherwise, as CKE's add.
 */
export function addEntries(s0: QueueState, requests: readonly (RepairRequest & { nodename?: string })[], now: number): Step<RepairQueueEntry[]> {
  const s = clone(s0);
  const added = requests.map((r): RepairQueueEntry => ({
    index: String(s.nextIndex++),
    address: r.address,
    nodename: r.nodename ?? '',
    machine_type: r.machine_type,
    operation: r.operation,
    ...(r.serial ? { serial: r.serial } : {}),
    status: 'queued',
    step: 0,
    step_status: 'waiting',
    last_transition_time: iso(now),
    drain_backoff_count: 0,
    drain_backoff_expire: ZERO_TIME,
  }));
  s.entries.push(...added);
  return { state: s, ops: [], value: added.map((e) => ({ ...e })) };
}

/**
 * Deletes entries: queued and finished ones go at once; a processing one
 * leaves the list but keeps its slot and address (closing) until its
 * workflow, cancelled, has lifted its cordon and reported its end.
 */
export function removeEntries(s0: QueueState, indexes: readonly string[]): Step<RepairQueueEntry[]> {
  const s = clone(s0);
  const ops: QueueOp[] = [];
  const removed: RepairQueueEntry[] = [];
  for (const index of indexes) {
    const e = findEntry(s, index);
    if (!e) continue;
    s.entries = s.entries.filter((x) => x !== e);
    removed.push(e);
    if (e.status === 'processing') {
      s.closing[index] = e.address;
      s.deleting = [...(s.deleting ?? []), { ...e }];
      ops.push({ op: 'cancel', index });
    }
  }
  return { state: s, ops, value: removed };
}

/** A cancel found no running workflow: it had ended already (its end was reported, or is noticed by entryEnded). */
export function cancelFailed(s0: QueueState, index: string, error: string): Step {
  const s = clone(s0);
  forget(s, index);
  return { state: s, ops: [warn('repair: could not cancel entry workflow; it has ended', { index, error })] };
}

/**
 * An entry's report, checked already for its shape. Only the current queue's
 * entries report (`queue`: the chain of queue runs it was started by; an
 * entry of an earlier queue, reset since, is refused); only a processing
 * entry's progress fields change, never its identity. `ignored`: why the
 * report changed nothing.
 *
 * `endsOnly` (the queue's REPAIR_QUEUE_ENDS_FREE_PATCH): a report is display
 * only, since anyone who may signal the queue can forge one. An end it
 * announces (a finished status, `removed`) frees nothing: it is kept in
 * `reported` and `claimed` is set, so that the queue looks whether the
 * workflow has really ended; the slot is freed by entryEnded. Without it (runs
 * recorded before), a closing entry's final report (or `removed`) frees its slot.
 */
export function applyReport(s0: QueueState, r: EntryReport, chain: string, endsOnly = false): Step & { ignored?: string; claimed?: boolean } {
  if (r.queue !== chain) {
    return {
      state: s0, ops: [],
      ignored: `entry ${r.index} belongs to an earlier repair queue (${r.queue}), not to this one (${chain}); ` +
        `if it still runs, cancel it with \`temporal workflow cancel --workflow-id repair/${r.index}\``,
    };
  }
  if (endsOnly) return reportOnly(s0, r);
  const s = clone(s0);
  const closing = r.index in s.closing;
  const e = findEntry(s, r.index);
  if (r.removed) {
    if (closing) {
      forget(s, r.index);
      return { state: s, ops: [] };
    }
    if (e?.status !== 'processing') return { state: s0, ops: [], ignored: `entry ${r.index} is not processing or being deleted` };
    s.entries = s.entries.filter((x) => x !== e);
    return { state: s, ops: [] };
  }
  const fields = r.fields ?? {};
  if (fields.status === 'queued') return { state: s0, ops: [], ignored: `entry ${r.index}: an entry's workflow cannot put it back in the queue` };
  if (closing) {
    // A deleted entry that ended on its own before its cancellation landed: its slot is free.
    if (fields.status && isFinished({ status: fields.status })) forget(s, r.index);
    return { state: s, ops: [] };
  }
  if (!e || e.status !== 'processing') return { state: s0, ops: [], ignored: `entry ${r.index} is not processing` };
  Object.assign(e, fields);
  return { state: s, ops: [] };
}

/** A report as display only (applyReport with `endsOnly`). */
function reportOnly(s0: QueueState, r: EntryReport): Step & { ignored?: string; claimed?: boolean } {
  const fields = r.fields ?? {};
  const ends = r.removed === true || (fields.status !== undefined && isFinished({ status: fields.status }));
  if (r.index in s0.closing) return ends ? { state: s0, ops: [], claimed: true } : { state: s0, ops: [] };
  const at = s0.entries.findIndex((x) => x.index === r.index);
  if (at < 0 || s0.entries[at]!.status !== 'processing') {
    return { state: s0, ops: [], ignored: `entry ${r.index} is not processing${r.removed ? ' or being deleted' : ''}` };
  }
  if (fields.status === 'queued') return { state: s0, ops: [], ignored: `entry ${r.index}: an entry's workflow cannot put it back in the queue` };
  if (r.removed) return { state: s0, ops: [], claimed: true };
  const { status, ...shown } = fields;
  const entries = [...s0.entries];
  entries[at] = { ...entries[at]!, ...shown };
  const s: QueueState = { ...s0, entries };
  if (status === 'succeeded' || status === 'failed') s.reported = { ...s0.reported, [r.index]: status };
  return { state: s, ops: [], ...(ends ? { claimed: true } : {}) };
}

/**
 * The entry's workflow has ended (the queue saw its child end, or a signal to
 * it found it gone): the only way its slot is freed. A processing entry takes
 * `final` (its workflow's result), else the end it reported, else fails with
 * the reason; one whose workflow ended cancelled (`temporal workflow cancel`,
 * the Web UI) leaves the queue as a deleted one does; a closing one frees its
 * slot; a finished one is unchanged.
 */
export function entryEnded(s0: QueueState, index: string, how: string, now: number, final?: EndedAs): Step {
  const s = clone(s0);
  if (index in s.closing) {
    forget(s, index);
    return { state: s, ops: [] };
  }
  const e = findEntry(s, index);
  if (!e || e.status !== 'processing') return { state: s0, ops: [] };
  const reported = s.reported?.[index];
  forget(s, index);
  if (final === 'cancelled') {
    s.entries = s.entries.filter((x) => x !== e);
    return { state: s, ops: [{ op: 'log', level: 'info', message: 'repair: entry cancelled: it leaves the queue', fields: { index, how } }] };
  }
  const status = final ?? reported;
  if (status) {
    // Its own last transition's time when it reported one.
    Object.assign(e, { status, ...(reported ? {} : { last_transition_time: iso(now) }) });
    return { state: s, ops: [] };
  }
  Object.assign(e, { status: 'failed', last_transition_time: iso(now) });
  return { state: s, ops: [warn('repair: entry failed: its workflow ended without reporting its end', { index, how })] };
}

/** The queue's switch: running entries are told (a disable abandons their drains). */
export function setEnabled(s0: QueueState, enabled: boolean): Step {
  if (s0.enabled === enabled) return { state: s0, ops: [] };
  const s = clone(s0);
  s.enabled = enabled;
  const ops: QueueOp[] = s.entries.filter((e) => e.status === 'processing').map((e) => ({ op: 'signal-enabled', index: e.index, enabled }));
  return { state: s, ops };
}

/** Clears every entry's drain back-off; running entries are told. value: how many had one. */
export function resetBackoff(s0: QueueState): Step<number> {
  const s = clone(s0);
  let n = 0;
  for (const e of s.entries) {
    if (e.drain_backoff_count !== 0 || e.drain_backoff_expire !== ZERO_TIME) n++;
    e.drain_backoff_count = 0;
    e.drain_backoff_expire = ZERO_TIME;
  }
  const ops: QueueOp[] = s.entries.filter((e) => e.status === 'processing').map((e) => ({ op: 'signal-reset-backoff', index: e.index }));
  return { state: s, ops, value: n };
}

export interface QueueSettings {
  max_concurrent_repairs: number;
  /** index -> why its key is not configured (any more). */
  problems: Record<string, string>;
}

/**
 * With the worker's settings: queued entries whose key is gone fail before
 * they start (nothing runs), then the entries decideStarts picks become
 * processing, each with a start.
 */
export function decideQueue(s0: QueueState, settings: QueueSettings, now: number): Step {
  const s = clone(s0);
  const ops: QueueOp[] = [];
  for (const [index, problem] of Object.entries(settings.problems)) {
    const e = findEntry(s, index);
    if (!e || e.status !== 'queued') continue;
    Object.assign(e, { status: 'failed', last_transition_time: iso(now) });
    ops.push(warn('repair: entry failed before starting', { index, problem }));
  }
  const starts = decideStarts({ entries: s.entries, closing: Object.values(s.closing), enabled: s.enabled, maxConcurrent: settings.max_concurrent_repairs });
  for (const index of starts) {
    Object.assign(findEntry(s, index)!, { status: 'processing', step: 0, step_status: 'waiting', last_transition_time: iso(now) });
    ops.push({ op: 'start', index });
  }
  return { state: s, ops };
}

/** Its workflow could not be started: the entry fails with the reason (nothing ran). */
export function startFailed(s0: QueueState, index: string, error: string, now: number): Step {
  const s = clone(s0);
  const e = findEntry(s, index);
  if (e && e.status === 'processing') Object.assign(e, { status: 'failed', last_transition_time: iso(now) });
  forget(s, index);
  return { state: s, ops: [warn('repair: could not start entry workflow; the entry failed', { index, error })] };
}

/** Its workflow has started: when the entry was deleted meanwhile (closing), it is cancelled now. */
export function started(s: QueueState, index: string): Step {
  return { state: s, ops: index in s.closing ? [{ op: 'cancel', index }] : [] };
}
