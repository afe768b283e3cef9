// A weeder window's state and the decision of what the workflow runs next.
// Pure: the workflow keeps one WindowState and asks lanesWanted after every
// activity and signal.
import { pastLimits, type ValueLimits } from '../checks/limits.ts';

/**
 * A dependant whose deletion the pause (`tend pause weeder`, or a pause state
 * that cannot be confirmed) holds: its deleting activity is asked again, and
 * waits in place for the resume. Kept while the window closes held: then it
 * was not deleted.
 */
export interface HeldPod {
  name: string;
  uid: string;
  /** When the pause first held it, ISO 8601. */
  since: string;
  /** The pause as the activity saw it: `weeder: paused since ... by ...: REASON`. */
  reason: string;
}

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
  /**
   * Set when the deleting attempt's own answer was lost (its worker died, or
   * the window was stopped while it ran) and the deletion was confirmed by a
   * later look: the pod was gone or being deleted then.
   */
  note?: string;
}

/**
 * A crash-looping dependant the watching activity found while the Service was
 * ready: the workflow hands it to a deleting activity (`owner` set) or a
 * reporting one (no controller), and records it as pending meanwhile.
 */
export interface Candidate {
  name: string;
  uid: string;
  containers: string[];
  /** `Kind/name` of the pod's controller; absent: the pod has none, so it is only reported. */
  owner?: string;
}

/** What the watching activity returns. */
export interface WatchOutput {
  /** Crash-looping dependants seen while the Service was ready, not among those the workflow handled (nor in `weeded`). */
  candidates: Candidate[];
  /** Armed only: when the Service was seen ready (epoch ms). */
  readyAt?: number;
  /**
   * Armed with a token only: what the watch itself did with the dependants it
   * deleted the moment the Service was ready, after the workflow had their
   * names (the armedWeeding signal).
   */
  weeded?: WeedOutcome[];
}

/**
 * The armed watch's announcement, before it deletes: these pods are about to
 * be deleted. `token` is the one the workflow gave that watch; a signal
 * without it is not one of its watches' and is ignored.
 */
export interface ArmedWeeding {
  token: string;
  pods: Candidate[];
}

/** At most this many pods in one announcement (a window's dependants are a handful). */
export const ARMED_WEEDING_MAX_PODS = 1000;
/** Longest name (or UID) taken from a message: a Kubernetes object name is at most 253 characters. */
const NAME_MAX = 253;
/** Most container names kept for one pod (a pod has a few). */
const CONTAINERS_MAX = 64;

/**
 * An armedWeeding signal's payload, checked: it reaches the workflow through
 * Temporal, so anyone who may signal can send one. Only pod names and UIDs are
 * taken from it (recorded as pending, then confirmed by the watch's answer or a
 * look at the pods); nothing in it is deleted on its word.
 */
export function checkArmedWeeding(args: unknown, token: string | undefined): { pods: Candidate[] } | { ignored: string } {
  const past = pastLimits(args);
  if (past !== undefined) return { ignored: `its payload is refused unread: ${past}` };
  if (typeof args !== 'object' || args === null) return { ignored: 'its payload is not an object' };
  const a = args as Partial<ArmedWeeding>;
  if (token === undefined || a.token !== token) return { ignored: 'its token is not the one this run gave its armed watch' };
  if (!Array.isArray(a.pods) || a.pods.length > ARMED_WEEDING_MAX_PODS) return { ignored: `pods must be a list of at most ${ARMED_WEEDING_MAX_PODS}` };
  const pods: Candidate[] = [];
  const name = (v: unknown, max: number): v is string => typeof v === 'string' && v !== '' && v.length <= max;
  for (const p of a.pods as unknown[]) {
    const c = p as Partial<Candidate> | null;
    if (typeof c !== 'object' || c === null || !name(c.name, NAME_MAX) || !name(c.uid, NAME_MAX)) {
      return { ignored: `each pod must be {name, uid}, each at most ${NAME_MAX} characters` };
    }
    const containers = Array.isArray(c.containers) ? c.containers.filter((x): x is string => name(x, NAME_MAX)).slice(0, CONTAINERS_MAX) : [];
    pods.push({ name: c.name, uid: c.uid, containers, ...(name(c.owner, 2 * NAME_MAX) ? { owner: c.owner } : {}) });
  }
  return { pods };
}

