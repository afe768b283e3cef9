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
}

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
