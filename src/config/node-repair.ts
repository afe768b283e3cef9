// The nodeRepair section: which Nodes are watched and when one is unhealthy, in medik8s Node
// Health Check's own shape (`selector` is `nodeSelector` here, `unhealthyConditions` and
// `minHealthy` as NHC writes them, durations as Go writes them); how an unhealthy Node becomes a
// repair queue entry, as CKE's sabakan-triggered repair makes one of a machine (its address, its
// machine type, an operation named for its state); and CKE's enqueue limiters, camelCased
// (`maximum-repair-queue-entries`, `wait-seconds-to-repair-rebooting`). Defaults are NHC's and
// CKE's unless said. What the section decides is in src/noderepair/decide.ts; this file only reads it.
import { z } from 'zod';
import { A_DAY, boundedName, REPAIR_NAME_MAX, secondsSchema } from './bounds.ts';
import { positiveGoDurationSchema } from './duration.ts';
import { kubeNameSchema, labelKeyProblem, labelValueProblem } from './kube-names.ts';
import { labelSelectorRequirementSchema } from './label-selector.ts';
import { modeSchema } from './mode.ts';
import { issueMessage, pathString, problemsOf } from './problems.ts';
import { conditionKey, DEFAULT_OPERATION_KEY, operationFor } from './node-repair-operation.ts';

/**
 * A Node selector that must select something, as the other sections' selectors: NHC reads an
 * empty selector as every Node, which in a remediation config is more often an omission than a plan.
 */
const nodeSelectorSchema = z
  .strictObject({
    matchLabels: z.record(kubeNameSchema(labelKeyProblem), kubeNameSchema(labelValueProblem)).optional(),
    matchExpressions: z.array(labelSelectorRequirementSchema).optional(),
  })
  .refine((s) => Object.keys(s.matchLabels ?? {}).length + (s.matchExpressions?.length ?? 0) > 0,
    'must set matchLabels or matchExpressions: an empty selector would select every Node; ' +
    'to watch them all, say so: matchExpressions: [{key: kubernetes.io/os, operator: Exists}]');

/** A condition type is a qualified name (metav1.Condition's rule), as Ready or KernelDeadlock. */
const conditionTypeSchema = kubeNameSchema((type) => {
  const problem = labelKeyProblem(type);
  return problem && `not a valid condition type: ${problem.replace(/^must be a label key/, 'must be a name')}`;
});

export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;

const conditionStatusSchema = z.enum(CONDITION_STATUSES, {
  // YAML reads an unquoted True or False as a boolean: NHC's own examples quote them.
  error: (issue) => (typeof issue.input === 'boolean'
    ? 'must be "True", "False" or "Unknown": quote True and False, which YAML reads as booleans'
    : 'must be "True", "False" or "Unknown"'),
});

export const unhealthyConditionSchema = z.strictObject({
  type: conditionTypeSchema,
  status: conditionStatusSchema,
  /** How long the Node must stay so before it is repaired: a Go duration, a day at most. */
  duration: positiveGoDurationSchema({ ...A_DAY, text: '24h' }),
});

/** The node address types of the Kubernetes API (NodeAddressType). */
export const ADDRESS_TYPES = ['InternalIP', 'ExternalIP', 'InternalDNS', 'ExternalDNS', 'Hostname'] as const;

/** A count of Nodes (`3`) or a share of the selected ones (`"51%"`), as NHC's IntOrString. */
const minHealthySchema = z.union([
  z.int('must be a whole number of Nodes or a percentage like "51%"').min(0, 'must be 0 or more'),
  z.string().regex(/^(100|[1-9]?[0-9])%$/, 'must be a whole number of Nodes or a percentage from 0% to 100%, like "51%"'),
], { error: 'must be a whole number of Nodes or a percentage like "51%"' });

