// The arming rules (docs/weeder.md, "Armed"): what the armed watch announces
// while its Service is down, what it deletes the moment the Service is ready,
// what it answers for the pods it announced, and what the workflow does when a
// watch ends or fails. Pure: the activity (src/activities/weeder.ts) and the
// workflow (src/workflows/weeder.ts) run the operations these return, in order.
import type { LabelSelector } from '../config/selector.ts';
import { controllerOf, decidePod, type PodLike } from './crashloop.ts';
import type { Candidate, Lane, WatchOutput, WeedOutcome } from './window.ts';

// ------------------------------------------------------------------ the activity's side

/** UIDs looked up by the rules (a Set, or a Map by UID). */
export interface Uids {
  has(uid: string): boolean;
}

/**
 * While the Service is down: the dependants that would be weeded were it ready
 * (crash-looping, with a controller) that are neither announced nor handled,
 * to be announced now, so that their deletion needs no round trip when it is.
 */
export function toAnnounce(
  pods: Iterable<PodLike>, seen: { announced: Uids; handled: ReadonlySet<string> },
  target: { namespace: string; podSelectors: readonly LabelSelector[] },
): Candidate[] {
  const fresh: Candidate[] = [];
  for (const pod of pods) {
    const uid = pod.metadata?.uid;
    const name = pod.metadata?.name;
    if (!uid || !name || seen.announced.has(uid) || seen.handled.has(uid)) continue;
    const d = decidePod(pod, { namespace: target.namespace, podSelectors: target.podSelectors, serviceReady: true, handled: seen.handled });
    const owner = controllerOf(pod);
    if (d.action === 'delete' && owner) fresh.push({ name, uid, containers: d.containers, owner: `${owner.kind}/${owner.name}` });
  }
  return fresh;
}

/**
 * The token the armed watch deletes at once with, or undefined when it deletes
 * nothing itself (a watch that is not armed, or no token). A retried attempt
 * deletes at once too: it is how another worker takes over the moment the
 * Service is ready when the worker of the attempt before died (docs/weeder.md,
 * "Armed"). Its predecessor, if only stalled, may still delete the same pods:
 * each DELETE carries the pod's UID, so one of them is refused, and the
 * retried attempt counts a pod found gone as its predecessor's deletion
 * (`goneOutcome`).
 */
export function deletingToken(input: { weedToken?: unknown; openOnReady?: unknown }): string | undefined {
  return typeof input.weedToken === 'string' && input.openOnReady === true ? input.weedToken : undefined;
}

/**
 * A pod the armed watch meant to delete was gone when its DELETE went out: in
 * a retried attempt, the attempt before (lost with its worker, or stalled and
 * timed out) deleted it, most likely; in the first attempt, someone else did.
 */
export function goneOutcome(uid: string, at: string, attempt: number): WeedOutcome {
  return attempt > 1 ? { uid, outcome: 'deleted', at, earlier: true } : { uid, outcome: 'skipped', reason: 'gone (or replaced) when deleted' };
}

/**
 * The moment the Service is seen ready: the candidates the armed watch deletes
 * itself (a controller, and still in its view), and those of them it must
 * announce first (it deletes only what the workflow has the names of). Held by
 * the safety gates: none (the workflow's deleting activity judges them afresh).
 */
export function deleteAtOnce(
  candidates: readonly Candidate[], view: { present: Uids; announced: Uids; held: boolean },
): { announceFirst: Candidate[]; deletable: Candidate[] } {
  if (view.held) return { announceFirst: [], deletable: [] };
  const deletable = candidates.filter((c) => c.owner !== undefined && view.present.has(c.uid));
  return { announceFirst: deletable.filter((c) => !view.announced.has(c.uid)), deletable };
}

/**
 * The watch's answer for the pods it announced: each has its outcome; one it
 * neither deleted nor handed back as a candidate is skipped, `why`; the
 * candidates handed back are those without an outcome.
 */
