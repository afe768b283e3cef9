// The taintReplacement section: the FoundationDB operator's
// automaticReplacementOptions names for taint replacement
// (docs/taint.md), so an operator's block can be pasted in.
// tend's additions: podSelector (which pods tend manages: required, tend has no
// FoundationDBCluster to say so), namespaces, and the breaker.
import { z } from 'zod';
import { A_DAY, A_WEEK, pastBound, secondsSchema } from './bounds.ts';
import { dns1123LabelProblem, kubeNameSchema, labelKeyProblem } from './kube-names.ts';
import { labelSelectorSchema } from './label-selector.ts';
import { modeSchema } from './mode.ts';

/**
 * FDB's "ignore this key" duration, the int64 maximum, is past the safe integers: it is kept as
 * the largest safe one, which the taint capability reads as ignored (taint/match.ts's
 * IGNORED_DURATION, the same value: the configuration sits below the capabilities and imports
 * none of them; test/unit/config-taint-replacement.test.ts reads an ignored key as taint/match.ts does).
 */
export const IGNORED_DURATION = Number.MAX_SAFE_INTEGER;

/** A taint key, or `*` for every key without an exact entry. */
const taintKeySchema = kubeNameSchema((key) => {
  if (key === '*') return undefined;
  const problem = labelKeyProblem(key);
  return problem && `not a valid taint key (or "*"): ${problem.replace(/^must be a label key/, 'must be a key')}`;
});

export const taintReplacementOptionSchema = z.strictObject({
  key: taintKeySchema,
  // Whole seconds, a week at most; the int64 maximum (FDB's "ignore this key") is read past the
  // safe integers: it, or anything from the largest safe integer up, is kept as IGNORED_DURATION.
  durationInSeconds: z.number({ error: 'must be a whole number of seconds' }).refine(Number.isInteger, 'must be a whole number of seconds')
    .refine((n) => n >= 0, 'must be 0 or more seconds')
    .refine((n) => n <= A_WEEK.seconds || n >= IGNORED_DURATION, `${pastBound(A_WEEK)}, or 9223372036854775807 to ignore the key`)
    .transform((n) => (n >= IGNORED_DURATION ? IGNORED_DURATION : n)),
});

/**
 * A count (`3`) or a share (`"30%"`) of `what`, as Kubernetes' IntOrString: a whole number 0 or
 * more, or a whole percentage from 0% to 100% (Kubernetes would take "110%"; tend refuses it).
 */
const intOrPercentSchema = (what: string) => z.union([
  z.int(`must be a whole number of ${what} or a percentage like "30%"`).min(0, 'must be 0 or more'),
  z.string().regex(/^(100|[1-9]?[0-9])%$/, `must be a whole number of ${what} or a percentage from 0% to 100%, like "30%"`),
], { error: `must be a whole number of ${what} or a percentage like "30%"` });
const nodeLimitSchema = intOrPercentSchema('nodes');

export const taintBreakerSchema = z.strictObject({
  /**
   * Above this many nodes carrying a configured taint (a count, or a share of
   * all nodes), no taint replacement starts; detection goes on.
   */
  maxTaintedNodes: nodeLimitSchema,
});

export const taintReplacementSchema = z
  .strictObject({
    /** act (default: the top-level mode) or observe: record the evictions, evict nothing. tend's addition. */
    mode: modeSchema.optional(),
    enabled: z.boolean().default(true),
    taintReplacementOptions: z.array(taintReplacementOptionSchema).superRefine((options, ctx) => {
      const seen = new Map<string, number>();
      options.forEach((option, i) => {
        const first = seen.get(option.key);
        if (first === undefined) seen.set(option.key, i);
        else ctx.addIssue({ code: 'custom', path: [i, 'key'], message: `"${option.key}" is already listed at taintReplacementOptions[${first}]: each key once` });
      });
    }).default([]),
    taintReplacementTimeSeconds: secondsSchema(A_DAY).default(1800),
    maxConcurrentReplacements: z.int('must be a whole number').min(0, 'must be 0 or more (0 detects but never replaces)').default(1),
    podSelector: labelSelectorSchema,
    namespaces: z
      .array(kubeNameSchema(dns1123LabelProblem))
      .min(1, 'must list at least one namespace, or be left out to manage pods in all of them')
      .optional(),
    /** Default: FDB's maxFaultDomainsWithTaintedProcessGroups when given (a node is tend's fault domain), else 50%. */
    breaker: taintBreakerSchema.optional(),
    // The rest of FDB's AutomaticReplacementOptions, accepted so that the whole block can be pasted;
    // what tend does instead is said by taintReplacementWarnings (tend config validate, the worker's log).
    failureDetectionTimeSeconds: secondsSchema(A_WEEK).optional(),
    faultDomainBasedReplacements: z.boolean().optional(),
    // FDB's IntOrString: a count or a share of the fault domains; the breaker's limit read as FDB
    // reads it (src/taint/breaker.ts faultDomainLimit) unless breaker is given.
    maxFaultDomainsWithTaintedProcessGroups: intOrPercentSchema('fault domains').optional(),
    /** tend's addition: `leave` keeps a pod that tolerates every configured taint its node carries off the list. */
    toleratingPods: z.enum(['replace', 'leave'], { error: 'must be replace (the default) or leave' }).default('replace'),
    /**
     * tend's addition: tend evicts without FDB's process exclusion, so pods a FoundationDBCluster
     * owns are refused unless this says the operator knows (docs/taint.md).
     */
    evictFoundationDBPodsWithoutExclusion: z.boolean().default(false),
  })
  .transform(({ breaker, ...c }) => ({
    ...c,
    breaker: breaker ?? { maxTaintedNodes: c.maxFaultDomainsWithTaintedProcessGroups ?? '50%' },
    /** The breaker's limit is FDB's maxFaultDomainsWithTaintedProcessGroups, counted over fault domains (src/taint/breaker.ts). */
    breakerOverFaultDomains: !breaker && c.maxFaultDomainsWithTaintedProcessGroups !== undefined,
  }));

