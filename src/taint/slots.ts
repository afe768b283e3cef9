// Replacement slots, cluster-wide: at most maxConcurrentReplacements pods are
// in flight at once, and none starts while the breaker is open. The
// coordinator workflow keeps this state; the decisions are here. Pure.
//
// "In flight": from the moment a pod is granted a slot (its eviction is about
// to be requested) until it is gone or terminating and its controller has a
// ready replacement, or until the in-flight timeout. An eviction refused by a
// PodDisruptionBudget keeps its slot while it is retried.
//
// Requests and grants come in signals anyone with write access to the namespace
// can send, so every step here costs O(1) per request (the queue and the grants
// are indexed by pod uid and by node, in insertion order), the queue, the grants
// and their strings are bounded (SLOT_BOUNDS), and what is past a bound is
// refused with its reason, never thrown. docs/taint.md.
import { breakerOpen, type NodeLimit } from './breaker.ts';
import { checkMessage } from '../checks/message.ts';
import { anyValue, maxLength, minLength, object, optional, string } from '../checks/shape.ts';

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

/**
 * What the coordinator takes in. A node's workflow asks for at most a node's pods at once
 * (a kubelet runs a few hundred), so a signal carries at most `requestsPerSignal`; the queue
 * and the grants together stay far below what a continue-as-new input may carry (2 MiB).
 */
export const SLOT_BOUNDS = Object.freeze({
  /** Requests (or held slots, or uids) in one signal. */
  requestsPerSignal: 1000,
  /** Requests waiting for a slot. */
  queue: 5000,
  /** Slots in flight, adopted ones included (a fresh coordinator counts what nodes say they hold). */
  inFlight: 2000,
  /** Characters of every node, uid and pod of the queue and the grants together. */
  chars: 1024 * 1024,
  /** Nodes whose requests were refused for room, asked again once there is room. */
  overflow: 1000,
  /** A Node's name (a DNS subdomain). */
  nodeChars: 253,
  /** A pod's uid. */
  uidChars: 128,
  /** namespace/name. */
  podChars: 63 + 1 + 253,
});

/** What a node's workflow says it holds (its slots query, asked by an activity), or that it is not running. */
export interface HolderFound {
  running: boolean;
  held: readonly string[];
  asking: readonly string[];
  /** Of those held, the ones it may be credited with (absent from older workers: none). */
  confirmed?: readonly { uid: string; pod: string }[];
}

/** The coordinator's state as it is carried over continue-as-new and shown by its status query. */
export interface SlotData {
  maxConcurrentReplacements: number;
  maxTaintedNodes: NodeLimit;
  /** The limit is FDB's maxFaultDomainsWithTaintedProcessGroups: the counts are of nodes holding managed pods (breaker.ts). */
  faultDomains?: true;
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
  /** Nodes whose requests were refused for room: asked to ask again once there is room. */
  overflow?: string[];
  /** Nodes said to have given slots back, not yet asked (Slots.giveBackHint). */
  verify?: string[];
}

