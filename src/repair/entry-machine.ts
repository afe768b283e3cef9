// A repair entry as a pure machine: its steps (health check, drain, repair
// command, watch, next step), what each drain outcome means, CKE's drain
// back-off, and the lifting of its cordon at its end. `next(now)` says what to
// do from the entry's state, `apply(outcome)` takes what the doing gave and
// says what follows; the workflow (src/workflows/repair.ts) only carries the
// operations out as activities, timers and signals. The state is plain data
// (carried across continue-as-new as EntryResume); behaviours behind
// patched() are flags the workflow answers once, when the machine first asks
// (a `flag` operation), at the place in history where they were recorded.
// Pure: imported by workflow code, table-tested in test/unit/repair-entry-machine.
import { decideEntryOp } from './decide.ts';
import { ZERO_TIME, type RepairQueueEntry } from './entry.ts';
import {
  REPAIR_CKE_BACKOFF_PATCH, REPAIR_CKE_FAILED_STEP_PATCH, REPAIR_LIFT_APART_PATCH, REPAIR_LIFT_UNTIL_DONE_PATCH, type EntryInput, type EntryResume,
} from './messages.ts';
import type { RepairPlan } from './procedure.ts';

// ---------------------------------------------------------------- back-off

export const DRAIN_BACKOFF_BASE_SECONDS = 60;
export const DRAIN_BACKOFF_MAX_SECONDS = 1200;

/**
 * The back-off of entries whose workflow started before tend took CKE's
 * formula (they replay it): count x 60 s, at most 20 min, scaled.
 */
export function drainBackoff(count: number, timeScale: number): { count: number; seconds: number } {
  const next = count + 1;
  return { count: next, seconds: Math.min(next * DRAIN_BACKOFF_BASE_SECONDS, DRAIN_BACKOFF_MAX_SECONDS) * timeScale };
}

/** CKE's drainBackOffBaseSeconds (op/reboot.go). */
export const CKE_DRAIN_BACKOFF_BASE_SECONDS = 300;

/**
 * CKE's repair drain back-off (op/repair_drain_timeout.go, repairDrainBackOff):
 * the count goes up by one, and the wait is 300 s plus a random whole number
 * of seconds below 300 x the new count; no cap. `random` is in [0, 1): the
 * workflow's own deterministic Math.random, so a replay draws the same share.
 * The time scale shrinks it for tests.
 */
export function ckeDrainBackoff(count: number, timeScale: number, random: number): { count: number; seconds: number } {
  if (!(random >= 0 && random < 1)) throw new RangeError(`ckeDrainBackoff: random must be in [0, 1) (got ${random})`);
  const next = count + 1;
  const share = Math.floor(random * CKE_DRAIN_BACKOFF_BASE_SECONDS * next);
  return { count: next, seconds: (CKE_DRAIN_BACKOFF_BASE_SECONDS + share) * timeScale };
}

// ---------------------------------------------------------------- the machine

/** Behaviours behind patched(), named by their patch ids (src/repair/messages.ts). */
export const ENTRY_FLAGS = {
  ckeBackoff: REPAIR_CKE_BACKOFF_PATCH,
  ckeFailedStep: REPAIR_CKE_FAILED_STEP_PATCH,
  liftUntilDone: REPAIR_LIFT_UNTIL_DONE_PATCH,
  liftApart: REPAIR_LIFT_APART_PATCH,
} as const;
export type EntryFlag = (typeof ENTRY_FLAGS)[keyof typeof ENTRY_FLAGS];

/** Observe records an entry keeps for its result and the Web UI. */
export const OBSERVED_MAX = 50;
/** A paused write asked again waits in place this long (heartbeating) for the resume. */
export const PAUSE_HOLD_MS = 10 * 60_000;
/** How long a lift waits after an uncordon that ran out of attempts (time-scaled). */
export const LIFT_RETRY_MS = 60_000;

