// The node-repair decisions, as pure functions of what was observed (CKE's DecideOps split):
// whether a Node meets an unhealthy condition and when its duration runs out (NHC's reading of
// unhealthyConditions), and whether the repair queue adds the entry it asks for (CKE's enqueue
// limiters and NHC's minHealthy). Every input is an argument, times in epoch ms: imported by
// workflow code, which passes workflow time (no Node built-ins, no clock here).
import { shown, type NodeView, type RepairRequest } from './node.ts';
import type { NodeRepairLimits, UnhealthyCondition } from '../config/node-repair.ts';

export interface UnhealthyMatch {
  condition: UnhealthyCondition;
  /** Its place in unhealthyConditions. */
  index: number;
  /** Since when the Node meets it: the condition's lastTransitionTime, else `now` (sinceKnown false). */
  since: number;
  sinceKnown: boolean;
  /** since + duration: from then on the Node is unhealthy. */
  expiresAt: number;
  expired: boolean;
}

/**
 * The configured condition the Node meets, or undefined when it meets none (a Node that
 * recovered). As NHC: a condition is met when the Node has a condition of that type with that
 * status (of two of one type, the last counts); the first met condition whose duration has run
 * out wins, else the one that runs out first. A duration has run out at since + duration itself
 * (NHC checks strictly after, then requeues a second later: the same moment for a timer).
 * A condition without a lastTransitionTime counts from `now`: NHC reads it as the zero time and
 * remediates at once, but a missing time says nothing of how long the Node has been so.
 */
export function unhealthyMatch(node: Pick<NodeView, 'conditions'>, conditions: readonly UnhealthyCondition[], now: number): UnhealthyMatch | undefined {
  const byType = new Map((node.conditions ?? []).map((c) => [c.type, c]));
  let soonest: UnhealthyMatch | undefined;
  for (const [index, condition] of conditions.entries()) {
    const found = byType.get(condition.type);
    if (!found || found.status !== condition.status) continue;
    const sinceKnown = found.lastTransitionTime !== undefined;
    const since = found.lastTransitionTime ?? now;
    const expiresAt = since + condition.duration.ms;
    const match = { condition, index, since, sinceKnown, expiresAt, expired: now >= expiresAt };
    if (match.expired) return match;
    if (!soonest || expiresAt < soonest.expiresAt) soonest = match;
  }
  return soonest;
}

/** `Ready=Unknown for 5m`: why a Node is repaired, in the words of its configuration. */
export const matchReason = (m: Pick<UnhealthyMatch, 'condition'>) => `${m.condition.type}=${m.condition.status} for ${m.condition.duration.text}`;

/** NHC's minHealthy as a count of the selected Nodes: a percentage rounded up (intstr's GetScaledValueFromIntOrPercent with roundUp). */
export function minHealthyCount(minHealthy: number | string, selected: number): number {
  if (typeof minHealthy === 'number') return minHealthy;
  return Math.ceil((Number(minHealthy.slice(0, -1)) * selected) / 100);
}

export interface EnqueueContext {
  /** Every entry of the repair queue, any status (finished ones and deleted ones still listed too). */
  recentEntries: readonly { address: string; status?: string }[];
  /** Reports already accepted in this round and not yet in recentEntries (this one not counted). */
  newReports: number;
  /** The Nodes nodeSelector selects, and those of them that meet no unhealthy condition (NHC's healthy: one whose duration is still running is not). */
  nodes: { selected: number; healthy: number };
  /** Set when the Node is in a planned reboot (inPlannedReboot): since when it has been unhealthy (CKE: how long the machine has been unreachable). */
  rebooting?: { since: number } | undefined;
  limits: Pick<NodeRepairLimits, 'maximumRepairQueueEntries' | 'waitSecondsToRepairRebooting' | 'minHealthy'>;
  now: number;
}

export type RefuseReason = 'recent-entry' | 'rebooting' | 'cluster-limit' | 'storm';

export type EnqueueDecision =
  | { decision: 'enqueue'; sentence: string }
  /** retryAt: when the same report could be accepted (the planned-reboot wait); absent: when something else changes. */
  | { decision: 'refuse'; reason: RefuseReason; sentence: string; retryAt?: number };

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Whether the repair queue adds the entry a Node's countdown asks for. The checks run in CKE's
 * order (sabakan's Repairer): first the machine's own, one recent entry per address, then the
 * planned-reboot wait; then the cluster's, maximum-repair-queue-entries; then NHC's storm limit,
 * which CKE does not have, last. CKE decides a whole round at once and drops it whole when it
 * would pass the maximum (entries + new machines > maximum); the queue decides each report as it
 * comes, so this one is refused when entries + earlier reports + itself would pass it.
 */
export function enqueueDecision(request: RepairRequest, ctx: EnqueueContext): EnqueueDecision {
  const address = shown(request.address);
  // CKE ignores the operation here: one entry per machine, whatever was asked of it.
  const recent = ctx.recentEntries.find((e) => e.address === request.address);
  if (recent) {
    return {
      decision: 'refuse', reason: 'recent-entry',
      sentence: `the repair queue already has an entry for ${address}${recent.status ? ` (${shown(recent.status)})` : ''}: ` +
        'one recent entry per machine, until an operator deletes it',
    };
  }
  if (ctx.rebooting) {
    const retryAt = ctx.rebooting.since + ctx.limits.waitSecondsToRepairRebooting * 1000;
    if (ctx.now < retryAt) {
      return {
        decision: 'refuse', reason: 'rebooting', retryAt,
        sentence: `${address} is in a planned reboot: not repaired before ${iso(retryAt)} ` +
          `(waitSecondsToRepairRebooting ${ctx.limits.waitSecondsToRepairRebooting} after it became unhealthy at ${iso(ctx.rebooting.since)})`,
      };
    }
  }
  const max = ctx.limits.maximumRepairQueueEntries;
  if (ctx.recentEntries.length + ctx.newReports >= max) {
    return {
      decision: 'refuse', reason: 'cluster-limit',
      sentence: `the repair queue has ${ctx.recentEntries.length} entries and ${ctx.newReports} new reports: ` +
        `maximumRepairQueueEntries ${max} allows no more`,
    };
  }
  const minHealthy = minHealthyCount(ctx.limits.minHealthy, ctx.nodes.selected);
  if (ctx.nodes.healthy < minHealthy) {
    return {
      decision: 'refuse', reason: 'storm',
      sentence: `${ctx.nodes.healthy} of the ${ctx.nodes.selected} Nodes nodeSelector selects are healthy, fewer than ` +
        `minHealthy ${ctx.limits.minHealthy}${typeof ctx.limits.minHealthy === 'string' ? ` (${minHealthy})` : ''}: no new repair while so many are down`,
    };
  }
  return { decision: 'enqueue', sentence: `enqueue repair of ${address} (${shown(request.operation)}, machine type ${shown(request.machineType)})` };
}

/** What observe mode records instead of the entry: `would enqueue repair of ADDRESS (operation, reason)`. */
export function wouldEnqueueSentence(request: Pick<RepairRequest, 'address' | 'operation'>, reason: string): string {
  return `would enqueue repair of ${shown(request.address)} (${shown(request.operation)}, ${reason})`;
}
