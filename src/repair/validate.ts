// Every message that reaches the repair queue through Temporal, checked field
// by field: workflow inputs, updates, signals and activity inputs. Anyone who
// may write to tend's namespace can send these, so they carry names and keys
// only (index, address, machine type, operation, serial, step number, enabled
// flag) and anything else, an unknown field above all (a command an attacker
// slipped in), is refused with the reason. Pure: imported by workflow code.
import { ApplicationFailure } from '@temporalio/common';
import {
  array, boolean, integer, literal, max, maxItems, maxLength, min, minItems, minLength, number, oneOf, optional, parse,
  pattern, record, rfc3339, strictObject, string, transform, union, above, type Infer, type Issue, type Shape,
} from '../checks/shape.ts';
import { addressProblem, repairStatuses, repairStepStatuses, serialProblem } from './entry.ts';

const NAME_MAX = 253;

const indexMessage = 'index must be a string of digits, e.g. "3"';
export const indexSchema = string(indexMessage, pattern(/^[1-9]\d{0,15}$/, indexMessage));

const nameSchema = (what: string) => string(`${what} must be a string`,
  minLength(1, `${what} must not be empty`), maxLength(NAME_MAX, `${what} is longer than ${NAME_MAX} characters`),
  pattern(/^[^\s\0]+$/, `${what} must not contain spaces or control characters`));

export const addressSchema = string('address must be a string (an IP address or a DNS name)', addressProblem);

const serialSchema = string('serial must be a string', serialProblem);

export const requestSchema = strictObject({
  operation: nameSchema('operation'),
  machine_type: nameSchema('machine_type'),
  address: addressSchema,
  serial: optional(serialSchema),
});

/** At most this many requests per `add`: a batch stays well inside one update's payload. */
export const MAX_REQUESTS_PER_ADD = 1000;

export const addInputSchema = strictObject({
  requests: array(requestSchema, 'requests must be a list of {operation, machine_type, address, serial?}',
    minItems(1, 'requests must hold at least one request'), maxItems(MAX_REQUESTS_PER_ADD, `at most ${MAX_REQUESTS_PER_ADD} requests per add`)),
}, 'add needs {"requests": [{"operation", "machine_type", "address", "serial"?}]}');

export const deleteInputSchema = strictObject({
  index: union([indexSchema, transform(number(undefined, integer, above(0)), String)], 'index must be an entry\'s index, e.g. "3"'),
}, 'delete needs {"index": "N"}');

const count = number(undefined, integer, min(0), max(1_000_000));
const epochMs = number(undefined, integer, min(0), max(8.64e15));
const seconds = number(undefined, min(0), max(1e9));
const maxName = string(undefined, maxLength(NAME_MAX));

/** The queue's chain: its first run id (a UUID). */
export const chainSchema = string('queue must be the repair queue\'s run id', pattern(/^[0-9A-Za-z-]{1,64}$/, 'queue must be the repair queue\'s run id'));

/** An entry's plan: numbers for its timers, never a command. */
export const planSchema = strictObject({
  steps: array(strictObject({
    need_drain: boolean(), watch_seconds: seconds, command_timeout_seconds: seconds, command_retries: count, command_interval: seconds,
  }), undefined, minItems(1), maxItems(10_000)),
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
  last_transition_time: optional(rfc3339),
  drain_backoff_count: count,
  drain_backoff_expire: rfc3339,
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
}, 'repairEntryWorkflow needs {index, address, machine_type, operation, serial?, enabled, queue}');

/** The fields of an entry its workflow may change; the entry's identity (index, address, keys) never changes. */
export const reportFieldsSchema = strictObject({
  nodename: optional(maxName),
  status: optional(oneOf(repairStatuses)),
  step: optional(count),
  step_status: optional(oneOf(repairStepStatuses)),
  last_transition_time: optional(rfc3339),
  drain_backoff_count: optional(count),
  drain_backoff_expire: optional(rfc3339),
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
  last_transition_time: optional(rfc3339),
  drain_backoff_count: count,
  drain_backoff_expire: rfc3339,
});

/** What the queue carries across continue-as-new: entries and switches, never configuration. */
export const queueStateSchema = strictObject({
  entries: array(entryStateSchema),
  nextIndex: number(undefined, integer, min(1)),
  enabled: boolean(),
  closing: record(indexSchema, addressSchema),
  deleting: optional(array(entryStateSchema)),
}, 'repairQueueWorkflow takes no input, or the state of its previous run {entries, nextIndex, enabled, closing, deleting?}');

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

/** One issue per line, each with the path of the field it is about. */
export function describeIssues(issues: readonly Issue[]): string {
  return issues.map((i) => {
    const path = i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '');
    return path ? `${path}: ${i.message}` : i.message;
  }).join('; ');
}

/**
 * The checked value, or the reason it is refused (prefixed with `what`). A message that is not
 * even an object is refused with what it should look like (the schema's own type error) and
 * what came.
 */
export function check<T>(schema: Shape<T>, value: unknown, what: string): { ok: true; value: T } | { ok: false; reason: string } {
  const r = parse(schema, value);
  if (r.ok) return r;
  const notAnObject = r.issues.find((i) => i.path.length === 0 && i.code === 'invalid_type');
  return { ok: false, reason: `${what}: ${notAnObject ? `${notAnObject.message} (got ${JSON.stringify(value)?.slice(0, 200) ?? 'nothing'})` : describeIssues(r.issues)}` };
}

/** Throws a non-retryable failure with the reason: for update validators, whose throw rejects the update before it reaches history. */
export function parseOrThrow<T>(schema: Shape<T>, value: unknown, what: string): T {
  const r = check(schema, value, what);
  if (!r.ok) throw ApplicationFailure.nonRetryable(r.reason, 'InvalidRepairRequest');
  return r.value;
}

/** Updates that take no input refuse one, so a mistyped or forged payload is not silently ignored. */
export function noInput(name: string, args: unknown[]): void {
  if (args.length > 0 && !(args.length === 1 && args[0] === undefined)) {
    throw ApplicationFailure.nonRetryable(`${name} takes no input (got ${JSON.stringify(args).slice(0, 200)})`, 'InvalidRepairRequest');
  }
}