/** What a drain gives (repairDrain, src/activities/repair.ts), as far as the machine reads it. */
export type DrainResult =
  | { ok: true; observed?: { cordon: boolean; evict: number; delete: number } }
  | { ok: false; reason: string; held?: boolean; cordonKept?: boolean; observed?: boolean };
/** What a command gives (repairRunCommand): `paused` says why nothing ran. */
export interface CommandResult {
  ok: boolean;
  error?: string;
  paused?: string | boolean;
  observed?: boolean;
  runs?: number;
}
export type UncordonResult = 'changed' | 'unchanged' | 'paused' | 'observed' | string;

export type EntryOp =
  /** The first health check (repairWatchHealth until 0). */
  | { op: 'check-health' }
  /** Until `enabled` or the back-off changes, or `until`. */
  | { op: 'wait'; until?: number }
  /** The entry's progress to the queue; `ahead`: not waited for (its successor waits for it). */
  | { op: 'report'; fields: Partial<RepairQueueEntry>; ahead: boolean }
  | { op: 'drain'; deadline: number }
  | { op: 'command'; kind: 'repair_command'; timeoutSeconds: number; retries: number; intervalSeconds: number; after: number; holdMs: number }
  | { op: 'command'; kind: 'success_command'; timeoutSeconds: number; retries: 0; intervalSeconds: 0; after: 0; holdMs: number }
  | { op: 'watch'; until: number }
  /** `lifting`: a failure comes back as an outcome (the lift decides); otherwise it ends the entry. */
  | { op: 'uncordon'; holdMs: number; lifting: boolean }
  /** The shell answers patched(name), once. */
  | { op: 'flag'; name: EntryFlag }
  /** The shell draws the workflow's Math.random (for CKE's back-off) and says the time. */
  | { op: 'draw' }
  | { op: 'sleep'; ms: number }
  /** Starts `repair/<index>/lift` (abandoned) and ends the lift here. */
  | { op: 'start-lift'; reason: string }
  /** The Web UI details changed. */
  | { op: 'show' }
  | { op: 'log'; level: 'info' | 'warn'; message: string; fields: Record<string, unknown> }
  | { op: 'end'; result: EntryResult };

export interface EntryResult {
  entry: RepairQueueEntry;
  reason?: string;
  observed?: string[];
}

export type EntryOutcome =
  | { kind: 'health'; healthy: boolean }
  | { kind: 'drain'; result: DrainResult; now: number }
  | { kind: 'command'; result: CommandResult; now: number }
  | { kind: 'watched'; healthy: boolean }
  | { kind: 'uncordon'; out: UncordonResult; now: number }
  | { kind: 'uncordon-failed'; error: string; refused: boolean }
  | { kind: 'flag'; name: EntryFlag; on: boolean; now: number }
  | { kind: 'draw'; random: number; now: number }
  | { kind: 'slept'; now: number };

/**
 * What the machine waits for, newest last: continuations (what follows once the operation in
 * flight is done) and markers (which operation is in flight, for its outcome).
 */
type Then =
  /** Continuations. */
  | { then: 'lift'; ending: boolean }
  | { then: 'backoff'; reason: string }
  | { then: 'success' }
  | { then: 'finish'; status: 'succeeded' | 'failed'; reason?: string; fields: Partial<RepairQueueEntry> }
  | { then: 'fail'; reason: string }
  | { then: 'command-failed'; error: string }
  | { then: 'lift-failed'; error: string }
  /** Markers. */
  | { then: 'lifting'; ending: boolean }
  | { then: 'uncordoning' }
  | { then: 'success-command' }
  | { then: 'drawing'; reason: string };

