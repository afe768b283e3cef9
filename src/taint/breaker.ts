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

/** Open (replacements held) while strictly more than the limit are tainted. */
export function breakerOpen(tainted: number, total: number, limit: NodeLimit): boolean {
  return tainted > nodeLimit(limit, total);
}