export type TaintReplacementOption = z.output<typeof taintReplacementOptionSchema>;

/**
 * FDB fields tend accepts but does not honour as FDB does, each with what tend does instead.
 * `breakerSet`: whether the section gave breaker.maxTaintedNodes itself.
 */
export function taintReplacementWarnings(c: TaintReplacementConfig): string[] {
  const out: string[] = [];
  if (c.failureDetectionTimeSeconds !== undefined) {
    out.push('taintReplacement.failureDetectionTimeSeconds: accepted, not used: tend replaces pods for taints only; ' +
      'replacing failed machines is the repair queue\'s job (docs/repair.md)');
  }
  if (c.faultDomainBasedReplacements === true) {
    out.push('taintReplacement.faultDomainBasedReplacements: accepted, not used: tend replaces pods one by one ' +
      '(at most maxConcurrentReplacements at once), never a whole fault domain at a time');
  }
  if (c.maxFaultDomainsWithTaintedProcessGroups !== undefined) {
    out.push(`taintReplacement.maxFaultDomainsWithTaintedProcessGroups: ${c.maxFaultDomainsWithTaintedProcessGroups}: tend's fault domain is a node; ` +
      (breakerFromFaultDomains(c)
        ? 'read as FDB reads it, over the nodes holding managed pods (a percentage rounded down; at least 1), ' +
          `as the breaker's breaker.maxTaintedNodes (now ${c.breaker.maxTaintedNodes}), taken from this field`
        : `its breaker stops new replacements above breaker.maxTaintedNodes tainted nodes of all nodes, as given (now ${c.breaker.maxTaintedNodes})`));
  }
  if (c.evictFoundationDBPodsWithoutExclusion) {
    out.push('taintReplacement.evictFoundationDBPodsWithoutExclusion: pods a FoundationDBCluster owns are evicted like any other, ' +
      'without excluding their processes first: their data is re-replicated after the eviction, not before');
  }
  const ignored = c.taintReplacementOptions.filter((o) => o.durationInSeconds === IGNORED_DURATION).map((o) => o.key);
  if (ignored.length) out.push(`taintReplacement: ignored taint key(s) ${ignored.join(', ')} (durationInSeconds at its maximum): never acted on, not counted by the breaker`);
  return out;
}
export type TaintReplacementConfig = z.output<typeof taintReplacementSchema>;

/** Whether the breaker's limit is FDB's maxFaultDomainsWithTaintedProcessGroups (counted over fault domains). */
export function breakerFromFaultDomains(c: TaintReplacementConfig): boolean {
  return c.breakerOverFaultDomains;
}

/** The feature is off when disabled or when no taint key is configured (the seed's Requirement 1). */
export function taintReplacementActive(config: TaintReplacementConfig): boolean {
  return config.enabled && config.taintReplacementOptions.length > 0;
}

export function describeTaintReplacement(c: TaintReplacementConfig): string {
  if (!taintReplacementActive(c)) return 'disabled (running taint replacements are cancelled and their conditions cleared)';
  const keys = c.taintReplacementOptions.map((o) => (o.durationInSeconds === IGNORED_DURATION ? `${o.key} ignored` : `${o.key} after ${o.durationInSeconds}s`)).join(', ');
  if (c.maxConcurrentReplacements === 0) return `taints ${keys}; pods marked, never replaced (maxConcurrentReplacements 0)`;
  return `taints ${keys}; replace ${c.taintReplacementTimeSeconds}s later, ` +
    `at most ${c.maxConcurrentReplacements} at once, ` +
    (breakerFromFaultDomains(c)
      ? `none while more than ${c.breaker.maxTaintedNodes} (at least 1) of the nodes holding managed pods are tainted`
      : `none while more than ${c.breaker.maxTaintedNodes} nodes are tainted`) +
    (c.toleratingPods === 'leave' ? '; pods that tolerate the taints are left alone' : '');
}