/**
 * What the deleting activity did with one candidate, judged on the pod and the
 * Service's slices as they are when it runs:
 * - `deleted`: deleted (UID precondition) or, on a retried attempt, found gone
 *   or being deleted (`earlier`: an earlier attempt's deletion, whose answer was lost);
 * - `reported`: crash-looping without a controller: an Event, no deletion;
 * - `skipped`: nothing done, `reason` says why (recovered, Service not ready, gone, replaced);
 * - `failed`: the API refused the deletion for good (`reason`: its words).
 */
export type WeedOutcome =
  | { uid: string; outcome: 'deleted'; at: string; earlier?: boolean }
  | { uid: string; outcome: 'reported'; at: string }
  | { uid: string; outcome: 'skipped'; reason: string }
  | { uid: string; outcome: 'failed'; reason: string; at: string }
  | GatedOutcome;

/**
 * With the safety gates (docs/safety.md), a candidate judged for deletion may
 * also be:
 * - `observed`: observe mode recorded the deletion (`note`), did not make it;
 * - `held`: the pause holds it (`reason`: the pause as seen), nothing was done.
 * Both are asked again by the workflow, with a hold, while the window is open.
 */
export type GatedOutcome =
  | { uid: string; outcome: 'observed'; at: string; note: string }
  | { uid: string; outcome: 'held'; reason: string };

/** What a later look at a pod whose deletion's outcome was lost saw. */
export type PodSeen = { uid: string; seen: 'gone' | 'deleting' | 'present' };

/** A dependant the window could not delete, and why. */
export interface FailedPod {
  name: string;
  uid: string;
  reason: string;
  at: string;
}

/**
 * The states a window goes through, as docs/weeder.md draws them: `armed` while
 * its Service is not ready (watched, to weed the moment it is ready again),
 * `open` while it weeds (until `deadline`), `closed` once it is neither (the
 * workflow ends with its result). `tend weeder list` shows the first two.
 */
export const windowStates = ['armed', 'open', 'closed'] as const;
export type WindowStateName = (typeof windowStates)[number];

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
  /** Handed to a deleting activity whose outcome is not back yet (empty across continue-as-new). */
  pending?: Candidate[];
  /** Dependants whose deletion the API refused, or whose outcome could not be learnt. */
  failed?: FailedPod[];
  /** What observe mode recorded instead of deleting (`note`: what and why), once per pod. */
  observed?: WeededPod[];
  /** Deletions the pause holds now (asked again, waiting in place for the resume). */
  held?: HeldPod[];
  stopped?: { at: number; reason: string };
  /** The window could not go on (its watching activity gave up): why. */
  failure?: { at: number; reason: string };
  /** Pods dropped from the lists once each held RECORD_MAX (absent: none). */
  dropped?: number;
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
  /** Dependants whose deletion the API refused (or whose outcome could not be learnt), with why. */
  failed: FailedPod[];
  /**
   * Observe mode: the deletions it recorded instead of making them (`note`). A
   * pod deleted later in the window, once the weeder acted, is in `weeded` too.
   */
  observed: WeededPod[];
  /** Deletions the pause still held when the window closed: they were not made. */
  held: HeldPod[];
  stopped?: string;
  /** Why the window could not go on, when it could not (the workflow then fails with this reason and this result). */
  failure?: string;
  /** Pods dropped from the lists once each held RECORD_MAX, oldest first (absent: none). Their Events stay on their owners. */
  dropped?: number;
}

/**
 * How long a workflow stays armed for a Service that stays not ready. Past it
 * the workflow closes; the watcher still opens a window on the transition,
 * only a round trip through Temporal later.
 */
export const ARM_LIMIT_MS = 3600_000;

/** Most pods each of the window's lists (weeded, reported, failed, observed) keeps: past it the oldest go, counted in `dropped`. */
export const RECORD_MAX = 500;
/** Most pods pending at once: more found meanwhile are proposed again once these are settled. */
export const PENDING_MAX = 1000;

/**
 * A window's state. Every lookup by UID goes through an index (pending, held,
 * observed, and the UIDs recorded), so a message or an outcome costs the same
 * however many pods the window has handled; the lists are bounded (RECORD_MAX,
 * PENDING_MAX), so what a continue-as-new carries is too.
 */
