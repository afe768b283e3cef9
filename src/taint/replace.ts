// One node's replacements, from the granted slot to the ready replacement: the
// transitions of a pod that holds a slot, as pure functions over the node's
// data that return what the workflow has to do (operations). The workflow
// `taint/<node>` only waits and acts: it runs the operations, feeds their
// outcomes back here, and carries the data over continue-as-new. Everything a
// replacement needs to resume (its state, attempts, retryAt, evictedAt, the
// slot it holds, grants not yet acted on, messages not yet delivered to the
// coordinator) lives in the data, so a new run picks up where the last one
// stopped: without asking for another slot and without evicting twice (an
// eviction is its own activity, recorded in the history when it completes;
// the workflow continues as new only when no activity is running).
//
//   Queued --grant--> Evicting --evicted/gone--> Evicted --ready--> Replaced
//                       |  ^                        `--10 min--> Replaced (lastError)
//             429 (PDB) v  | retryAt
//                     Blocked
//   Evicting/Blocked, taint gone or not due any more -> Replacing (slot given back)
//   Evicting, refused (the pod is not what the configuration manages) -> Replaced (lastError, slot given back)
//   Evicting, the activity gave up (its retries exhausted) -> Replacing with retryAt (slot given back; asks again later)
//   Evicting, the coordinator holds no such grant (a forged one, or one a fresh coordinator does not know) -> Queued (asks again)
//
// A grant arrives as a signal, which anyone who may signal can forge: a pod holds its slot as
// *confirmed* only once its eviction activity found the grant at the coordinator itself
// (evicted, gone or blocked). Only confirmed holds are adopted by a coordinator that asks what
// a node holds (slots.ts holderFound), so a forged grant never becomes a slot in flight.
import { evictionBackoffMs, IN_FLIGHT_TIMEOUT_MS, stillWanted, type NodeTaintData, type PodEntry, type PodState } from './node.ts';

/** States in which a pod holds a granted slot. */
export const HOLDING: readonly PodState[] = ['Evicting', 'Blocked', 'Evicted'];

/** How long awaitReplacement waits per call before answering 'pending'. */
export const REPLACEMENT_WAIT_MS = 30_000;

/** How long to wait before trying again a step whose activity gave up. */
export const STEP_RETRY_MS = 30_000;

/** Messages to the coordinator not yet delivered, carried over continue-as-new. */
export interface Outbox {
  /** Pods that fell due: ask for a slot. */
  request: string[];
  /** Slots (or requests) given back. */
  release: string[];
}

/** The replacement part of a node's data (kept on NodeTaintData, all optional for data carried by older runs). */
export interface ReplacementData {
  /** Grants received and not yet acted on. */
  granted?: string[];
  outbox?: Outbox;
}

export type ReplaceOp =
  | { kind: 'evict'; uid: string }
  | { kind: 'await'; uid: string; waitMs: number };

export interface ReplaceDecision {
  ops: ReplaceOp[];
  /** Next moment something is due (a Blocked pod's retry, an in-flight timeout). */
  nextAt?: number;
}

export function outboxOf(d: NodeTaintData & ReplacementData): Outbox {
  d.outbox ??= { request: [], release: [] };
  return d.outbox;
}

const addOnce = (list: string[], uid: string) => {
  if (!list.includes(uid)) list.push(uid);
};

/** Gives a pod's slot (or its request) back: the coordinator is told through the outbox. */
export function giveBack(d: NodeTaintData & ReplacementData, uid: string): void {
  const pod = d.pods[uid];
  if (pod) delete pod.confirmed;
  const out = outboxOf(d);
  out.request = out.request.filter((u) => u !== uid);
  addOnce(out.release, uid);
}

/** Pods that fell due: their requests go out through the outbox. */
export function askFor(d: NodeTaintData & ReplacementData, uids: readonly string[]): void {
  const out = outboxOf(d);
  for (const uid of uids) {
    out.release = out.release.filter((u) => u !== uid);
    addOnce(out.request, uid);
  }
}

/** Notes grants from the coordinator (they are carried until acted on). */
export function noteGrants(d: NodeTaintData & ReplacementData, uids: readonly string[]): void {
  d.granted ??= [];
  for (const uid of uids) addOnce(d.granted, uid);
}

/**
 * Acts on the grants received: a Queued pod starts its replacement (Evicting,
 * holding the slot); a pod that already holds its slot ignores a repeated
 * grant (the coordinator re-sends grants to check their holders); any other
 * grant is given back at once.
 */
