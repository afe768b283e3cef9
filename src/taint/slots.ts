// Replacement slots, cluster-wide: at most maxConcurrentReplacements pods are
// in flight at once, and none starts while the breaker is open. The
// coordinator workflow keeps this state; the decisions are here. Pure.
//
// "In flight": from the moment a pod is granted a slot (its eviction is about
// to be requested) until it is gone or terminating and its controller has a
// ready replacement, or until the in-flight timeout. An eviction refused by a
// PodDisruptionBudget keeps its slot while it is retried.
import { breakerOpen, type NodeLimit } from './breaker.ts';

export interface SlotRequest {
  node: string;
  uid: string;
  /** namespace/name, for people. */
  pod: string;
  requestedAt: number;
}

export interface Grant extends SlotRequest {
  grantedAt: number;
  /** When the grant was last sent again to check that its holder still runs. */
  checkedAt?: number;
}

/**
 * How often the coordinator checks each grant's holder (default): it sends the
 * grant again to the node's workflow, which ignores a grant it already holds
 * and gives back one it does not; a signal that cannot be delivered (the
 * workflow ended: completed, failed, terminated, timed out) frees the slot.
 * A slot whose holder ended without giving it back is free again within this
 * time (plus one workflow task).
 */
export const GRANT_CHECK_SECONDS = 300;

export interface SlotData {
  maxConcurrentReplacements: number;
  maxTaintedNodes: NodeLimit;
  /** Nodes carrying a configured taint, and all nodes, as the watcher last saw them. */
  taintedNodes: number;
  totalNodes: number;
  queue: SlotRequest[];
  inFlight: Grant[];
  /** Grants ever handed out (for the benchmark and the status view). */
  granted: number;
  /** The highest number in flight at once, ever. */
  peakInFlight: number;
  /** How often a grant's holder is checked (see GRANT_CHECK_SECONDS); from the worker. */
  grantCheckSeconds?: number;
}

export function emptySlots(): SlotData {
  return { maxConcurrentReplacements: 1, maxTaintedNodes: '50%', taintedNodes: 0, totalNodes: 0, queue: [], inFlight: [], granted: 0, peakInFlight: 0 };
}

export function slotBreakerOpen(s: SlotData): boolean {
  return breakerOpen(s.taintedNodes, s.totalNodes, s.maxTaintedNodes);
}

/** Queues a request; asking twice for one pod is one request. */
export function requestSlot(s: SlotData, req: SlotRequest): void {
  if (s.queue.some((r) => r.uid === req.uid) || s.inFlight.some((g) => g.uid === req.uid)) return;
  s.queue.push(req);
}

/**
 * A slot a node's workflow says it holds (a fresh coordinator learning what
 * the one before it granted): counted in flight from now, even above the
 * limit, so that nothing more is granted until enough are given back. A
 * holder that does not hold it after all gives it back at the next check
 * (grantsToCheck).
 */
export function adoptHeld(s: SlotData, held: SlotRequest, now: number): void {
  s.queue = s.queue.filter((r) => r.uid !== held.uid);
  if (s.inFlight.some((g) => g.uid === held.uid)) return;
  s.inFlight.push({ ...held, grantedAt: now });
  s.peakInFlight = Math.max(s.peakInFlight, s.inFlight.length);
}

/** Ends a pod's replacement, or takes back its request. */
export function releaseSlot(s: SlotData, uid: string): void {
  s.queue = s.queue.filter((r) => r.uid !== uid);
  s.inFlight = s.inFlight.filter((g) => g.uid !== uid);
}

/** Drops every request and grant of a node (its workflow ended or was cancelled). */
export function withdrawNode(s: SlotData, node: string): void {
  s.queue = s.queue.filter((r) => r.node !== node);
  s.inFlight = s.inFlight.filter((g) => g.node !== node);
}

/** Which queued requests get a slot now, oldest first. Moves them to in flight. */
export function decideGrants(s: SlotData, now: number): Grant[] {
  if (slotBreakerOpen(s)) return [];
  const free = Math.max(0, s.maxConcurrentReplacements - s.inFlight.length);
  const grants = s.queue.slice(0, free).map((r) => ({ ...r, grantedAt: now }));
  s.queue = s.queue.slice(grants.length);
  s.inFlight.push(...grants);
  s.granted += grants.length;
  s.peakInFlight = Math.max(s.peakInFlight, s.inFlight.length);
  return grants;
}

const checkMs = (s: SlotData) => Math.max(1, s.grantCheckSeconds ?? GRANT_CHECK_SECONDS) * 1000;

/** Grants whose holder is due for a check, marked as checked now. */
export function grantsToCheck(s: SlotData, now: number): Grant[] {
  const due = s.inFlight.filter((g) => now >= (g.checkedAt ?? g.grantedAt) + checkMs(s));
  for (const g of due) g.checkedAt = now;
  return due;
}

/** When the next grant check is due (undefined: nothing in flight). */
export function nextCheckAt(s: SlotData): number | undefined {
  let at: number | undefined;
  for (const g of s.inFlight) {
    const t = (g.checkedAt ?? g.grantedAt) + checkMs(s);
    if (at === undefined || t < at) at = t;
  }
  return at;
}

/** Signals to send, one per node: the pods granted on it. */
export function byNode(grants: readonly Grant[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const g of grants) out.set(g.node, [...(out.get(g.node) ?? []), g.uid]);
  return out;
}
