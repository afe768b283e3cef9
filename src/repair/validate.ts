// Every message that reaches the repair queue through Temporal, checked field
// by field: workflow inputs, updates, signals and activity inputs. Anyone who
// may write to tend's namespace can send these, so they carry names and keys
// only (index, address, machine type, operation, serial, step number, enabled
// flag) and anything else, an unknown field above all (a command an attacker
// slipped in), is refused with the reason. Pure: imported by workflow code.
import { ApplicationFailure } from '@temporalio/common';
import {
  array, boolean, integer, literal, max, maxItems, maxLength, min, minItems, minLength, number, oneOf, optional,
  pattern, record, strictObject, string, transform, union, above, type Infer, type Shape,
} from '../checks/shape.ts';
import type { ValueLimits } from '../checks/limits.ts';
import { checkMessage, type Checked } from '../checks/message.ts';
import { preview } from '../checks/preview.ts';
import { addressProblem, repairStatuses, repairStepStatuses, serialProblem } from './entry.ts';
import { MAX_INDEX, MAX_QUEUE_ENTRIES, MAX_REQUESTS_PER_ADD, REFUSAL, REPAIR_KEY_MAX, REPAIR_QUEUE_WORKFLOW_ID } from './messages.ts';

export { MAX_REQUESTS_PER_ADD };

/** A Node's name or a DNS name. */
const NAME_MAX = 253;

const indexMessage = `index must be a string of digits, e.g. "3" (at most ${String(MAX_INDEX).length})`;
export const indexSchema = string(indexMessage, pattern(new RegExp(`^[1-9]\\d{0,${String(MAX_INDEX).length - 1}}$`), indexMessage));

const nameSchema = (what: string, most = REPAIR_KEY_MAX) => string(`${what} must be a string`,
  minLength(1, `${what} must not be empty`), maxLength(most, `${what} is longer than ${most} characters`),
  pattern(/^[^\s\0]+$/, `${what} must not contain spaces or control characters`));

export const addressSchema = string('address must be a string (an IP address or a DNS name)',
  maxLength(NAME_MAX, `address is longer than ${NAME_MAX} characters`), addressProblem);

const serialSchema = string('serial must be a string', serialProblem);

export const requestSchema = strictObject({
  operation: nameSchema('operation'),
  machine_type: nameSchema('machine_type'),
  address: addressSchema,
  serial: optional(serialSchema),
});

export const addInputSchema = strictObject({
  requests: array(requestSchema, 'requests must be a list of {operation, machine_type, address, serial?}',
    minItems(1, 'requests must hold at least one request'), maxItems(MAX_REQUESTS_PER_ADD, `at most ${MAX_REQUESTS_PER_ADD} requests per add`)),
}, 'add needs {"requests": [{"operation", "machine_type", "address", "serial"?}]}');

export const deleteInputSchema = strictObject({
  index: union([indexSchema, transform(number(undefined, integer, above(0)), String)], 'index must be an entry\'s index, e.g. "3"'),
}, 'delete needs {"index": "N"}');

/** A Node's name: a DNS subdomain (lowercase letters, digits, "-" and "."), as the API server accepts one. */
const nodeNameMessage = `node must be a Node's name: a DNS subdomain of at most ${NAME_MAX} characters (lowercase letters, digits, "-" and ".")`;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** The length first: the pattern never runs on more than NAME_MAX characters. */
export const nodeNameSchema = string(nodeNameMessage, (s) => (s.length <= NAME_MAX && dnsSubdomain.test(s) ? undefined : nodeNameMessage));

/**
 * request-node-repair's ask: a Node's name and nothing else. The queue reads the rest itself
 * (the worker's nodeRepair section, the Node, the counts its limiters need).
 */
export const nodeRepairAskSchema = strictObject({ node: nodeNameSchema }, 'request-node-repair needs {"node": "NODE"}');

