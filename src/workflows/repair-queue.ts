// `repair-queue`, the entity of the repair queue: it holds CKE's entries,
// answers the CLI's updates synchronously, and starts one `repair/<index>`
// workflow (src/workflows/repair.ts) per entry when a slot is free; a slot is
// freed when that workflow ends, never on a message. Its state transitions are
// pure functions (src/repair/queue.ts): this shell checks messages, hands them
// over, carries the operations out and continues as new.
import {
  allHandlersFinished, ApplicationFailure, CancellationScope, ChildWorkflowCancellationType, condition, continueAsNew, getExternalWorkflowHandle,
  isCancellation, log, ParentClosePolicy, patched, proxyActivities, setCurrentDetails, setHandler, startChild, WorkflowIdReusePolicy, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import type { createNodeRepairQueueActivities, NodeRepairAssessment } from '../activities/node-repair-queue.ts';
import { preview } from '../checks/preview.ts';
import { enqueueDecision, wouldEnqueueSentence } from '../noderepair/decide.ts';
import { NODE_REPAIR_REFUSED, requestNodeRepairUpdate, type NodeRepairAnswer, type NodeRepairAsk } from '../noderepair/messages.ts';
import { selectForDelete } from '../repair/decide.ts';
import { addressProblem } from '../repair/entry.ts';
import {
  addUpdate, deleteFinishedUpdate, deleteUnfinishedUpdate, deleteUpdate, disableUpdate, enableUpdate, entryReportSignal, isEnabledQuery, listQuery,
  MAX_INDEX, REFUSAL, REPAIR_QUEUE_ENDS_FREE_PATCH, REPAIR_QUEUE_UNBLOCKED_STARTS_PATCH, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId,
  resetBackoffUpdate, resetEntryBackoffSignal, setEnabledSignal, type AddInput, type EntryInput, type EntryReport,
} from '../repair/messages.ts';
import {
  addEntries, applyReport, cancelFailed, carriedQuery, decideQueue, emptyQueue, entryEnded, findDeleting, findEntry, listEntries, liveIndexes, mayStart, removeEntries,
  resetBackoff, saneNextIndex, setEnabled, started, startFailed, type FinalStatus, type QueueOp, type QueueState, type Step,
} from '../repair/queue.ts';
import { checkRequestsSummary, nodeRepairAssessSummary, queueDetails, queueSettingsSummary } from '../repair/summaries.ts';
import {
  addInputSchema, capacityProblem, check, deleteInputSchema, entryReportSchema, nodeRepairAskSchema, noInput, parseOrThrow, QUEUE_STATE_LIMITS, queueStateSchema,
} from '../repair/validate.ts';
import { TendCapability, TendNode, TendTarget } from '../search-attributes.ts';
import { failureMessage as describe } from './failures.ts';
import { said } from './summary.ts';

/** What the queue carries across continue-as-new (src/repair/queue.ts). */
export type RepairQueueState = QueueState;

/** Continue-as-new at Temporal's suggestion, and well before the history limit in any case. */
const HISTORY_LIMIT = 4000;
const historyTooLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > HISTORY_LIMIT;

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
function finalOf(result: unknown): FinalStatus {
  const status = (result as { entry?: { status?: unknown } } | undefined)?.entry?.status;
  return status === 'succeeded' ? 'succeeded' : 'failed';
}

/** The queue's state from its input (none: empty), checked and bounded; its next index set right when it is past the bound. */
function initialQueue(state: unknown): QueueState {
  if (workflowInfo().workflowId !== REPAIR_QUEUE_WORKFLOW_ID) {
    throw ApplicationFailure.nonRetryable(`repairQueueWorkflow: refused: the queue runs as workflow id ${REPAIR_QUEUE_WORKFLOW_ID} only (got ${preview(workflowInfo().workflowId, 80)})`, REFUSAL.invalidInput);
  }
  if (state === undefined || state === null) return emptyQueue();
  const c = check(queueStateSchema, state, 'repairQueueWorkflow: refused input', QUEUE_STATE_LIMITS);
  if (!c.ok) throw ApplicationFailure.nonRetryable(c.reason, REFUSAL.invalidInput);
  const sane = saneNextIndex(c.value);
  if (sane === c.value.nextIndex) return c.value;
  log.warn('repair: the queue\'s next index is past its bound; it goes on after its own entries', { nextIndex: preview(c.value.nextIndex, 40), now: sane, bound: MAX_INDEX });
  return { ...c.value, nextIndex: sane };
}

export async function repairQueueWorkflow(state?: unknown): Promise<void> {
  const shell = new QueueShell(initialQueue(state));
  shell.listen();
  await shell.run();
  await continueAsNew<typeof repairQueueWorkflow>(shell.s);
}

class QueueShell {
  s: QueueState;
  /** Ties entries and their reports to this chain of runs: a queue reset (a new chain) refuses the old entries' reports. */
  readonly chain = workflowInfo().firstExecutionRunId;
  readonly fast = patched(REPAIR_QUEUE_UNBLOCKED_STARTS_PATCH);
  /** Reports are display only; the queue's bounds (MAX_QUEUE_ENTRIES, MAX_INDEX) on adds. */
  readonly endsOnly = patched(REPAIR_QUEUE_ENDS_FREE_PATCH);
  dirty = true;
  /** A probe was brought forward (an entry of an earlier run announced its end): the loop's wait is recomputed. */
  rearm = false;
  /** Ends announced per entry of an earlier run: each brings its probe forward, less each time. */
  readonly claims = new Map<string, number>();
  /** max_concurrent_repairs and time_scale as last read from the worker, in this run only. */
  maxConcurrent?: number;
  timeScale?: number;
  /** Entries whose start is in flight: a delete cancels them once they have started. */
  readonly starting = new Set<string>();
  /** Entries this run started: their end arrives through the child's result. */
  readonly watched = new Set<string>();
  nextProbe = 0;
  readonly activities = proxyActivities<Activities>({
    startToCloseTimeout: '10s', retry: { maximumInterval: '30s', nonRetryableErrorTypes: [REFUSAL.invalidInput] },
  });
  /**
   * request-node-repair's read of the cluster (a LIST of every selected Node, paged): a few
   * attempts, so that an API server that does not answer fails the ask, which its countdown asks
   * again, rather than holding the handler (and the queue's continue-as-new) for ever.
   */
  readonly nodeRepair = proxyActivities<ReturnType<typeof createNodeRepairQueueActivities>>({
    startToCloseTimeout: '60s', retry: { maximumInterval: '10s', maximumAttempts: 3, nonRetryableErrorTypes: [NODE_REPAIR_REFUSED] },
  });

  constructor(s: QueueState) {
    this.s = s;
  }

  async apply<T>(step: Step<T>): Promise<T | undefined> {
    this.s = step.state;
    this.dirty = true;
    await Promise.all(step.ops.map((op) => this.act(op)));
    return step.value;
  }

  /** A signal to an entry; one whose workflow has ended tells the queue so. */
  signalEntry(index: string, send: (h: ReturnType<typeof getExternalWorkflowHandle>) => Promise<void>): Promise<void> {
    return send(getExternalWorkflowHandle(repairEntryWorkflowId(index))).catch(async (err: unknown) => {
      const gone = /not found|completed|closed/i.test(describe(err));
      log.warn('repair: could not signal entry', { index, error: describe(err) });
      if (gone) await this.apply(entryEnded(this.s, index, `signalling it failed: ${describe(err)}`, Date.now()));
    });
  }

  async act(op: QueueOp): Promise<void> {
    switch (op.op) {
      case 'log':
        return void log[op.level](op.message, op.fields);
      case 'start':
        // Not waited for: the loop goes on (startEntry records the start, or its failure, when it lands).
        if (this.fast) return void this.startEntry(op.index);
        return this.startEntry(op.index);
      case 'cancel':
        // A start in flight: cancelled once started (see startEntry).
        if (this.starting.has(op.index)) return;
        return getExternalWorkflowHandle(repairEntryWorkflowId(op.index)).cancel()
          .catch(async (err: unknown) => void await this.apply(cancelFailed(this.s, op.index, describe(err))));
      case 'signal-enabled':
        return this.signalEntry(op.index, (h) => h.signal(setEnabledSignal, op.enabled));
      case 'signal-reset-backoff':
        return this.signalEntry(op.index, (h) => h.signal(resetEntryBackoffSignal));
    }
  }

  async startEntry(index: string): Promise<void> {
    const e = findEntry(this.s, index);
    if (!e) return;
    // Keys only: the entry's activities look its commands up in the worker's configuration.
    const input: EntryInput = {
      index: e.index, address: e.address, machine_type: e.machine_type, operation: e.operation,
      ...(e.serial ? { serial: e.serial } : {}),
      enabled: this.s.enabled, queue: this.chain,
    };
    this.starting.add(index);
    try {
      // Not cancellable: cancelling the queue must not cancel its entries.
      const child = await CancellationScope.nonCancellable(() => startChild('repairEntryWorkflow', {
        workflowId: repairEntryWorkflowId(index),
        args: [input],
        // An index is never reused: a workflow of that id from an earlier queue makes this start fail, not collide.
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        // The queue continues-as-new; its entries must outlive each run.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: ChildWorkflowCancellationType.ABANDON,
        staticSummary: `repair ${e.operation} of ${e.machine_type} ${e.address}${e.serial ? ` (${e.serial})` : ''}`,
        // TendNode when the entry was queued for a Node (request-node-repair): one filter finds the Node's whole incident.
        typedSearchAttributes: [{ key: TendCapability, value: 'repair' }, { key: TendTarget, value: e.address }, ...(e.nodename ? [{ key: TendNode, value: e.nodename }] : [])],
      }));
      this.watched.add(index);
      this.starting.delete(index);
      // However it ends (a report lost, terminated, failed), the queue learns it: the only way its slot is freed.
      void child.result().then(
        (result) => ({ how: 'its workflow completed', final: this.endsOnly ? finalOf(result) : undefined }),
        // Cancelled by hand (the CLI, the Web UI): the entry leaves the queue, as its `removed` report said before reports were display only.
        (err: unknown) => ({ how: `its workflow ended: ${describe(err)}`, final: this.endsOnly ? (isCancellation(err) ? 'cancelled' as const : 'failed' as const) : undefined }))
        .then(async ({ how, final }) => {
          this.watched.delete(index);
          await this.apply(entryEnded(this.s, index, how, Date.now(), final));
        });
      await this.apply(started(this.s, index));
    } catch (err) {
      this.starting.delete(index);
      await this.apply(startFailed(this.s, index, describe(err), Date.now()));
    }
  }

  /** An entry's report: checked, display only (endsOnly); an end it announces for an entry of an earlier run brings its probe forward. */
  report(raw: unknown): void {
    const c = check(entryReportSchema, raw, 'entry-report');
    if (!c.ok) return log.warn('repair: ignored an entry-report signal', { reason: c.reason });
    const report = c.value as EntryReport;
    const step = applyReport(this.s, report, this.chain, this.endsOnly);
    if (step.ignored) return log.warn('repair: ignored an entry-report signal', { reason: step.ignored });
    if (!this.endsOnly) return void this.apply(step);
    // Display only: nothing to decide again.
    this.s = step.state;
    this.show();
    if (!step.claimed || this.watched.has(report.index) || this.starting.has(report.index)) return;
    const n = this.claims.get(report.index) ?? 0;
    this.claims.set(report.index, n + 1);
    this.nextProbe = Math.min(this.nextProbe, Date.now() + Math.min(PROBE_SECONDS * 1000, CLAIM_PROBE_MS * 2 ** Math.min(n, 10)));
    this.rearm = true;
  }

  /** An add past the queue's bounds is refused, naming them (runs recorded before took any). */
  roomFor(adding: number): void {
    if (!this.endsOnly) return;
    const problem = capacityProblem(this.s.entries.length + Object.keys(this.s.closing).length, this.s.nextIndex, adding);
    if (problem) throw ApplicationFailure.nonRetryable(`add: refused: ${problem}`, REFUSAL.invalidRequest);
  }

  async add(input: AddInput) {
    const problems = await this.activities.repairCheckRequests.executeWithOptions(said(checkRequestsSummary(input.requests.length)), [input]);
    if (problems.length > 0) throw ApplicationFailure.nonRetryable(preview(problems.join('; '), 2000), REFUSAL.invalidRequest);
    // Again: another add may have taken the room while this one was checked.
    this.roomFor(input.requests.length);
    return (await this.apply(addEntries(this.s, input.requests, Date.now())))!;
  }

  /**
   * A Node's countdown asks for its repair entry: the assess activity reads what the Node calls
   * for, then the queue decides against its own entries and adds the entry. Handlers interleave
   * at awaits: from the decision to the add there is none, so two asks never both take the last room.
   */
  async requestNodeRepair(ask: NodeRepairAsk): Promise<NodeRepairAnswer> {
    let assessed: NodeRepairAssessment;
    try {
      assessed = await this.nodeRepair.nodeRepairAssess.executeWithOptions(said(nodeRepairAssessSummary(ask.node)), [{ node: ask.node }]);
    } catch (err) {
      throw ApplicationFailure.nonRetryable(`request-node-repair: could not read Node ${ask.node} and the selected Nodes: ${describe(err)}`, REFUSAL.invalidRequest);
    }
    const answer = this.decideNodeRepair(assessed);
    log.info('repair: a Node\'s repair asked for', { node: ask.node, decision: answer.decision, ...(answer.decision === 'refused' && { reason: answer.reason }), sentence: answer.sentence });
    return answer;
  }

  /** The decision and the add, with no await between them. */
  decideNodeRepair(a: NodeRepairAssessment): NodeRepairAnswer {
    if ('answer' in a) return a.answer;
    const { request } = a;
    const decision = enqueueDecision(request, {
      recentEntries: listEntries(this.s), newReports: 0, nodes: a.nodes,
      rebooting: a.rebootingSince === undefined ? undefined : { since: a.rebootingSince }, limits: a.limits, now: Date.now(),
    });
    if (decision.decision === 'refuse') {
      return { decision: 'refused', reason: decision.reason, sentence: decision.sentence, ...(decision.retryAt !== undefined && { retryAt: decision.retryAt }) };
    }
    const { address, operation } = request;
    if (a.observe) return { decision: 'observed', address, operation, sentence: wouldEnqueueSentence(request, a.reason) };
    // As an add's requests are checked (repairCheckRequests), and the queue's own bounds.
    const bad = addressProblem(address);
    if (bad) return { decision: 'refused', reason: 'unmappable', sentence: `Node ${a.node}: ${bad}` };
    const full = capacityProblem(this.s.entries.length + Object.keys(this.s.closing).length, this.s.nextIndex, 1);
    if (full) return { decision: 'refused', reason: 'cluster-limit', sentence: full };
    const step = addEntries(this.s, [{ address, machine_type: request.machineType, operation, nodename: a.node }], Date.now());
    void this.apply(step);
    const entry = step.value![0]!;
    return { decision: 'enqueued', index: entry.index, address, operation, sentence: `repair entry ${entry.index} queued for Node ${a.node}: ${address} (${operation}, ${a.reason})` };
  }

  async delete(arg: unknown) {
    const { index } = parseOrThrow(deleteInputSchema, arg, 'delete');
    // CKE: deleting an entry already being deleted changes nothing.
    const deleting = findDeleting(this.s, index);
    if (deleting) return { ...deleting, deleted: true };
    const removed = await this.apply(removeEntries(this.s, [index]));
    if (!removed?.[0]) throw ApplicationFailure.nonRetryable(`no entry with index ${index} in the repair queue`, REFUSAL.noSuchEntry);
    return { ...removed[0], deleted: true };
  }

  listen(): void {
    setHandler(listQuery, () => listEntries(this.s));
    setHandler(isEnabledQuery, () => this.s.enabled);
    setHandler(carriedQuery, () => this.s);
    setHandler(entryReportSignal, (raw: unknown) => this.report(raw));
    setHandler(addUpdate, (input) => this.add(input), {
      validator: (input: unknown) => this.roomFor(parseOrThrow(addInputSchema, input, 'add').requests.length),
    });
    setHandler(requestNodeRepairUpdate, (ask) => this.requestNodeRepair(ask), {
      validator: (...args: unknown[]) => {
        if (args.length !== 1) throw ApplicationFailure.nonRetryable(`request-node-repair takes one input, {"node": "NODE"} (got ${args.length})`, REFUSAL.invalidRequest);
        parseOrThrow(nodeRepairAskSchema, args[0], 'request-node-repair');
      },
    });
    setHandler(deleteUpdate, (arg) => this.delete(arg), {
      validator: (arg: unknown) => {
        const { index } = parseOrThrow(deleteInputSchema, arg, 'delete');
        if (!findEntry(this.s, index) && !findDeleting(this.s, index)) throw ApplicationFailure.nonRetryable(`no entry with index ${index} in the repair queue`, REFUSAL.noSuchEntry);
      },
    });
    for (const [update, which] of [[deleteFinishedUpdate, 'finished'], [deleteUnfinishedUpdate, 'unfinished']] as const) {
      setHandler(update, async () => {
        const indexes = selectForDelete(this.s.entries, which);
        await this.apply(removeEntries(this.s, indexes));
        return indexes;
      }, { validator: (...args: unknown[]) => noInput(`delete-${which}`, args) });
    }
    for (const [update, enabled] of [[enableUpdate, true], [disableUpdate, false]] as const) {
      setHandler(update, async () => {
        await this.apply(setEnabled(this.s, enabled));
        return enabled;
      }, { validator: (...args: unknown[]) => noInput(enabled ? 'enable' : 'disable', args) });
    }
    setHandler(resetBackoffUpdate, async () => (await this.apply(resetBackoff(this.s)))!, { validator: (...args: unknown[]) => noInput('reset-backoff', args) });
  }

  orphans(): string[] {
    return liveIndexes(this.s).filter((i) => !this.watched.has(i) && !this.starting.has(i));
  }

  async readSettings() {
    const queued = this.s.entries.filter((e) => e.status === 'queued');
    const entries = queued.map((e) => ({ index: e.index, machine_type: e.machine_type, operation: e.operation }));
    const settings = await this.activities.repairQueueSettings.executeWithOptions(said(queueSettingsSummary(entries.length)), [{ entries }]);
    this.maxConcurrent = settings.max_concurrent_repairs;
    this.timeScale = settings.time_scale ?? 1;
    return settings;
  }

  /** The Web UI's Current Details (records no command). */
  show(): void {
    setCurrentDetails(queueDetails(this.s, this.maxConcurrent));
  }

  /** Entries of earlier runs: is their workflow still there? (Re-sending the enabled flag is harmless.) */
  async probe(): Promise<void> {
    if (this.timeScale === undefined) await this.readSettings();
    this.nextProbe = Date.now() + PROBE_SECONDS * (this.timeScale ?? 1) * 1000;
    await Promise.all(this.orphans().map((index) => this.signalEntry(index, (h) => h.signal(setEnabledSignal, this.s.enabled))));
  }

  /** Until the history is long: probes, starts, waits. A cancellation ends the run, not the queue. */
  async run(): Promise<void> {
    try {
      for (;;) {
        this.rearm = false;
        if (historyTooLong()) break;
        if (this.orphans().length > 0 && Date.now() >= this.nextProbe) await this.probe();
        if (this.dirty && mayStart(this.s, this.maxConcurrent)) {
          this.dirty = false;
          // Read fresh from the worker when entries may start: an operator who removed an operation stops its entries.
          const settings = await this.readSettings();
          if (this.fast) {
            // The decision itself does not wake the loop again; what changes meanwhile (a slot freed) does.
            const step = decideQueue(this.s, settings, Date.now());
            this.s = step.state;
            await Promise.all(step.ops.map((op) => this.act(op)));
            continue;
          }
          await this.apply(decideQueue(this.s, settings, Date.now()));
          this.dirty = false;
          continue;
        }
        this.dirty = false;
        this.show();
        const wake = () => this.dirty || this.rearm || historyTooLong();
        if (this.orphans().length > 0) await condition(wake, Math.max(1, this.nextProbe - Date.now()));
        else await condition(wake);
      }
    } catch (err) {
      // Cancelling the queue would lose every entry: it goes on in a new run instead (terminate it to reset the queue).
      if (!isCancellation(err)) throw err;
      log.warn('repair: the repair queue was cancelled; it keeps its entries and goes on (terminate repair-queue to reset it)', {});
    }
    // Starts in flight land first: the next run learns of a failed start from its state, not by a probe minutes later.
    await CancellationScope.nonCancellable(() => condition(() => allHandlersFinished() && this.starting.size === 0));
  }
}