export function emptySlots(): SlotData {
  return { maxConcurrentReplacements: 1, maxTaintedNodes: '50%', taintedNodes: 0, totalNodes: 0, queue: [], inFlight: [], granted: 0, peakInFlight: 0 };
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `node` is not a Node's name (the coordinator grants to `taint/<node>` only for one), or undefined. */
export function nodeNameProblem(node: unknown): string | undefined {
  if (typeof node !== 'string') return 'the node is not a string';
  if (node.length === 0 || node.length > SLOT_BOUNDS.nodeChars) return `the node's name is not 1 to ${SLOT_BOUNDS.nodeChars} characters`;
  return NODE_NAME.test(node) ? undefined : 'the node\'s name is not a DNS subdomain';
}

const finite = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const chars = (r: SlotRequest) => r.node.length + r.uid.length + r.pod.length;

/**
 * A request as a node's workflow sends it (requestReplacements, slotsHeld; a grant carried over
 * continue-as-new has its times besides): its pod's name is for people (any other value: none),
 * its time a hint (any other value: now).
 */
const requestShape = object({
  node: string(undefined, (n) => nodeNameProblem(n)),
  uid: string(undefined, minLength(1), maxLength(SLOT_BOUNDS.uidChars)),
  pod: optional(anyValue),
  requestedAt: optional(anyValue),
}, 'a request is not an object');

/**
 * A request as the coordinator keeps it, or why it is refused: `raw` is any value, checked by
 * src/checks/message.ts. Its time is clamped to `now` (a message's clock is not the workflow's).
 */
export function slotRequestOf(raw: unknown, now: number): SlotRequest | string {
  const c = checkMessage(requestShape, raw, 'a request');
  if (!c.ok) return c.reason;
  const { node, uid } = c.value;
  const pod = typeof c.value.pod === 'string' ? c.value.pod : '';
  if (pod.length > SLOT_BOUNDS.podChars) return `a pod's name is longer than ${SLOT_BOUNDS.podChars} characters`;
  const at = finite(c.value.requestedAt);
  return { node, uid, pod, requestedAt: at === undefined ? now : Math.max(0, Math.min(now, at)) };
}

/**
 * The coordinator's state, indexed: the queue and the grants by pod uid (Maps keep their
 * insertion order: the queue is served oldest first), and every uid of a node by node.
 */
export class Slots {
  maxConcurrentReplacements = 1;
  maxTaintedNodes: NodeLimit = '50%';
  faultDomains = false;
  taintedNodes = 0;
  totalNodes = 0;
  grantCheckSeconds: number | undefined;
  granted = 0;
  peakInFlight = 0;
  readonly queue = new Map<string, SlotRequest>();
  readonly inFlight = new Map<string, Grant>();
  readonly overflow = new Set<string>();
  /** Nodes said to have given slots back (or to be ending), whose workflow is to be asked what it holds. */
  readonly verify = new Set<string>();
  private readonly nodes = new Map<string, Set<string>>();
  private chars = 0;

  /**
   * The state a run of the coordinator carried (its own continue-as-new): taken entry by entry,
   * each checked as a request is, within the bounds; the limits and counts start at the most
   * cautious values until read from the worker and the Nodes. Total: any value gives a state.
   */
  static carried(data: unknown, now: number): Slots {
    const s = new Slots();
    if (typeof data !== 'object' || data === null) return s;
    const d = data as Record<string, unknown>;
    if (!Array.isArray(d.queue) || !Array.isArray(d.inFlight)) return s;
    for (const g of d.inFlight.slice(0, SLOT_BOUNDS.inFlight)) {
      const r = slotRequestOf(g, now);
      if (typeof r === 'string' || s.has(r.uid)) continue;
      const at = finite((g as Grant).grantedAt);
      const checked = finite((g as Grant).checkedAt);
      s.addGrant({ ...r, grantedAt: at === undefined ? now : Math.min(now, at), ...(checked !== undefined ? { checkedAt: Math.min(now, checked) } : {}) });
    }
    for (const q of d.queue.slice(0, SLOT_BOUNDS.queue)) s.request(q, now);
    s.granted = Math.max(0, finite(d.granted) ?? 0);
    s.peakInFlight = Math.max(s.inFlight.size, finite(d.peakInFlight) ?? 0);
    if (Array.isArray(d.overflow)) {
      for (const node of d.overflow.slice(0, SLOT_BOUNDS.overflow)) if (!nodeNameProblem(node)) s.overflow.add(node as string);
    }
    if (Array.isArray(d.verify)) for (const node of d.verify.slice(0, SLOT_BOUNDS.overflow)) s.giveBackHint(node);
    return s;
  }

  /** The state as carried over continue-as-new and shown. */
  toData(): SlotData {
    return {
      maxConcurrentReplacements: this.maxConcurrentReplacements, maxTaintedNodes: this.maxTaintedNodes,
      ...(this.faultDomains ? { faultDomains: true as const } : {}),
      taintedNodes: this.taintedNodes, totalNodes: this.totalNodes,
      queue: [...this.queue.values()], inFlight: [...this.inFlight.values()].map((g) => ({ ...g })),
      granted: this.granted, peakInFlight: this.peakInFlight,
      ...(this.grantCheckSeconds !== undefined ? { grantCheckSeconds: this.grantCheckSeconds } : {}),
      ...(this.overflow.size > 0 ? { overflow: [...this.overflow] } : {}),
      ...(this.verify.size > 0 ? { verify: [...this.verify] } : {}),
    };
  }

  /** The settings the worker's configuration gives (taintSlotSettings). */
  setSettings(v: { maxConcurrentReplacements: number; maxTaintedNodes: NodeLimit; faultDomains?: boolean; grantCheckSeconds?: number }): void {
    this.maxConcurrentReplacements = Math.max(0, v.maxConcurrentReplacements);
    this.maxTaintedNodes = v.maxTaintedNodes;
    this.faultDomains = v.faultDomains === true;
    if (v.grantCheckSeconds !== undefined) this.grantCheckSeconds = v.grantCheckSeconds;
  }

  /** The breaker's inputs as counted from the Nodes (taintNodeCounts). */
  setCounts(v: { taintedNodes: number; totalNodes: number }): void {
    this.taintedNodes = Math.max(0, v.taintedNodes);
    this.totalNodes = Math.max(0, v.totalNodes);
  }

  breakerOpen(): boolean {
    return breakerOpen(this.taintedNodes, this.totalNodes, this.maxTaintedNodes, this.faultDomains);
  }

  has(uid: string): boolean {
    return this.queue.has(uid) || this.inFlight.has(uid);
  }

  /** The uids a node has queued or in flight. */
  uidsOf(node: string): string[] {
    return [...(this.nodes.get(node) ?? [])];
  }

  /**
   * Queues a request (any value: checked here); asking twice for one pod is one request.
   * Undefined when it is queued (or was already), else why it is refused; refused for room,
   * its node is asked to ask again once there is room (overflow).
   */
  request(raw: unknown, now: number): string | undefined {
    const r = slotRequestOf(raw, now);
    if (typeof r === 'string') return r;
    if (this.has(r.uid)) return undefined;
    const room = this.room(r, this.queue.size, SLOT_BOUNDS.queue, 'the queue');
    if (room) {
      if (this.overflow.size < SLOT_BOUNDS.overflow) this.overflow.add(r.node);
      return room;
    }
    this.queue.set(r.uid, r);
    this.index(r);
    return undefined;
  }

  /**
   * A slot a node's workflow says it holds (a fresh coordinator learning what
   * the one before it granted): counted in flight from now, even above the
   * limit, so that nothing more is granted until enough are given back. A
   * holder that does not hold it after all gives it back at the next check
   * (grantsToCheck).
   */
  adopt(raw: unknown, now: number): string | undefined {
    const r = slotRequestOf(raw, now);
    if (typeof r === 'string') return r;
    if (this.inFlight.has(r.uid)) return undefined;
    const queued = this.queue.get(r.uid);
    if (queued) this.drop(queued);
    const room = this.room(r, this.inFlight.size, SLOT_BOUNDS.inFlight, 'the slots in flight');
    if (room) return room;
    this.addGrant({ ...r, grantedAt: now });
    return undefined;
  }

  /** Ends a pod's replacement, or takes back its request; only `node`'s (undefined: any node's, for the holder checks). */
  release(uid: string, node?: string): boolean {
    const r = this.queue.get(uid) ?? this.inFlight.get(uid);
    if (!r || (node !== undefined && r.node !== node)) return false;
    this.drop(r);
    return true;
  }

  /** Drops every request and grant of a node (its workflow ended). */
  withdraw(node: string): void {
    for (const uid of this.uidsOf(node)) this.release(uid, node);
  }

  /**
   * A message says `node` gave slots back (or is ending). Anyone can say so: nothing is freed
   * on it. The node's workflow is asked (holderFound) when it has anything here. Undefined
   * when noted (or nothing to check), else why not.
   */
  giveBackHint(node: unknown): string | undefined {
    const why = nodeNameProblem(node);
    if (why) return why;
    if (!this.nodes.has(node as string)) return undefined;
    return this.toVerify(node as string);
  }

  /**
   * A message says `node` holds slots (slotsHeld, to a coordinator that asked). Anyone can say
   * so: nothing is adopted on it. The node's workflow is asked (holderFound), which adopts only
   * the holds it confirms. Undefined when noted, else why not.
   */
  holdsHint(node: unknown): string | undefined {
    return nodeNameProblem(node) ?? this.toVerify(node as string);
  }

  private toVerify(node: string): string | undefined {
    if (this.verify.has(node)) return undefined;
    if (this.verify.size >= SLOT_BOUNDS.overflow) return `${SLOT_BOUNDS.overflow} nodes are waiting to be checked already`;
    this.verify.add(node);
    return undefined;
  }

  /**
   * What the node's workflow itself says it holds and asks for (or that it is not running):
   * its requests it no longer asks for and its grants it no longer holds are freed; the holds it
   * confirms (their eviction found them granted: replace.ts confirmedHolds) are adopted, as a
   * fresh coordinator learns what the one before it granted. Nothing else.
   */
  holderFound(node: string, found: HolderFound, now: number): string[] {
    this.verify.delete(node);
    const held = new Set(found.running ? found.held : []);
    const asking = new Set(found.running ? found.asking : []);
    const freed = this.uidsOf(node).filter((uid) => !held.has(uid) && (this.inFlight.has(uid) || !asking.has(uid)));
    for (const uid of freed) this.release(uid, node);
    for (const h of found.running ? found.confirmed ?? [] : []) {
      if (held.has(h.uid)) this.adopt({ node, uid: h.uid, pod: h.pod, requestedAt: now }, now);
    }
    return freed;
  }

  /** Which queued requests get a slot now, oldest first. Moves them to in flight. */
  decideGrants(now: number): Grant[] {
    if (this.breakerOpen()) return [];
    const free = Math.max(0, Math.min(this.maxConcurrentReplacements, SLOT_BOUNDS.inFlight) - this.inFlight.size);
    const grants: Grant[] = [];
    for (const r of this.queue.values()) {
      if (grants.length >= free) break;
      grants.push({ ...r, grantedAt: now });
    }
    for (const g of grants) {
      this.queue.delete(g.uid);
      this.inFlight.set(g.uid, g);
    }
    this.granted += grants.length;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight.size);
    return grants;
  }

  private checkMs(): number {
    return Math.max(1, this.grantCheckSeconds ?? GRANT_CHECK_SECONDS) * 1000;
  }

  /** Grants whose holder is due for a check, marked as checked now (at most SLOT_BOUNDS.inFlight of them). */
  grantsToCheck(now: number): Grant[] {
    const due = [...this.inFlight.values()].filter((g) => now >= (g.checkedAt ?? g.grantedAt) + this.checkMs());
    for (const g of due) g.checkedAt = now;
    return due;
  }

  /** When the next grant check is due (undefined: nothing in flight). */
  nextCheckAt(): number | undefined {
    let at: number | undefined;
    for (const g of this.inFlight.values()) {
      const t = (g.checkedAt ?? g.grantedAt) + this.checkMs();
      if (at === undefined || t < at) at = t;
    }
    return at;
  }

  /** Nodes refused for room, once the queue has half its room again: taken out, to be asked to ask again. */
  overflowDue(): string[] {
    if (this.overflow.size === 0 || this.queue.size > SLOT_BOUNDS.queue / 2) return [];
    const nodes = [...this.overflow];
    this.overflow.clear();
    return nodes;
  }

  private room(r: SlotRequest, size: number, max: number, what: string): string | undefined {
    if (size >= max) return `${what} holds ${max} already`;
    if (this.chars + chars(r) > SLOT_BOUNDS.chars) return `the queue and the slots hold ${SLOT_BOUNDS.chars} characters of names already`;
    return undefined;
  }

  private addGrant(g: Grant): void {
    this.inFlight.set(g.uid, g);
    this.index(g);
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight.size);
  }

  private index(r: SlotRequest): void {
    const uids = this.nodes.get(r.node) ?? new Set<string>();
    uids.add(r.uid);
    this.nodes.set(r.node, uids);
    this.chars += chars(r);
  }

  private drop(r: SlotRequest): void {
    this.queue.delete(r.uid);
    this.inFlight.delete(r.uid);
    const uids = this.nodes.get(r.node);
    uids?.delete(r.uid);
    if (uids?.size === 0) this.nodes.delete(r.node);
    this.chars -= chars(r);
  }
}