export function answerAnnounced(
  announced: readonly Candidate[], outcomes: ReadonlyMap<string, WeedOutcome>, candidates: readonly Candidate[], why: string,
): { weeded: WeedOutcome[]; candidates: Candidate[] } {
  const all = new Map(outcomes);
  const handedBack = new Set(candidates.filter((c) => !all.has(c.uid)).map((c) => c.uid));
  for (const c of announced) {
    if (!all.has(c.uid) && !handedBack.has(c.uid)) all.set(c.uid, { uid: c.uid, outcome: 'skipped', reason: why });
  }
  return { weeded: [...all.values()], candidates: candidates.filter((c) => !all.has(c.uid)) };
}

// ------------------------------------------------------------------ the workflow's side

/** What the workflow does, in this order, when a watching lane ends. */
export type LaneOp =
  /** The Service was seen ready: the window is open from then (the arming of `armedSince` is over). */
  | { op: 'readySeen'; readyAt: number; armedSince: number | undefined }
  /** The watch's own deletions' outcomes. */
  | { op: 'settle'; outcomes: WeedOutcome[] }
  /**
   * Propose the candidates (those not handled become pending) and hand them to
   * a deleting activity; with `retryAnnounced`, also those of them announced
   * and still pending (announced, then not deleted by the watch: a failure it
   * could not judge), which the deleting activity tries afresh.
   */
  | { op: 'weed'; candidates: Candidate[]; retryAnnounced: boolean }
  /** Look at the announced pods still pending (an attempt may have deleted them); `reason` absent: cancelled. */
  | { op: 'lookAtAnnounced'; reason: string | undefined }
  /** The Service is not one the worker is configured for: the workflow fails with the refusal. */
  | { op: 'refused' }
  /** The watch gave up: the window cannot go on. */
  | { op: 'fail'; reason: string };

/** The lane that ended: which, whether it deleted at once (the armed watch with a token), and the arming it was started for. */
export interface LaneRun {
  lane: Lane;
  deletesAtOnce: boolean;
  armedSince: number | undefined;
}

/** A lane's watch answered `found`; `acting`: the window is neither stopped nor failed. */
export function laneAnswered(run: LaneRun, found: WatchOutput, acting: boolean): LaneOp[] {
  const ops: LaneOp[] = [];
  if (found.readyAt !== undefined) ops.push({ op: 'readySeen', readyAt: found.readyAt, armedSince: run.armedSince });
  if (found.weeded?.length) ops.push({ op: 'settle', outcomes: found.weeded });
  ops.push({ op: 'weed', candidates: found.candidates, retryAnnounced: run.deletesAtOnce && acting });
  if (run.deletesAtOnce) ops.push({ op: 'lookAtAnnounced', reason: found.weeded === undefined ? "the armed watch's answer did not include them" : undefined });
  return ops;
}

/** A lane's watch failed: `cancelled` by this workflow, a `refusal` of the Service, or given up with `message`. */
export function laneFailed(run: LaneRun, failure: { cancelled: boolean; refusal: boolean; message: string }, target: string): LaneOp[] {
  const ops: LaneOp[] = [];
  // The watch may have deleted what it announced before it was lost: look.
  if (run.deletesAtOnce) ops.push({ op: 'lookAtAnnounced', reason: failure.cancelled ? undefined : `the armed watch failed: ${failure.message}` });
  // Cancelled by this workflow (stop, continue-as-new, the workflow's own cancellation): nothing more.
  if (failure.cancelled) return ops;
  if (failure.refusal) return [...ops, { op: 'refused' }];
  // Given up (its attempts spent): why is in the result and the failure.
  return [...ops, { op: 'fail', reason: `the ${run.lane === 'armed' ? 'armed' : "window's"} watch of ${target} gave up: ${failure.message}` }];
}

/** An armedWeeding announcement arrived: with no armed watch running to answer for the pods, they are looked at at once. */
export function announcementOps(armedRunning: boolean): LaneOp[] {
  return armedRunning ? [] : [{ op: 'lookAtAnnounced', reason: 'announced by an armed watch that was no longer running' }];
}
