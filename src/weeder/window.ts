// A weeder window's state and the decision of what the workflow runs next.
// Pure: the workflow keeps one WindowState and asks lanesWanted after every
// activity and signal.

/**
 * What a weeder workflow is started with: the Service's name, nothing else.
 * Its dependants' selectors and the window's length come from the worker's
 * configuration (src/weeder/target.ts), looked up when the workflow starts and
 * again by every weeding activity; a Service the worker is not configured for
 * fails the workflow, non-retryably, before anything is done.
 */
export interface WeederInput {
  namespace: string;
  service: string;
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
  /** When the window first opened; absent while the workflow has only been armed. */
  openedAt?: number;
  /** Until when dependants are weeded (0 before the window opens). */
  deadline: number;
  /**
   * Set while the Service is not ready: the workflow watches it, to weed the
   * moment it turns ready again, until `until` at the latest.
   */
  armed?: { since: number; until: number };
  /** When the workflow was first armed, if it was. */
  firstArmedAt?: number;
  transitions: number;
  weeded: WeededPod[];
  /** Crash-looping dependants without a controller: never deleted, reported here. */
  reported: WeededPod[];
  stopped?: { at: number; reason: string };
}

export interface WeederResult {
  namespace: string;
  service: string;
  /** Absent when the window never opened (armed, and the Service stayed not ready). */
  openedAt?: string;
  /** When the workflow was first armed (the Service went not ready), if it was. */
  armedAt?: string;
  closedAt: string;
  /** How many not-ready -> ready transitions (and extend signals) the window saw. */
  transitions: number;
  weeded: WeededPod[];
  reported: WeededPod[];
  stopped?: string;
}

/**
 * How long a workflow stays armed for a Service that stays not ready. Past it
 * the workflow closes; the watcher still opens a window on the transition,
 * only a round trip through Temporal later.
 */
export const ARM_LIMIT_MS = 3600_000;

export class WindowState {
  openedAt?: number;
  deadline = 0;
  armed?: { since: number; until: number };
  firstArmedAt?: number;
  transitions = 0;
  weeded: WeededPod[] = [];
  reported: WeededPod[] = [];
  stopped?: { at: number; reason: string };

  constructor(carried?: WindowSnapshot) {
    if (carried) {
      this.openedAt = carried.openedAt;
      this.deadline = carried.deadline;
      this.armed = carried.armed;
      this.firstArmedAt = carried.firstArmedAt;
      this.transitions = carried.transitions;
      this.weeded = [...carried.weeded];
      this.reported = [...carried.reported];
      this.stopped = carried.stopped;
    }
  }

  /** A transition (or an operator's extend): the window lasts at least `ms` from now. Never shortens it. */
  extend(now: number, ms: number): void {
    this.transitions++;
    this.openedAt ??= now;
    this.deadline = Math.max(this.deadline, now + ms);
  }

  /**
   * The Service went not ready: watch it until it is ready again (for at most
   * `limitMs`). Armed again while armed keeps `since` and lengthens the limit.
   */
  arm(now: number, limitMs: number): void {
    if (this.armed) this.armed = { since: this.armed.since, until: Math.max(this.armed.until, now + limitMs) };
    else this.armed = { since: now, until: now + limitMs };
    this.firstArmedAt ??= now;
  }

  /**
   * The weeding activity saw the Service ready at `readyAt`, having been
   * started for the arming of `armedSince`: the window is open from then. An
   * arming that came later (the Service went down again since) stays.
   */
  readySeen(readyAt: number, armedSince: number | undefined, watchMs: number): void {
    if (this.armed && this.armed.since === armedSince) this.armed = undefined;
    this.openedAt ??= readyAt;
    this.deadline = Math.max(this.deadline, readyAt + watchMs);
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
      openedAt: this.openedAt, deadline: this.deadline, armed: this.armed, firstArmedAt: this.firstArmedAt,
      transitions: this.transitions, weeded: this.weeded, reported: this.reported, stopped: this.stopped,
    };
  }

  result(input: Pick<WeederInput, 'namespace' | 'service'>, now: number): WeederResult {
    return {
      namespace: input.namespace,
      service: input.service,
      openedAt: this.openedAt === undefined ? undefined : new Date(this.openedAt).toISOString(),
      armedAt: this.firstArmedAt === undefined ? undefined : new Date(this.firstArmedAt).toISOString(),
      closedAt: new Date(this.stopped?.at ?? now).toISOString(),
      transitions: this.transitions,
      weeded: this.weeded,
      reported: this.reported,
      stopped: this.stopped?.reason,
    };
  }
}

/**
 * The two kinds of weeding: `window`, while the window is open; `armed`, while
 * the Service is not ready, returning as soon as it is ready again.
 */
export type Lane = 'window' | 'armed';

/**
 * A stretch shorter than this is not worth an activity: it absorbs the clock
 * difference between the worker (which ends the activity at the deadline) and
 * the workflow task's time.
 */
export const MIN_STRETCH_MS = 1000;

/** Whether the window is open at `now` for a stretch worth an activity. */
export function windowOpen(state: Pick<WindowSnapshot, 'deadline'>, now: number): boolean {
  return now < state.deadline - MIN_STRETCH_MS;
}

/**
 * Which lanes should run at `now`, each until when. Nothing once stopped; the
 * workflow closes when nothing is wanted and nothing runs.
 */
export function lanesWanted(state: WindowSnapshot, now: number): Map<Lane, number> {
  const wanted = new Map<Lane, number>();
  if (state.stopped) return wanted;
  if (windowOpen(state, now)) wanted.set('window', state.deadline);
  if (state.armed && now < state.armed.until - MIN_STRETCH_MS) wanted.set('armed', state.armed.until);
  return wanted;
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

/** Longest a carried window may still run: an extension's cap (a day) plus the arming limit. */
const CARRIED_LIMIT_MS = 24 * 3600_000 + ARM_LIMIT_MS;

/**
 * A window carried over by continue-as-new, checked: it arrives in the
 * workflow's input, which anyone who can start workflows can write. Deadlines
 * further off than a window can legitimately reach, and anything not shaped
 * like a snapshot, are refused.
 */
export function carriedWindow(carried: unknown, now: number): { window?: WindowSnapshot } | { refused: string } {
  if (carried === undefined || carried === null) return {};
  const c = carried as Partial<WindowSnapshot>;
  const time = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v <= now + CARRIED_LIMIT_MS;
  const pods = (v: unknown) => Array.isArray(v) && v.every((p) => typeof p === 'object' && p !== null &&
    typeof (p as WeededPod).uid === 'string' && typeof (p as WeededPod).name === 'string');
  const ok = typeof carried === 'object' && time(c.deadline) && (c.openedAt === undefined || time(c.openedAt)) &&
    (c.firstArmedAt === undefined || time(c.firstArmedAt)) &&
    (c.armed === undefined || (typeof c.armed === 'object' && c.armed !== null && time(c.armed.since) && time(c.armed.until))) &&
    typeof c.transitions === 'number' && pods(c.weeded) && pods(c.reported) &&
    (c.stopped === undefined || (typeof c.stopped === 'object' && c.stopped !== null && typeof c.stopped.reason === 'string'));
  if (!ok) return { refused: 'carried is not a window this workflow could have carried over (its shape, or a deadline more than a day ahead)' };
  return { window: c as WindowSnapshot };
}

/** The window's workflow id, as DESIGN.md names it. */
export function weederWorkflowId(namespace: string, service: string): string {
  return `weeder/${namespace}/${service}`;
}
