// The repair section: CKE's `repair` cluster configuration, snake_case and
// field for field (cke.Repair, cke.RepairProcedure, cke.RepairOperation,
// cke.RepairStep), so a CKE operator can paste theirs in. Defaults are CKE's.
// `time_scale` is tend's addition: it multiplies every wait (watch, eviction
// timeout, intervals, back-off) so tests run fast with the same formulas.
import { z } from 'zod';
import { A_DAY, boundedName, countSchema, REPAIR_NAME_MAX, secondsSchema, taskQueueSchema } from './bounds.ts';
import { labelSelectorSchema } from './label-selector.ts';
import { modeSchema } from './mode.ts';

const commandSchema = z
  .array(z.string().min(1, 'must not be empty'))
  .min(1, 'must name a command: a list like [ipmitool, power, cycle] (the address is appended)');
// Every wait is a day at most (src/config/bounds.ts): a command, a watch, an interval, an eviction.
const seconds = secondsSchema(A_DAY);
const positiveSeconds = seconds.min(1, 'must be at least 1');
/** A command's timeout as in CKE: whole seconds, 0 for none (the command may run for ever), default 30. */
const timeoutSeconds = seconds.default(30);

export const repairStepSchema = z.strictObject({
  repair_command: commandSchema,
  command_timeout_seconds: timeoutSeconds,
  command_retries: countSchema().default(0),
  command_interval: seconds.default(0),
  need_drain: z.boolean().default(false),
  /**
   * How long the health check is polled after the repair command. CKE: absent
   * (or 0) goes on to the next step at once; tend checks the health once
   * first, as CKE's next status round does before it moves on.
   */
  watch_seconds: seconds.default(0),
});

export const repairOperationSchema = z.strictObject({
  operation: boundedName(REPAIR_NAME_MAX),
  repair_steps: z.array(repairStepSchema).min(1, 'must list at least one repair step'),
  health_check_command: commandSchema,
  command_timeout_seconds: timeoutSeconds,
  success_command: commandSchema.optional(),
  success_command_timeout: timeoutSeconds,
});

export const repairProcedureSchema = z.strictObject({
  machine_types: z.array(boundedName(REPAIR_NAME_MAX)).min(1, 'must list at least one machine type'),
  repair_operations: z.array(repairOperationSchema).min(1, 'must list at least one repair operation')
    .superRefine((ops, ctx) => {
      const seen = new Set<string>();
      ops.forEach((op, i) => {
        if (seen.has(op.operation)) ctx.addIssue({ code: 'custom', path: [i, 'operation'], message: `operation ${op.operation} is listed twice` });
        seen.add(op.operation);
      });
    }),
});

export const repairSchema = z.strictObject({
  /** tend's addition: act (default: the top-level mode) or observe: entries advance, no cordon, eviction or command. */
  mode: modeSchema.optional(),
  repair_procedures: z.array(repairProcedureSchema).min(1, 'must list at least one repair procedure')
    .superRefine((procs, ctx) => {
      const seen = new Set<string>();
      procs.forEach((p, i) => p.machine_types.forEach((t, j) => {
        if (seen.has(t)) ctx.addIssue({ code: 'custom', path: [i, 'machine_types', j], message: `machine type ${t} is in two procedures` });
        seen.add(t);
      }));
    }),
  max_concurrent_repairs: z.number().int('must be a whole number').min(1, 'must be at least 1').default(1),
  /** Namespaces whose pods are only ever evicted (PDBs hold); absent: every namespace. */
  protected_namespaces: labelSelectorSchema.optional(),
  evict_retries: countSchema().default(0),
  evict_interval: seconds.default(0),
  eviction_timeout_seconds: positiveSeconds.default(600),
  /** Running Job pods that block a drain; absent: every Job pod. */
  protected_job_pods: labelSelectorSchema.optional(),
  time_scale: z.number().positive('must be above 0').max(1, 'must be at most 1').default(1),
  /**
   * tend's addition: the host folder (mode 0700) where each running command's
   * process group is recorded, so that after a worker is killed the retried
   * command waits for the killed run. Absent: $XDG_STATE_HOME/tend/repair or
   * ~/.local/state/tend/repair (TMPDIR/tend-UID/repair on a read-only home).
   */
  state_dir: z.string().min(1, 'must name a folder').refine((d) => d.startsWith('/'), 'must be an absolute path').optional(),
  /**
   * tend's addition: the Temporal task queue the repair commands (repair,
   * health check and success commands) are sent to, polled by a worker of
   * their own (`tend worker --capabilities repair`) on a host that has the
   * management tools. Absent: the commands run on the main worker.
   */
  taskQueue: taskQueueSchema.optional(),
});

export type RepairStep = z.output<typeof repairStepSchema>;
export type RepairOperation = z.output<typeof repairOperationSchema>;
export type RepairProcedure = z.output<typeof repairProcedureSchema>;
export type RepairConfig = z.output<typeof repairSchema>;

export function describeRepair(repair: RepairConfig): string {
  const types = repair.repair_procedures.flatMap((p) => p.machine_types);
  const ops = new Set(repair.repair_procedures.flatMap((p) => p.repair_operations.map((o) => o.operation)));
  return `${types.length} machine type(s) (${types.join(', ')}), operations ${[...ops].join(', ')}, at most ${repair.max_concurrent_repairs} at once` +
    (repair.time_scale !== 1 ? `, time scale ${repair.time_scale}` : '') +
    (repair.taskQueue ? `, commands on task queue ${repair.taskQueue}` : '');
}
