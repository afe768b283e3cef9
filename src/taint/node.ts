// One node's taint replacement: which managed pods on it carry which
// condition since when, when each is due for replacement, and where each
// replacement stands. The workflow `taint/<node>` holds this data and calls
// these functions; they decide, the workflow acts. Pure.
//
// A pod's states and their transitions:
//   Detected      NodeTaintDetected set; the taint is younger than its durationInSeconds
//   Replacing     NodeTaintReplacing set too; waiting taintReplacementTimeSeconds more
//   Queued        due: waiting for a slot (maxConcurrentReplacements, breaker)
//   NoController  due, but no controller would recreate it: reported, never evicted
//   Refused       due, but the configuration refuses it (a FoundationDBCluster owns it): reported, never evicted
//   Evicting      granted a slot; the eviction is being requested
//   Blocked       the eviction was refused (a PodDisruptionBudget's 429); retried with back-off
//   Evicted       eviction accepted; waiting for the pod to go and a ready replacement
//   Replaced      its controller has a ready replacement (or the in-flight timeout passed)
// Detected -> Replacing -> Queued -> Evicting -> (Blocked -> Evicting)* -> Evicted -> Replaced.
// When the taint goes, Detected, Replacing, Queued, NoController and Refused pods get
// their conditions cleared and leave; pods past Evicting finish their replacement.
import { taintId, type MatchedTaint, type TaintOption } from './match.ts';
import { DETECTED, REPLACING, type PodState, type PodStatusRow } from './messages.ts';

export interface TaintSettings {
  taintReplacementOptions: TaintOption[];
  taintReplacementTimeSeconds: number;
  maxConcurrentReplacements: number;
  podSelector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };
  namespaces?: string[];
}

export type { PodState, PodStatusRow } from './messages.ts';

export const IN_FLIGHT: readonly PodState[] = ['Evicting', 'Blocked', 'Evicted'];
const WAITING: readonly PodState[] = ['Detected', 'Replacing', 'Queued', 'NoController', 'Refused'];

/** A managed pod on the node, as the activity lists it. */
export interface ListedPod {
  uid: string;
  namespace: string;
  name: string;
  /** The controlling owner; a pod without one would be lost if evicted. */
  controllerUid?: string;
  controller?: OwnerRef;
  /** creationTimestamp (ms): a replacement of the pod is created after it. */
  createdAt?: number;
  /** Our conditions as the pod carries them (lastTransitionTime, ms). */
  detectedSince?: number;
  replacingSince?: number;
  /** Why the configuration refuses to replace it (pod-rules.ts foundationDBRefusal): marked, never evicted. */
  refused?: string;
}

export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
}

export interface PodEntry {
  uid: string;
  namespace: string;
  name: string;
  controllerUid?: string;
  controller?: OwnerRef;
  /** creationTimestamp (ms), when listed with it. */
  createdAt?: number;
  state: PodState;
  /** Why the configuration refuses to replace it, as last listed: it waits as Refused, never evicted. */
  refused?: string;
  /** When NodeTaintDetected became true. */
  detectedAt: number;
  /** When NodeTaintReplacing was due (the time the workflow decides it). */
  replacingAt?: number;
  /**
   * When NodeTaintReplacing became visible on the pod: the lastTransitionTime
   * the write activity set (its own clock, when it wrote it, never before it
   * was due). The taintReplacementTimeSeconds count from here.
   */
  markedAt?: number;
  /** What the pod's conditions were last written as (the decided times), to write only changes. */
  written: { detected?: number; replacing?: number };
  attempts: number;
  /** Blocked: the next eviction attempt; Replacing: no new request before; Evicted: the next wait. */
  retryAt?: number;
  evictedAt?: number;
  lastError?: string;
  /** Its eviction was recorded in observe mode (a WouldEvict Event): not recorded again. */
  observed?: boolean;
  /** Its slot was found granted at the coordinator by its eviction (replace.ts confirmedHolds). */
  confirmed?: boolean;
}

