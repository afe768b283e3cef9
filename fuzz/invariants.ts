// The message fuzzer's invariants: pure functions over what a batch left
// behind (workflow histories, describes, the kube-apiserver audit log, the
// repair command's own record of its runs), each returning the violations it
// finds, attributed to the workflow type and handler that caused them where
// the record tells. Unit-tested in test/unit/fuzz-generate.test.ts.
import proto from '@temporalio/proto';
import { preview } from '../src/checks/preview.ts';
import { ok, type Write } from '../faults/audit.ts';

export interface Violation {
  /** The report's row: workflow type and handler ('(invariants)' when no single message is to blame). */
  type: string;
  handler: string;
  /** The handler's kind, when the record tells (a signal and an update may share a name). */
  kind?: 'signal' | 'update' | 'start';
  invariant: string;
  detail: string;
}

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const EventType = proto.temporal.api.enums.v1.EventType;
const Cause = proto.temporal.api.enums.v1.WorkflowTaskFailedCause;

/**
 * Workflow task failures that are part of Temporal's ordinary work, not of a
 * workflow's code: new events arrived while a task completed (the task runs
 * again with them), a sticky queue reset, a reset, a pause, a terminate while
 * a task ran (the fuzzer ends each hand start it has looked at).
 */
const ORDINARY_CAUSES = new Set<number>([
  Cause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND, Cause.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE, Cause.WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE_COMMAND,
  Cause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW, Cause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_UPDATE,
  Cause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_PAUSE_REQUESTED_BEFORE_TASK_STARTED,
]);

/** A payload's bytes, however the history gives them (bytes, or base64 text from JSON). */
const bytesOf = (data: unknown): Buffer => (typeof data === 'string' ? Buffer.from(data, 'base64') : Buffer.from(data as Uint8Array));

const causeName = (c: number | null | undefined) => (Cause[c ?? 0] ?? String(c)).replace('WORKFLOW_TASK_FAILED_CAUSE_', '');

/** The text of a payload list's first payload (JSON as the default converter writes it), cut short. */
export function payloadPreview(payloads: { payloads?: { data?: Uint8Array | null }[] | null } | null | undefined, max = 160): string {
  const data = payloads?.payloads?.[0]?.data;
  if (!data) return '(no input)';
  const text = bytesOf(data).subarray(0, max * 4).toString('utf8');
  return preview(text, max);
}

/** What a message in a history was: its handler's name and its input. */
interface Received {
  handler: string;
  kind: 'signal' | 'update';
  input: string;
  eventId: number;
}

function receivedOf(e: HistoryEvent): Received | undefined {
  const id = Number(e.eventId ?? 0);
  if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) {
    const a = e.workflowExecutionSignaledEventAttributes;
    return { handler: a?.signalName ?? '?', kind: 'signal', input: payloadPreview(a?.input), eventId: id };
  }
  if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ADMITTED) {
    const r = e.workflowExecutionUpdateAdmittedEventAttributes?.request;
    return { handler: r?.input?.name ?? '?', kind: 'update', input: payloadPreview(r?.input?.args), eventId: id };
  }
  if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) {
    const r = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
    return { handler: r?.input?.name ?? '?', kind: 'update', input: payloadPreview(r?.input?.args), eventId: id };
  }
  return undefined;
}

/**
 * Every workflow task failure of a history after event `after` that is not
 * Temporal's ordinary work, blamed on the last message the history received
 * before it (the start input when none). Updates rejected by their validator
 * leave no event: a failure they cause shows with the message before.
 */
export function taskFailures(type: string, workflowId: string, events: HistoryEvent[], after = 0): Violation[] {
  const out: Violation[] = [];
  let last: Received | undefined;
  for (const e of events) {
    const r = receivedOf(e);
    if (r) last = r;
    if (Number(e.eventId ?? 0) <= after) continue;
    if (e.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) continue;
    const a = e.workflowTaskFailedEventAttributes;
    if (ORDINARY_CAUSES.has(a?.cause ?? 0)) continue;
    const why = preview(a?.failure?.message ?? '', 200);
    out.push({
      type, handler: last?.handler ?? 'start', kind: last?.kind ?? 'start',
      invariant: 'no workflow task failure',
      detail: `${workflowId}: workflow task failed at event ${String(e.eventId)} (${causeName(a?.cause)}: ${why})`
        + (last ? ` after ${last.kind} ${last.handler} (event ${last.eventId}) with ${last.input}` : ' after its start'),
    });
  }
  return out;
}

/** The largest history a workflow may have (Temporal's own warning thresholds: past them it should have continued as new). */
export const HISTORY_MAX_EVENTS = 10_240;
export const HISTORY_MAX_BYTES = 10 * 1024 * 1024;

export function historySize(type: string, workflowId: string, events: number, bytes: number): Violation[] {
  if (events <= HISTORY_MAX_EVENTS && bytes <= HISTORY_MAX_BYTES) return [];
  return [{
    type, handler: '(invariants)', invariant: 'no history over its expected size',
    detail: `${workflowId}: ${events} events, ${(bytes / 1024 / 1024).toFixed(1)} MiB (at most ${HISTORY_MAX_EVENTS} events and ${HISTORY_MAX_BYTES / 1024 / 1024} MiB)`,
  }];
}

/** A workflow task that keeps failing shows as a pending task with a growing attempt: one stuck past this many is a violation. */
export const STUCK_ATTEMPTS = 3;

