// The repair queue as two workflows. `repair-queue` is the entity: it holds
// CKE's entries, answers the CLI's updates synchronously, and starts one
// `repair/<index>` workflow per entry when a slot is free. Each entry's
// workflow walks the seed's steps (drain, repair command, watch) with
// decisions from src/repair/decide.ts, and reports its transitions back.
import {
  ActivityCancellationType, allHandlersFinished, CancellationScope, condition, continueAsNew,
  getExternalWorkflowHandle, isCancellation, ParentClosePolicy, proxyActivities, setHandler, startChild, workflowInfo,
  log, ApplicationFailure,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import type { RepairConfig } from '../config/repair.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import { decideEntryOp, decideStarts, drainBackoff, selectForDelete } from '../repair/decide.ts';
import { ZERO_TIME, type RepairQueueEntry } from '../repair/entry.ts';
import {
  addUpdate, deleteFinishedUpdate, deleteUnfinishedUpdate, deleteUpdate, disableUpdate, enableUpdate, entryReportSignal,
  isEnabledQuery, listQuery, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId, resetBackoffUpdate, resetEntryBackoffSignal,
  setEnabledSignal, type AddInput, type EntryInput, type EntryReport,
} from '../repair/messages.ts';
import { lookupOperation, requestProblems } from '../repair/procedure.ts';

const iso = (ms: number) => new Date(ms).toISOString();

// ================================================================ the queue

export interface RepairQueueState {
  entries: RepairQueueEntry[];
  nextIndex: number;
  enabled: boolean;
  config?: RepairConfig;
  /** index -> address of deleted entries whose workflows are still cleaning up. */
  closing: Record<string, string>;
}

/** Continue-as-new well before the history limit; the state is small. */
const HISTORY_LIMIT = 4000;

class RepairQueue {
  s: RepairQueueState;
  dirty = true;

  constructor(s?: RepairQueueState) {
    this.s = s ?? { entries: [], nextIndex: 1, enabled: true, closing: {} };
  }

  find(index: string) {
    return this.s.entries.find((e) => e.index === index);
  }

  validateAdd(input: AddInput) {
    if (!input || !Array.isArray(input.requests) || input.requests.length === 0) {
      throw new Error('add needs {"requests": [{"operation", "machine_type", "address", "serial"?}]}');
    }
    // Checked against the procedures last seen; checked again against the worker's current ones in add().
    if (this.s.config) this.checkRequests(this.s.config, input);
  }

  checkRequests(config: RepairConfig, input: AddInput) {
    const problems = input.requests.flatMap((r, i) =>
      requestProblems(config, r).map((p) => (input.requests.length > 1 ? `request ${i + 1} (${r.address}): ${p}` : p)));
    if (problems.length > 0) throw ApplicationFailure.nonRetryable(problems.join('; '), 'InvalidRepairRequest');
  }

  /** Takes the worker's repair section (see the repairConfig activity), then queues the requests, all or none. */
  add(input: AddInput, config: RepairConfig | undefined): RepairQueueEntry[] {
    if (!config) throw ApplicationFailure.nonRetryable('the worker has no repair section in its configuration', 'NoRepairConfig');
    this.s.config = config;
    this.checkRequests(config, input);
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

  report(r: EntryReport) {
    if (r.removed) {
      delete this.s.closing[r.index];
      this.s.entries = this.s.entries.filter((e) => e.index !== r.index);
    } else {
      const e = this.find(r.index);
      if (e) Object.assign(e, r.fields);
    }
    this.dirty = true;
  }

  async tellRunning(send: (id: string) => Promise<void>) {
    await Promise.all(this.s.entries.filter((e) => e.status === 'processing').map((e) =>
      send(repairEntryWorkflowId(e.index)).catch((err: unknown) => log.warn('repair: could not signal entry', { index: e.index, error: String(err) }))));
  }

  async start(index: string) {
    const e = this.find(index)!;
    const config = this.s.config;
    const lookup = config ? lookupOperation(config, e.machine_type, e.operation) : { problem: 'no repair configuration' };
    const now = Date.now();
    if ('problem' in lookup) {
      Object.assign(e, { status: 'failed', last_transition_time: iso(now) });
      log.warn('repair: entry failed before starting', { index, problem: lookup.problem });
      return;
    }
    Object.assign(e, { status: 'processing', step: 0, step_status: 'waiting', last_transition_time: iso(now) });
    const input: EntryInput = {
      entry: { ...e },
      operation: lookup.operation,
      drain: {
        protected_namespaces: config!.protected_namespaces,
        protected_job_pods: config!.protected_job_pods,
        evict_retries: config!.evict_retries,
        evict_interval: config!.evict_interval,
        eviction_timeout_seconds: config!.eviction_timeout_seconds,
      },
      timeScale: config!.time_scale,
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

export async function repairQueueWorkflow(state?: RepairQueueState): Promise<void> {
  const q = new RepairQueue(state);

  setHandler(listQuery, () => q.s.entries);
  setHandler(isEnabledQuery, () => q.s.enabled);
  setHandler(entryReportSignal, (r) => q.report(r));

  const { repairConfig } = proxyActivities<Activities>({ startToCloseTimeout: '10s', retry: { maximumAttempts: 5 } });
  setHandler(addUpdate, async (input) => q.add(input, await repairConfig()), { validator: (input) => q.validateAdd(input) });
  setHandler(deleteUpdate, async ({ index }) => {
    const e = { ...q.find(String(index))! };
    await q.remove([e.index]);
    return e;
  }, {
    validator: (arg) => {
      const index = arg?.index;
      if (index === undefined || !/^\d+$/.test(String(index))) throw new Error(`delete needs {"index": "N"} (got ${JSON.stringify(arg)})`);
      if (!q.find(String(index))) throw new Error(`no entry with index ${index} in the repair queue`);
    },
  });
  setHandler(deleteFinishedUpdate, async () => {
    const indexes = selectForDelete(q.s.entries, 'finished');
    await q.remove(indexes);
    return indexes;
  });
  setHandler(deleteUnfinishedUpdate, async () => {
    const indexes = selectForDelete(q.s.entries, 'unfinished');
    await q.remove(indexes);
    return indexes;
  });
  for (const [update, enabled] of [[enableUpdate, true], [disableUpdate, false]] as const) {
    setHandler(update, async () => {
      if (q.s.enabled !== enabled) {
        q.s.enabled = enabled;
        q.dirty = true;
        await q.tellRunning((id) => getExternalWorkflowHandle(id).signal(setEnabledSignal, enabled));
      }
      return enabled;
    });
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
  });

  const tooLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > HISTORY_LIMIT;
  for (;;) {
    await condition(() => q.dirty || tooLong());
    if (tooLong()) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof repairQueueWorkflow>(q.s);
    }
    q.dirty = false;
    const starts = decideStarts({
      entries: q.s.entries,
      closing: Object.values(q.s.closing),
      enabled: q.s.enabled,
      maxConcurrent: q.s.config?.max_concurrent_repairs ?? 1,
    });
    // Started together: one workflow task for a whole batch of starts.
    await Promise.all(starts.map((index) => q.start(index)));
  }
}

// ================================================================ an entry

const HEALTH_POLL_SECONDS = 10;

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

  readonly input: EntryInput;

  constructor(input: EntryInput) {
    this.input = input;
    this.entry = { ...input.entry };
    this.enabled = input.enabled;
  }

  get step() {
    return this.input.operation.repair_steps[this.entry.step]!;
  }
}

export interface RepairEntryResult {
  entry: RepairQueueEntry;
  reason?: string;
}

export async function repairEntryWorkflow(input: EntryInput): Promise<RepairEntryResult> {
  const r = new RepairEntry(input);
  const op = input.operation;
  const scale = input.timeScale;
  // A killed worker's activity is retried after this; heartbeats reach the server at most every 0.8 x this.
  const heartbeatTimeout = Math.max(5, 30 * scale) * 1000;
  const short = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry: { maximumInterval: '30s' } });

  const queue = getExternalWorkflowHandle(REPAIR_QUEUE_WORKFLOW_ID);
  const report = async (fields: Partial<RepairQueueEntry>) => {
    Object.assign(r.entry, fields);
    await queue.signal(entryReportSignal, { index: r.entry.index, fields: { ...r.entry } })
      .catch((err: unknown) => log.warn('repair: could not report to the queue', { error: String(err) }));
  };
  const transition = (fields: Partial<RepairQueueEntry>) => report({ ...fields, last_transition_time: iso(Date.now()) });

  setHandler(setEnabledSignal, (enabled) => {
    r.enabled = enabled;
    // A disabled queue abandons ongoing drains.
    if (!enabled) r.drainScope?.cancel();
  });
  setHandler(resetEntryBackoffSignal, () => {
    r.backoffExpire = 0;
    r.entry.drain_backoff_count = 0;
    r.entry.drain_backoff_expire = ZERO_TIME;
  });

  const watch = (until: number) => proxyActivities<Activities>({
    startToCloseTimeout: Math.max(0, until - Date.now()) + (op.command_timeout_seconds + 60) * 1000,
    heartbeatTimeout,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: 10 },
  }).repairWatchHealth({
    command: op.health_check_command, address: r.entry.address, timeoutSeconds: op.command_timeout_seconds,
    until, pollSeconds: HEALTH_POLL_SECONDS * scale,
  });
  const command = (what: string, argv: string[], timeoutSeconds: number, retries = 0, intervalSeconds = 0) => proxyActivities<Activities>({
    startToCloseTimeout: ((timeoutSeconds + intervalSeconds) * (retries + 1) + 60) * 1000,
    heartbeatTimeout,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: 10 },
  }).repairRunCommand({ what, command: argv, address: r.entry.address, timeoutSeconds, retries, intervalSeconds });

  const finish = async (status: 'succeeded' | 'failed', reason?: string): Promise<RepairEntryResult> => {
    if (r.cordoned) await short.repairUncordon(r.entry.nodename, r.entry.index);
    await transition({ status });
    if (reason) log.info('repair: entry finished', { index: r.entry.index, status, reason });
    return { entry: r.entry, reason };
  };

  try {
    const first = await proxyActivities<Activities>({
      startToCloseTimeout: (op.command_timeout_seconds + 60) * 1000, heartbeatTimeout, retry: { maximumAttempts: 10 },
    }).repairInspect({ address: r.entry.address, command: op.health_check_command, timeoutSeconds: op.command_timeout_seconds });
    r.entry.nodename = first.nodename;
    r.healthyAtStart = first.healthy;
    for (;;) {
      const next = decideEntryOp({
        step: r.entry.step, steps: op.repair_steps.length, step_status: r.entry.step_status, enabled: r.enabled,
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
          const deadline = Date.now() + input.drain.eviction_timeout_seconds * scale * 1000;
          const drain = proxyActivities<Activities>({
            startToCloseTimeout: deadline - Date.now() + 120_000,
            heartbeatTimeout,
            cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            retry: { maximumAttempts: 10 },
          });
          const scope = new CancellationScope();
          r.drainScope = scope;
          try {
            const result = await scope.run(() => drain.repairDrain({
              index: r.entry.index, nodename: r.entry.nodename, deadline,
              protectedNamespaces: input.drain.protected_namespaces, protectedJobPods: input.drain.protected_job_pods,
              evictRetries: input.drain.evict_retries, evictIntervalSeconds: input.drain.evict_interval * scale,
            }));
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
            await short.repairUncordon(r.entry.nodename, r.entry.index);
            await transition({ step_status: 'waiting' });
          } finally {
            r.drainScope = undefined;
          }
          break;
        }
        case 'run-command': {
          const s = r.step;
          const result = await command('repair_command', s.repair_command, s.command_timeout_seconds, s.command_retries, s.command_interval * scale);
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
            await short.repairUncordon(r.entry.nodename, r.entry.index);
            r.cordoned = false;
          }
          if (op.success_command) {
            const result = await command('success_command', op.success_command, op.success_command_timeout);
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
        if (r.entry.nodename) await short.repairUncordon(r.entry.nodename, r.entry.index);
        await queue.signal(entryReportSignal, { index: r.entry.index, removed: true })
          .catch((e: unknown) => log.warn('repair: could not report removal', { error: String(e) }));
      });
    }
    throw err;
  }
}