export interface NodeTaintData {
  node: string;
  settings: TaintSettings;
  taints: MatchedTaint[];
  /** taintId -> when the workflow first saw it (ms): a taint's age when it has no timeAdded. */
  firstSeen: Record<string, number>;
  pods: Record<string, PodEntry>;
  /** Grants received and not yet acted on (see replace.ts). */
  granted?: string[];
  /** Messages to the coordinator not yet delivered (see replace.ts). */
  outbox?: { request: string[]; release: string[] };
  /** A fresh coordinator asked for the slots held (announceSlots), and they are not told yet: the next run tells them. */
  announce?: true;
}

export function newNodeTaintData(node: string, settings: TaintSettings): NodeTaintData {
  return { node, settings, taints: [], firstSeen: {}, pods: {} };
}

/** Carried data as a new run can use it, or undefined when it is not this node's. */
export function carriedData(node: string, carried: NodeTaintData | undefined): NodeTaintData | undefined {
  if (!carried || typeof carried !== 'object' || carried.node !== node || !carried.pods || typeof carried.pods !== 'object' ||
    !Array.isArray(carried.taints) || !carried.firstSeen || typeof carried.firstSeen !== 'object') return undefined;
  const granted = Array.isArray(carried.granted) ? carried.granted.filter((u) => typeof u === 'string') : [];
  const strings = (l: unknown) => (Array.isArray(l) ? l.filter((u): u is string => typeof u === 'string') : []);
  return { ...carried, granted, outbox: { request: strings(carried.outbox?.request), release: strings(carried.outbox?.release) } };
}

/** Takes in the node's current matching taints and settings; first-seen times are kept durable. */
export function observeTaints(d: NodeTaintData, taints: MatchedTaint[], settings: TaintSettings, now: number): void {
  d.settings = settings;
  d.taints = taints;
  const ids = new Set(taints.map(taintId));
  for (const t of taints) d.firstSeen[taintId(t)] ??= Math.min(now, t.seenAt ?? now);
  for (const id of Object.keys(d.firstSeen)) if (!ids.has(id)) delete d.firstSeen[id];
}

/** When a taint's age starts: its timeAdded, else when first seen. */
export function taintStart(d: NodeTaintData, t: MatchedTaint): number {
  const added = t.timeAdded ? Date.parse(t.timeAdded) : NaN;
  return Number.isFinite(added) ? added : (d.firstSeen[taintId(t)] ?? 0);
}

/** The earliest moment a taint has been on the node long enough, and that taint. */
export function replacingDue(d: NodeTaintData): { at: number; taint: MatchedTaint } | undefined {
  let best: { at: number; taint: MatchedTaint } | undefined;
  for (const t of d.taints) {
    const at = taintStart(d, t) + t.durationInSeconds * 1000;
    if (!best || at < best.at) best = { at, taint: t };
  }
  return best;
}

/** Adds newly listed pods; forgets waiting pods that are no longer on the node. */
export function reconcilePods(d: NodeTaintData, listed: readonly ListedPod[], now: number): void {
  const seen = new Set<string>();
  for (const p of listed) {
    seen.add(p.uid);
    const known = d.pods[p.uid];
    if (known) {
      // A refusal follows the listing (a worker whose configuration changed says otherwise).
      if (typeof p.refused === 'string') known.refused = p.refused;
      else delete known.refused;
      continue;
    }
    if (d.taints.length === 0) continue;
    // Conditions a pod already carries were written by an earlier workflow
    // for this node that did not finish (terminated): their times may belong
    // to a taint that has since gone, so they are not trusted. They are only
    // remembered as written, so that they are rewritten with this workflow's
    // times (or left alone when those are the same).
    d.pods[p.uid] = {
      uid: p.uid,
      namespace: p.namespace,
      name: p.name,
      ...(p.controllerUid ? { controllerUid: p.controllerUid } : {}),
      ...(p.controller ? { controller: p.controller } : {}),
      ...(typeof p.createdAt === 'number' ? { createdAt: p.createdAt } : {}),
      ...(typeof p.refused === 'string' ? { refused: p.refused } : {}),
      state: 'Detected',
      detectedAt: now,
      written: {
        ...(p.detectedSince !== undefined ? { detected: p.detectedSince } : {}),
        ...(p.replacingSince !== undefined ? { replacing: p.replacingSince } : {}),
      },
      attempts: 0,
    };
  }
  for (const [uid, pod] of Object.entries(d.pods)) {
    if (!seen.has(uid) && WAITING.includes(pod.state)) delete d.pods[uid];
  }
}