/** The entry's state: its progress as it is carried across continue-as-new (EntryResume), and what a run shows. */
export interface EntryState extends Pick<EntryResume, 'drained' | 'commandDone' | 'cordoned' | 'healthyAtStart' | 'healthy' | 'watchUntil' | 'backoffExpire' | 'drainDeadline'> {
  entry: RepairQueueEntry;
  enabled: boolean;
  plan?: RepairPlan;
  commandRuns: number;
  /** The last write repair's pause held, shown until it goes out. */
  held?: string;
  /** Why the cordon is not lifted yet, while it is tried again. */
  lifting?: string;
  observed: string[];
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The state an entry starts with: from its input, and where a run that continued-as-new left off. */
export function initialState(input: EntryInput): EntryState {
  const s: EntryState = {
    entry: {
      index: input.index, address: input.address, nodename: '', machine_type: input.machine_type, operation: input.operation,
      ...(input.serial ? { serial: input.serial } : {}),
      status: 'processing', step: 0, step_status: 'waiting', drain_backoff_count: 0, drain_backoff_expire: ZERO_TIME,
    },
    enabled: input.enabled, drained: false, commandDone: false, cordoned: false, watchUntil: 0, backoffExpire: 0, commandRuns: 0, observed: [],
  };
  const r = input.resume;
  if (!r) return s;
  return {
    ...s,
    entry: {
      ...s.entry, nodename: r.nodename, step: r.step, step_status: r.step_status, drain_backoff_count: r.drain_backoff_count, drain_backoff_expire: r.drain_backoff_expire,
      ...(r.last_transition_time ? { last_transition_time: r.last_transition_time } : {}),
    },
    drained: r.drained, commandDone: r.commandDone, cordoned: r.cordoned, healthyAtStart: r.healthyAtStart, healthy: r.healthy,
    watchUntil: r.watchUntil, backoffExpire: r.backoffExpire, drainDeadline: r.drainDeadline, plan: r.plan, commandRuns: r.commandRuns ?? 0,
  };
}

/** Where this run leaves off, for the next (numbers and flags only). */
export function resumeOf(s: EntryState): EntryResume {
  const e = s.entry;
  return {
    nodename: e.nodename, step: e.step, step_status: e.step_status,
    ...(e.last_transition_time ? { last_transition_time: e.last_transition_time } : {}),
    drain_backoff_count: e.drain_backoff_count, drain_backoff_expire: e.drain_backoff_expire,
    drained: s.drained, commandDone: s.commandDone, cordoned: s.cordoned,
    ...(s.healthyAtStart !== undefined ? { healthyAtStart: s.healthyAtStart } : {}),
    ...(s.healthy !== undefined ? { healthy: s.healthy } : {}),
    watchUntil: s.watchUntil, backoffExpire: s.backoffExpire,
    ...(s.drainDeadline !== undefined ? { drainDeadline: s.drainDeadline } : {}),
    ...(s.commandRuns > 0 ? { commandRuns: s.commandRuns } : {}),
    plan: s.plan!,
  };
}

/** The progress fields an entry reports to the queue (never its identity). */
export function progress(e: RepairQueueEntry): Partial<RepairQueueEntry> {
  return {
    nodename: e.nodename, status: e.status, step: e.step, step_status: e.step_status,
    ...(e.last_transition_time ? { last_transition_time: e.last_transition_time } : {}),
    drain_backoff_count: e.drain_backoff_count, drain_backoff_expire: e.drain_backoff_expire,
  };
}

/** What an entry shows in the Web UI: what a pause holds, why its cordon is not lifted, what observe mode recorded. */
export function details(s: EntryState): string {
  const lines = [`step ${s.entry.step} ${s.entry.step_status}`];
  if (s.held) lines.push(`paused: ${s.held}; goes on within a second of tend resume repair`);
  if (s.lifting) lines.push(s.lifting);
  if (s.observed.length > 0) lines.push(`observe mode, nothing done; would have: ${s.observed.join('; ')}`);
  return lines.join('\n');
}

export class EntryMachine {
  /** Replaced, never changed in place: a state handed out stays as it was. */
  state: EntryState;
  /** Patched behaviours, as the shell answered them (absent: not asked yet). */
  readonly flags: Partial<Record<EntryFlag, boolean>> = {};
  /** `repair-report-ahead`: progress reports go out beside the work that follows them. */
  readonly ahead: boolean;
  private pending: Then[] = [];