const count = number(undefined, integer, min(0), max(1_000_000));
const epochMs = number(undefined, integer, min(0), max(8.64e15));
const seconds = number(undefined, min(0), max(1e9));
const maxName = string(undefined, maxLength(NAME_MAX));
/** RFC 3339 with at most nanoseconds (Go's times): bounded in length. */
const time = string(undefined, pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/, 'must be an RFC 3339 time'));
/** Steps of an operation, at most (a plan is carried in every entry's continue-as-new). */
export const MAX_STEPS = 1000;

/** The queue's chain: its first run id (a UUID). */
export const chainSchema = string('queue must be the repair queue\'s run id', pattern(/^[0-9A-Za-z-]{1,64}$/, 'queue must be the repair queue\'s run id'));

/** An entry's plan: numbers for its timers, never a command. */
export const planSchema = strictObject({
  steps: array(strictObject({
    need_drain: boolean(), watch_seconds: seconds, command_timeout_seconds: seconds, command_retries: count, command_interval: seconds,
  }), undefined, minItems(1), maxItems(MAX_STEPS)),
  command_timeout_seconds: seconds,
  success_command_timeout: optional(seconds),
  eviction_timeout_seconds: seconds,
  time_scale: number(undefined, above(0), max(1)),
});

/** Where an entry's run left off when it continued-as-new: numbers and flags only. */
export const entryResumeSchema = strictObject({
  nodename: maxName,
  step: count,
  step_status: oneOf(repairStepStatuses),
  last_transition_time: optional(time),
  drain_backoff_count: count,
  drain_backoff_expire: time,
  drained: boolean(),
  commandDone: boolean(),
  cordoned: boolean(),
  healthyAtStart: optional(boolean()),
  healthy: optional(boolean()),
  watchUntil: epochMs,
  backoffExpire: epochMs,
  drainDeadline: optional(epochMs),
  /** Runs of the step's repair command done before a pause held the next one. */
  commandRuns: optional(count),
  plan: planSchema,
});

/** What a queue starts an entry's workflow with: keys only (and, when it continued-as-new, where it left off). */
export const entryInputSchema = strictObject({
  index: indexSchema,
  address: addressSchema,
  machine_type: nameSchema('machine_type'),
  operation: nameSchema('operation'),
  serial: optional(serialSchema),
  enabled: boolean('enabled must be true or false'),
  queue: chainSchema,
  resume: optional(entryResumeSchema),
  lift: optional(strictObject({
    nodename: string(undefined, minLength(1), maxLength(NAME_MAX)),
    time_scale: number(undefined, above(0), max(1)),
    reason: string(undefined, maxLength(1000)),
  })),
}, 'repairEntryWorkflow needs {index, address, machine_type, operation, serial?, enabled, queue}');

/** The fields of an entry its workflow may change; the entry's identity (index, address, keys) never changes. */
export const reportFieldsSchema = strictObject({
  nodename: optional(maxName),
  status: optional(oneOf(repairStatuses)),
  step: optional(count),
  step_status: optional(oneOf(repairStepStatuses)),
  last_transition_time: optional(time),
  drain_backoff_count: optional(count),
  drain_backoff_expire: optional(time),
});

export const entryReportSchema = strictObject({
  index: indexSchema,
  queue: chainSchema,
  fields: optional(reportFieldsSchema),
  removed: optional(literal(true)),
}, 'entry-report needs {index, queue, fields} or {index, queue, removed: true}');

const entryStateSchema = strictObject({
  index: indexSchema,
  address: addressSchema,
  nodename: maxName,
  machine_type: nameSchema('machine_type'),
  operation: nameSchema('operation'),
  serial: optional(serialSchema),
  status: oneOf(repairStatuses),
  step: count,
  step_status: oneOf(repairStepStatuses),
  last_transition_time: optional(time),
  drain_backoff_count: count,
  drain_backoff_expire: time,
});