/**
 * The conditions a managed pod that is listed `now` and not yet known gets first
 * (what decideNode writes for it on its first decision): the listing activity
 * writes them as it lists, so that the list is the pods' re-read and the first
 * mark needs no activity of its own. Undefined when the node carries no
 * configured taint (nothing to mark).
 */
export function firstMark(d: NodeTaintData, now: number): Pick<ConditionWrite, 'detected' | 'replacing'> | undefined {
  const probe: NodeTaintData = { ...d, pods: {}, granted: [], outbox: { request: [], release: [] } };
  reconcilePods(probe, [{ uid: 'listed', namespace: '', name: '' }], now);
  const w = decideNode(probe, now).writes.find((x) => x.uid === 'listed');
  return w?.detected ? { detected: w.detected, replacing: w.replacing } : undefined;
}

/**
 * A new node's first step (the taintNodeStart activity): its taints with the first sight each is
 * counted from (the watcher's hint, believed at most SEEN_AT_TRUST_MS back and never ahead of
 * `now`; else `now`), and the first mark of the pods a listing at `now` finds.
 */
export function startMark(node: string, taints: readonly MatchedTaint[], settings: TaintSettings, hints: Readonly<Record<string, unknown>>, now: number):
{ taints: MatchedTaint[]; mark?: Pick<ConditionWrite, 'detected' | 'replacing'> } {
  const seen = taints.map((t) => {
    const hint = hints[taintId(t)];
    return { ...t, seenAt: typeof hint === 'number' && Number.isFinite(hint) ? believedTime(hint, now) : now };
  });
  if (seen.length === 0) return { taints: seen };
  const data = newNodeTaintData(node, settings);
  observeTaints(data, seen, settings, now);
  const mark = firstMark(data, now);
  return { taints: seen, ...(mark ? { mark } : {}) };
}

/** A pod's conditions to write: a since-time (ms) sets the condition, null removes it. */
export interface ConditionWrite {
  uid: string;
  namespace: string;
  name: string;
  detected: { since: number; message: string } | null;
  replacing: { since: number; message: string } | null;
}

/** A waiting pod's new state, and its replacingAt set (a number) or dropped (null); clearRetry drops its retryAt. */
export interface PodMove {
  uid: string;
  state: PodState;
  replacingAt?: number | null;
  clearRetry?: true;
}

export interface NodeDecision {
  /** Waiting pods' moves (applyMoves): decideNode itself changes nothing. */
  moves: PodMove[];
  writes: ConditionWrite[];
  /** Pods due for replacement: ask the coordinator for a slot. */
  request: string[];
  /** Pods queued that no longer need a slot. */
  withdraw: string[];
  /** Pods to forget once their conditions are cleared. */
  forget: string[];
  /** Next deadline (ms), for a durable timer. */
  nextAt?: number;
  /** Nothing tainted and nothing in flight: the workflow can end. */
  done: boolean;
}

/**
 * What to do now: each waiting pod's conditions and state follow from the
 * taints' ages and the clock, as moves (applyMoves) and operations; `d` is left as it is.
 */
