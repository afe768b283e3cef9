// A weeder window's state and the decision of what the workflow does next.
// Pure: the workflow keeps one WindowState and calls decideNext after every
// activity, signal and timer.
import type { LabelSelector } from '../config/label-selector.ts';

export interface WeederInput {
  namespace: string;
  service: string;
  podSelectors: LabelSelector[];
  /** The configured watchDuration, as written and in ms. */
  watchDuration: { text: string; ms: number };
  /** Carried over by continue-as-new. */
  carried?: WindowSnapshot;
}

/** A pod the window acted on (or, without a controller, only reported). */
export interface WeededPod {
  name: string;
  uid: string;
  /** The crash-looping containers seen. */
  containers: string[];
  /** `Kind/name` of the pod's controller; absent for pods that were only reported. */
  owner?: string;
  /** When the delete was issued (or the pod reported), ISO 8601. */
  at: string;
}

export interface WindowSnapshot {
  openedAt: number;
  deadline: number;
  transitions: number;
  weeded: WeededPod[];
  /** Crash-looping dependants without a controller: never deleted, reported here. */
  reported: WeededPod[];
  stopped?: { at: number; reason: string };
}

export interface WeederResult {
  namespace: string;
  service: string;
  openedAt: string;
  closedAt: string;
  /** How many not-ready -> ready transitions (and extend signals) the window saw. */
  transitions: number;
  weeded: WeededPod[];
  reported: WeededPod[];
  stopped?: string;
}

export class WindowState {
  openedAt: number;
  deadline: number;
  transitions = 0;
  weeded: WeededPod[] = [];
  reported: WeededPod[] = [];
  stopped?: { at: number; reason: string };

  constructor(now: number, carried?: WindowSnapshot) {
    this.openedAt = carried?.openedAt ?? now;
    this.deadline = carried?.deadline ?? now;
    if (carried) {
      this.transitions = carried.transitions;
      this.weeded = [...carried.weeded];
      this.reported = [...carried.reported];
      this.stopped = carried.stopped;
    }
  }

  /** A transition (or an operator's extend): the window lasts at least `ms` from now. Never shortens it. */
  extend(now: number, ms: number): void {
    this.transitions++;
    this.deadline = Math.max(this.deadline, now + ms);
  }

  stop(now: number, reason: string): void {
    this.stopped ??= { at: now, reason };
  }

  /** UIDs already acted on, so that an activity attempt does not act twice. */
  handledUids(): string[] {
    return [...this.weeded, ...this.reported].map((p) => p.uid);
  }

  record(found: { weeded: WeededPod[]; reported: WeededPod[] }): void {
    const known = new Set(this.handledUids());
    for (const p of found.weeded) if (!known.has(p.uid)) this.weeded.push(p);
    for (const p of found.reported) if (!known.has(p.uid)) this.reported.push(p);
  }

  snapshot(): WindowSnapshot {
    return {
      openedAt: this.openedAt, deadline: this.deadline, transitions: this.transitions,
      weeded: this.weeded, reported: this.reported, stopped: this.stopped,
    };
  }

  result(input: Pick<WeederInput, 'namespace' | 'service'>, now: number): WeederResult {
    return {
      namespace: input.namespace,
      service: input.service,
      openedAt: new Date(this.openedAt).toISOString(),
      closedAt: new Date(this.stopped?.at ?? Math.max(now, this.openedAt)).toISOString(),
      transitions: this.transitions,
      weeded: this.weeded,
      reported: this.reported,
      stopped: this.stopped?.reason,
    };
  }
}

export type NextStep =
  | { step: 'close' }
  | { step: 'continue-as-new' }
  | { step: 'weed'; until: number };

/**
 * A stretch shorter than this is not worth an activity: it absorbs the clock
 * difference between the worker (which ends the activity at the deadline) and
 * the workflow task's time.
 */
export const MIN_STRETCH_MS = 1000;

/** Close when stopped or (about) past the deadline; otherwise weed until the deadline. */
export function decideNext(state: WindowSnapshot, now: number, historyIsLarge: boolean): NextStep {
  if (state.stopped || now >= state.deadline - MIN_STRETCH_MS) return { step: 'close' };
  if (historyIsLarge) return { step: 'continue-as-new' };
  return { step: 'weed', until: state.deadline };
}

/**
 * The weeding activity's heartbeat timeout for a stretch of `ms`: how soon a
 * dead worker is noticed (and the activity retried elsewhere). The SDK sends
 * at most one heartbeat per 0.8 x this, and each that reaches the server is a
 * billed action, so a quarter of the stretch (10 s to 60 s) keeps a window at
 * about five heartbeats up to 4 minutes, and one a minute beyond.
 */
export function heartbeatTimeoutMs(ms: number): number {
  return Math.min(60_000, Math.max(10_000, Math.ceil(ms / 4)));
}

/** The window's workflow id, as DESIGN.md names it. */
export function weederWorkflowId(namespace: string, service: string): string {
  return `weeder/${namespace}/${service}`;
}