/** What the queue carries across continue-as-new: entries and switches, never configuration. */
export const queueStateSchema = strictObject({
  entries: array(entryStateSchema),
  /** Any number: one past MAX_INDEX (read from a workflow id planted past it) is set right by the queue (saneNextIndex). */
  nextIndex: number(undefined, min(1)),
  enabled: boolean(),
  closing: record(indexSchema, addressSchema),
  deleting: optional(array(entryStateSchema)),
  reported: optional(record(indexSchema, oneOf(['succeeded', 'failed'] as const))),
}, 'repairQueueWorkflow takes no input, or the state of its previous run {entries, nextIndex, enabled, closing, deleting?, reported?}');

/** The key every repair activity is called with; argv and settings are looked up by it in the worker's configuration. */
export const entryKeyFields = {
  index: indexSchema,
  address: addressSchema,
  machine_type: nameSchema('machine_type'),
  operation: nameSchema('operation'),
};
export const entryKeySchema = strictObject(entryKeyFields);
export type EntryKey = Infer<typeof entryKeySchema>;

/** Which command of an operation: the step's repair command, the health check, the success command. */
export const commandKinds = ['repair_command', 'health_check_command', 'success_command'] as const;
export type CommandKind = (typeof commandKinds)[number];

/** Problems named in one refusal, at most (a huge message has thousands). */
const MAX_PROBLEMS = 10;

/** Bounds on what the queue carries across continue-as-new (MAX_QUEUE_ENTRIES entries of about 15 values each, their text). */
export const QUEUE_STATE_LIMITS: ValueLimits = Object.freeze({ maxDepth: 6, maxNodes: 60_000, maxChars: 1_500_000 });

/**
 * The checked value, or the reason it is refused (prefixed with `what`): src/checks/message.ts,
 * measured first (MESSAGE_LIMITS, or `limits`), so that no value costs more than its bound to
 * refuse, then field by field, each problem named by its path. Total: never throws.
 */
export function check<T>(schema: Shape<T>, value: unknown, what: string, limits?: ValueLimits): Checked<T> {
  return checkMessage(schema, value, what, { ...(limits && { limits }), problems: MAX_PROBLEMS });
}

/** Throws a non-retryable failure with the reason: for update validators, whose throw rejects the update before it reaches history. */
export function parseOrThrow<T>(schema: Shape<T>, value: unknown, what: string): T {
  const r = check(schema, value, what);
  if (!r.ok) throw ApplicationFailure.nonRetryable(r.reason, REFUSAL.invalidRequest);
  return r.value;
}

/** Why a message that takes no input is refused, or undefined (a mistyped or forged payload is not silently taken). */
export function inputProblem(name: string, args: readonly unknown[]): string | undefined {
  if (args.length > 0 && !(args.length === 1 && args[0] === undefined)) return `${name} takes no input (got ${preview(args, 120)})`;
  return undefined;
}

/** Updates that take no input refuse one. */
export function noInput(name: string, args: unknown[]): void {
  const problem = inputProblem(name, args);
  if (problem) throw ApplicationFailure.nonRetryable(problem, REFUSAL.invalidRequest);
}

/**
 * Why the queue cannot take `adding` more entries, or undefined: at most MAX_QUEUE_ENTRIES
 * entries (finished and deleted-but-cleaning-up ones count), indexes at most MAX_INDEX.
 */
export function capacityProblem(held: number, nextIndex: number, adding: number): string | undefined {
  if (held + adding > MAX_QUEUE_ENTRIES) {
    return `the repair queue holds at most ${MAX_QUEUE_ENTRIES} entries, finished ones included, and holds ${held}: ` +
      `this add of ${adding} would pass it; remove finished entries with \`tend repair-queue delete-finished\` (or delete entries by index)`;
  }
  if (nextIndex + adding - 1 > MAX_INDEX) {
    return `the repair queue's indexes end at ${MAX_INDEX} and the next is ${nextIndex}: reset the queue (terminate ${REPAIR_QUEUE_WORKFLOW_ID}) once no workflow repair/N with N past it is left`;
  }
  return undefined;
}