export function decideNode(d: Readonly<NodeTaintData>, now: number): NodeDecision {
  const out: NodeDecision = { moves: [], writes: [], request: [], withdraw: [], forget: [], done: false };
  const due = replacingDue(d);
  const later = (at: number) => {
    if (at > now && (out.nextAt === undefined || at < out.nextAt)) out.nextAt = at;
  };
  const taintText = (t: MatchedTaint) => `${t.key}${t.effect ? `:${t.effect}` : ''}`;
  for (const pod of Object.values(d.pods)) {
    if (pod.state === 'Blocked' && pod.retryAt !== undefined) later(pod.retryAt);
    if (!WAITING.includes(pod.state)) {
      // A pod whose replacement is over (Replaced) may still carry our conditions:
      // one whose eviction was refused (the taint went before the workflow heard
      // of it), or an evicted pod still terminating. Once the taint is gone they
      // are cleared too (a pod that is gone counts as cleared).
      if (!due && !IN_FLIGHT.includes(pod.state) && carries(pod)) {
        out.writes.push({ uid: pod.uid, namespace: pod.namespace, name: pod.name, detected: null, replacing: null });
      }
      continue;
    }
    if (!due) {
      // The taint went before the replacement: clear, withdraw, forget.
      if (pod.state === 'Queued') out.withdraw.push(pod.uid);
      if (pod.written.detected !== undefined || pod.written.replacing !== undefined) {
        out.writes.push({ uid: pod.uid, namespace: pod.namespace, name: pod.name, detected: null, replacing: null });
      }
      out.forget.push(pod.uid);
      continue;
    }
    const replacingAt = Math.max(due.at, pod.detectedAt);
    const detected = { since: pod.detectedAt, message: `node ${d.node} has taint ${d.taints.map(taintText).join(', ')}` };
    let replacing: ConditionWrite['replacing'] = null;
    if (now >= replacingAt) {
      replacing = {
        since: replacingAt,
        message: `taint ${taintText(due.taint)} has been on node ${d.node} for ${due.taint.durationInSeconds}s; ` +
          `replacement after ${d.settings.taintReplacementTimeSeconds}s more`,
      };
      const move = waitingMove(d, pod, replacingAt, now);
      out.moves.push({ uid: pod.uid, replacingAt, ...move.move });
      if (move.request) out.request.push(pod.uid);
      if (move.withdraw) out.withdraw.push(pod.uid);
      if (move.at !== undefined) later(move.at);
    } else {
      if (pod.state === 'Queued') out.withdraw.push(pod.uid);
      out.moves.push({ uid: pod.uid, state: 'Detected', replacingAt: null });
      later(replacingAt);
    }
    if (pod.written.detected !== detected.since || pod.written.replacing !== replacing?.since) {
      out.writes.push({ uid: pod.uid, namespace: pod.namespace, name: pod.name, detected, replacing });
    }
  }
  // Done only once nothing is in flight and no pod still carries a condition this
  // workflow wrote (a clearing write that failed is tried again, not left behind).
  out.done = !due && !Object.values(d.pods).some((p) => IN_FLIGHT.includes(p.state) || carries(p));
  return out;
}

/**
 * The eviction rule: a waiting pod whose NodeTaintReplacing (due at `replacingAt`) has been
 * visible for taintReplacementTimeSeconds is due for eviction, asking for a slot (Queued) when
 * it has a controller, slots exist, and its last failed eviction's back-off is over. The one
 * place that says when a pod is evicted (decideNode, stillWanted and statusRows use evictAt).
 */