export function takeGrants(d: NodeTaintData & ReplacementData): void {
  for (const uid of (d.granted ?? []).splice(0)) {
    const pod = d.pods[uid];
    if (pod && HOLDING.includes(pod.state)) continue;
    if (pod?.state === 'Queued') {
      pod.state = 'Evicting';
      delete pod.retryAt;
      continue;
    }
    giveBack(d, uid);
  }
}

/**
 * What the pods holding a slot need now (those in `running` have an activity
 * under way and are left alone). Moves pods whose replacement is no longer
 * wanted, or whose in-flight time ran out, and gives their slots back.
 */
export function decideReplacements(d: NodeTaintData & ReplacementData, now: number, running: ReadonlySet<string>): ReplaceDecision {
  const out: ReplaceDecision = { ops: [] };
  const later = (at: number) => {
    if (out.nextAt === undefined || at < out.nextAt) out.nextAt = at;
  };
  for (const pod of Object.values(d.pods)) {
    if (running.has(pod.uid)) continue;
    if (pod.state === 'Blocked' || pod.state === 'Evicting') {
      if (!stillWanted(d, pod.uid, now)) {
        // The taint went (or the pod is not due any more) before its eviction: slot back.
        pod.state = 'Replacing';
        delete pod.retryAt;
        giveBack(d, pod.uid);
        continue;
      }
      if (pod.state === 'Blocked' && pod.retryAt !== undefined && now < pod.retryAt) {
        later(pod.retryAt);
        continue;
      }
      pod.state = 'Evicting';
      delete pod.retryAt;
      out.ops.push({ kind: 'evict', uid: pod.uid });
    } else if (pod.state === 'Evicted') {
      const until = (pod.evictedAt ?? now) + IN_FLIGHT_TIMEOUT_MS;
      if (now >= until) {
        pod.lastError = `no ready replacement within ${IN_FLIGHT_TIMEOUT_MS / 60_000} minutes; slot given back`;
        replaced(d, pod);
        continue;
      }
      if (pod.retryAt !== undefined && now < pod.retryAt) {
        later(Math.min(pod.retryAt, until));
        continue;
      }
      delete pod.retryAt;
      out.ops.push({ kind: 'await', uid: pod.uid, waitMs: Math.max(1, Math.min(REPLACEMENT_WAIT_MS, until - now)) });
    }
  }
  return out;
}

function replaced(d: NodeTaintData & ReplacementData, pod: PodEntry): void {
  pod.state = 'Replaced';
  delete pod.retryAt;
  giveBack(d, pod.uid);
}

/** The outcome of one eviction activity. */
export type EvictOutcome =
  | { outcome: 'evicted' }
  | { outcome: 'gone' }
  | { outcome: 'blocked'; message: string }
  /** Refused non-retryably: the pod or its node is not what the configuration manages. */
  | { outcome: 'refused'; message: string }
  /** The activity gave up (its retries exhausted): whether the pod was evicted is unknown. */
  | { outcome: 'failed'; message: string }
  /** Not asked: evictions are paused (`tend pause`), or the pause state could not be confirmed. */
  | { outcome: 'paused'; message: string }
  /** Not asked: taint replacement is in observe mode; the eviction was recorded (a WouldEvict Event). */
  | { outcome: 'observed'; message: string }
  /** Not asked: the coordinator holds no slot granted to the pod (a forged grant, or one from a coordinator since lost). */
  | { outcome: 'ungranted'; message: string };

/** How soon a paused eviction is tried again: what fell due while paused is evicted this soon after the resume. */
export const PAUSED_RETRY_MS = 5_000;

/**
 * How soon an observed eviction is asked again: the pod waits for a slot again meanwhile, so
 * every pod act mode would evict is recorded, one slot's worth at a time, and a switch to act
 * mode evicts what is due this soon after it.
 */
export const OBSERVED_RETRY_MS = 10_000;