export class WindowState {
  openedAt?: number;
  deadline = 0;
  armed?: { since: number; until: number };
  firstArmedAt?: number;
  transitions = 0;
  weeded: WeededPod[] = [];
  reported: WeededPod[] = [];
  failed: FailedPod[] = [];
  observed: WeededPod[] = [];
  /** Pods dropped from full lists, oldest first. */
  dropped = 0;
  stopped?: { at: number; reason: string };
  failure?: { at: number; reason: string };
  private readonly pendingByUid = new Map<string, Candidate>();
  private readonly heldByUid = new Map<string, HeldPod>();
  private readonly observedUids = new Set<string>();
  /** UIDs in weeded, reported or failed. */
  private readonly recordedUids = new Set<string>();

  constructor(carried?: WindowSnapshot) {
    if (carried) {
      this.openedAt = carried.openedAt;
      this.deadline = carried.deadline;
      this.armed = carried.armed;
      this.firstArmedAt = carried.firstArmedAt;
      this.transitions = carried.transitions;
      this.dropped = carried.dropped ?? 0;
      for (const p of carried.weeded) this.record(this.weeded, p);
      for (const p of carried.reported) this.record(this.reported, p);
      for (const p of carried.failed ?? []) this.record(this.failed, p);
      for (const p of carried.observed ?? []) this.recordObserved(p);
      for (const p of carried.pending ?? []) this.pendingByUid.set(p.uid, p);
      for (const p of carried.held ?? []) this.heldByUid.set(p.uid, p);
      this.stopped = carried.stopped;
      this.failure = carried.failure;
    }
  }

  /** Handed to a deleting activity whose outcome is not back yet, in the order they were. */
  get pending(): Candidate[] {
    return [...this.pendingByUid.values()];
  }

  /** Deletions the pause holds now, in the order it first held them. */
  get held(): HeldPod[] {
    return [...this.heldByUid.values()];
  }