export function stuckTask(type: string, workflowId: string, attempt: number | undefined): Violation[] {
  if (!attempt || attempt < STUCK_ATTEMPTS) return [];
  return [{ type, handler: '(invariants)', invariant: 'no workflow task failure', detail: `${workflowId}: its workflow task is at attempt ${attempt} (it fails every time)` }];
}

/** Intervals [from, to) and the most of them open at once. */
export function peakOpen(spans: { from: number; to: number; what: string }[]): { peak: number; at?: number; open: string[] } {
  let best = { peak: 0, at: undefined as number | undefined, open: [] as string[] };
  for (const s of spans) {
    const open = spans.filter((o) => o.from <= s.from && o.to > s.from);
    if (open.length > best.peak) best = { peak: open.length, at: s.from, open: open.map((o) => o.what) };
  }
  return best;
}

/**
 * The repair command's runs, from the lines it appends (`start <ms> <address>`, `end <ms> <address>`):
 * one span per run, open until its end (or `now` when it has none yet).
 */
export function commandRuns(lines: string[], now: number): { from: number; to: number; what: string }[] {
  const open = new Map<string, number[]>();
  const spans: { from: number; to: number; what: string }[] = [];
  for (const line of lines) {
    const [kind, ms, address] = line.trim().split(/\s+/);
    if (!address || !ms) continue;
    const t = Number(ms);
    if (kind === 'start') open.set(address, [...(open.get(address) ?? []), t]);
    else if (kind === 'end') {
      const starts = open.get(address) ?? [];
      const from = starts.shift();
      if (from !== undefined) spans.push({ from, to: t, what: `repair of ${address} from ${new Date(from).toISOString().slice(11, 23)}` });
    }
  }
  for (const [address, starts] of open) for (const from of starts) spans.push({ from, to: now, what: `repair of ${address} from ${new Date(from).toISOString().slice(11, 23)} (not ended)` });
  return spans.sort((a, b) => a.from - b.from);
}

/** Nodes tend held cordoned, from its Node patches in the audit log: one span per cordon, open until its uncordon (or `now`). */
export function cordons(writes: Write[], user: string, now: number): { from: number; to: number; what: string }[] {
  const open = new Map<string, number>();
  const spans: { from: number; to: number; what: string }[] = [];
  for (const w of writes.filter((x) => x.user === user && x.resource === 'nodes' && !x.subresource && x.verb === 'patch' && ok(x)).sort((a, b) => a.at - b.at)) {
    const u = (w.body as { spec?: { unschedulable?: boolean | null } } | undefined)?.spec?.unschedulable;
    if (u === undefined) continue;
    const name = w.name ?? '?';
    if (u === true && !open.has(name)) open.set(name, w.at);
    if (u !== true && open.has(name)) {
      spans.push({ from: open.get(name)!, to: w.at, what: `Node ${name}` });
      open.delete(name);
    }
  }
  for (const [name, from] of open) spans.push({ from, to: now, what: `Node ${name} (still cordoned)` });
  return spans.sort((a, b) => a.from - b.from);
}

export function repairLimit(limit: number, runs: { from: number; to: number; what: string }[], cordoned: { from: number; to: number; what: string }[]): Violation[] {
  const out: Violation[] = [];
  for (const [what, spans] of [['repair commands running', runs], ['Nodes cordoned for repairs', cordoned]] as const) {
    const p = peakOpen(spans);
    if (p.peak > limit) {
      out.push({
        type: 'repair-queue', handler: '(invariants)', invariant: 'no limit exceeded: max_concurrent_repairs',
        detail: `${p.peak} ${what} at once at ${new Date(p.at!).toISOString().slice(11, 23)} (max_concurrent_repairs ${limit}): ${p.open.join(', ')}`,
      });
    }
  }
  return out;
}

/** The weeder's readiness record: the one ConfigMap tend writes, in its own namespace (docs/security.md). */
const READINESS_RECORD = { namespace: 'tend-system', name: 'tend-weeder-readiness' };

/**
 * Writes of tend's outside what its configuration names: in a namespace it does not name, or to a
 * cluster-scoped resource other than Nodes (the repair queue cordons them). A drain evicts every
 * pod of its Node, whatever its namespace: an eviction while tend holds a Node cordoned is one.
 */
export function outsideConfiguration(writes: Write[], user: string, namespaces: readonly string[], draining: { from: number; to: number }[] = []): Violation[] {
  const out: Violation[] = [];
  for (const w of writes) {
    if (w.user !== user) continue;
    if (w.namespace ? namespaces.includes(w.namespace) : w.resource === 'nodes') continue;
    if (w.resource === 'configmaps' && w.namespace === READINESS_RECORD.namespace && w.name === READINESS_RECORD.name) continue;
    if (w.subresource === 'eviction' && draining.some((s) => s.from <= w.at && w.at <= s.to)) continue;
    out.push({
      type: '(any)', handler: '(invariants)', invariant: 'nothing acted on outside the configuration',
      detail: `${w.verb} ${w.resource}${w.subresource ? `/${w.subresource}` : ''} ${w.namespace ? `${w.namespace}/` : ''}${w.name ?? ''} (answered ${w.code}) at ${new Date(w.at).toISOString().slice(11, 23)}`,
    });
  }
  return out;
}

/**
 * Long-lived workflows run under their own id only: one started by hand under another id (or, for
 * per-object workflows, an id that does not match its input) must refuse to run.
 */
export function identity(type: string, workflowId: string, status: string, note: string): Violation[] {
  if (status !== 'RUNNING') return [];
  return [{ type, handler: 'start', kind: 'start', invariant: 'a workflow runs under its own id only', detail: `${workflowId} (${note}) still runs, started by hand under an id that is not its own` }];
}