/** Records an eviction's outcome. */
export function evictDone(d: NodeTaintData & ReplacementData, uid: string, r: EvictOutcome, now: number): void {
  const pod = d.pods[uid];
  if (!pod || pod.state !== 'Evicting') return;
  pod.attempts++;
  switch (r.outcome) {
    case 'evicted':
    case 'gone':
      pod.confirmed = true;
      pod.state = 'Evicted';
      pod.evictedAt = now;
      delete pod.retryAt;
      if (r.outcome === 'gone') pod.lastError = 'the pod was gone before its eviction';
      else delete pod.lastError;
      return;
    case 'paused':
      // Paused: nothing was asked. The slot is kept (every eviction waits alike) and the eviction
      // is tried again soon, not counted as an attempt, so it follows the resume within seconds.
      pod.attempts--;
      pod.state = 'Blocked';
      pod.lastError = r.message;
      pod.retryAt = now + PAUSED_RETRY_MS;
      return;
    case 'observed':
      // Observe mode: recorded, not asked, not an attempt. As after an eviction, the slot goes
      // to the next pod (act mode frees it when the replacement is ready); this pod asks for a
      // slot again later, and is evicted then if the mode is act by then.
      pod.attempts--;
      pod.observed = true;
      pod.lastError = r.message;
      pod.state = 'Replacing';
      pod.retryAt = now + OBSERVED_RETRY_MS;
      giveBack(d, uid);
      return;
    case 'blocked':
      // A PodDisruptionBudget says not now: the slot is kept while it is retried.
      pod.confirmed = true;
      pod.state = 'Blocked';
      pod.lastError = r.message;
      pod.retryAt = now + evictionBackoffMs(pod.attempts);
      return;
    case 'refused':
      pod.lastError = r.message;
      replaced(d, pod);
      return;
    case 'ungranted':
      // Nothing was asked and no slot is held: the pod waits for a slot again, not an attempt.
      pod.attempts--;
      pod.state = 'Queued';
      pod.lastError = r.message;
      delete pod.retryAt;
      delete pod.confirmed;
      askFor(d, [uid]);
      return;
    case 'failed':
      // Not known to be evicted: give the slot back and ask again after a back-off,
      // so one pod that cannot be evicted does not hold the cluster's slots. If it
      // was evicted after all, the next attempt finds it gone (UID precondition).
      pod.lastError = `eviction failed: ${r.message}`;
      pod.state = 'Replacing';
      pod.retryAt = now + evictionBackoffMs(pod.attempts);
      giveBack(d, uid);
      return;
  }
}

/** Records an awaitReplacement outcome: 'replaced', 'pending', or the activity gave up (a message). */
export function awaitDone(d: NodeTaintData & ReplacementData, uid: string, r: 'replaced' | 'pending' | { failed: string }, now: number): void {
  const pod = d.pods[uid];
  if (!pod || pod.state !== 'Evicted') return;
  if (r === 'replaced') {
    replaced(d, pod);
  } else if (r !== 'pending') {
    // Keep waiting (the in-flight timeout bounds it), a little later.
    pod.lastError = `waiting for the replacement failed: ${r.failed}`;
    pod.retryAt = now + STEP_RETRY_MS;
  }
}

/** Every pod holding a slot (for cleanup). */
export function holders(d: NodeTaintData): string[] {
  return Object.values(d.pods).filter((p) => HOLDING.includes(p.state)).map((p) => p.uid);
}

/**
 * The pods holding a slot their eviction found granted at the coordinator (an Evicted pod
 * always: it was evicted on one), as `namespace/name` by uid: what a coordinator may adopt.
 */
export function confirmedHolds(d: NodeTaintData): { uid: string; pod: string }[] {
  return Object.values(d.pods)
    .filter((p) => p.state === 'Evicted' || (p.confirmed === true && HOLDING.includes(p.state)))
    .map((p) => ({ uid: p.uid, pod: `${p.namespace}/${p.name}` }));
}

/** One pod of the evicted pod's controller, as it is now. */
export interface ControllerPod {
  uid: string;
  /** creationTimestamp (ms), when known. */
  createdAt?: number;
  ready: boolean;
  terminating: boolean;
}

/**
 * Whether the evicted pod's controller is whole again, from its pods as they
 * are now, never from its status: a ReplicaSet's or StatefulSet's
 * `readyReplicas` may have been written before the eviction (its controller
 * lags, or the API server restarted) and still count the evicted pod. Counted
 * are Ready pods that are not terminating, other than the evicted one.
 * With a desired count (ReplicaSet, StatefulSet `spec.replicas`): as many as
 * that. Without one (other controllers): one created after the evicted pod
 * (any other, when the evicted pod's creation time is not known).
 */
export function controllerWhole(input: { evicted: { uid: string; createdAt?: number }; desired?: number; pods: readonly ControllerPod[] }): boolean {
  const counted = input.pods.filter((p) => p.uid !== input.evicted.uid && p.ready && !p.terminating);
  if (input.desired !== undefined) return counted.length >= input.desired;
  const since = input.evicted.createdAt;
  return counted.some((p) => since === undefined || (p.createdAt !== undefined && p.createdAt > since));
}
