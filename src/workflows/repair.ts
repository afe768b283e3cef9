// The repair queue as two workflows. `repair-queue` is the entity: it holds
// CKE's entries, answers the CLI's updates synchronously, and starts one
// `repair/<index>` workflow per entry when a slot is free. Each entry's
// workflow walks the seed's steps (drain, repair command, watch) with
// decisions from src/repair/decide.ts, and reports its transitions back.
import {
  ActivityCancellationType, ActivityFailure, allHandlersFinished, ApplicationFailure, CancellationScope, condition, continueAsNew,
  getExternalWorkflowHandle, isCancellation, log, ParentClosePolicy, proxyActivities, setHandler, startChild, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import { decideEntryOp, decideStarts, drainBackoff, selectForDelete } from '../repair/decide.ts';
import { ZERO_TIME, type RepairQueueEntry } from '../repair/entry.ts';
import {
  addUpdate, deleteFinishedUpdate, deleteUnfinishedUpdate, deleteUpdate, disableUpdate, enableUpdate, entryReportSignal,
  isEnabledQuery, listQuery, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId, resetBackoffUpdate, resetEntryBackoffSignal,
  setEnabledSignal, type AddInput, type EntryInput,
} from '../repair/messages.ts';
import type { RepairPlan } from '../repair/procedure.ts';
import {
  addInputSchema, check, deleteInputSchema, entryInputSchema, entryReportSchema, noInput, parseOrThrow, queueStateSchema,
} from '../repair/validate.ts';

const iso = (ms: number) => new Date(ms).toISOString();

// ================================================================ the queue

/**
 * What the queue carries across continue-as-new: entries and switches, never
 * configuration (checked field by field when a run starts, so a forged state
 * is refused). Commands and limits are read from the worker when needed.
 */
export interface RepairQueueState {
  entries: RepairQueueEntry[];
  nextIndex: number;
  enabled: boolean;
  /** index -> address of deleted entries whose workflows are still cleaning up. */
  closing: Record<string, string>;
}

/** Continue-as-new well before the history limit; the state is small. */
const HISTORY_LIMIT = 4000;

class RepairQueue {
  s: RepairQueueState;
  dirty = true;
  /**
   * max_concurrent_repairs as last read from the worker, in this run only:
   * the queue asks again whenever fewer entries than this are processing.
   */
  maxConcurrent?: number;

  constructor(s?: RepairQueueState) {
    this.s = s ?? { entries: [], nextIndex: 1, enabled: true, closing: {} };
  }

  find(index: string) {
    return this.s.entries.find((e) => e.index === index);
  }

  /** Queues the requests, all or none, once the worker's configuration accepted every one (the repairCheckRequests activity). */
  add(input: AddInput, problems: string[]): RepairQueueEntry[] {
    if (problems.length > 0) throw ApplicationFailure.nonRetryable(problems.join('; '), 'InvalidRepairRequest');
    const now = Date.now();
    const added = input.requests.map((r): RepairQueueEntry => ({
      index: String(this.s.nextIndex++),
      address: r.address,
      nodename: '',
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
    this.s.entries.push(...added);
    this.dirty = true;
    return added;
  }

  async remove(indexes: string[]): Promise<void> {
    for (const index of indexes) {
      const e = this.find(index);
      if (!e) continue;
      this.s.entries = this.s.entries.filter((x) => x !== e);
      if (e.status === 'processing') {
        // Its workflow uncordons and reports `removed`; until then it holds its slot and address.
        this.s.closing[index] = e.address;
        await getExternalWorkflowHandle(repairEntryWorkflowId(index)).cancel().catch((err: unknown) => {
          log.warn('repair: could not cancel entry workflow', { index, error: String(err) });
          delete this.s.closing[index];
        });
      }
    }
    this.dirty = true;
  }

  /**
   * An entry's report, checked: only a processing (or closing) entry's
   * workflow reports, only its progress fields change, never its identity.
   * Anything else is ignored with the reason in the worker's log (a signal
   * cannot be refused).
   */
  report(raw: unknown) {
    const c = check(entryReportSchema, raw, 'entry-report');
    const ignore = (reason: string) => log.warn('repair: ignored an entry-report signal', { reason });
    if (!c.ok) return ignore(c.reason);
    const r = c.value;
    const e = this.find(r.index);
    if (r.removed) {
      if (!(r.index in this.s.closing) && e?.status !== 'processing') return ignore(`entry ${r.index} is not processing or being deleted`);
      delete this.s.closing[r.index];
      this.s.entries = this.s.entries.filter((x) => x.index !== r.index);
    } else {
      if (!e || e.status !== 'processing') return ignore(`entry ${r.index} is not processing`);
      Object.assign(e, r.fields);
    }
    this.dirty = true;
  }

  async tellRunning(send: (id: string) => Promise<void>) {
    await Promise.all(this.s.entries.filter((e) => e.status === 'processing').map((e) =>
      send(repairEntryWorkflowId(e.index)).catch((err: unknown) => log.warn('repair: could not signal entry', { index: e.index, error: String(err) }))));
  }

  running() {
    return this.s.entries.filter((e) => e.status === 'processing').length + Object.keys(this.s.closing).length;
  }

  /** Whether a start may be possible now, so that the worker's settings are worth reading. */
  mayStart() {
    return this.s.enabled && this.s.entries.some((e) => e.status === 'queued') &&
      (this.maxConcurrent === undefined || this.running() < this.maxConcurrent);
  }

  /** Entries whose key the worker no longer has (an operator removed it) fail before they start; nothing runs. */
  failUnconfigured(problems: Record<string, string>) {
    for (const [index, problem] of Object.entries(problems)) {
      const e = this.find(index);
      if (!e || e.status !== 'queued') continue;
      Object.assign(e, { status: 'failed', last_transition_time: iso(Date.now()) });
      log.warn('repair: entry failed before starting', { index, problem });
    }
  }

  async start(index: string) {
    const e = this.find(index)!;
    Object.assign(e, { status: 'processing', step: 0, step_status: 'waiting', last_transition_time: iso(Date.now()) });
    // Keys only: the entry's activities look its commands up in the worker's configuration.
    const input: EntryInput = {
      index: e.index, address: e.address, machine_type: e.machine_type, operation: e.operation,
      ...(e.serial ? { serial: e.serial } : {}),
      enabled: this.s.enabled,
    };
    try {
      await startChild(repairEntryWorkflow, {
        workflowId: repairEntryWorkflowId(index),
        args: [input],
        // The queue continues-as-new; its entries must outlive each run.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        staticSummary: `repair ${e.operation} of ${e.machine_type} ${e.address}${e.serial ? ` (${e.serial})` : ''}`,
        typedSearchAttributes: [
          { key: TendCapability, value: 'repair' },
          { key: TendTarget, value: e.address },
        ],
      });
      // Deleted while its start was in flight: the delete found nothing to cancel yet.
      if (!this.find(index)) {
        this.s.closing[index] = e.address;
        await getExternalWorkflowHandle(repairEntryWorkflowId(index)).cancel().catch(() => delete this.s.closing[index]);
      }
    } catch (err) {
      Object.assign(e, { status: 'failed', last_transition_time: iso(Date.now()) });
      log.warn('repair: could not start entry workflow', { index, error: String(err) });
    }
  }
}

export async function repairQueueWorkflow(state?: unknown): Promise<void> {
  if (workflowInfo().workflowId !== REPAIR_QUEUE_WORKFLOW_ID) {
    throw ApplicationFailure.nonRetryable(`repairQueueWorkflow: refused: the queue runs as workflow id ${REPAIR_QUEUE_WORKFLOW_ID} only (got ${workflowInfo().workflowId})`, 'InvalidRepairInput');
  }
  let initial: RepairQueueState | undefined;
  if (state !== undefined && state !== null) {
    const c = check(queueStateSchema, state, 'repairQueueWorkflow: refused input');
    if (!c.ok) throw ApplicationFailure.nonRetryable(c.reason, 'InvalidRepairInput');
    initial = c.value;
  }
  const q = new RepairQueue(initial);

  setHandler(listQuery, () => q.s.entries);
  setHandler(isEnabledQuery, () => q.s.enabled);
  setHandler(entryReportSignal, (r: unknown) => q.report(r));

  const { repairCheckRequests, repairQueueSettings } = proxyActivities<Activities>({
    startToCloseTimeout: '10s', retry: { maximumInterval: '30s', nonRetryableErrorTypes: ['InvalidRepairInput'] },
  });
  setHandler(addUpdate, async (input) => q.add(input, await repairCheckRequests(input)), {
    validator: (input: unknown) => void parseOrThrow(addInputSchema, input, 'add'),
  });
  setHandler(deleteUpdate, async (arg) => {
    const { index } = parseOrThrow(deleteInputSchema, arg, 'delete');
    const e = { ...q.find(index)! };
    await q.remove([e.index]);
    return e;
  }, {
    validator: (arg: unknown) => {
      const { index } = parseOrThrow(deleteInputSchema, arg, 'delete');
      if (!q.find(index)) throw ApplicationFailure.nonRetryable(`no entry with index ${index} in the repair queue`, 'NoSuchRepairEntry');
    },
  });
  setHandler(deleteFinishedUpdate, async () => {
    const indexes = selectForDelete(q.s.entries, 'finished');
    await q.remove(indexes);
    return indexes;
  }, { validator: (...args: unknown[]) => noInput('delete-finished', args) });
  setHandler(deleteUnfinishedUpdate, async () => {
    const indexes = selectForDelete(q.s.entries, 'unfinished');
    await q.remove(indexes);
    return indexes;
  }, { validator: (...args: unknown[]) => noInput('delete-unfinished', args) });
  for (const [update, enabled] of [[enableUpdate, true], [disableUpdate, false]] as const) {
    setHandler(update, async () => {
      if (q.s.enabled !== enabled) {
        q.s.enabled = enabled;
        q.dirty = true;
        await q.tellRunning((id) => getExternalWorkflowHandle(id).signal(setEnabledSignal, enabled));
      }
      return enabled;
    }, { validator: (...args: unknown[]) => noInput(enabled ? 'enable' : 'disable', args) });
  }
  setHandler(resetBackoffUpdate, async () => {
    let n = 0;
    for (const e of q.s.entries) {
      if (e.drain_backoff_count !== 0 || e.drain_backoff_expire !== ZERO_TIME) n++;
      e.drain_backoff_count = 0;
      e.drain_backoff_expire = ZERO_TIME;
    }
    await q.tellRunning((id) => getExternalWorkflowHandle(id).signal(resetEntryBackoffSignal));
    return n;
  }, { validator: (...args: unknown[]) => noInput('reset-backoff', args) });

  const tooLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > HISTORY_LIMIT;
  for (;;) {
    await condition(() => q.dirty || tooLong());
    if (tooLong()) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof repairQueueWorkflow>(q.s);
    }
    q.dirty = false;
    if (!q.mayStart()) continue;
    // Read fresh from the worker when entries may start: an operator who removed an operation stops its entries.
    const queued = q.s.entries.filter((e) => e.status === 'queued');
    const settings = await repairQueueSettings({ entries: queued.map((e) => ({ index: e.index, machine_type: e.machine_type, operation: e.operation })) });
    q.maxConcurrent = settings.max_concurrent_repairs;
    q.failUnconfigured(settings.problems);
    const starts = decideStarts({
      entries: q.s.entries,
      closing: Object.values(q.s.closing),
      enabled: q.s.enabled,
      maxConcurrent: settings.max_concurrent_repairs,
    });
    // Started together: one workflow task for a whole batch of starts.
    await Promise.all(starts.map((index) => q.start(index)));
  }
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
  /** The running drain, cancelled when the queue is disabled. */
  drainScope?: CancellationScope;
  /** Numbers from the worker's configuration (repairInspect); never a command. */
  plan?: RepairPlan;

  constructor(input: EntryInput) {
    this.entry = {
      index: input.index, address: input.address, nodename: '', machine_type: input.machine_type, operation: input.operation,
      ...(input.serial ? { serial: input.serial } : {}),
      status: 'processing', step: 0, step_status: 'waiting', drain_backoff_count: 0, drain_backoff_expire: ZERO_TIME,
    };
    this.enabled = input.enabled;
  }

  get key() {
    return { index: this.entry.index, address: this.entry.address, machine_type: this.entry.machine_type, operation: this.entry.operation };
  }

  get step() {
    return this.plan!.steps[this.entry.step]!;
  }
}

export interface RepairEntryResult {
  entry: RepairQueueEntry;
  reason?: string;
}

/** Refusals from the activities: the input or the key is not acceptable; retrying cannot help. */
const REFUSALS = ['InvalidRepairInput', 'RepairNotConfigured'];

function refusal(err: unknown): string | undefined {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && REFUSALS.includes(err.cause.type ?? '')) return err.cause.message;
  return undefined;
}

/** The progress fields an entry reports to the queue (never its identity). */
function progress(e: RepairQueueEntry): Partial<RepairQueueEntry> {
  return {
    nodename: e.nodename, status: e.status, step: e.step, step_status: e.step_status,
    ...(e.last_transition_time ? { last_transition_time: e.last_transition_time } : {}),
    drain_backoff_count: e.drain_backoff_count, drain_backoff_expire: e.drain_backoff_expire,
  };
}

export async function repairEntryWorkflow(raw: unknown): Promise<RepairEntryResult> {
  // Anyone with access to the namespace can start this type with any input: keys only, checked, or nothing runs.
  const checked = check(entryInputSchema, raw, 'repairEntryWorkflow: refused input');
  if (!checked.ok) throw ApplicationFailure.nonRetryable(checked.reason, 'InvalidRepairInput');
  const input = checked.value;
  const id = workflowInfo().workflowId;
  if (id !== repairEntryWorkflowId(input.index)) {
    throw ApplicationFailure.nonRetryable(
      `repairEntryWorkflow: refused input: the workflow id must be ${repairEntryWorkflowId(input.index)} for entry ${input.index} (got ${id})`, 'InvalidRepairInput');
  }
  // Only the queue starts entries (as its children): a hand-started one would skip its limits and its one-per-address rule.
  const parent = workflowInfo().parent?.workflowId;
  if (parent !== REPAIR_QUEUE_WORKFLOW_ID) {
    throw ApplicationFailure.nonRetryable(
      `repairEntryWorkflow: refused: entries are started by the ${REPAIR_QUEUE_WORKFLOW_ID} workflow only (this one has ${parent ? `parent ${parent}` : 'no parent'}); queue a repair with \`tend repair-queue add\` or the add update`,
      'InvalidRepairInput');
  }
  const r = new RepairEntry(input);
  // A killed worker's activity is retried after this; heartbeats reach the server at most every 0.8 x this.
  // Known only after the first activity (the time scale is the worker's); 30 s until then.
  let heartbeatTimeout = 30_000;
  const retry = { maximumAttempts: 10, nonRetryableErrorTypes: REFUSALS };
  const short = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry: { maximumInterval: '30s', nonRetryableErrorTypes: REFUSALS } });

  const queue = getExternalWorkflowHandle(REPAIR_QUEUE_WORKFLOW_ID);
  const report = async (fields: Partial<RepairQueueEntry>) => {
    Object.assign(r.entry, fields);
    await queue.signal(entryReportSignal, { index: r.entry.index, fields: progress(r.entry) })
      .catch((err: unknown) => log.warn('repair: could not report to the queue', { error: String(err) }));
  };
  const transition = (fields: Partial<RepairQueueEntry>) => report({ ...fields, last_transition_time: iso(Date.now()) });

  setHandler(setEnabledSignal, (enabled: unknown) => {
    if (typeof enabled !== 'boolean') {
      log.warn('repair: ignored a set-enabled signal', { reason: `set-enabled takes true or false (got ${JSON.stringify(enabled)?.slice(0, 200)})` });
      return;
    }
    r.enabled = enabled;
    // A disabled queue abandons ongoing drains.
    if (!enabled) r.drainScope?.cancel();
  });
  setHandler(resetEntryBackoffSignal, (...args: unknown[]) => {
    if (args.length > 0 && !(args.length === 1 && args[0] === undefined)) {
      log.warn('repair: ignored a reset-backoff signal', { reason: `reset-backoff takes no input (got ${JSON.stringify(args).slice(0, 200)})` });
      return;
    }
    r.backoffExpire = 0;
    r.entry.drain_backoff_count = 0;
    r.entry.drain_backoff_expire = ZERO_TIME;
  });

  // Activity timeouts bound hung activities; a dead worker is noticed by the heartbeat timeout.
  const slack = (seconds: number) => (seconds + 60) * 1000;
  const watch = (until: number) => proxyActivities<Activities>({
    startToCloseTimeout: Math.max(0, until - Date.now()) + slack(r.plan!.command_timeout_seconds),
    heartbeatTimeout,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry,
  }).repairWatchHealth({ ...r.key, step: r.entry.step, until });
  const command = (kind: 'repair_command' | 'success_command', timeoutSeconds: number, retries = 0, intervalSeconds = 0) => proxyActivities<Activities>({
    startToCloseTimeout: ((timeoutSeconds + intervalSeconds) * (retries + 1) + 60) * 1000,
    heartbeatTimeout,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry,
  }).repairRunCommand({ ...r.key, step: r.entry.step, kind });

  const uncordon = () => short.repairUncordon({ index: r.entry.index, address: r.entry.address });
  const finish = async (status: 'succeeded' | 'failed', reason?: string): Promise<RepairEntryResult> => {
    if (r.cordoned) await uncordon();
    await transition({ status });
    if (reason) log.info('repair: entry finished', { index: r.entry.index, status, reason });
    return { entry: r.entry, reason };
  };

  try {
    // The first look: the plan (numbers only), the Node, and the health check; its timeout is unknown yet, so an hour bounds it.
    const first = await proxyActivities<Activities>({
      startToCloseTimeout: '1h', heartbeatTimeout, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED, retry,
    }).repairInspect(r.key);
    r.plan = first.plan;
    const scale = first.plan.time_scale;
    heartbeatTimeout = Math.max(5, 30 * scale) * 1000;
    r.entry.nodename = first.nodename;
    r.healthyAtStart = first.healthy;
    for (;;) {
      const next = decideEntryOp({
        step: r.entry.step, steps: r.plan.steps.length, step_status: r.entry.step_status, enabled: r.enabled,
        nodename: r.entry.nodename, needDrain: r.step.need_drain, drained: r.drained, commandDone: r.commandDone,
        healthyAtStart: r.healthyAtStart, healthy: r.healthy, watchUntil: r.watchUntil, backoffExpire: r.backoffExpire, now: Date.now(),
      });
      switch (next.op) {
        case 'check-health':
          r.healthyAtStart = (await watch(0)).healthy;
          break;
        case 'wait': {
          const before = { enabled: r.enabled, expire: r.backoffExpire };
          const changed = () => r.enabled !== before.enabled || r.backoffExpire !== before.expire;
          if (next.until !== undefined) await condition(changed, Math.max(1, next.until - Date.now()));
          else await condition(changed);
          break;
        }
        case 'drain': {
          await transition({ step_status: 'draining' });
          r.cordoned = true;
          const deadline = Date.now() + r.plan.eviction_timeout_seconds * scale * 1000;
          const drain = proxyActivities<Activities>({
            startToCloseTimeout: deadline - Date.now() + 120_000,
            heartbeatTimeout,
            cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            retry,
          });
          const scope = new CancellationScope();
          r.drainScope = scope;
          try {
            const result = await scope.run(() => drain.repairDrain({ ...r.key, step: r.entry.step, deadline }));
            if (result.ok) {
              r.drained = true;
            } else {
              // The activity uncordoned already; back off linearly, retries unlimited.
              const b = drainBackoff(r.entry.drain_backoff_count, scale);
              r.backoffExpire = Date.now() + b.seconds * 1000;
              log.info('repair: drain backs off', { index: r.entry.index, reason: result.reason, seconds: b.seconds });
              await transition({ step_status: 'waiting', drain_backoff_count: b.count, drain_backoff_expire: iso(r.backoffExpire) });
            }
          } catch (err) {
            // Abandoned because the queue was disabled (not a delete: the workflow itself is not cancelled).
            if (!isCancellation(err) || CancellationScope.current().consideredCancelled) throw err;
            await uncordon();
            await transition({ step_status: 'waiting' });
          } finally {
            r.drainScope = undefined;
          }
          break;
        }
        case 'run-command': {
          const s = r.step;
          const result = await command('repair_command', s.command_timeout_seconds, s.command_retries, s.command_interval * scale);
          if (!result.ok) return await finish('failed', `repair_command failed: ${result.error}`);
          r.commandDone = true;
          r.watchUntil = Date.now() + s.watch_seconds * scale * 1000;
          await transition({ step_status: 'watching' });
          break;
        }
        case 'watch':
          if ((await watch(next.until)).healthy) r.healthy = true;
          else r.watchUntil = 0;
          break;
        case 'next-step':
          r.drained = false;
          r.commandDone = false;
          r.healthy = undefined;
          await transition({ step: r.entry.step + 1, step_status: 'waiting' });
          break;
        case 'succeed': {
          if (r.cordoned) {
            await uncordon();
            r.cordoned = false;
          }
          if (r.plan.success_command_timeout !== undefined) {
            const result = await command('success_command', r.plan.success_command_timeout);
            if (!result.ok) return await finish('failed', `success_command failed: ${result.error}`);
          }
          return await finish('succeeded');
        }
        case 'fail':
          return await finish('failed', next.reason);
      }
    }
  } catch (err) {
    if (isCancellation(err)) {
      // Deleted (or cancelled in the Web UI): lift tend's cordon, and leave the queue.
      await CancellationScope.nonCancellable(async () => {
        await uncordon().catch((e: unknown) => log.warn('repair: could not uncordon', { error: String(e) }));
        await queue.signal(entryReportSignal, { index: r.entry.index, removed: true })
          .catch((e: unknown) => log.warn('repair: could not report removal', { error: String(e) }));
      });
      throw err;
    }
    const refused = refusal(err);
    if (refused) {
      // The key is not configured (any more) or an input was refused: nothing ran for it; the entry fails with the reason.
      if (r.cordoned) await uncordon().catch(() => undefined);
      await transition({ status: 'failed' });
      throw ApplicationFailure.nonRetryable(refused, 'RepairRefused');
    }
    throw err;
  }
}
