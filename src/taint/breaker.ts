// The breaker: while more nodes carry a configured taint than the limit
// allows, no taint replacement starts (a zone outage taints every node in the
// zone; evicting everything there would only make it worse). Pure.

/** A count of nodes, or a share of all nodes like "30%". */
export type NodeLimit = number | string;

/** The limit as a number of nodes for a cluster of `total` nodes. */
export function nodeLimit(limit: NodeLimit, total: number): number {
  if (typeof limit === 'number') return limit;
  const percent = Number(limit.replace(/%$/, ''));
  return Math.floor((total * percent) / 100);
}

/**
 * FDB's maxFaultDomainsWithTaintedProcessGroups for `faultDomains` fault domains, as the
 * FoundationDB operator computes it (GetMaxFaultDomainsWithTaintedProcessGroups): a percentage
 * scaled with Kubernetes' GetScaledValueFromIntOrPercent rounding down, and never below 1,
 * a count taken as it is, and never below 1 either.
 */
export function faultDomainLimit(limit: NodeLimit, faultDomains: number): number {
  return Math.max(1, nodeLimit(limit, faultDomains));
}

/**
 * Open (replacements held) while strictly more than the limit are tainted. `faultDomains`: the
 * limit is FDB's, counted over the nodes holding managed pods (faultDomainLimit).
 */
export function breakerOpen(tainted: number, total: number, limit: NodeLimit, faultDomains = false): boolean {
  return tainted > (faultDomains ? faultDomainLimit(limit, total) : nodeLimit(limit, total));
}
