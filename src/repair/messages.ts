// The repair queue's updates, queries and signals: shared by the workflows,
// the `tend repair-queue` CLI and the docs' `temporal workflow update execute`
// lines (the names are the ckecli verbs). Pure.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { RepairQueueEntry, RepairRequest } from './entry.ts';
import type { RepairPlan } from './procedure.ts';

export const REPAIR_QUEUE_WORKFLOW_ID = 'repair-queue';
export const repairEntryWorkflowId = (index: string) => `repair/${index}`;
/** The workflow that lifts an ended entry's cordon until it is lifted. */
export const repairLiftWorkflowId = (index: string) => `repair/${index}/lift`;

/**
 * Entries the queue holds at most, finished ones included (they stay until
 * `delete-finished`): with every field at its longest, the state the queue
 * carries across continue-as-new stays far below Temporal's 2 MiB payload
 * limit (test/unit/repair-validate.test.ts measures it). An `add` past it is
 * refused, naming the limit.
 */
export const MAX_QUEUE_ENTRIES = 1000;
/** Requests one `add` takes at most (a batch stays a small update payload). */
export const MAX_REQUESTS_PER_ADD = 100;
/**
 * The longest operation or machine type an entry takes: keys of the configuration, carried in
 * every entry (its share of the MAX_QUEUE_ENTRIES bound on the carried state).
 */
export const REPAIR_KEY_MAX = 63;
/** The highest entry index: a safe integer of at most 12 digits, whatever a workflow id planted beyond it says. */
export const MAX_INDEX = 999_999_999_999;

// ---------------------------------------------------------------- patches
// Behaviours behind patched(): recorded histories replay the way they ran.

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
/**
 * An entry that ends (failed, given up, deleted) and cannot lift its cordon ends at once, its
 * repair slot freed (a persistent 403 on the uncordon neither holds a slot nor blocks `delete`):
 * the lift goes on as `repair/<index>/lift`, a workflow of its own (the entry workflow's lift
 * mode), showing why in its details, until the cordon is lifted or it is cancelled.
 */
export const REPAIR_LIFT_APART_PATCH = 'repair-lift-apart';

/** Refusal types (ApplicationFailure types) of the repair workflows and activities. */
export const REFUSAL = {
  /** A workflow input or an activity input that is not acceptable. */
  invalidInput: 'InvalidRepairInput',
  /** An update (add, delete, ...) refused before it changed anything. */
  invalidRequest: 'InvalidRepairRequest',
  noSuchEntry: 'NoSuchRepairEntry',
  /** The entry's key is not configured (any more). */
  notConfigured: 'RepairNotConfigured',
  /** How an entry's workflow fails: refused by an activity, or given up after its attempts. */
  entryRefused: 'RepairRefused',
  entryGaveUp: 'RepairGaveUp',
  /** A drain that retrying cannot help (a webhook's 403, two budgets over one pod): the entry fails with the reason. */
  drainRefused: 'DrainRefused',
} as const;

export interface AddInput {
  requests: RepairRequest[];
}

export const addUpdate = defineUpdate<RepairQueueEntry[], [AddInput]>('add');
export const deleteUpdate = defineUpdate<RepairQueueEntry, [{ index: string }]>('delete');
export const deleteFinishedUpdate = defineUpdate<string[], []>('delete-finished');
export const deleteUnfinishedUpdate = defineUpdate<string[], []>('delete-unfinished');
export const enableUpdate = defineUpdate<boolean, []>('enable');
export const disableUpdate = defineUpdate<boolean, []>('disable');
export const resetBackoffUpdate = defineUpdate<number, []>('reset-backoff');

export const listQuery = defineQuery<RepairQueueEntry[]>('list');
export const isEnabledQuery = defineQuery<boolean>('is-enabled');

/**
 * From an entry's workflow to the queue: its new fields, or that it is gone
 * (deleted or cancelled). `queue` names the chain of queue runs that started
 * the entry (the queue's first run id): a report from an entry of an earlier
 * queue, reset since, is refused.
 */
export interface EntryReport {
  index: string;
  queue: string;
  fields?: Partial<RepairQueueEntry>;
  removed?: boolean;
}
export const entryReportSignal = defineSignal<[EntryReport]>('entry-report');

/** From the queue to a running entry. */
export const setEnabledSignal = defineSignal<[boolean]>('set-enabled');
export const resetEntryBackoffSignal = defineSignal<[]>('reset-backoff');

/**
 * What the queue starts an entry's workflow with: keys only. The commands,
 * drain settings and timings are looked up by (machine type, operation, step)
 * in the worker's own configuration when an activity runs
 * (src/repair/validate.ts checks every field; docs/repair.md, "Trust").
 */
export interface EntryInput {
  index: string;
  address: string;
  machine_type: string;
  operation: string;
  serial?: string;
  enabled: boolean;
  /** The queue's chain (its first run id): the entry's reports carry it. */
  queue: string;
  /** Where a run that continued-as-new left off (numbers and flags only; src/repair/validate.ts). */
  resume?: EntryResume;
  /** Set: this workflow is `repair/<index>/lift`, started by the entry as it ended with its cordon on. */
  lift?: EntryLift;
}

/** What a lift workflow needs: the Node, the time scale of its retries, and why the entry could not lift it. */
export interface EntryLift {
  nodename: string;
  time_scale: number;
  reason: string;
}

/** An entry's progress, carried across its continue-as-new. */
export interface EntryResume {
  nodename: string;
  step: number;
  step_status: RepairQueueEntry['step_status'];
  last_transition_time?: string;
  drain_backoff_count: number;
  drain_backoff_expire: string;
  drained: boolean;
  commandDone: boolean;
  cordoned: boolean;
  healthyAtStart?: boolean;
  healthy?: boolean;
  /** Epoch ms, 0 when none. */
  watchUntil: number;
  backoffExpire: number;
  /** Epoch ms: the running drain's eviction deadline, kept so a resumed drain does not restart its clock. */
  drainDeadline?: number;
  /** Runs of the step's repair command done before a pause held the next one. */
  commandRuns?: number;
  plan: RepairPlan;
}