function waitingMove(d: Readonly<NodeTaintData>, pod: Readonly<PodEntry>, replacingAt: number, now: number):
{ move: Pick<PodMove, 'state' | 'clearRetry'>; request?: true; withdraw?: true; at?: number } {
  const at = evictAt(d, pod, replacingAt);
  const queued = pod.state === 'Queued';
  // Not visible yet: the write comes first, then the count starts.
  if (at === undefined) return { move: { state: 'Replacing' }, ...(queued ? { withdraw: true } : {}) };
  if (now < at) return { move: { state: 'Replacing' }, ...(queued ? { withdraw: true } : {}), at };
  if (pod.refused !== undefined) return { move: { state: 'Refused' }, ...(queued ? { withdraw: true } : {}) };
  if (!pod.controllerUid) return { move: { state: 'NoController' } };
  if (queued) return { move: { state: 'Queued' } };
  // An eviction that failed: ask again after its back-off.
  if (pod.retryAt !== undefined && now < pod.retryAt) return { move: { state: 'Replacing' }, at: pod.retryAt };
  if (d.settings.maxConcurrentReplacements > 0) return { move: { state: 'Queued', clearRetry: true }, request: true };
  return { move: { state: 'Replacing' } };
}

/** When the pod, its NodeTaintReplacing due at `replacingAt`, is due for eviction; undefined while the mark is not visible. */
export function evictAt(d: Readonly<NodeTaintData>, pod: Readonly<PodEntry>, replacingAt: number): number | undefined {
  // Counted from when the mark became visible (the write succeeded), not from when it was decided.
  const marked = visibleSince(pod, replacingAt);
  return marked === undefined ? undefined : marked + d.settings.taintReplacementTimeSeconds * 1000;
}

/** Applies decideNode's moves to the node's data (the workflow's own state). */
export function applyMoves(d: NodeTaintData, moves: readonly PodMove[]): void {
  for (const m of moves) {
    const pod = d.pods[m.uid];
    if (!pod) continue;
    pod.state = m.state;
    if (m.replacingAt === null) delete pod.replacingAt;
    else if (m.replacingAt !== undefined) pod.replacingAt = m.replacingAt;
    if (m.clearRetry) delete pod.retryAt;
  }
}

/** Whether the pod carries a condition this workflow wrote (as far as it knows). */
function carries(pod: PodEntry): boolean {
  return pod.written.detected !== undefined || pod.written.replacing !== undefined;
}

/**
 * Records a write as done. `markedAt`: the NodeTaintReplacing lastTransitionTime
 * the activity wrote (when the mark became visible); without it (an older
 * activity's result), the decided time.
 */
export function markWritten(d: NodeTaintData, w: ConditionWrite, markedAt?: number): void {
  const pod = d.pods[w.uid];
  if (!pod) return;
  pod.written = {
    ...(w.detected ? { detected: w.detected.since } : {}),
    ...(w.replacing ? { replacing: w.replacing.since } : {}),
  };
  if (w.replacing) pod.markedAt = typeof markedAt === 'number' && Number.isFinite(markedAt) ? Math.max(markedAt, w.replacing.since) : w.replacing.since;
  else delete pod.markedAt;
}

/** When the pod's NodeTaintReplacing, due at replacingAt, became visible; undefined while it is not written. */
function visibleSince(pod: Readonly<PodEntry>, replacingAt: number): number | undefined {
  if (pod.written.replacing !== replacingAt) return undefined;
  return pod.markedAt ?? pod.written.replacing;
}

/** Whether a granted pod should still be evicted: the taint is there and the pod is due. */
export function stillWanted(d: NodeTaintData, uid: string, now: number): boolean {
  const pod = d.pods[uid];
  const due = replacingDue(d);
  if (!pod || !due || pod.replacingAt === undefined) return false;
  const at = evictAt(d, pod, pod.replacingAt);
  return at !== undefined && now >= at;
}

/** Eviction back-off: 2 s doubling to 60 s. */
export function evictionBackoffMs(attempts: number): number {
  return Math.min(60_000, 2000 * 2 ** Math.max(0, attempts - 1));
}

/** How far back a watcher's hint of a taint's first sight (for a taint without timeAdded) is believed. */
export const SEEN_AT_TRUST_MS = 5 * 60_000;

/** A watcher's hint of a taint's first sight, as believed at `now`: at most SEEN_AT_TRUST_MS back. */
export function believedSeenAt(hint: number, now: number): number {
  return Math.max(hint, now - SEEN_AT_TRUST_MS);
}