  constructor(state: EntryState, ahead: boolean) {
    this.state = state;
    this.ahead = ahead;
  }

  get scale(): number {
    return this.state.plan?.time_scale ?? 1;
  }

  private set(change: Partial<EntryState>, entry: Partial<RepairQueueEntry> = {}): void {
    this.state = { ...this.state, ...change, entry: { ...this.state.entry, ...entry } };
  }

  /** The queue's switch (set-enabled). */
  setEnabled(enabled: boolean): void {
    this.set({ enabled });
  }
  /** reset-backoff: the drain goes on now. */
  resetBackoff(): void {
    this.set({ backoffExpire: 0 }, { drain_backoff_count: 0, drain_backoff_expire: ZERO_TIME });
  }
  /** What the first look found: the plan, the Node, and (repairInspect) the health. */
  located(plan: RepairPlan, nodename: string, healthy?: boolean): void {
    this.set({ plan, ...(healthy !== undefined ? { healthyAtStart: healthy } : {}) }, { nodename });
  }

  /**
   * The entry ends on a failure or a cancellation: what was in flight is dropped, and the cordon
   * is lifted (`always`: even when this run did not set it, as a deleted entry does).
   */
  ending(always: boolean, now: number): EntryOp[] {
    this.pending = [];
    return always || this.state.cordoned ? this.continue({ then: 'lift', ending: true }, now) : [];
  }
  /** The failed entry's last report. */
  failed(now: number): EntryOp {
    return this.report({ status: 'failed' }, now);
  }

  private report(fields: Partial<RepairQueueEntry>, now: number, ahead = false): EntryOp {
    this.set({}, { ...fields, last_transition_time: iso(now) });
    return { op: 'report', fields: progress(this.state.entry), ahead: ahead && this.ahead };
  }

  private hold(what: string | undefined): EntryOp[] {
    if (this.state.held === what) return [];
    this.set({ held: what });
    return [{ op: 'show' }];
  }

  private observe(what: string): EntryOp[] {
    this.set({ observed: [...this.state.observed, what].slice(-OBSERVED_MAX) });
    return [{ op: 'show' }];
  }

  /** `then` once `flag` is known: asked first when it is not. */
  private needing(flag: EntryFlag, then: Then, now: number): EntryOp[] {
    if (this.flags[flag] !== undefined) return this.continue(then, now);
    this.pending.push(then);
    return [{ op: 'flag', name: flag }];
  }

  private resume(now: number): EntryOp[] {
    const then = this.pending.pop();
    return then ? this.continue(then, now) : [];
  }

  /** The next operations from the entry's state (asked when nothing is in flight). */
  next(now: number): EntryOp[] {
    const s = this.state;
    const step = s.plan!.steps[s.entry.step]!;
    const next = decideEntryOp({
      step: s.entry.step, steps: s.plan!.steps.length, step_status: s.entry.step_status, enabled: s.enabled,
      nodename: s.entry.nodename, needDrain: step.need_drain, drained: s.drained, commandDone: s.commandDone,
      healthyAtStart: s.healthyAtStart, healthy: s.healthy, watchSeconds: step.watch_seconds, watchUntil: s.watchUntil, backoffExpire: s.backoffExpire, now,
    });
    switch (next.op) {
      case 'check-health':
        return [{ op: 'check-health' }];
      case 'wait':
        return [{ op: 'wait', ...(next.until !== undefined ? { until: next.until } : {}) }];
      case 'drain': {
        // A run that continued-as-new during a drain goes on with it (same deadline, no new transition).
        const ops = s.entry.step_status !== 'draining' ? [this.report({ step_status: 'draining' }, now, true)] : [];
        this.set({ cordoned: true, drainDeadline: s.drainDeadline ?? now + s.plan!.eviction_timeout_seconds * this.scale * 1000 });
        return [...ops, { op: 'drain', deadline: this.state.drainDeadline! }];
      }
      case 'abandon-drain':
        // CKE: a disabled queue abandons an ongoing drain as a failed one: uncordon, and the back-off counts.
        this.pending.push({ then: 'backoff', reason: 'the queue was disabled during the drain' });
        return this.continue({ then: 'lift', ending: false }, now);
      case 'run-command':
        return [{
          op: 'command', kind: 'repair_command', timeoutSeconds: step.command_timeout_seconds, retries: step.command_retries,
          intervalSeconds: step.command_interval * this.scale, after: s.commandRuns, holdMs: s.held ? PAUSE_HOLD_MS : 0,
        }];
      case 'watch':
        return [{ op: 'watch', until: next.until }];
      case 'next-step':
        this.set({ drained: false, commandDone: false, healthy: undefined });
        return [this.report({ step: s.entry.step + 1, step_status: 'waiting' }, now, true)];
      case 'succeed':
        return this.continue({ then: 'success' }, now);
      case 'fail':
        return this.needing(ENTRY_FLAGS.ckeFailedStep, { then: 'fail', reason: next.reason }, now);
    }
  }