export const nodeRepairLimitsSchema = z.strictObject({
  /**
   * CKE's maximum-repair-queue-entries: no entry is queued while the queue's entries (any status)
   * plus the new reports would pass it. No default: CKE's 0 queues nothing, which a section that
   * is there to queue entries should not do by omission.
   */
  maximumRepairQueueEntries: z.int({ error: (issue) => (issue.input === undefined ? 'required: how many repair queue entries (any status) may exist before no more are queued, as CKE\'s maximum-repair-queue-entries' : 'must be a whole number') })
    .min(1, 'must be at least 1 (CKE\'s 0 queues nothing: leave the nodeRepair section out, or set its mode to observe)'),
  /** CKE's wait-seconds-to-repair-rebooting: how long a Node in a planned reboot may be unhealthy before it is repaired. */
  waitSecondsToRepairRebooting: secondsSchema(A_DAY).default(0),
  /**
   * How a planned reboot is recognised: a Node cordoned and carrying this annotation (CKE reads its
   * own reboot queue instead; tend has none, and reboot tools such as kured annotate the Node).
   */
  rebootAnnotation: kubeNameSchema((key) => {
    const problem = labelKeyProblem(key);
    return problem && `not a valid annotation key: ${problem.replace(/^must be a label key/, 'must be a key')}`;
  }).optional(),
  /** NHC's minHealthy: no new repair while fewer of the selected Nodes are healthy (a percentage is rounded up, as NHC does). */
  minHealthy: minHealthySchema.default('51%'),
});

export const nodeRepairSchema = z
  .strictObject({
    /** act (default: the top-level mode) or observe: record "would enqueue repair of ...", queue nothing. */
    mode: modeSchema.optional(),
    nodeSelector: nodeSelectorSchema,
    /** NHC's default: Ready False or Unknown for 5 minutes. */
    unhealthyConditions: z.array(unhealthyConditionSchema).min(1, 'must list at least one condition, or be left out for NHC\'s default (Ready "False" or "Unknown" for 300s)')
      .superRefine((conditions, ctx) => {
        const seen = new Map<string, number>();
        conditions.forEach((c, i) => {
          const first = seen.get(conditionKey(c));
          if (first === undefined) seen.set(conditionKey(c), i);
          else ctx.addIssue({ code: 'custom', path: [i], message: `type ${c.type}, status ${c.status} is already listed at unhealthyConditions[${first}]: each pair once` });
        });
      })
      .prefault([{ type: 'Ready', status: 'False', duration: '300s' }, { type: 'Ready', status: 'Unknown', duration: '300s' }]),
    /** Which of the Node's addresses is the repair entry's address (CKE: the machine's first IPv4). */
    address: z.strictObject({
      type: z.enum(ADDRESS_TYPES, { error: `must be one of ${ADDRESS_TYPES.join(', ')}` }).default('InternalIP'),
    }).prefault({}),
    /** The Node label whose value is the entry's machine type (CKE: the machine's BMC type). */
    machineTypeLabel: kubeNameSchema(labelKeyProblem),
    /**
     * The entry's operation for each condition, `Type/Status` (as `Ready/Unknown`) or `default`.
     * Absent: CKE's names for a machine's state: `unreachable` for Ready/Unknown, `unhealthy` for
     * any other condition.
     */
    operations: z.record(z.string(), boundedName(REPAIR_NAME_MAX)).optional(),
    limits: nodeRepairLimitsSchema,
  })
  .superRefine((section, ctx) => {
    const keys = new Set(section.unhealthyConditions.map(conditionKey));
    if (section.operations) {
      for (const key of Object.keys(section.operations)) {
        if (key !== DEFAULT_OPERATION_KEY && !keys.has(key)) {
          ctx.addIssue({
            code: 'custom', path: ['operations', key],
            message: `names no condition of unhealthyConditions: a key is Type/Status of one of them (${[...keys].join(', ')}) or ${DEFAULT_OPERATION_KEY}`,
          });
        }
      }
      section.unhealthyConditions.forEach((c, i) => {
        if (operationFor(section.operations!, c) === undefined) {
          ctx.addIssue({ code: 'custom', path: ['unhealthyConditions', i], message: `has no operation: add operations["${conditionKey(c)}"] or operations.${DEFAULT_OPERATION_KEY}` });
        }
      });
    }
    if (section.limits.waitSecondsToRepairRebooting > 0 && section.limits.rebootAnnotation === undefined) {
      ctx.addIssue({
        code: 'custom', path: ['limits', 'waitSecondsToRepairRebooting'],
        message: 'needs limits.rebootAnnotation: without it no Node is ever seen in a planned reboot, and the wait would never apply',
      });
    }
  })
  .transform(({ operations, ...section }) => ({
    ...section,
    // Only the operations some condition can ask for: each must be a repair procedure's (nodeRepairProblems).
    operations: operations ?? {
      ...(section.unhealthyConditions.some((c) => conditionKey(c) === 'Ready/Unknown') && { 'Ready/Unknown': 'unreachable' }),
      ...(section.unhealthyConditions.some((c) => conditionKey(c) !== 'Ready/Unknown') && { [DEFAULT_OPERATION_KEY]: 'unhealthy' }),
    },
  }));

