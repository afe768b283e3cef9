// A repair entry's workflow, `repair/<index>`: started by the queue
// (src/workflows/repair-queue.ts) when a slot is free, it walks the steps
// (health check, drain, repair command, watch) its machine decides
// (src/repair/entry-machine.ts), reports its transitions back, and lifts its
// cordon at its end, or leaves that to `repair/<index>/lift` (the same
// workflow type in its lift mode) so that its slot is freed first. This shell
// checks messages and hands them to the machine, carries the machine's
// operations out as activities, timers and signals, and continues as new
// before any history limit.
import {
  ActivityCancellationType, ActivityFailure, ApplicationFailure, CancellationScope, ChildWorkflowCancellationType, condition, ContinueAsNew, continueAsNew,
  getExternalWorkflowHandle, isCancellation, log, ParentClosePolicy, patched, proxyActivities, proxyLocalActivities, setCurrentDetails, setHandler, sleep,
  startChild, WorkflowIdReusePolicy, workflowInfo, type RetryPolicy,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { preview } from '../checks/preview.ts';
import {
  EntryMachine, initialState, LIFT_RETRY_MS, resumeOf, type EntryOp, type EntryOutcome, type EntryResult,
} from '../repair/entry-machine.ts';
import {
  entryReportSignal, REFUSAL, REPAIR_QUEUE_WORKFLOW_ID, REPAIR_REPORT_AHEAD_PATCH, REPAIR_TASK_QUEUE_PATCH, repairEntryWorkflowId, repairLiftWorkflowId,
  resetEntryBackoffSignal, setEnabledSignal, type EntryInput, type EntryLift, type EntryReport,
} from '../repair/messages.ts';
import {
  cancelledDetails, commandSummary, drainSummary, entryDetails, healthSummary, inspectSummary, locateSummary, uncordonSummary,
} from '../repair/summaries.ts';
import { check, entryInputSchema, inputProblem } from '../repair/validate.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import { failureMessage, refusalOf } from './failures.ts';
import { said } from './summary.ts';

export { repairQueueWorkflow, type RepairQueueState } from './repair-queue.ts';
export {
  REPAIR_CKE_BACKOFF_PATCH, REPAIR_CKE_FAILED_STEP_PATCH, REPAIR_LIFT_APART_PATCH, REPAIR_LIFT_UNTIL_DONE_PATCH, REPAIR_QUEUE_ENDS_FREE_PATCH,
  REPAIR_QUEUE_UNBLOCKED_STARTS_PATCH, REPAIR_REPORT_AHEAD_PATCH, REPAIR_TASK_QUEUE_PATCH,
} from '../repair/messages.ts';

/** The reason a lift workflow starts with, at most. */
const LIFT_REASON_MAX = 400;

/** An activity bound for a command without a timeout (CKE: 0 is none): its heartbeat timeout still notices a dead worker. */
const UNBOUNDED_MS = 365 * 24 * 3600 * 1000;

/** Continue-as-new at Temporal's suggestion, and well before the history limit in any case. */
const HISTORY_LIMIT = 4000;
const historyTooLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > HISTORY_LIMIT;

/** How a failure reads in a log line and an entry's reason. */
const describe = failureMessage;

export type RepairEntryResult = EntryResult;

/** Refusals from the activities: the input or the key is not acceptable; retrying cannot help. */
const REFUSALS = [REFUSAL.invalidInput, REFUSAL.notConfigured];

const refusal = (err: unknown): string | undefined => (err instanceof ActivityFailure ? refusalOf(err, REFUSALS)?.message : undefined);

/** Activity attempts before an entry gives up (and fails); their intervals scale with time_scale. */
const ACTIVITY_ATTEMPTS = 10;

const retryScaled = (scale: number): RetryPolicy => ({
  maximumAttempts: ACTIVITY_ATTEMPTS, nonRetryableErrorTypes: REFUSALS,
  initialInterval: Math.max(10, 1000 * scale), maximumInterval: Math.max(100, 60_000 * scale),
});

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
  const summary = said(uncordonSummary(input, lifting.nodename));
  const uncordon = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry: retryScaled(lifting.time_scale), ...summary }).repairUncordon;
  const every = Math.max(100, LIFT_RETRY_MS * lifting.time_scale);
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
  const entry = { ...initialState(input).entry, nodename: lifting.nodename, status: 'failed' as const };
  return { entry, reason: 'its cordon, left on when the entry ended, is lifted' };
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
  const shell = new EntryShell(input);
  shell.listen();
  return shell.run();
}