  /** What follows an outcome. */
  apply(o: EntryOutcome): EntryOp[] {
    switch (o.kind) {
      case 'health':
        this.set({ healthyAtStart: o.healthy });
        return [];
      case 'watched':
        this.set(o.healthy ? { healthy: true } : { watchUntil: 0 });
        return [];
      case 'drain':
        return this.drained(o.result, o.now);
      case 'command':
        return this.pending.at(-1)?.then === 'success-command' ? this.successCommanded(o.result, o.now) : this.commanded(o.result, o.now);
      case 'flag':
        this.flags[o.name] = o.on;
        return this.resume(o.now);
      case 'draw': {
        const drawing = this.pending.pop();
        return this.backOff(drawing?.then === 'drawing' ? drawing.reason : '', o.random, o.now);
      }
      case 'uncordon':
        return this.uncordoned(o.out, o.now);
      case 'uncordon-failed':
        return this.liftFailed(o.error, o.refused, 0);
      case 'slept':
        return [{ op: 'uncordon', holdMs: 0, lifting: true }];
    }
  }

  private continue(then: Then, now: number): EntryOp[] {
    const s = this.state;
    switch (then.then) {
      case 'lift':
        this.pending.push({ then: 'lifting', ending: then.ending });
        if (this.flags[ENTRY_FLAGS.liftUntilDone] === undefined) {
          this.pending.pop();
          return this.needing(ENTRY_FLAGS.liftUntilDone, then, now);
        }
        return [{ op: 'uncordon', holdMs: 0, lifting: true }];
      case 'backoff':
        if (this.flags[ENTRY_FLAGS.ckeBackoff] === undefined) return this.needing(ENTRY_FLAGS.ckeBackoff, then, now);
        if (!this.flags[ENTRY_FLAGS.ckeBackoff]) return this.backOff(then.reason, 0, now);
        this.pending.push({ then: 'drawing', reason: then.reason });
        return [{ op: 'draw' }];
      case 'success':
        if (s.cordoned) {
          this.pending.push(then, { then: 'uncordoning' });
          return [{ op: 'uncordon', holdMs: 0, lifting: false }];
        }
        if (s.plan!.success_command_timeout === undefined) return this.finish('succeeded', undefined, {}, now);
        this.pending.push({ then: 'success-command' });
        return [this.successCommand(0)];
      case 'finish':
        return this.finish(then.status, then.reason, then.fields, now);
      case 'fail':
        // CKE's strategy steps past the last step (the next one, waiting) and finds no step there: the entry fails showing that.
        return this.finish('failed', then.reason, this.flags[ENTRY_FLAGS.ckeFailedStep] ? { step: s.entry.step + 1, step_status: 'waiting' } : {}, now);
      case 'command-failed':
        // CKE marks the step watching before it runs the command: a failed command leaves it so.
        return this.finish('failed', `repair_command failed: ${then.error}`, this.flags[ENTRY_FLAGS.ckeFailedStep] ? { step_status: 'watching' } : {}, now);
      case 'lift-failed':
        return this.retryLift(then.error, now);
      default:
        return [];
    }
  }

