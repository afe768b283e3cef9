// Every message that reaches the repair queue through Temporal, checked field
// by field: workflow inputs, updates, signals and activity inputs. Anyone who
// may write to tend's namespace can send these, so they carry names and keys
// only (index, address, machine type, operation, serial, step number, enabled
// flag) and anything else, an unknown field above all (a command an attacker
// slipped in), is refused with the reason. Pure: imported by workflow code.
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { addressProblem, repairStatuses, repairStepStatuses, serialProblem } from './entry.ts';

const NAME_MAX = 253;

export const indexSchema = z.string({ error: 'index must be a string of digits, e.g. "3"' })
  .regex(/^[1-9]\d{0,15}$/, 'index must be a string of digits, e.g. "3"');

const nameSchema = (what: string) => z.string({ error: `${what} must be a string` })
  .min(1, `${what} must not be empty`).max(NAME_MAX, `${what} is longer than ${NAME_MAX} characters`)
  .regex(/^[^\s\0]+$/, `${what} must not contain spaces or control characters`);

export const addressSchema = z.string({ error: 'address must be a string (an IP address or a DNS name)' })
  .superRefine((a, ctx) => {
    const p = addressProblem(a);
    if (p) ctx.addIssue({ code: 'custom', message: p });
  });

const serialSchema = z.string({ error: 'serial must be a string' }).superRefine((s, ctx) => {
  const p = serialProblem(s);
  if (p) ctx.addIssue({ code: 'custom', message: p });
});

export const requestSchema = z.strictObject({
  operation: nameSchema('operation'),
  machine_type: nameSchema('machine_type'),
  address: addressSchema,
  serial: serialSchema.optional(),
});

/** At most this many requests per `add`: a batch stays well inside one update's payload. */
export const MAX_REQUESTS_PER_ADD = 1000;

export const addInputSchema = z.strictObject({
  requests: z.array(requestSchema, { error: 'requests must be a list of {operation, machine_type, address, serial?}' })
    .min(1, 'requests must hold at least one request').max(MAX_REQUESTS_PER_ADD, `at most ${MAX_REQUESTS_PER_ADD} requests per add`),
});

export const deleteInputSchema = z.strictObject({
  index: z.union([indexSchema, z.number().int().positive().transform(String)], { error: 'index must be an entry\'s index, e.g. "3"' }),
});

const rfc3339 = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/, 'must be an RFC 3339 time');
const count = z.number().int().min(0).max(1_000_000);
const epochMs = z.number().int().min(0).max(8.64e15);
const seconds = z.number().min(0).max(1e9);

/** The queue's chain: its first run id (a UUID). */
export const chainSchema = z.string({ error: 'queue must be the repair queue\'s run id' })
  .regex(/^[0-9A-Za-z-]{1,64}$/, 'queue must be the repair queue\'s run id');

/** An entry's plan: numbers for its timers, never a command. */
export const planSchema = z.strictObject({
  steps: z.array(z.strictObject({
    need_drain: z.boolean(), watch_seconds: seconds, command_timeout_seconds: seconds, command_retries: count, command_interval: seconds,
  })).min(1).max(10_000),
  command_timeout_seconds: seconds,
  success_command_timeout: seconds.optional(),
  eviction_timeout_seconds: seconds,
  time_scale: z.number().gt(0).max(1),
});

/** Where an entry's run left off when it continued-as-new: numbers and flags only. */
export const entryResumeSchema = z.strictObject({
  nodename: z.string().max(NAME_MAX),
  step: count,
  step_status: z.enum(repairStepStatuses),
  last_transition_time: rfc3339.optional(),
  drain_backoff_count: count,
  drain_backoff_expire: rfc3339,
  drained: z.boolean(),
  commandDone: z.boolean(),
  cordoned: z.boolean(),
  healthyAtStart: z.boolean().optional(),
  healthy: z.boolean().optional(),
  watchUntil: epochMs,
  backoffExpire: epochMs,
  drainDeadline: epochMs.optional(),
  /** Runs of the step's repair command done before a pause held the next one. */
  commandRuns: count.optional(),
  plan: planSchema,
});