/**
 * The entry's workflow around its machine (src/repair/entry-machine.ts): handlers that check and
 * hand over, the operations carried out as activities, timers and signals, continue-as-new.
 */
class EntryShell {
  readonly m: EntryMachine;
  readonly queue = getExternalWorkflowHandle(REPAIR_QUEUE_WORKFLOW_ID);
  /** The last report sent (with report-ahead): the next one waits for it, so the queue sees them in order. */
  lastReport: Promise<void> = Promise.resolve();
  /**
   * The task queue of the activities that run the operator's commands (repair,
   * health check, success command): repair.taskQueue of the worker running this
   * workflow, read by a local activity, never from an input or a signal; absent,
   * tend's own. Runs started before this existed replay without it.
   */
  commandQueue?: string;

  readonly input: EntryInput;

  constructor(input: EntryInput) {
    this.input = input;
    this.m = new EntryMachine(initialState(input), patched(REPAIR_REPORT_AHEAD_PATCH));
  }

  get scale(): number {
    return this.m.scale;
  }

  /** A killed worker's activity is retried after this; known only after the first activity (the time scale is the worker's); 30 s until then. */
  heartbeatTimeout(): number {
    return this.m.state.plan ? Math.max(5, 30 * this.scale) * 1000 : 30_000;
  }

  listen(): void {
    setHandler(setEnabledSignal, (enabled: unknown) => {
      // A disabled queue abandons ongoing drains (the drain watches this flag).
      if (typeof enabled === 'boolean') return this.m.setEnabled(enabled);
      log.warn('repair: ignored a set-enabled signal', { reason: `set-enabled takes true or false (got ${preview(enabled, 80)})` });
    });
    setHandler(resetEntryBackoffSignal, (...args: unknown[]) => {
      const problem = inputProblem('reset-backoff', args);
      if (!problem) return this.m.resetBackoff();
      log.warn('repair: ignored a reset-backoff signal', { reason: problem });
    });
  }

  /** Reports are never cancelled: a cancellation lands at the next activity, timer or wait instead, so the queue always learns the end. */
  send(report: EntryReport): Promise<void> {
    const signal = () => CancellationScope.nonCancellable(() => this.queue.signal(entryReportSignal, report))
      .catch((err: unknown) => log.warn('repair: could not report to the queue', { error: describe(err) }));
    if (!this.m.ahead) return signal();
    this.lastReport = this.lastReport.then(signal);
    return this.lastReport;
  }

  /** `summary`: the line the Web UI shows beside the activity (src/repair/summaries.ts). */
  private activities(options: { startToCloseTimeout: number | string; summary: string; heartbeat?: boolean; commands?: boolean; retry?: RetryPolicy }) {
    return proxyActivities<Activities>({
      ...said(options.summary),
      ...(options.commands && this.commandQueue ? { taskQueue: this.commandQueue } : {}),
      startToCloseTimeout: options.startToCloseTimeout,
      ...(options.heartbeat ? { heartbeatTimeout: this.heartbeatTimeout(), cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED } : {}),
      retry: options.retry ?? retryScaled(this.scale),
    });
  }

  /** The first look: the command queue, the plan (numbers only), the Node, and (here or by the first check-health) the health. */
  async locate(): Promise<void> {
    if (patched(REPAIR_TASK_QUEUE_PATCH)) {
      this.commandQueue = (await proxyLocalActivities<Activities>({ startToCloseTimeout: '10s', retry: { maximumInterval: '10s' } })
        .repairCommandQueue()).taskQueue;
      if (this.commandQueue === workflowInfo().taskQueue) {
        throw ApplicationFailure.nonRetryable(`repairEntryWorkflow: refused: it runs on the repair commands' task queue ${preview(this.commandQueue, 80)}, not on tend's own`, REFUSAL.invalidInput);
      }
    }
    if (this.m.state.plan) return;
    if (this.commandQueue) {
      // The commands run elsewhere: the plan and the Node here; the first health check is a watch on the commands' task queue (check-health).
      const first = await this.activities({ startToCloseTimeout: '5m', summary: locateSummary(this.key) }).repairLocate(this.key);
      return this.m.located(first.plan, first.nodename);
    }
    // Its timeout is unknown yet, so an hour bounds it.
    const first = await this.activities({ startToCloseTimeout: '1h', heartbeat: true, summary: inspectSummary(this.key) }).repairInspect(this.key);
    this.m.located(first.plan, first.nodename, first.healthy);
  }