  private successCommand(holdMs: number): EntryOp {
    return { op: 'command', kind: 'success_command', timeoutSeconds: this.state.plan!.success_command_timeout!, retries: 0, intervalSeconds: 0, after: 0, holdMs };
  }

  private finish(status: 'succeeded' | 'failed', reason: string | undefined, fields: Partial<RepairQueueEntry>, now: number): EntryOp[] {
    if (this.state.cordoned) {
      // Lifted before the end; a failure of it ends the entry (its ending path lifts the cordon then).
      this.pending.push({ then: 'finish', status, ...(reason !== undefined ? { reason } : {}), fields }, { then: 'uncordoning' });
      return [{ op: 'uncordon', holdMs: 0, lifting: false }];
    }
    const ops: EntryOp[] = [this.report({ ...fields, status }, now)];
    if (reason) ops.push({ op: 'log', level: 'info', message: 'repair: entry finished', fields: { index: this.state.entry.index, status, reason } });
    const s = this.state;
    ops.push({ op: 'end', result: { entry: s.entry, ...(reason !== undefined ? { reason } : {}), ...(s.observed.length > 0 ? { observed: s.observed } : {}) } });
    return ops;
  }

  private drained(v: DrainResult, now: number): EntryOp[] {
    const node = this.state.entry.nodename;
    if (v.ok) {
      this.set({ drained: true });
      const ops = this.hold(undefined);
      if (v.observed) ops.push(...this.observe(`drain node ${node}: ${v.observed.cordon ? 'cordon it, ' : ''}evict ${v.observed.evict} pod(s), delete ${v.observed.delete}`));
      return ops;
    }
    if (v.held) {
      // The pause used up the eviction timeout: the cordon stays, nothing counts, and a new drain (a new timeout) waits for the resume.
      this.set({ drainDeadline: undefined });
      return this.hold(`the drain of node ${node}`);
    }
    const reason = v.reason;
    if (v.cordonKept) {
      // Interrupted, and the uncordon waits for the resume: the back-off counts now, the cordon is lifted on the resume.
      this.pending.push({ then: 'lift', ending: false });
      return this.continue({ then: 'backoff', reason }, now);
    }
    // The activity uncordoned already (observe mode: recorded that it would).
    this.set({ cordoned: false });
    const ops = v.observed ? this.observe(`uncordon node ${node}: ${reason}`) : [];
    return [...ops, ...this.continue({ then: 'backoff', reason }, now)];
  }

  /** Drain interrupted (refused, timed out, abandoned by a disable): back off as CKE does, retries unlimited. */
  private backOff(reason: string, random: number, now: number): EntryOp[] {
    const e = this.state.entry;
    const b = this.flags[ENTRY_FLAGS.ckeBackoff] ? ckeDrainBackoff(e.drain_backoff_count, this.scale, random) : drainBackoff(e.drain_backoff_count, this.scale);
    const backoffExpire = now + b.seconds * 1000;
    this.set({ backoffExpire, drained: false, drainDeadline: undefined });
    return [
      { op: 'log', level: 'info', message: 'repair: drain backs off', fields: { index: e.index, reason, seconds: b.seconds } },
      this.report({ step_status: 'waiting', drain_backoff_count: b.count, drain_backoff_expire: iso(backoffExpire) }, now),
      ...this.resume(now),
    ];
  }

