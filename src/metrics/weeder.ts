// The weeder's counters and its reaction-time histogram, fed by its activities.
//
// Reaction time: an armed window's watch returns the moment it sees its Service
// ready (readyAt); the first deletions of that Service's dependants after it,
// in this worker process, observe now - readyAt once. Deletions later in the
// window are not reactions to the Service turning ready and are not observed, nor are deletions the
// pause held or observe mode recorded first (their time is the operator's).
// A watch and its deletions run on one worker unless that worker dies between
// them: then the new worker has no readyAt and observes nothing (an honest gap,
// never a made-up value).
import type { WeedOutcome } from '../weeder/window.ts';
import { weederDeletesRefused, weederPodsReported, weederPodsWeeded, weederReaction } from './registry.ts';

/** namespace/service -> when an armed watch last saw it ready, not yet followed by a deletion. */
const readySince = new Map<string, number>();
/** Older readiness is no longer a reaction anybody waits on (and bounds the map). */
const READY_KEPT_MS = 10 * 60_000;

const key = (namespace: string, service: string) => `${namespace}/${service}`;

export function noteReadyAt(namespace: string, service: string, at: number): void {
  readySince.set(key(namespace, service), at);
  const now = Date.now();
  for (const [k, t] of readySince) if (now - t > READY_KEPT_MS) readySince.delete(k);
}

/**
 * Counts one weedPods call's outcomes. A deletion an earlier attempt made
 * (`earlier`: its answer was lost) was counted by that attempt, if its worker
 * lived to count it, and is not counted again.
 */
export function weederOutcomes(namespace: string, service: string, outcomes: readonly WeedOutcome[], now = Date.now()): void {
  const labels = { namespace, service };
  const k = key(namespace, service);
  let deleted = 0;
  for (const o of outcomes) {
    if (o.outcome === 'deleted' && !o.earlier) deleted++;
    else if (o.outcome === 'reported') weederPodsReported.inc(labels);
    else if (o.outcome === 'failed') weederDeletesRefused.inc(labels);
    // Held by the pause or recorded by observe mode: the deletions that follow wait on an operator, not on tend.
    else if (o.outcome === 'held' || o.outcome === 'observed') readySince.delete(k);
  }
  if (deleted === 0) return;
  weederPodsWeeded.inc(labels, deleted);
  const since = readySince.get(k);
  if (since !== undefined) {
    readySince.delete(k);
    if (now - since <= READY_KEPT_MS) weederReaction.observe(labels, Math.max(0, now - since) / 1000);
  }
}