  /** Whether the window still acts: not stopped, not failed. */
  get acting(): boolean {
    return !this.stopped && !this.failure;
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

  /** The window cannot go on (a watching activity gave up): nothing more is started. */
  fail(now: number, reason: string): void {
    this.failure ??= { at: now, reason };
  }

  /**
   * UIDs the window has handled or is handling (weeded, reported, failed,
   * pending), so that a watching activity does not propose them again. An
   * observed or held pod stays pending while the workflow asks it again; one
   * released (a new run after continue-as-new) may be proposed again, and is
   * then not recorded a second time (`observedOf`).
   */
  handledUids(): string[] {
    return [...this.weeded, ...this.reported, ...this.failed, ...this.pendingByUid.values()].map((p) => p.uid);
  }

  /** Whether the window has handled, or is handling, this pod. */
  private handles(uid: string): boolean {
    return this.recordedUids.has(uid) || this.pendingByUid.has(uid);
  }

  /** Of these UIDs, those observe mode has recorded already (their deleting activity records them no more). */
  observedOf(uids: readonly string[]): string[] {
    return uids.filter((u) => this.observedUids.has(u));
  }

  /**
   * Candidates found by a watching activity: those not handled yet become
   * pending and are returned, for the workflow to hand to a deleting
   * activity. Nothing once stopped or failed.
   */
  propose(candidates: readonly Candidate[]): Candidate[] {
    return this.acting ? this.addPending(candidates) : [];
  }

  /**
   * Pods the armed watch announced it is deleting: recorded as pending (even
   * after a stop: the deletion may be issued; its outcome is recorded), unless
   * handled or pending already. Returns those it added.
   */
  announce(pods: readonly Candidate[]): Candidate[] {
    return this.addPending(pods);
  }

  private addPending(pods: readonly Candidate[]): Candidate[] {
    const added: Candidate[] = [];
    for (const c of pods) {
      if (this.pendingByUid.size >= PENDING_MAX) break;
      if (this.handles(c.uid)) continue;
      this.pendingByUid.set(c.uid, c);
      added.push(c);
    }
    return added;
  }

  isPending(uid: string): boolean {
    return this.pendingByUid.has(uid);
  }

  /**
   * The deleting activity's outcomes for pending candidates. A skipped one may
   * be proposed again. An observed or held one stays pending: the workflow asks
   * again (with a hold) while the window is open, and `release`s it otherwise.
   * Observed: recorded once per pod. Held: listed with the pause, since the
   * first time, until another outcome comes.
   */
  settle(outcomes: readonly WeedOutcome[], now = Date.now()): void {
    for (const o of outcomes) {
      if (o.outcome === 'observed' || o.outcome === 'held') {
        const c = this.pendingByUid.get(o.uid);
        if (!c) continue;
        if (o.outcome === 'observed') {
          this.heldByUid.delete(o.uid);
          if (!this.observedUids.has(o.uid)) this.recordObserved({ name: c.name, uid: c.uid, containers: c.containers, owner: c.owner, at: o.at, note: o.note });
        } else {
          const h = this.heldByUid.get(o.uid);
          if (h) h.reason = o.reason;
          else this.heldByUid.set(o.uid, { name: c.name, uid: c.uid, since: new Date(now).toISOString(), reason: o.reason });
        }
        continue;
      }
      const c = this.takePending(o.uid);
      if (!c) continue;
      this.heldByUid.delete(o.uid);
      const pod = { name: c.name, uid: c.uid, containers: c.containers };
      if (o.outcome === 'deleted') {
        const observed = this.observedUids.has(o.uid) ? this.observed.find((p) => p.uid === o.uid) : undefined;
        const note = o.earlier ? 'deleted by an earlier attempt whose answer was lost (the pod was gone or being deleted when the next attempt looked)'
          : observed ? `recorded in observe mode at ${observed.at}; deleted once the weeder acted` : undefined;
        this.record(this.weeded, { ...pod, owner: c.owner, at: o.at, ...(note ? { note } : {}) });
      } else if (o.outcome === 'reported') {
        this.record(this.reported, { ...pod, at: o.at });
      } else if (o.outcome === 'failed') {
        this.record(this.failed, { name: c.name, uid: c.uid, reason: o.reason, at: o.at });
      }
    }
  }

  /**
   * The deleting activity ended without an answer (`reason`: it gave up; absent:
   * it was cancelled, by a stop), so an attempt may have deleted: a later look
   * at the pods says. Gone or being deleted: recorded as weeded; still there:
   * not deleted (failed with `reason` when the activity gave up, else dropped).
   */
  settleLost(candidates: readonly Candidate[], seen: readonly PodSeen[], reason: string | undefined, now: number): void {
    const at = new Date(now).toISOString();
    const seenOf = new Map(seen.map((p) => [p.uid, p.seen]));
    for (const c of candidates) {
      if (!this.takePending(c.uid)) continue;
      const s = seenOf.get(c.uid);
      // Held and not deleted (a stop cancelled the wait): it stays held, its deletion was not made.
      if (s !== 'present' || reason !== undefined) this.heldByUid.delete(c.uid);
      if (s === 'gone' || s === 'deleting') {
        this.record(this.weeded, { name: c.name, uid: c.uid, containers: c.containers, owner: c.owner, at,
          note: `the deleting activity's answer was lost (${reason ?? 'cancelled'}); the pod was ${s === 'gone' ? 'gone' : 'being deleted'} when looked at again` });
      } else if (s === undefined) {
        this.record(this.failed, { name: c.name, uid: c.uid, at, reason: `outcome unknown: ${reason ?? 'cancelled'}, and the pod could not be looked at again` });
      } else if (reason !== undefined) {
        this.record(this.failed, { name: c.name, uid: c.uid, at, reason });
      }
    }
  }

  /**
   * Observed or held candidates the workflow does not ask again (the window
   * closed, or was stopped): no longer pending. Observed ones stay recorded as
   * observed; held ones stay held: their deletion was not made.
   */
  release(uids: readonly string[]): void {
    for (const uid of uids) this.takePending(uid);
  }

  private takePending(uid: string): Candidate | undefined {
    const c = this.pendingByUid.get(uid);
    this.pendingByUid.delete(uid);
    return c;
  }

  /** Adds to one of the recorded lists, dropping its oldest past RECORD_MAX. */
  private record<T extends { uid: string }>(list: T[], pod: T): void {
    list.push(pod);
    this.recordedUids.add(pod.uid);
    if (list.length <= RECORD_MAX) return;
    const old = list.shift()!;
    this.dropped++;
    if (!this.weeded.some((p) => p.uid === old.uid) && !this.reported.some((p) => p.uid === old.uid) && !this.failed.some((p) => p.uid === old.uid)) {
      this.recordedUids.delete(old.uid);
    }
  }

  private recordObserved(pod: WeededPod): void {
    this.observedUids.add(pod.uid);
    this.observed.push(pod);
    if (this.observed.length <= RECORD_MAX) return;
    this.observedUids.delete(this.observed.shift()!.uid);
    this.dropped++;
  }

  snapshot(): WindowSnapshot {
    return {
      openedAt: this.openedAt, deadline: this.deadline, armed: this.armed, firstArmedAt: this.firstArmedAt,
      transitions: this.transitions, weeded: this.weeded, reported: this.reported, pending: this.pending,
      failed: this.failed, observed: this.observed, held: this.held, stopped: this.stopped, failure: this.failure,
      ...(this.dropped > 0 ? { dropped: this.dropped } : {}),
    };
  }

  result(input: Pick<WeederInput, 'namespace' | 'service'>, now: number): WeederResult {
    return {
      namespace: input.namespace,
      service: input.service,
      openedAt: this.openedAt === undefined ? undefined : new Date(this.openedAt).toISOString(),
      armedAt: this.firstArmedAt === undefined ? undefined : new Date(this.firstArmedAt).toISOString(),
      closedAt: new Date(this.stopped?.at ?? this.failure?.at ?? now).toISOString(),
      transitions: this.transitions,
      weeded: this.weeded,
      reported: this.reported,
      failed: this.failed,
      observed: this.observed,
      held: this.held,
      stopped: this.stopped?.reason,
      failure: this.failure?.reason,
      ...(this.dropped > 0 ? { dropped: this.dropped } : {}),
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
  if (state.stopped || state.failure) return wanted;
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
 * The most a weeder workflow's start input may hold (its Service's name and a
 * carried window of bounded lists), measured before any field is read.
 */
export const WEEDER_INPUT_LIMITS: ValueLimits = Object.freeze({
  maxDepth: 6,
  maxNodes: (4 * RECORD_MAX + 2 * PENDING_MAX) * 24 + 64,
  maxChars: 4 * 1024 * 1024,
});
/** Longest text a carried pod or reason may hold (names are at most 253, UIDs 36; notes and reasons are tend's own words). */
const CARRIED_TEXT_MAX = 4096;

const text = (v: unknown) => typeof v === 'string' && v.length <= CARRIED_TEXT_MAX;
const podsOf = (v: unknown, max: number) => Array.isArray(v) && v.length <= max && v.every((p) => typeof p === 'object' && p !== null &&
  text((p as WeededPod).uid) && text((p as WeededPod).name) &&
  ((p as WeededPod).containers === undefined || (Array.isArray((p as WeededPod).containers) && (p as WeededPod).containers.every(text))));

/**
 * A window carried over by continue-as-new, checked: it arrives in the
 * workflow's input, which anyone who can start workflows can write. Past
 * WEEDER_INPUT_LIMITS, deadlines further off than a window can legitimately
 * reach, lists longer than a window keeps, and anything not shaped like a
 * snapshot, are refused. Total: never throws.
 */
export function carriedWindow(carried: unknown, now: number): { window?: WindowSnapshot } | { refused: string } {
  if (carried === undefined || carried === null) return {};
  const past = pastLimits(carried, WEEDER_INPUT_LIMITS);
  if (past !== undefined) return { refused: `carried is refused unread: ${past}` };
  const c = carried as Partial<WindowSnapshot>;
  const time = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v <= now + CARRIED_LIMIT_MS;
  const reasoned = (v: unknown) => v === undefined || (typeof v === 'object' && v !== null && text((v as { reason?: unknown }).reason));
  const ok = typeof carried === 'object' && time(c.deadline) && (c.openedAt === undefined || time(c.openedAt)) &&
    (c.firstArmedAt === undefined || time(c.firstArmedAt)) &&
    (c.armed === undefined || (typeof c.armed === 'object' && c.armed !== null && time(c.armed.since) && time(c.armed.until))) &&
    typeof c.transitions === 'number' && Number.isSafeInteger(c.transitions) &&
    (c.dropped === undefined || (typeof c.dropped === 'number' && Number.isSafeInteger(c.dropped))) &&
    podsOf(c.weeded, RECORD_MAX) && podsOf(c.reported, RECORD_MAX) &&
    (c.pending === undefined || podsOf(c.pending, PENDING_MAX)) && (c.failed === undefined || podsOf(c.failed, RECORD_MAX)) &&
    (c.observed === undefined || podsOf(c.observed, RECORD_MAX)) && (c.held === undefined || podsOf(c.held, PENDING_MAX)) &&
    reasoned(c.stopped) && reasoned(c.failure);
  if (!ok) return { refused: 'carried is not a window this workflow could have carried over (its shape, its size, or a deadline more than a day ahead)' };
  return { window: c as WindowSnapshot };
}