  private commanded(result: CommandResult, now: number): EntryOp[] {
    const s = this.state;
    if (result.paused) {
      // Held by the pause: nothing ran and nothing failed; asked again (waiting in place for the resume), its runs so far counted.
      this.set({ commandRuns: result.runs ?? s.commandRuns });
      return this.hold(`the repair_command of step ${s.entry.step}`);
    }
    const ops = this.hold(undefined);
    this.set({ commandRuns: 0 });
    if (result.observed) ops.push(...this.observe(`run the repair_command of step ${s.entry.step}`));
    if (!result.ok) return [...ops, ...this.needing(ENTRY_FLAGS.ckeFailedStep, { then: 'command-failed', error: result.error ?? 'it failed' }, now)];
    const step = s.plan!.steps[s.entry.step]!;
    this.set({ commandDone: true, drainDeadline: undefined, watchUntil: now + step.watch_seconds * this.scale * 1000 });
    return [...ops, this.report({ step_status: 'watching' }, now, true)];
  }

  private successCommanded(result: CommandResult, now: number): EntryOp[] {
    if (result.paused) return [...this.hold('the success_command'), this.successCommand(PAUSE_HOLD_MS)];
    this.pending.pop();
    const ops = this.hold(undefined);
    if (result.observed) ops.push(...this.observe('run the success_command'));
    if (!result.ok) return [...ops, ...this.finish('failed', `success_command failed: ${result.error}`, {}, now)];
    return [...ops, ...this.finish('succeeded', undefined, {}, now)];
  }

  private uncordoned(out: UncordonResult, now: number): EntryOp[] {
    const marker = this.pending.at(-1);
    const lifting = marker?.then === 'lifting';
    if (out === 'paused') {
      return [...this.hold(`lifting the cordon on node ${this.state.entry.nodename}`), { op: 'uncordon', holdMs: PAUSE_HOLD_MS, lifting }];
    }
    this.pending.pop();
    const ops = this.hold(undefined);
    if (out === 'observed') ops.push(...this.observe(`uncordon node ${this.state.entry.nodename}`));
    return [...ops, ...this.lifted(), ...this.resume(now)];
  }

  /** The cordon is lifted (or the lift is over: refused, or handed to its own workflow). */
  private lifted(): EntryOp[] {
    const ops: EntryOp[] = [];
    if (this.state.lifting) {
      this.set({ lifting: undefined });
      ops.push({ op: 'show' });
    }
    this.set({ cordoned: false });
    return ops;
  }

  private liftFailed(error: string, refused: boolean, now: number): EntryOp[] {
    const marker = this.pending.at(-1);
    if (marker?.then !== 'lifting') return [];
    const e = this.state.entry;
    const untilDone = this.flags[ENTRY_FLAGS.liftUntilDone];
    const log: EntryOp = {
      op: 'log', level: 'warn', message: 'repair: could not uncordon',
      fields: { index: e.index, error, ...(untilDone && !refused ? { retryInMs: LIFT_RETRY_MS * this.scale } : {}) },
    };
    if (!untilDone || refused) {
      // Before lift-until-done, one failed uncordon was logged and the entry went on; a refusal no retry changes.
      this.pending.pop();
      return [log, ...this.lifted(), ...this.resume(now)];
    }
    if (marker.ending) return [log, ...this.needing(ENTRY_FLAGS.liftApart, { then: 'lift-failed', error }, now)];
    return [log, ...this.retryLift(error, now)];
  }

  private retryLift(error: string, now: number): EntryOp[] {
    const marker = this.pending.at(-1);
    if (marker?.then === 'lifting' && marker.ending && this.flags[ENTRY_FLAGS.liftApart]) {
      // The entry ends now, its slot freed; the lift goes on in a workflow of its own.
      this.pending.pop();
      return [{ op: 'start-lift', reason: error }, ...this.lifted(), ...this.resume(now)];
    }
    const ms = LIFT_RETRY_MS * this.scale;
    this.set({ lifting: `lifting the cordon on node ${this.state.entry.nodename} failed (${error}); tried again every ${Math.round(ms / 1000)} s until it is lifted` });
    return [{ op: 'show' }, { op: 'sleep', ms: Math.max(100, ms) }];
  }
}
