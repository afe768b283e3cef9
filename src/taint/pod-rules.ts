// Which managed pods on a tainted node tend leaves alone, and the breaker's
// counts as the FoundationDB operator counts its fault domains. Pure: the
// activities read the objects, these decide (docs/taint.md, "Coming from the
// FoundationDB operator").
import { matchingTaints, type TaintOption } from './match.ts';

/** A taint as the Node carries it (the fields a toleration is matched on). */
export interface NodeTaint {
  key?: string;
  value?: string;
  effect?: string;
}

/** A pod's toleration, as its spec carries it. */
export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

/**
 * Whether the toleration tolerates the taint, by Kubernetes' rule (ToleratesTaint): an effect,
 * when given, is the taint's; a key, when given, is the taint's (an empty key with Exists
 * tolerates every taint); Exists takes any value, Equal (or no operator) the taint's value.
 * tolerationSeconds is not read: Kubernetes does not read it to match either.
 */
export function tolerates(toleration: Toleration, taint: NodeTaint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  const operator = toleration.operator || 'Equal';
  if (operator === 'Exists') return true;
  if (operator !== 'Equal') return false;
  return (toleration.value ?? '') === (taint.value ?? '');
}

/**
 * Whether a pod with these tolerations tolerates every taint of the node that the
 * configuration acts on (taints it ignores, or does not name, need no toleration). A node
 * without such a taint is tolerated by nobody: there is nothing to leave alone.
 */
export function toleratesConfigured(tolerations: readonly Toleration[] | undefined, taints: readonly NodeTaint[] | undefined, options: readonly TaintOption[]): boolean {
  const acted = (taints ?? []).filter((t) => t.key && matchingTaints([t], options).length > 0);
  return acted.length > 0 && acted.every((t) => (tolerations ?? []).some((tol) => tolerates(tol, t)));
}

/** An owner reference, as a pod's metadata carries it. */
export interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
}

/** The FoundationDB operator's API group: its FoundationDBCluster owns the pods of a cluster directly. */
export const FDB_API_GROUP = 'apps.foundationdb.org';

/** The FoundationDBCluster among the owners (any version of its API group), if one is. */
export function foundationDBOwner(owners: readonly OwnerReference[] | undefined): OwnerReference | undefined {
  return (owners ?? []).find((o) => o.kind === 'FoundationDBCluster' && (o.apiVersion ?? '').split('/')[0] === FDB_API_GROUP);
}

/** Why a pod a FoundationDBCluster owns is not replaced; undefined when it may be (not owned, or acknowledged). */
export function foundationDBRefusal(owners: readonly OwnerReference[] | undefined, acknowledged: boolean): string | undefined {
  const owner = foundationDBOwner(owners);
  if (!owner || acknowledged) return undefined;
  return `owned by FoundationDBCluster ${(owner.name ?? '').slice(0, 253)}: tend evicts without excluding FoundationDB processes first; ` +
    'set taintReplacement.evictFoundationDBPodsWithoutExclusion: true to replace it anyway (docs/taint.md)';
}

/** A managed pod as the breaker counts it: the node it runs on. */
export interface CountedPod {
  nodeName?: string;
}

/**
 * The breaker's counts as FDB counts fault domains for maxFaultDomainsWithTaintedProcessGroups
 * (a node is tend's fault domain): every node holding a managed pod, and of those, the ones
 * carrying a taint the configuration acts on. FDB counts a fault domain as tainted once a
 * process group there has NodeTaintReplacing (the taint's durationInSeconds later); tend counts it
 * from the taint on, so its breaker opens as soon as FDB's or sooner, never later.
 */
export function faultDomainCounts(
  pods: readonly CountedPod[], taintsOf: (node: string) => readonly NodeTaint[] | undefined, options: readonly TaintOption[],
): { taintedNodes: number; totalNodes: number } {
  const nodes = new Set(pods.map((p) => p.nodeName).filter((n): n is string => !!n));
  let tainted = 0;
  for (const node of nodes) if (matchingTaints(taintsOf(node), options).length > 0) tainted++;
  return { taintedNodes: tainted, totalNodes: nodes.size };
}