/** Signals to send, one per node: the pods granted on it. */
export function byNode(grants: readonly Grant[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const g of grants) {
    const uids = out.get(g.node);
    if (uids) uids.push(g.uid);
    else out.set(g.node, [g.uid]);
  }
  return out;
}

/** The coordinator's state as slotsDetails shows it: its queue and grants in a list or by uid. */
export type SlotsShown = Pick<SlotData, 'maxConcurrentReplacements' | 'maxTaintedNodes' | 'taintedNodes' | 'totalNodes' | 'granted' | 'peakInFlight'> & {
  faultDomains?: boolean;
  queue: readonly SlotRequest[] | ReadonlyMap<string, SlotRequest>;
  inFlight: readonly Grant[] | ReadonlyMap<string, Grant>;
};

/** The first `n` of a list or a map's values, and how many there are. */
function firstOf<T>(c: readonly T[] | ReadonlyMap<string, T>, n: number): { first: T[]; size: number } {
  if (Array.isArray(c)) return { first: c.slice(0, n), size: c.length };
  const first: T[] = [];
  for (const v of (c as ReadonlyMap<string, T>).values()) {
    if (first.length >= n) break;
    first.push(v);
  }
  return { first, size: (c as ReadonlyMap<string, T>).size };
}

/** What taint-replacements shows in the Web UI: the slots, the breaker, the queue. */
export function slotsDetails(s: SlotsShown, breakerOpen: boolean, stale: boolean): string {
  const inFlight = firstOf(s.inFlight, 10);
  const queue = firstOf(s.queue, 10);
  const lines = [
    `Replacements in flight: ${inFlight.size} of ${s.maxConcurrentReplacements}; waiting for a slot: ${queue.size}.`,
    (s.faultDomains
      ? `Tainted nodes holding managed pods: ${s.taintedNodes} of ${s.totalNodes} (limit ${s.maxTaintedNodes}, at least 1: maxFaultDomainsWithTaintedProcessGroups)`
      : `Tainted nodes: ${s.taintedNodes} of ${s.totalNodes} (limit ${s.maxTaintedNodes})`) + `: breaker ${breakerOpen ? 'OPEN, no replacement is granted' : 'closed'}.`,
  ];
  if (inFlight.size > 0) lines.push(`In flight: ${inFlight.first.map((g) => `${g.pod} on ${g.node}`).join(', ')}${inFlight.size > 10 ? ', ...' : ''}.`);
  if (queue.size > 0) lines.push(`Next in the queue: ${queue.first.map((r) => `${r.pod} on ${r.node}`).join(', ')}${queue.size > 10 ? ', ...' : ''}.`);
  lines.push(`Granted since it started: ${s.granted}; most in flight at once: ${s.peakInFlight}.`);
  if (stale) lines.push('The settings or node counts could not be read yet: the most cautious limits apply.');
  return lines.join('\n\n');
}