  get key() {
    const e = this.m.state.entry;
    return { index: e.index, address: e.address, machine_type: e.machine_type, operation: e.operation };
  }

  async run(): Promise<RepairEntryResult> {
    try {
      await this.locate();
      for (;;) {
        if (historyTooLong()) {
          await this.lastReport;
          await continueAsNew<typeof repairEntryWorkflow>({ ...this.input, enabled: this.m.state.enabled, resume: resumeOf(this.m.state) });
        }
        const end = await this.carryOut(this.m.next(Date.now()));
        if (end) return end;
      }
    } catch (err) {
      if (err instanceof ContinueAsNew) throw err;
      return this.ended(err);
    }
  }

  /** Ending on a cancellation (deleted) or a failure: the cordon lifted first, then the queue told. */
  private async ended(err: unknown): Promise<never> {
    if (isCancellation(err)) {
      // Deleted (or cancelled in the Web UI): lift tend's cordon, and leave the queue.
      await CancellationScope.nonCancellable(async () => {
        await this.carryOut(this.m.ending(true, Date.now()));
        setCurrentDetails(cancelledDetails(this.m.state));
        await this.send({ index: this.key.index, queue: this.input.queue, removed: true });
      });
      throw err;
    }
    // Given up (an activity refused or ran out of attempts): the entry fails with the reason, its cordon lifted, its slot freed.
    const refused = refusal(err);
    const reason = refused ?? describe(err);
    await CancellationScope.nonCancellable(async () => {
      await this.carryOut(this.m.ending(false, Date.now()));
      await this.carryOut([this.m.failed(Date.now())]);
    });
    log.warn('repair: entry failed', { index: this.key.index, reason });
    throw ApplicationFailure.nonRetryable(reason, refused ? REFUSAL.entryRefused : REFUSAL.entryGaveUp);
  }

  /** Carries the operations out in order; each outcome goes back to the machine, whose next operations come first. */
  private async carryOut(ops: EntryOp[]): Promise<RepairEntryResult | undefined> {
    for (const op of ops) {
      if (op.op === 'end') return op.result;
      const outcome = await this.execute(op);
      if (!outcome) continue;
      const end = await this.carryOut(this.m.apply(outcome));
      if (end) return end;
    }
    return undefined;
  }

  private async execute(op: Exclude<EntryOp, { op: 'end' }>): Promise<EntryOutcome | undefined> {
    switch (op.op) {
      case 'check-health':
        return { kind: 'health', healthy: (await this.watch(0)).healthy };
      case 'wait':
        return void await this.wait(op.until);
      case 'report': {
        // Every transition the queue hears of, the Web UI's Current Details show too (they record no command).
        setCurrentDetails(entryDetails(this.m.state));
        const sent = this.send({ index: this.key.index, queue: this.input.queue, fields: op.fields });
        if (!op.ahead) await sent;
        return undefined;
      }
      case 'drain':
        return this.drain(op.deadline);
      case 'command':
        return { kind: 'command', result: await this.command(op), now: Date.now() };
      case 'watch': {
        const out = await interruptible(() => this.watch(op.until), () => (historyTooLong() ? 'history' : undefined));
        return out.ok ? { kind: 'watched', healthy: out.value.healthy } : undefined;
      }
      case 'uncordon':
        return this.uncordon(op.holdMs, op.lifting);
      case 'flag':
        return { kind: 'flag', name: op.name, on: patched(op.name), now: Date.now() };
      case 'draw':
        return { kind: 'draw', random: Math.random(), now: Date.now() };
      case 'sleep':
        await sleep(op.ms);
        return { kind: 'slept', now: Date.now() };
      case 'start-lift':
        return void await this.startLift(op.reason);
      case 'show':
        return void setCurrentDetails(entryDetails(this.m.state));
      case 'log':
        return void log[op.level](op.message, op.fields);
    }
  }

  /** Until the queue's switch or the back-off changes (or `until`). */
  private async wait(until: number | undefined): Promise<void> {
    const before = { enabled: this.m.state.enabled, expire: this.m.state.backoffExpire };
    const changed = () => this.m.state.enabled !== before.enabled || this.m.state.backoffExpire !== before.expire || historyTooLong();
    if (until !== undefined) await condition(changed, Math.max(1, until - Date.now()));
    else await condition(changed);
  }