/** What a queue starts an entry's workflow with: keys only (and, when it continued-as-new, where it left off). */
export const entryInputSchema = z.strictObject({
  index: indexSchema,
  address: addressSchema,
  machine_type: nameSchema('machine_type'),
  operation: nameSchema('operation'),
  serial: serialSchema.optional(),
  enabled: z.boolean({ error: 'enabled must be true or false' }),
  queue: chainSchema,
  resume: entryResumeSchema.optional(),
});

/** The fields of an entry its workflow may change; the entry's identity (index, address, keys) never changes. */
export const reportFieldsSchema = z.strictObject({
  nodename: z.string().max(NAME_MAX).optional(),
  status: z.enum(repairStatuses).optional(),
  step: count.optional(),
  step_status: z.enum(repairStepStatuses).optional(),
  last_transition_time: rfc3339.optional(),
  drain_backoff_count: count.optional(),
  drain_backoff_expire: rfc3339.optional(),
});

export const entryReportSchema = z.strictObject({
  index: indexSchema,
  queue: chainSchema,
  fields: reportFieldsSchema.optional(),
  removed: z.literal(true).optional(),
});

const entryStateSchema = z.strictObject({
  index: indexSchema,
  address: addressSchema,
  nodename: z.string().max(NAME_MAX),
  machine_type: nameSchema('machine_type'),
  operation: nameSchema('operation'),
  serial: serialSchema.optional(),
  status: z.enum(repairStatuses),
  step: count,
  step_status: z.enum(repairStepStatuses),
  last_transition_time: rfc3339.optional(),
  drain_backoff_count: count,
  drain_backoff_expire: rfc3339,
});

/** What the queue carries across continue-as-new: entries and switches, never configuration. */
export const queueStateSchema = z.strictObject({
  entries: z.array(entryStateSchema),
  nextIndex: z.number().int().min(1),
  enabled: z.boolean(),
  closing: z.record(indexSchema, addressSchema),
  deleting: z.array(entryStateSchema).optional(),
});

/** The key every repair activity is called with; argv and settings are looked up by it in the worker's configuration. */
export const entryKeySchema = z.strictObject({
  index: indexSchema,
  address: addressSchema,
  machine_type: nameSchema('machine_type'),
  operation: nameSchema('operation'),
});

/** Which command of an operation: the step's repair command, the health check, the success command. */
export const commandKinds = ['repair_command', 'health_check_command', 'success_command'] as const;
export type CommandKind = (typeof commandKinds)[number];

/** What each message looks like, for a refusal of something that is not even an object. */
const usage = new Map<z.ZodType, string>([
  [addInputSchema, 'add needs {"requests": [{"operation", "machine_type", "address", "serial"?}]}'],
  [deleteInputSchema, 'delete needs {"index": "N"}'],
  [entryInputSchema, 'repairEntryWorkflow needs {index, address, machine_type, operation, serial?, enabled, queue}'],
  [entryReportSchema, 'entry-report needs {index, queue, fields} or {index, queue, removed: true}'],
  [queueStateSchema, 'repairQueueWorkflow takes no input, or the state of its previous run {entries, nextIndex, enabled, closing, deleting?}'],
]);

/** One issue per line, each with the path of the field it is about. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => {
    const path = i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '');
    return path ? `${path}: ${i.message}` : i.message;
  }).join('; ');
}

/** The parsed value, or the reason it is refused (prefixed with `what`). */
export function check<T>(schema: z.ZodType<T>, value: unknown, what: string): { ok: true; value: T } | { ok: false; reason: string } {
  const r = schema.safeParse(value);
  if (r.success) return { ok: true, value: r.data };
  const notAnObject = r.error.issues.some((i) => i.path.length === 0 && i.code === 'invalid_type');
  const how = usage.get(schema);
  return { ok: false, reason: `${what}: ${notAnObject && how ? `${how} (got ${JSON.stringify(value)?.slice(0, 200) ?? 'nothing'})` : describeIssues(r.error)}` };
}

/** Throws a non-retryable failure with the reason: for update validators, whose throw rejects the update before it reaches history. */
export function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
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
