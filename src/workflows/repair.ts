// The repair queue as two workflows. `repair-queue` is the entity: it holds
// CKE's entries, answers the CLI's updates synchronously, and starts one
// `repair/<index>` workflow per entry when a slot is free. Each entry's
// workflow walks the seed's steps (drain, repair command, watch) with
// decisions from src/repair/decide.ts, and reports its transitions back. The
// queue's state transitions are pure functions (src/repair/queue.ts); both
// workflows only wait and act, and continue-as-new before any history limit.
import {
  ActivityCancellationType, ActivityFailure, allHandlersFinished, ApplicationFailure, CancellationScope, ChildWorkflowCancellationType,
  condition, ContinueAsNew, continueAsNew, getExternalWorkflowHandle, isCancellation, log, ParentClosePolicy, patched, proxyActivities, proxyLocalActivities,
  setCurrentDetails, setHandler, sleep,
  startChild, WorkflowIdReusePolicy, workflowInfo, type RetryPolicy,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import { ckeDrainBackoff, decideEntryOp, drainBackoff, selectForDelete } from '../repair/decide.ts';
import { ZERO_TIME, type RepairQueueEntry } from '../repair/entry.ts';
import {
  addUpdate, deleteFinishedUpdate, deleteUnfinishedUpdate, deleteUpdate, disableUpdate, enableUpdate, entryReportSignal,
  isEnabledQuery, listQuery, MAX_INDEX, REFUSAL, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId, resetBackoffUpdate, resetEntryBackoffSignal,
  repairLiftWorkflowId, setEnabledSignal, type EntryInput, type EntryLift, type EntryReport, type EntryResume,
} from '../repair/messages.ts';
import type { RepairPlan } from '../repair/procedure.ts';
import {
  addEntries, applyReport, cancelFailed, decideQueue, emptyQueue, entryEnded, findDeleting, findEntry, listEntries, liveIndexes, mayStart, removeEntries,
  resetBackoff, saneNextIndex, setEnabled, started, startFailed, type QueueOp, type QueueState, type Step,
} from '../repair/queue.ts';
import {
  addInputSchema, capacityProblem, check, deleteInputSchema, entryInputSchema, entryReportSchema, inputProblem, noInput, parseOrThrow, QUEUE_STATE_LIMITS, queueStateSchema,
} from '../repair/validate.ts';
import { preview } from '../checks/preview.ts';
import { failureMessage, refusalOf } from './failures.ts';

/** Entries whose commands may run on repair.taskQueue (a local activity reads it first). */
export const REPAIR_TASK_QUEUE_PATCH = 'repair-task-queue';
/** CKE's drain back-off: 300 s + a random share (the workflow's deterministic Math.random) of 300 s x count, where runs before it back off count x 60 s, capped. */
export const REPAIR_CKE_BACKOFF_PATCH = 'repair-cke-backoff';
/**
 * CKE's entry at its end: a failed last step shows the step after it, `waiting` (CKE's
 * strategy moved past the last step before failing it); a failed repair command shows its
 * step `watching` (CKE marks the step watching before it runs the command).
 */
export const REPAIR_CKE_FAILED_STEP_PATCH = 'repair-cke-failed-step';
/**
 * The queue starts entries without waiting for each start to be confirmed:
 * the loop goes on, and a slot freed meanwhile wakes it. Runs recorded before
 * it keep awaiting every start. (The worker's settings stay an activity: read
 * by a local activity, whose result reached the workflow later than its
 * marker's place in history when events arrived meanwhile, a replay decided
 * on fewer freed slots and failed with a nondeterminism error.)
 */
export const REPAIR_QUEUE_UNBLOCKED_STARTS_PATCH = 'repair-queue-unblocked-starts';
/**
 * An entry reports `draining`, `watching` or its next step without waiting for
 * the signal to reach the queue: the drain, the watch or the next step's work
 * starts in the same workflow task. Its reports stay in order (each waits for
 * the one before), and it waits for the last one before it continues as new.
 */
export const REPAIR_REPORT_AHEAD_PATCH = 'repair-report-ahead';
/**
 * An entry that ends (failed, given up, deleted) with its cordon on tries to lift it until it is
 * lifted, LIFT_RETRY_MS (time-scaled) after each uncordon that ran out of attempts, showing why in
 * its details: a cordon never outlives its entry. Before, one failed uncordon was logged and the
 * entry ended with the node cordoned.
 */
export const REPAIR_LIFT_UNTIL_DONE_PATCH = 'repair-lift-until-done';
/**
 * An entry's report is display only: the queue frees a repair slot when the entry's workflow has
 * ended (its result, or a probe finding it gone), never on a report, which anyone who may signal
 * the queue can forge. A report announcing an end makes the queue probe that entry soon.
 */
export const REPAIR_QUEUE_ENDS_FREE_PATCH = 'repair-queue-ends-free';
const LIFT_RETRY_MS = 60_000;
/**
 * An entry that ends (failed, given up, deleted) and cannot lift its cordon ends at once, its
 * repair slot freed (a persistent 403 on the uncordon neither holds a slot nor blocks `delete`):
 * the lift goes on as `repair/<index>/lift`, a workflow of its own (the entry workflow's lift
 * mode), showing why in its details, until the cordon is lifted or it is cancelled.
 */
export const REPAIR_LIFT_APART_PATCH = 'repair-lift-apart';
/** The reason a lift workflow starts with, at most. */
const LIFT_REASON_MAX = 400;

/** An activity bound for a command without a timeout (CKE: 0 is none): its heartbeat timeout still notices a dead worker. */
const UNBOUNDED_MS = 365 * 24 * 3600 * 1000;

const iso = (ms: number) => new Date(ms).toISOString();

/** Continue-as-new at Temporal's suggestion, and well before the history limit in any case; both states are small. */
const HISTORY_LIMIT = 4000;
const historyTooLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > HISTORY_LIMIT;

/** How a failure reads in a log line and an entry's reason. */
const describe = failureMessage;

// ================================================================ the queue

/** What the queue carries across continue-as-new (src/repair/queue.ts). */
export type RepairQueueState = QueueState;

/**
 * Entries this run did not start (they were started by an earlier run) are
 * asked every so long (times the worker's time_scale) whether their workflow
 * still runs: a signal to a workflow that has ended fails, and the entry ends
 * (failed, or its slot freed when it was being deleted).
 */
const PROBE_SECONDS = 300;
/** The first probe of an entry of an earlier run that announced its end (doubled at each further announcement). */
const CLAIM_PROBE_MS = 1000;

/** How an entry's workflow that completed says it ended (its result's status). */
function finalOf(result: unknown): 'succeeded' | 'failed' {
  const status = (result as { entry?: { status?: unknown } } | undefined)?.entry?.status;
  return status === 'succeeded' ? 'succeeded' : 'failed';
}

export async function repairQueueWorkflow(state?: unknown): Promise<void> {
  if (workflowInfo().workflowId !== REPAIR_QUEUE_WORKFLOW_ID) {
    throw ApplicationFailure.nonRetryable(`repairQueueWorkflow: refused: the queue runs as workflow id ${REPAIR_QUEUE_WORKFLOW_ID} only (got ${preview(workflowInfo().workflowId, 80)})`, REFUSAL.invalidInput);
  }
  let s: QueueState = emptyQueue();
  if (state !== undefined && state !== null) {
    const c = check(queueStateSchema, state, 'repairQueueWorkflow: refused input', QUEUE_STATE_LIMITS);
    if (!c.ok) throw ApplicationFailure.nonRetryable(c.reason, REFUSAL.invalidInput);
    s = c.value;
    const sane = saneNextIndex(s);
    if (sane !== s.nextIndex) {
      log.warn('repair: the queue\'s next index is past its bound; it goes on after its own entries', { nextIndex: preview(s.nextIndex, 40), now: sane, bound: MAX_INDEX });
      s = { ...s, nextIndex: sane };
    }
  }
  /** Ties entries and their reports to this chain of runs: a queue reset (a new chain) refuses the old entries' reports. */
  const chain = workflowInfo().firstExecutionRunId;
  const fast = patched(REPAIR_QUEUE_UNBLOCKED_STARTS_PATCH);
  const endsOnly = patched(REPAIR_QUEUE_ENDS_FREE_PATCH);
  /** The queue's bounds (MAX_QUEUE_ENTRIES, MAX_INDEX) on adds; an add refused changes no history, but runs recorded before took any. */
  const bounded = endsOnly;
  let dirty = true;
  /** A probe was brought forward (an entry of an earlier run announced its end): the loop's wait is recomputed. */
  let rearm = false;
  /** Ends announced per entry of an earlier run: each brings its probe forward, less each time. */
  const claims = new Map<string, number>();
  /** max_concurrent_repairs and time_scale as last read from the worker, in this run only. */
  let maxConcurrent: number | undefined;
  let timeScale: number | undefined;
  /** Entries whose start is in flight: a delete cancels them once they have started. */
  const starting = new Set<string>();
  /** Entries this run started: their end arrives through the child's result. */
  const watched = new Set<string>();
  let nextProbe = 0;

  const { repairCheckRequests, repairQueueSettings } = proxyActivities<Activities>({
    startToCloseTimeout: '10s', retry: { maximumInterval: '30s', nonRetryableErrorTypes: [REFUSAL.invalidInput] },
  });

  const apply = async <T>(step: Step<T>): Promise<T | undefined> => {
    s = step.state;
    dirty = true;
    await Promise.all(step.ops.map(act));
    return step.value;
  };

  /** A signal to an entry; one whose workflow has ended tells the queue so. */
  const signalEntry = (index: string, send: () => Promise<void>) => send().catch(async (err: unknown) => {
    const gone = /not found|completed|closed/i.test(describe(err));
    log.warn('repair: could not signal entry', { index, error: describe(err) });
    if (gone) await apply(entryEnded(s, index, `signalling it failed: ${describe(err)}`, Date.now()));
  });

  async function act(op: QueueOp): Promise<void> {
    switch (op.op) {
      case 'log':
        log[op.level](op.message, op.fields);
        return;
      case 'start':
        // Not waited for: the loop goes on (startEntry records the start, or its failure, when it lands).
        if (fast) return void startEntry(op.index);
        return startEntry(op.index);
      case 'cancel':
        // A start in flight: cancelled once started (see startEntry).
        if (starting.has(op.index)) return;
        return getExternalWorkflowHandle(repairEntryWorkflowId(op.index)).cancel()
          .catch(async (err: unknown) => void await apply(cancelFailed(s, op.index, describe(err))));
      case 'signal-enabled':
        return signalEntry(op.index, () => getExternalWorkflowHandle(repairEntryWorkflowId(op.index)).signal(setEnabledSignal, op.enabled));
      case 'signal-reset-backoff':
        return signalEntry(op.index, () => getExternalWorkflowHandle(repairEntryWorkflowId(op.index)).signal(resetEntryBackoffSignal));
    }
  }

  async function startEntry(index: string): Promise<void> {
    const e = findEntry(s, index);
    if (!e) return;
    // Keys only: the entry's activities look its commands up in the worker's configuration.
    const input: EntryInput = {
      index: e.index, address: e.address, machine_type: e.machine_type, operation: e.operation,
      ...(e.serial ? { serial: e.serial } : {}),
      enabled: s.enabled, queue: chain,
    };
    starting.add(index);
    try {
      // Not cancellable: cancelling the queue must not cancel its entries.
      const child = await CancellationScope.nonCancellable(() => startChild(repairEntryWorkflow, {
        workflowId: repairEntryWorkflowId(index),
        args: [input],
        // An index is never reused: a workflow of that id from an earlier queue makes this start fail, not collide.
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        // The queue continues-as-new; its entries must outlive each run.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: ChildWorkflowCancellationType.ABANDON,
        staticSummary: `repair ${e.operation} of ${e.machine_type} ${e.address}${e.serial ? ` (${e.serial})` : ''}`,
        typedSearchAttributes: [
          { key: TendCapability, value: 'repair' },
          { key: TendTarget, value: e.address },
        ],
      }));
      watched.add(index);
      starting.delete(index);
      // However it ends (a report lost, terminated, failed), the queue learns it.
      void child.result().then(
        (result) => ({ how: 'its workflow completed', final: endsOnly ? finalOf(result) : undefined }),
        (err: unknown) => ({ how: `its workflow ended: ${describe(err)}`, final: endsOnly ? 'failed' as const : undefined }))
        .then(async ({ how, final }) => {
          watched.delete(index);
          await apply(entryEnded(s, index, how, Date.now(), final));
        });
      await apply(started(s, index));
    } catch (err) {
      starting.delete(index);
      await apply(startFailed(s, index, describe(err), Date.now()));
    }
  }

  setHandler(listQuery, () => listEntries(s));
  setHandler(isEnabledQuery, () => s.enabled);
  setHandler(entryReportSignal, (raw: unknown) => {
    const c = check(entryReportSchema, raw, 'entry-report');
    if (!c.ok) return log.warn('repair: ignored an entry-report signal', { reason: c.reason });
    const report = c.value as EntryReport;
    const step = applyReport(s, report, chain, endsOnly);
    if (step.ignored) return log.warn('repair: ignored an entry-report signal', { reason: step.ignored });
    if (!endsOnly) return void apply(step);
    // Display only: nothing to decide again.
    s = step.state;
    if (step.claimed && !watched.has(report.index) && !starting.has(report.index)) {
      // An entry of an earlier run (its end reaches this run by a probe only): look soon, less often each time.
      const n = claims.get(report.index) ?? 0;
      claims.set(report.index, n + 1);
      nextProbe = Math.min(nextProbe, Date.now() + Math.min(PROBE_SECONDS * 1000, CLAIM_PROBE_MS * 2 ** Math.min(n, 10)));
      rearm = true;
    }
  });

  const roomFor = (adding: number) => {
    const problem = capacityProblem(s.entries.length + Object.keys(s.closing).length, s.nextIndex, adding);
    if (problem) throw ApplicationFailure.nonRetryable(`add: refused: ${problem}`, REFUSAL.invalidRequest);
  };
  setHandler(addUpdate, async (input) => {
    const problems = await repairCheckRequests(input);
    if (problems.length > 0) throw ApplicationFailure.nonRetryable(preview(problems.join('; '), 2000), REFUSAL.invalidRequest);
    // Again: another add may have taken the room while this one was checked.
    if (bounded) roomFor(input.requests.length);
    return (await apply(addEntries(s, input.requests, Date.now())))!;
  }, {
    validator: (input: unknown) => {
      const { requests } = parseOrThrow(addInputSchema, input, 'add');
      if (bounded) roomFor(requests.length);
    },
  });
  setHandler(deleteUpdate, async (arg) => {
    const { index } = parseOrThrow(deleteInputSchema, arg, 'delete');
    // CKE: deleting an entry already being deleted changes nothing.
    const deleting = findDeleting(s, index);
    if (deleting) return { ...deleting, deleted: true };
    const removed = await apply(removeEntries(s, [index]));
    if (!removed?.[0]) throw ApplicationFailure.nonRetryable(`no entry with index ${index} in the repair queue`, REFUSAL.noSuchEntry);
    return { ...removed[0], deleted: true };
  }, {
    validator: (arg: unknown) => {
      const { index } = parseOrThrow(deleteInputSchema, arg, 'delete');
      if (!findEntry(s, index) && !findDeleting(s, index)) throw ApplicationFailure.nonRetryable(`no entry with index ${index} in the repair queue`, REFUSAL.noSuchEntry);
    },
  });
  for (const [update, which] of [[deleteFinishedUpdate, 'finished'], [deleteUnfinishedUpdate, 'unfinished']] as const) {
    setHandler(update, async () => {
      const indexes = selectForDelete(s.entries, which);
      await apply(removeEntries(s, indexes));
      return indexes;
    }, { validator: (...args: unknown[]) => noInput(`delete-${which}`, args) });
  }
  for (const [update, enabled] of [[enableUpdate, true], [disableUpdate, false]] as const) {
    setHandler(update, async () => {
      await apply(setEnabled(s, enabled));
      return enabled;
    }, { validator: (...args: unknown[]) => noInput(enabled ? 'enable' : 'disable', args) });
  }
  setHandler(resetBackoffUpdate, async () => (await apply(resetBackoff(s)))!, { validator: (...args: unknown[]) => noInput('reset-backoff', args) });

  const orphans = () => liveIndexes(s).filter((i) => !watched.has(i) && !starting.has(i));
  const readSettings = async () => {
    const queued = s.entries.filter((e) => e.status === 'queued');
    const settings = await repairQueueSettings({ entries: queued.map((e) => ({ index: e.index, machine_type: e.machine_type, operation: e.operation })) });
    maxConcurrent = settings.max_concurrent_repairs;
    timeScale = settings.time_scale ?? 1;
    return settings;
  };
  try {
    for (;;) {
      rearm = false;
      if (historyTooLong()) break;
      const probeDue = orphans().length > 0 && Date.now() >= nextProbe;
      if (probeDue) {
        // Entries of earlier runs: is their workflow still there? (Re-sending the enabled flag is harmless.)
        if (timeScale === undefined) await readSettings();
        nextProbe = Date.now() + PROBE_SECONDS * (timeScale ?? 1) * 1000;
        await Promise.all(orphans().map((index) =>
          signalEntry(index, () => getExternalWorkflowHandle(repairEntryWorkflowId(index)).signal(setEnabledSignal, s.enabled))));
      }
      if (dirty && mayStart(s, maxConcurrent)) {
        dirty = false;
        // Read fresh from the worker when entries may start: an operator who removed an operation stops its entries.
        const settings = await readSettings();
        if (fast) {
          // The decision itself does not wake the loop again; what changes meanwhile (a slot freed) does.
          const step = decideQueue(s, settings, Date.now());
          s = step.state;
          await Promise.all(step.ops.map(act));
          continue;
        }
        await apply(decideQueue(s, settings, Date.now()));
        dirty = false;
        continue;
      }
      dirty = false;
      const wake = () => dirty || rearm || historyTooLong();
      if (orphans().length > 0) await condition(wake, Math.max(1, nextProbe - Date.now()));
      else await condition(wake);
    }
  } catch (err) {
    // Cancelling the queue would lose every entry: it goes on in a new run instead (terminate it to reset the queue).
    if (!isCancellation(err)) throw err;
    log.warn('repair: the repair queue was cancelled; it keeps its entries and goes on (terminate repair-queue to reset it)', {});
  }
  // Starts in flight land first: the next run learns of a failed start from its state, not by a probe minutes later.
  await CancellationScope.nonCancellable(() => condition(() => allHandlersFinished() && starting.size === 0));
  await continueAsNew<typeof repairQueueWorkflow>(s);
}

// ================================================================ an entry

class RepairEntry {
  entry: RepairQueueEntry;
  enabled: boolean;
  drained = false;
  commandDone = false;
  /** This workflow cordoned (or may have cordoned) the node. */
  cordoned = false;
  healthyAtStart?: boolean;
  healthy?: boolean;
  watchUntil = 0;
  backoffExpire = 0;
  /** The running drain's eviction deadline (epoch ms). */
  drainDeadline?: number;
  /** Numbers from the worker's configuration (repairInspect); never a command. */
  plan?: RepairPlan;
  /** Runs of the step's repair command done before a pause held the next one (0: none held). */
  commandRuns = 0;
  /** The last write repair's pause held, shown in the Web UI until it goes out. */
  held?: string;
  /** Why the entry's cordon is not lifted yet, while it is tried again (lift). */
  lifting?: string;
  /** What observe mode recorded instead of doing (newest last, the last OBSERVED_MAX). */
  observed: string[] = [];

  constructor(input: EntryInput) {
    this.entry = {
      index: input.index, address: input.address, nodename: '', machine_type: input.machine_type, operation: input.operation,
      ...(input.serial ? { serial: input.serial } : {}),
      status: 'processing', step: 0, step_status: 'waiting', drain_backoff_count: 0, drain_backoff_expire: ZERO_TIME,
    };
    this.enabled = input.enabled;
    const r = input.resume;
    if (r) {
      Object.assign(this.entry, {
        nodename: r.nodename, step: r.step, step_status: r.step_status, drain_backoff_count: r.drain_backoff_count, drain_backoff_expire: r.drain_backoff_expire,
        ...(r.last_transition_time ? { last_transition_time: r.last_transition_time } : {}),
      });
      Object.assign(this, {
        drained: r.drained, commandDone: r.commandDone, cordoned: r.cordoned, healthyAtStart: r.healthyAtStart, healthy: r.healthy,
        watchUntil: r.watchUntil, backoffExpire: r.backoffExpire, drainDeadline: r.drainDeadline, plan: r.plan, commandRuns: r.commandRuns ?? 0,
      });
    }
  }

  get key() {
    return { index: this.entry.index, address: this.entry.address, machine_type: this.entry.machine_type, operation: this.entry.operation };
  }

  get step() {
    return this.plan!.steps[this.entry.step]!;
  }

  resume(): EntryResume {
    const e = this.entry;
    return {
      nodename: e.nodename, step: e.step, step_status: e.step_status,
      ...(e.last_transition_time ? { last_transition_time: e.last_transition_time } : {}),
      drain_backoff_count: e.drain_backoff_count, drain_backoff_expire: e.drain_backoff_expire,
      drained: this.drained, commandDone: this.commandDone, cordoned: this.cordoned,
      ...(this.healthyAtStart !== undefined ? { healthyAtStart: this.healthyAtStart } : {}),
      ...(this.healthy !== undefined ? { healthy: this.healthy } : {}),
      watchUntil: this.watchUntil, backoffExpire: this.backoffExpire,
      ...(this.drainDeadline !== undefined ? { drainDeadline: this.drainDeadline } : {}),
      ...(this.commandRuns > 0 ? { commandRuns: this.commandRuns } : {}),
      plan: this.plan!,
    };
  }
}

export interface RepairEntryResult {
  entry: RepairQueueEntry;
  reason?: string;
  /** Observe mode: what the entry would have done (cordon, evictions, commands, uncordon), done nothing of. */
  observed?: string[];
}

/** Observe records an entry keeps for its result and the Web UI. */
const OBSERVED_MAX = 50;
/**
 * A write held by repair's pause is asked again at once, and this time waits in
 * place for the resume (heartbeating) up to this long: a long pause costs a
 * few events an hour, and the write goes out within a second of the resume.
 */
const PAUSE_HOLD_MS = 10 * 60_000;

/** What an entry shows in the Web UI: what a pause holds, and what observe mode recorded. */
function entryDetails(r: RepairEntry): string {
  const lines = [`step ${r.entry.step} ${r.entry.step_status}`];
  if (r.held) lines.push(`paused: ${r.held}; goes on within a second of tend resume repair`);
  if (r.lifting) lines.push(r.lifting);
  if (r.observed.length > 0) lines.push(`observe mode, nothing done; would have: ${r.observed.join('; ')}`);
  return lines.join('\n');
}

/** Refusals from the activities: the input or the key is not acceptable; retrying cannot help. */
const REFUSALS = [REFUSAL.invalidInput, REFUSAL.notConfigured];

const refusal = (err: unknown): string | undefined => (err instanceof ActivityFailure ? refusalOf(err, REFUSALS)?.message : undefined);

/** The progress fields an entry reports to the queue (never its identity). */
function progress(e: RepairQueueEntry): Partial<RepairQueueEntry> {
  return {
    nodename: e.nodename, status: e.status, step: e.step, step_status: e.step_status,
    ...(e.last_transition_time ? { last_transition_time: e.last_transition_time } : {}),
    drain_backoff_count: e.drain_backoff_count, drain_backoff_expire: e.drain_backoff_expire,
  };
}

/** Activity attempts before an entry gives up (and fails); their intervals scale with time_scale. */
const ACTIVITY_ATTEMPTS = 10;

type Interrupt = 'history' | 'disabled';

/**
 * Runs a long activity that may be interrupted: when `stop` says why, the
 * activity is cancelled (and waited for). A cancellation of the workflow
 * itself is rethrown.
 */
async function interruptible<T>(run: () => Promise<T>, stop: () => Interrupt | undefined): Promise<{ ok: true; value: T } | { ok: false; why: Interrupt }> {
  const scope = new CancellationScope();
  const watcher = new CancellationScope();
  let why: Interrupt | undefined;
  void watcher.run(() => condition(() => stop() !== undefined)).then(() => {
    why = stop();
    scope.cancel();
  }, () => undefined);
  try {
    return { ok: true, value: await scope.run(run) };
  } catch (err) {
    if (why && isCancellation(err) && !CancellationScope.current().consideredCancelled) return { ok: false, why };
    throw err;
  } finally {
    watcher.cancel();
  }
}

/**
 * `repair/<index>/lift`: lifts the cordon an ended entry left on, LIFT_RETRY_MS (time-scaled)
 * apart until it is lifted, its reason in the Web UI details; a refusal (which no retry changes)
 * ends it failed, a cancellation ends it with the cordon left on.
 */
async function liftUntilDone(input: EntryInput, lifting: EntryLift): Promise<RepairEntryResult> {
  const scale = lifting.time_scale;
  const uncordon = proxyActivities<Activities>({
    startToCloseTimeout: '30s',
    retry: { maximumAttempts: ACTIVITY_ATTEMPTS, nonRetryableErrorTypes: REFUSALS, initialInterval: Math.max(10, 1000 * scale), maximumInterval: Math.max(100, 60_000 * scale) },
  }).repairUncordon;
  const every = Math.max(100, LIFT_RETRY_MS * scale);
  let reason = lifting.reason;
  for (;;) {
    setCurrentDetails(`lifting the cordon on node ${lifting.nodename} (repair entry ${input.index}) failed (${reason}); tried again every ${Math.round(every / 1000)} s until it is lifted; ` +
      'cancel this workflow to leave the cordon on');
    if (historyTooLong()) await continueAsNew<typeof repairEntryWorkflow>({ ...input, lift: { ...lifting, reason } });
    await sleep(every);
    try {
      const out = await uncordon({ index: input.index, address: input.address });
      if (out !== 'paused') break;
      reason = 'repair is paused; it is lifted after tend resume repair';
    } catch (err) {
      const refused = refusal(err);
      if (refused) throw ApplicationFailure.nonRetryable(refused, REFUSAL.entryRefused);
      reason = preview(describe(err), LIFT_REASON_MAX);
    }
  }
  setCurrentDetails(`the cordon on node ${lifting.nodename} is lifted`);
  log.info('repair: the cordon an ended entry left on is lifted', { index: input.index, nodename: lifting.nodename });
  return {
    entry: {
      index: input.index, address: input.address, nodename: lifting.nodename, machine_type: input.machine_type, operation: input.operation,
      status: 'failed', step: 0, step_status: 'waiting', drain_backoff_count: 0, drain_backoff_expire: ZERO_TIME,
    },
    reason: 'its cordon, left on when the entry ended, is lifted',
  };
}

/**
 * Why this workflow may not run with `input`, or undefined: an entry runs as `repair/<index>`, a
 * child of the queue (a run that continued-as-new keeps its parent), so a hand-started one cannot
 * skip the queue's limits; a lift runs as `repair/<index>/lift`, a child of its entry.
 */
function identityProblem(input: EntryInput): string | undefined {
  const id = workflowInfo().workflowId;
  const own = input.lift ? repairLiftWorkflowId(input.index) : repairEntryWorkflowId(input.index);
  if (id !== own) return `repairEntryWorkflow: refused input: the workflow id must be ${own} for entry ${input.index} (got ${preview(id, 80)})`;
  const parent = workflowInfo().parent?.workflowId;
  const starter = input.lift ? repairEntryWorkflowId(input.index) : REPAIR_QUEUE_WORKFLOW_ID;
  if (parent === starter) return undefined;
  return `repairEntryWorkflow: refused: ${input.lift ? 'a lift is started by its entry' : `entries are started by the ${REPAIR_QUEUE_WORKFLOW_ID} workflow`} only ` +
    `(this one has ${parent ? `parent ${preview(parent, 80)}` : 'no parent'}); queue a repair with \`tend repair-queue add\` or the add update`;
}

export async function repairEntryWorkflow(raw: unknown): Promise<RepairEntryResult> {
  // Anyone with access to the namespace can start this type with any input: keys only, checked, or nothing runs.
  const checked = check(entryInputSchema, raw, 'repairEntryWorkflow: refused input');
  if (!checked.ok) throw ApplicationFailure.nonRetryable(checked.reason, REFUSAL.invalidInput);
  const input = checked.value as EntryInput;
  const problem = identityProblem(input);
  if (problem) throw ApplicationFailure.nonRetryable(problem, REFUSAL.invalidInput);
  if (input.lift) return liftUntilDone(input, input.lift);
  const r = new RepairEntry(input);
  // A killed worker's activity is retried after this; heartbeats reach the server at most every 0.8 x this.
  // Known only after the first activity (the time scale is the worker's); 30 s until then.
  const scaleOf = () => r.plan?.time_scale ?? 1;
  const heartbeatTimeout = () => (r.plan ? Math.max(5, 30 * scaleOf()) * 1000 : 30_000);
  const retry = (): RetryPolicy => ({
    maximumAttempts: ACTIVITY_ATTEMPTS, nonRetryableErrorTypes: REFUSALS,
    initialInterval: Math.max(10, 1000 * scaleOf()), maximumInterval: Math.max(100, 60_000 * scaleOf()),
  });

  const queue = getExternalWorkflowHandle(REPAIR_QUEUE_WORKFLOW_ID);
  const ahead = patched(REPAIR_REPORT_AHEAD_PATCH);
  /** The last report sent (with `ahead`): the next one waits for it, so the queue sees them in order. */
  let lastReport: Promise<void> = Promise.resolve();
  /** Reports are never cancelled: a cancellation lands at the next activity, timer or wait instead, so the queue always learns the end. */
  const signalQueue = (report: EntryReport) => CancellationScope.nonCancellable(() => queue.signal(entryReportSignal, report))
    .catch((err: unknown) => log.warn('repair: could not report to the queue', { error: describe(err) }));
  const send = (report: EntryReport) => {
    if (!ahead) return signalQueue(report);
    lastReport = lastReport.then(() => signalQueue(report));
    return lastReport;
  };
  const report = async (fields: Partial<RepairQueueEntry>) => {
    Object.assign(r.entry, fields);
    await send({ index: r.entry.index, queue: input.queue, fields: progress(r.entry) });
  };
  const transition = (fields: Partial<RepairQueueEntry>) => report({ ...fields, last_transition_time: iso(Date.now()) });
  /**
   * A progress report the entry's next work need not wait for (draining, watching, the next step): with
   * `ahead` it goes out beside that work; its end is awaited by the next report, or before continuing as new.
   */
  const progressReport = async (fields: Partial<RepairQueueEntry>) => {
    if (ahead) void transition(fields);
    else await transition(fields);
  };

  setHandler(setEnabledSignal, (enabled: unknown) => {
    if (typeof enabled !== 'boolean') {
      log.warn('repair: ignored a set-enabled signal', { reason: `set-enabled takes true or false (got ${preview(enabled, 80)})` });
      return;
    }
    // A disabled queue abandons ongoing drains (the drain watches this flag).
    r.enabled = enabled;
  });
  setHandler(resetEntryBackoffSignal, (...args: unknown[]) => {
    const problem = inputProblem('reset-backoff', args);
    if (problem) {
      log.warn('repair: ignored a reset-backoff signal', { reason: problem });
      return;
    }
    r.backoffExpire = 0;
    r.entry.drain_backoff_count = 0;
    r.entry.drain_backoff_expire = ZERO_TIME;
  });

  /**
   * The task queue of the activities that run the operator's commands (repair,
   * health check, success command): repair.taskQueue of the worker running this
   * workflow, read by a local activity, never from an input or a signal; absent,
   * tend's own. Runs started before this existed replay without it.
   */
  let commandQueue: string | undefined;
  const onCommandQueue = () => (commandQueue ? { taskQueue: commandQueue } : {});

  // Activity timeouts bound hung activities; a dead worker is noticed by the heartbeat timeout.
  // A command timeout of 0 is none (CKE): its activity is bounded by its heartbeats only.
  const slack = (seconds: number) => (seconds > 0 ? (seconds + 60) * 1000 : UNBOUNDED_MS);
  const watch = (until: number) => proxyActivities<Activities>({
    ...onCommandQueue(),
    startToCloseTimeout: Math.max(0, until - Date.now()) + slack(r.plan!.command_timeout_seconds),
    heartbeatTimeout: heartbeatTimeout(),
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: retry(),
  }).repairWatchHealth({ ...r.key, step: r.entry.step, until });
  /** `after`: runs done before a pause held the next; `holdMs`: asked again after a paused answer, wait in place that long. */
  const command = (kind: 'repair_command' | 'success_command', timeoutSeconds: number, retries = 0, intervalSeconds = 0, hold: { after?: number; holdMs?: number } = {}) => proxyActivities<Activities>({
    ...onCommandQueue(),
    startToCloseTimeout: timeoutSeconds > 0 ? ((timeoutSeconds + intervalSeconds) * (retries + 1) + 60) * 1000 + (hold.holdMs ?? 0) : UNBOUNDED_MS,
    heartbeatTimeout: heartbeatTimeout(),
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: retry(),
  }).repairRunCommand({ ...r.key, step: r.entry.step, kind, ...(hold.after ? { after: hold.after } : {}), ...(hold.holdMs ? { holdMs: hold.holdMs } : {}) });
  const show = () => setCurrentDetails(entryDetails(r));
  /** Observe mode recorded `what` instead of doing it. */
  const observe = (what: string) => {
    r.observed.push(what);
    if (r.observed.length > OBSERVED_MAX) r.observed.shift();
    show();
  };
  /** Repair's pause holds `what` (undefined: nothing held any more). */
  const holding = (what: string | undefined) => {
    if (r.held === what) return;
    r.held = what;
    show();
  };
  const uncordonOnce = (holdMs: number) => proxyActivities<Activities>(holdMs > 0
    ? { startToCloseTimeout: holdMs + 30_000, heartbeatTimeout: heartbeatTimeout(), retry: retry() }
    : { startToCloseTimeout: '30s', retry: retry() })
    .repairUncordon({ index: r.entry.index, address: r.entry.address, ...(holdMs > 0 ? { holdMs } : {}) });
  /** Asks `ask` until the pause no longer holds it: at once, then waiting in place (PAUSE_HOLD_MS at a time) for the resume. */
  const unpaused = async <T>(what: string, ask: (holdMs: number) => Promise<T>, paused: (out: T) => boolean): Promise<T> => {
    for (let holdMs = 0; ; holdMs = PAUSE_HOLD_MS) {
      const out = await ask(holdMs);
      if (!paused(out)) {
        holding(undefined);
        return out;
      }
      holding(what);
    }
  };
  /** Lifts this entry's cordon; while repair is paused it waits for the resume (the pause holds every write, this one too). */
  const uncordon = async () => {
    const out = await unpaused(`lifting the cordon on node ${r.entry.nodename}`, uncordonOnce, (o) => o === 'paused');
    if (out === 'observed') observe(`uncordon node ${r.entry.nodename}`);
    return out;
  };
  /** A success command, held while repair is paused. */
  const successCommand = async (timeoutSeconds: number) => {
    const result = await unpaused('the success_command', (holdMs) => command('success_command', timeoutSeconds, 0, 0, { holdMs }), (o) => !!o.paused);
    if (result.observed) observe('run the success_command');
    return result;
  };
  /**
   * Lifts a cordon this entry set, whatever happens: until it is lifted (REPAIR_LIFT_UNTIL_DONE_PATCH),
   * each failure shown in the entry's details; only a refusal (the input or the key not acceptable,
   * which no retry changes) ends the tries.
   */
  const lift = async (ending = false) => {
    if (!patched(REPAIR_LIFT_UNTIL_DONE_PATCH)) {
      await uncordon().catch((e: unknown) => log.warn('repair: could not uncordon', { index: r.entry.index, error: describe(e) }));
      r.cordoned = false;
      return;
    }
    for (;;) {
      try {
        await uncordon();
        break;
      } catch (e) {
        const refused = refusal(e);
        log.warn('repair: could not uncordon', { index: r.entry.index, error: describe(e), ...(refused ? {} : { retryInMs: LIFT_RETRY_MS * scaleOf() }) });
        if (refused) break;
        if (ending && patched(REPAIR_LIFT_APART_PATCH)) {
          // The entry ends now, its slot freed; the lift goes on in a workflow of its own.
          await startLift(describe(e));
          break;
        }
        r.lifting = `lifting the cordon on node ${r.entry.nodename} failed (${describe(e)}); tried again every ${Math.round(LIFT_RETRY_MS * scaleOf() / 1000)} s until it is lifted`;
        show();
        await sleep(Math.max(100, LIFT_RETRY_MS * scaleOf()));
      }
    }
    if (r.lifting) {
      r.lifting = undefined;
      show();
    }
    r.cordoned = false;
  };
  /** Starts `repair/<index>/lift`, abandoned: it tries to lift the cordon until it is lifted, or until it is cancelled. */
  const startLift = async (reason: string) => {
    const lifting: EntryLift = { nodename: r.entry.nodename, time_scale: scaleOf(), reason: preview(reason, LIFT_REASON_MAX) };
    try {
      await startChild(repairEntryWorkflow, {
        workflowId: repairLiftWorkflowId(r.entry.index),
        args: [{ ...input, resume: undefined, lift: lifting }],
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: ChildWorkflowCancellationType.ABANDON,
        staticSummary: `lift the cordon on node ${r.entry.nodename} (repair entry ${r.entry.index}); cancel it to leave the cordon on`,
        typedSearchAttributes: [{ key: TendCapability, value: 'repair' }, { key: TendTarget, value: r.entry.address }],
      });
      log.warn('repair: the entry ends; its cordon is lifted by a workflow of its own', { index: r.entry.index, workflowId: repairLiftWorkflowId(r.entry.index) });
    } catch (err) {
      // One runs already (from an earlier end of this entry): it goes on.
      log.warn('repair: could not start the lift of the cordon', { index: r.entry.index, error: describe(err) });
    }
  };
  const finish = async (status: 'succeeded' | 'failed', reason?: string, fields: Partial<RepairQueueEntry> = {}): Promise<RepairEntryResult> => {
    if (r.cordoned) {
      await uncordon();
      r.cordoned = false;
    }
    await transition({ ...fields, status });
    if (reason) log.info('repair: entry finished', { index: r.entry.index, status, reason });
    return { entry: r.entry, reason, ...(r.observed.length > 0 ? { observed: r.observed } : {}) };
  };
  /** Drain interrupted (refused, timed out, abandoned by a disable): uncordoned already; back off as CKE does, retries unlimited. */
  const backOff = async (reason: string) => {
    const b = patched(REPAIR_CKE_BACKOFF_PATCH)
      ? ckeDrainBackoff(r.entry.drain_backoff_count, scaleOf(), Math.random())
      : drainBackoff(r.entry.drain_backoff_count, scaleOf());
    r.backoffExpire = Date.now() + b.seconds * 1000;
    r.drained = false;
    r.drainDeadline = undefined;
    log.info('repair: drain backs off', { index: r.entry.index, reason, seconds: b.seconds });
    await transition({ step_status: 'waiting', drain_backoff_count: b.count, drain_backoff_expire: iso(r.backoffExpire) });
  };

  try {
    if (patched(REPAIR_TASK_QUEUE_PATCH)) {
      commandQueue = (await proxyLocalActivities<Activities>({ startToCloseTimeout: '10s', retry: { maximumInterval: '10s' } })
        .repairCommandQueue()).taskQueue;
    }
    if (!r.plan && commandQueue) {
      // The commands run elsewhere: the plan and the Node here; the first health check is a watch on the commands' task queue (check-health).
      const first = await proxyActivities<Activities>({ startToCloseTimeout: '5m', retry: retry() }).repairLocate(r.key);
      r.plan = first.plan;
      r.entry.nodename = first.nodename;
    }
    if (!r.plan) {
      // The first look: the plan (numbers only), the Node, and the health check; its timeout is unknown yet, so an hour bounds it.
      const first = await proxyActivities<Activities>({
        startToCloseTimeout: '1h', heartbeatTimeout: heartbeatTimeout(), cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED, retry: retry(),
      }).repairInspect(r.key);
      r.plan = first.plan;
      r.entry.nodename = first.nodename;
      r.healthyAtStart = first.healthy;
    }
    const scale = scaleOf();
    for (;;) {
      if (historyTooLong()) {
        await lastReport;
        await continueAsNew<typeof repairEntryWorkflow>({ ...input, enabled: r.enabled, resume: r.resume() });
      }
      const next = decideEntryOp({
        step: r.entry.step, steps: r.plan.steps.length, step_status: r.entry.step_status, enabled: r.enabled,
        nodename: r.entry.nodename, needDrain: r.step.need_drain, drained: r.drained, commandDone: r.commandDone,
        healthyAtStart: r.healthyAtStart, healthy: r.healthy, watchSeconds: r.step.watch_seconds, watchUntil: r.watchUntil, backoffExpire: r.backoffExpire, now: Date.now(),
      });
      switch (next.op) {
        case 'check-health':
          r.healthyAtStart = (await watch(0)).healthy;
          break;
        case 'wait': {
          const before = { enabled: r.enabled, expire: r.backoffExpire };
          const changed = () => r.enabled !== before.enabled || r.backoffExpire !== before.expire || historyTooLong();
          if (next.until !== undefined) await condition(changed, Math.max(1, next.until - Date.now()));
          else await condition(changed);
          break;
        }
        case 'drain': {
          // A run that continued-as-new during a drain goes on with it (same deadline, no new transition).
          if (r.entry.step_status !== 'draining') await progressReport({ step_status: 'draining' });
          r.cordoned = true;
          r.drainDeadline ??= Date.now() + r.plan.eviction_timeout_seconds * scale * 1000;
          const deadline = r.drainDeadline;
          const drain = proxyActivities<Activities>({
            startToCloseTimeout: Math.max(0, deadline - Date.now()) + 120_000,
            heartbeatTimeout: heartbeatTimeout(),
            cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            retry: retry(),
          });
          const out = await interruptible(() => drain.repairDrain({ ...r.key, step: r.entry.step, deadline }),
            () => (historyTooLong() ? 'history' : !r.enabled ? 'disabled' : undefined));
          // Cut short (history: continue-as-new; disabled: abandon-drain next), the node still cordoned.
          if (!out.ok) break;
          const v = out.value;
          if (v.ok) {
            r.drained = true;
            holding(undefined);
            if (v.observed) {
              observe(`drain node ${r.entry.nodename}: ${v.observed.cordon ? 'cordon it, ' : ''}evict ${v.observed.evict} pod(s), delete ${v.observed.delete}`);
            }
          } else if (v.held) {
            // The pause used up the eviction timeout: the cordon stays, nothing counts, and a new drain (a new timeout) waits for the resume.
            r.drainDeadline = undefined;
            holding(`the drain of node ${r.entry.nodename}`);
          } else if (v.cordonKept) {
            // Interrupted, and the uncordon waits for the resume: the back-off counts now, the cordon is lifted on the resume.
            await backOff(v.reason);
            await lift();
          } else {
            // The activity uncordoned already (observe mode: recorded that it would).
            r.cordoned = false;
            if (v.observed) observe(`uncordon node ${r.entry.nodename}: ${v.reason}`);
            await backOff(v.reason);
          }
          break;
        }
        case 'abandon-drain':
          // CKE: a disabled queue abandons an ongoing drain as a failed one: uncordon, and the back-off counts.
          await lift();
          await backOff('the queue was disabled during the drain');
          break;
        case 'run-command': {
          const s = r.step;
          const result = await command('repair_command', s.command_timeout_seconds, s.command_retries, s.command_interval * scale,
            { after: r.commandRuns, holdMs: r.held ? PAUSE_HOLD_MS : 0 });
          if (result.paused) {
            // Held by the pause: nothing ran and nothing failed; asked again (waiting in place for the resume), its runs so far counted.
            r.commandRuns = result.runs ?? r.commandRuns;
            holding(`the repair_command of step ${r.entry.step}`);
            break;
          }
          holding(undefined);
          r.commandRuns = 0;
          if (result.observed) observe(`run the repair_command of step ${r.entry.step}`);
          if (!result.ok) {
            // CKE marks the step watching before it runs the command: a failed command leaves it so.
            const fields: Partial<RepairQueueEntry> = patched(REPAIR_CKE_FAILED_STEP_PATCH) ? { step_status: 'watching' } : {};
            return await finish('failed', `repair_command failed: ${result.error}`, fields);
          }
          r.commandDone = true;
          r.drainDeadline = undefined;
          r.watchUntil = Date.now() + s.watch_seconds * scale * 1000;
          await progressReport({ step_status: 'watching' });
          break;
        }
        case 'watch': {
          const out = await interruptible(() => watch(next.until), () => (historyTooLong() ? 'history' : undefined));
          if (!out.ok) break;
          if (out.value.healthy) r.healthy = true;
          else r.watchUntil = 0;
          break;
        }
        case 'next-step':
          r.drained = false;
          r.commandDone = false;
          r.healthy = undefined;
          await progressReport({ step: r.entry.step + 1, step_status: 'waiting' });
          break;
        case 'succeed': {
          if (r.cordoned) {
            await uncordon();
            r.cordoned = false;
          }
          if (r.plan.success_command_timeout !== undefined) {
            const result = await successCommand(r.plan.success_command_timeout);
            if (!result.ok) return await finish('failed', `success_command failed: ${result.error}`);
          }
          return await finish('succeeded');
        }
        case 'fail':
          // CKE's strategy steps past the last step (the next one, waiting) and finds no step there: the entry fails showing that.
          if (patched(REPAIR_CKE_FAILED_STEP_PATCH)) return await finish('failed', next.reason, { step: r.entry.step + 1, step_status: 'waiting' });
          return await finish('failed', next.reason);
      }
    }
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err)) {
      // Deleted (or cancelled in the Web UI): lift tend's cordon, and leave the queue.
      await CancellationScope.nonCancellable(async () => {
        await lift(true);
        await send({ index: r.entry.index, queue: input.queue, removed: true });
      });
      throw err;
    }
    // Given up (an activity refused or ran out of attempts): the entry fails with the reason, its cordon lifted, its slot freed.
    const refused = refusal(err);
    const reason = refused ?? describe(err);
    await CancellationScope.nonCancellable(async () => {
      if (r.cordoned) await lift(true);
      await transition({ status: 'failed' });
    });
    log.warn('repair: entry failed', { index: r.entry.index, reason });
    throw ApplicationFailure.nonRetryable(reason, refused ? REFUSAL.entryRefused : REFUSAL.entryGaveUp);
  }
}