export type UnhealthyCondition = z.output<typeof unhealthyConditionSchema>;
export type NodeRepairLimits = z.output<typeof nodeRepairLimitsSchema>;
export type NodeRepairConfig = z.output<typeof nodeRepairSchema>;

/**
 * The section read from a parsed document's `nodeRepair` value: the configuration, or every
 * problem as `path: message`, the path from the document's root, worded as tend's other sections'.
 */
export function parseNodeRepair(value: unknown): { config: NodeRepairConfig } | { problems: string[] } {
  const result = nodeRepairSchema.safeParse(value, { reportInput: true, error: issueMessage });
  if (result.success) return { config: result.data };
  return { problems: problemsOf(result.error.issues, nodeRepairSchema).map((p) => `${pathString(['nodeRepair', ...p.path])}: ${p.message}`) };
}

/** One line for `tend config validate`. */
export function describeNodeRepair(c: NodeRepairConfig): string {
  const conditions = c.unhealthyConditions.map((u) => `${u.type}=${u.status} for ${u.duration.text}`).join(', ');
  const ops = Object.entries(c.operations).map(([k, v]) => `${k} -> ${v}`).join(', ');
  return `Nodes unhealthy when ${conditions}; entries of ${c.address.type} and machine type label ${c.machineTypeLabel} (${ops}); ` +
    `at most ${c.limits.maximumRepairQueueEntries} queue entries, minHealthy ${c.limits.minHealthy}` +
    (c.limits.waitSecondsToRepairRebooting > 0 ? `, ${c.limits.waitSecondsToRepairRebooting}s before repairing a Node in a planned reboot` : '');
}

/**
 * The checks across sections: nodeRepair queues repair entries, so it needs the repair section,
 * and each operation it may ask for must be an operation of some repair procedure (else every
 * entry it queued would be refused).
 */
export function nodeRepairProblems(config: { nodeRepair?: NodeRepairConfig; repair?: { repair_procedures: { repair_operations: { operation: string }[] }[] } }): { path: (string | number)[]; message: string }[] {
  const section = config.nodeRepair;
  if (!section) return [];
  if (!config.repair) return [{ path: ['nodeRepair'], message: 'needs the repair section: nodeRepair queues repair entries, and their steps are the repair procedures\' (add repair:, or leave nodeRepair out)' }];
  const known = new Set(config.repair.repair_procedures.flatMap((p) => p.repair_operations.map((o) => o.operation)));
  return Object.entries(section.operations).filter(([, op]) => !known.has(op)).map(([key, op]) => ({
    path: ['nodeRepair', 'operations', key],
    message: `operation ${op} is no repair procedure's operation (repair has ${[...known].join(', ')})`,
  }));
}