/** A time told by someone else (a hint, a workflow task's time), as an activity believes it at `now`: at most SEEN_AT_TRUST_MS back, never ahead. */
function believedTime(told: number, now: number): number {
  return Math.min(now, believedSeenAt(told, now));
}

/**
 * When a new node's first step lists and marks: at `at`, the asking workflow task's time (the
 * local activity's answer comes back within that task), as believed at `clock`, the worker's;
 * at `clock` when not given.
 */
export function listingTime(at: number | undefined, clock: number): number {
  return at === undefined ? clock : believedTime(at, clock);
}

/** How long a replacement may stay in flight before its slot is given back anyway. */
export const IN_FLIGHT_TIMEOUT_MS = 10 * 60_000;


/** The rows `tend taint status` prints for this node. */
export function statusRows(d: NodeTaintData): PodStatusRow[] {
  const due = replacingDue(d);
  const iso = (ms: number) => new Date(ms).toISOString();
  return Object.values(d.pods)
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`))
    .map((p) => {
      const replacing = p.replacingAt !== undefined;
      const replacingAt = due ? Math.max(due.at, p.detectedAt) : p.replacingAt;
      // While the mark is not visible yet: as if it were from when it is due.
      const at = replacingAt === undefined ? undefined : evictAt(d, p, replacingAt) ?? replacingAt + d.settings.taintReplacementTimeSeconds * 1000;
      let replaceAt = at === undefined ? '' : iso(at);
      if (p.evictedAt !== undefined) replaceAt = iso(p.evictedAt);
      else if (p.state === 'NoController') replaceAt = 'never: no controller would recreate it';
      else if (p.state === 'Refused') replaceAt = `never: ${p.refused ?? 'refused'}`;
      else if (d.settings.maxConcurrentReplacements === 0) replaceAt = 'never: maxConcurrentReplacements is 0';
      return {
        node: d.node,
        namespace: p.namespace,
        pod: p.name,
        taint: due ? `${due.taint.key}${due.taint.effect ? `:${due.taint.effect}` : ''}` : '',
        condition: replacing ? REPLACING : p.written.detected !== undefined ? DETECTED : '',
        since: iso(replacing ? p.markedAt ?? p.replacingAt! : p.detectedAt),
        replaceAt,
        state: p.state,
        attempts: p.attempts,
        ...(p.lastError ? { lastError: p.lastError } : {}),
      };
    });
}

/** What taint/<node> shows in the Web UI: its taints, its pods by state, what it waits for. */
export function nodeDetails(d: NodeTaintData, replacing: number, nextAt: number | undefined, retrying: boolean): string {
  const taints = d.taints.map((t) => `${t.key}:${t.effect}`).join(', ');
  const lines = [taints ? `Node ${d.node} carries ${taints}.` : `Node ${d.node}: no configured taint left; clearing its pods' conditions.`];
  const byState = new Map<PodState, string[]>();
  for (const p of Object.values(d.pods)) byState.set(p.state, [...(byState.get(p.state) ?? []), `${p.namespace}/${p.name}`]);
  if (byState.size === 0) lines.push('No managed pods on it.');
  for (const [state, pods] of [...byState].sort(([a], [b]) => a.localeCompare(b))) {
    const shown = pods.sort().slice(0, 10).join(', ');
    lines.push(`${state} (${pods.length}): ${shown}${pods.length > 10 ? ', ...' : ''}.`);
  }
  if (replacing > 0) lines.push(`Replacement steps under way: ${replacing}.`);
  const asking = (d.outbox?.request.length ?? 0) + (d.granted?.length ?? 0);
  if (asking > 0) lines.push(`Slots asked for or granted, not yet used: ${asking}.`);
  if (retrying) lines.push('A step failed; trying again.');
  if (nextAt !== undefined) lines.push(`Next look: ${new Date(nextAt).toISOString()}.`);
  return lines.join('\n\n');
}