  // Activity timeouts bound hung activities; a dead worker is noticed by the heartbeat timeout.
  // A command timeout of 0 is none (CKE): its activity is bounded by its heartbeats only.
  private watch(until: number) {
    const slack = (seconds: number) => (seconds > 0 ? (seconds + 60) * 1000 : UNBOUNDED_MS);
    const summary = healthSummary(this.key, this.m.state.entry.step, until);
    return this.activities({ commands: true, heartbeat: true, summary, startToCloseTimeout: Math.max(0, until - Date.now()) + slack(this.m.state.plan!.command_timeout_seconds) })
      .repairWatchHealth({ ...this.key, step: this.m.state.entry.step, until });
  }

  private command(op: Extract<EntryOp, { op: 'command' }>) {
    const timeout = op.timeoutSeconds > 0 ? ((op.timeoutSeconds + op.intervalSeconds) * (op.retries + 1) + 60) * 1000 + op.holdMs : UNBOUNDED_MS;
    return this.activities({ commands: true, heartbeat: true, startToCloseTimeout: timeout, summary: commandSummary(this.key, this.m.state.entry.step, op.kind) })
      .repairRunCommand({ ...this.key, step: this.m.state.entry.step, kind: op.kind, ...(op.after ? { after: op.after } : {}), ...(op.holdMs ? { holdMs: op.holdMs } : {}) });
  }

  private async drain(deadline: number): Promise<EntryOutcome | undefined> {
    const summary = drainSummary(this.key, this.m.state.entry.nodename);
    const drain = this.activities({ heartbeat: true, startToCloseTimeout: Math.max(0, deadline - Date.now()) + 120_000, summary });
    const out = await interruptible(() => drain.repairDrain({ ...this.key, step: this.m.state.entry.step, deadline }),
      () => (historyTooLong() ? 'history' : !this.m.state.enabled ? 'disabled' : undefined));
    // Cut short (history: continue-as-new; disabled: abandon-drain next), the node still cordoned.
    return out.ok ? { kind: 'drain', result: out.value, now: Date.now() } : undefined;
  }

  /** Lifts this entry's cordon; `holdMs`: asked again after a paused answer, it waits in place that long for the resume. */
  private async uncordon(holdMs: number, lifting: boolean): Promise<EntryOutcome> {
    const summary = said(uncordonSummary(this.key, this.m.state.entry.nodename));
    const uncordon = proxyActivities<Activities>(holdMs > 0
      ? { startToCloseTimeout: holdMs + 30_000, heartbeatTimeout: this.heartbeatTimeout(), retry: retryScaled(this.scale), ...summary }
      : { startToCloseTimeout: '30s', retry: retryScaled(this.scale), ...summary }).repairUncordon;
    try {
      return { kind: 'uncordon', out: await uncordon({ index: this.key.index, address: this.key.address, ...(holdMs > 0 ? { holdMs } : {}) }), now: Date.now() };
    } catch (err) {
      if (!lifting || isCancellation(err)) throw err;
      return { kind: 'uncordon-failed', error: describe(err), refused: refusal(err) !== undefined };
    }
  }

  /** Starts `repair/<index>/lift`, abandoned: it tries to lift the cordon until it is lifted, or until it is cancelled. */
  private async startLift(reason: string): Promise<void> {
    const e = this.m.state.entry;
    const lifting: EntryLift = { nodename: e.nodename, time_scale: this.scale, reason: preview(reason, LIFT_REASON_MAX) };
    try {
      await startChild(repairEntryWorkflow, {
        workflowId: repairLiftWorkflowId(e.index),
        args: [{ ...this.input, resume: undefined, lift: lifting }],
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: ChildWorkflowCancellationType.ABANDON,
        staticSummary: `lift the cordon on node ${e.nodename} (repair entry ${e.index}); cancel it to leave the cordon on`,
        typedSearchAttributes: [{ key: TendCapability, value: 'repair' }, { key: TendTarget, value: e.address }],
      });
      log.warn('repair: the entry ends; its cordon is lifted by a workflow of its own', { index: e.index, workflowId: repairLiftWorkflowId(e.index) });
    } catch (err) {
      // One runs already (from an earlier end of this entry): it goes on.
      log.warn('repair: could not start the lift of the cordon', { index: e.index, error: describe(err) });
    }
  }
}
