// The kubelet's container restart back-off, as k8s.io/client-go/util/flowcontrol
// Backoff implements it and kuberuntime's doBackOff uses it (no jitter):
//
// - A container that exits is restarted at once if it has no back-off entry
//   yet (its first crash), and the entry is created with the initial delay.
// - While an entry exists, a container that exited at `finishedAt` stays in
//   CrashLoopBackOff until `finishedAt + delay`; restarting it then doubles the
//   delay, up to the maximum (10 s, 20 s, 40 s … 300 s, 300 s).
// - An entry is stale, and starts over, once the exit happens more than twice
//   the maximum after the entry was last touched (the last restart): in other
//   words a container that ran 10 minutes without crashing is forgiven.
//
// Pure functions over an immutable entry; the caller owns the clock.
import { scaledMs } from './time.ts';

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

/** kubelet's defaults: backOffPeriod 10 s, MaxContainerBackOff 300 s. */
export const INITIAL_BACKOFF_SECONDS = 10;
export const MAX_BACKOFF_SECONDS = 300;

export function containerBackoffPolicy(timeScale: number): BackoffPolicy {
  return {
    initialMs: scaledMs(INITIAL_BACKOFF_SECONDS, timeScale),
    maxMs: scaledMs(MAX_BACKOFF_SECONDS, timeScale),
  };
}

export interface BackoffEntry {
  /** The current delay. */
  delayMs: number;
  /** When the entry was last advanced: the last restart. */
  lastUpdateMs: number;
}

/** flowcontrol.hasExpired: "stable" once it is ok for twice the maximum. */
export function hasExpired(policy: BackoffPolicy, entry: BackoffEntry, eventMs: number): boolean {
  return eventMs - entry.lastUpdateMs > policy.maxMs * 2;
}

/** flowcontrol.IsInBackOffSince: whether a container that exited at `eventMs` must still wait at `nowMs`. */
export function inBackoffSince(
  policy: BackoffPolicy,
  entry: BackoffEntry | undefined,
  eventMs: number,
  nowMs: number,
): boolean {
  if (!entry || hasExpired(policy, entry, eventMs)) return false;
  return nowMs - eventMs < entry.delayMs;
}

/** flowcontrol.Next: the entry after restarting a container that exited at `eventMs`, at `nowMs`. */
export function nextBackoff(
  policy: BackoffPolicy,
  entry: BackoffEntry | undefined,
  eventMs: number,
  nowMs: number,
): BackoffEntry {
  if (!entry || hasExpired(policy, entry, eventMs)) {
    return { delayMs: policy.initialMs, lastUpdateMs: nowMs };
  }
  return { delayMs: Math.min(entry.delayMs * 2, policy.maxMs), lastUpdateMs: nowMs };
}
