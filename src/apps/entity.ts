// The App entity workflow's state and its decision of what to do next, kept
// apart from the workflow so that both are plain data and pure functions.
// Pure: imported by workflow code.
import type { AppCommand, LastSeen } from './revisions.ts';
import type { ActualState, DesiredState } from './types.ts';

export interface QueuedCommand {
  seq: number;
  command: AppCommand;
  /** The start of a restart names its stop: when the stop fails, the start is not applied. */
  after?: number;
}

/** What one reconcile found and did (the reconcileApp activity's result). */
export interface ReconcileResult {
  gone: boolean;
  uid?: string;
  lastSeen?: LastSeen;
  lastStopRev?: number;
  desiredState?: DesiredState;
  actualState?: ActualState;
  settled: boolean;
  workloads: string[];
  problem?: string;
  /** Why the revisions moved in this reconcile, if they did. */
  reason?: string;
  /** Observe mode: the writes this reconcile would have made (recorded, none made). */
  observed?: string[];
  /** Paused (`tend pause apps`, or the pause state unconfirmed): nothing was written; the reconcile is tried again shortly. */
  held?: string;
  /** Every stop up to this generation is reflected in the revisions (see RevisionDecision). */
  stopsThrough?: number;
}

export type WaitOutcome = 'settled' | 'changed' | 'gone' | 'timeout';

export interface AppEntityData {
  namespace: string;
  name: string;
  nextSeq: number;
  commands: QueuedCommand[];
  /** Every command up to this one has been applied to the App. */
  appliedSeq: number;
  /** The App was seen settled after every command up to this one. */
  settledSeq: number;
  /** Highest generation the watcher reported that no reconcile has seen yet. */
  pendingGeneration: number;
  deleted: boolean;
  /** appDeleted signals received so far (absent in state carried from older runs: 0). */
  deletions?: number;
  /** A wait's outcome arrived: the status needs writing. */
  statusStale: boolean;
  /** Rounds of waiting without the App settling, for the back-off of long waits. */
  waitRounds: number;
  last?: ReconcileResult;
  /** Highest generation the watcher saw with spec.desiredState STOPPED (absent in older state: 0). */
  stoppedGeneration?: number;
  /** Stops up to this generation are reflected in the revisions (absent in older state: 0). */
  stopsHandled?: number;
  /** Commands that could not be applied, by seq, with the reason: read by the update waiting on each. */
  failures?: Record<string, string>;
  /** The last reconcile gave up (its retries exhausted): retried after a back-off, or at once on new input. */
  backoff?: Backoff;
  /** The last failure, for an operator (`state` query, the workflow's details); kept after recovery. */
  lastError?: { message: string; at: string; recovered: boolean };
  /** The App's uid as the watcher last reported it (absent in older state). */
  watchedUid?: string;
  /** How often the reported uid changed: taken when a reconcile starts, handed back to reconciled(). */
  uidChanges?: number;
}

export interface Backoff {
  rounds: number;
  /** A command, a deletion or a newer generation arrived since the failure: no need to wait out the back-off. */
  newInput: boolean;
  /** The back-off is over: the next reconcile may run. */
  over: boolean;
}

export type NextStep =
  | { kind: 'reconcile'; command?: QueuedCommand; stopSeen?: number }
  | { kind: 'backoff'; seconds: number }
  | { kind: 'wait'; timeoutSeconds: number }
  | { kind: 'idle' }
  | { kind: 'end' };

export class AppEntity {
  data: AppEntityData;

  constructor(init: { namespace: string; name: string } | AppEntityData) {
    this.data = 'nextSeq' in init ? init : {
      namespace: init.namespace, name: init.name, nextSeq: 1, commands: [], appliedSeq: 0, settledSeq: 0,
      pendingGeneration: 0, deleted: false, statusStale: false, waitRounds: 0,
    };
  }

  enqueue(command: AppCommand, after?: number): number {
    const seq = this.data.nextSeq++;
    this.data.commands.push({ seq, command, ...(after !== undefined && { after }) });
    this.data.waitRounds = 0;
    this.newInput();
    return seq;
  }

  /**
   * What the watcher saw: the App at `generation`, and the highest generation
   * it saw with desiredState STOPPED (a stop a later start may hide from the
   * reconcile). Anyone may send this signal: the values are checked here
   * (appChangedOf in messages.ts) and are only hints, each confirmed by the
   * reconcile that follows (`generationRefuted`, and decideRevisions for the stop).
   */
  observe(generation: number, uid?: string, stoppedGeneration?: number): void {
    if (!Number.isSafeInteger(generation) || generation < 0) return;
    if (uid && uid !== this.data.watchedUid) {
      this.data.watchedUid = uid;
      this.data.uidChanges = (this.data.uidChanges ?? 0) + 1;
    }
    // A new App under the old name (deleted and created again while the
    // watcher was away): what was seen of the old one says nothing about it.
    if (uid && this.data.last?.uid && uid !== this.data.last.uid) {
      this.data.last = undefined;
      this.data.pendingGeneration = generation;
      this.data.stoppedGeneration = 0;
      this.data.stopsHandled = 0;
    }
    if (generation > this.data.pendingGeneration) {
      this.data.pendingGeneration = generation;
      this.newInput();
    }
    if (stoppedGeneration !== undefined && Number.isSafeInteger(stoppedGeneration) && stoppedGeneration > 0
      && stoppedGeneration <= generation && stoppedGeneration > (this.data.stoppedGeneration ?? 0)) {
      this.data.stoppedGeneration = stoppedGeneration;
      this.newInput();
    }
  }

  /**
   * The generation a reconcile read refutes what the watcher reported: a
   * report that arrived before the reconcile started (`pendingBefore` is
   * pendingGeneration then, and no report since) names a generation above the
   * one the API server answered, which cannot be (generations only grow, and
   * the read came after the report). Such a report is forged, or of an App
   * deleted since: the read generation stands, instead of a reconcile after
   * reconcile for a generation that never comes.
   */
  generationRefuted(result: ReconcileResult, pendingBefore: number): boolean {
    const read = result.lastSeen?.generation;
    return read !== undefined && this.data.pendingGeneration === pendingBefore && pendingBefore > read;
  }

  /** What the reconcile read stands for the generation the watcher reported (see generationRefuted). */
  takeReadGeneration(result: ReconcileResult): void {
    if (result.lastSeen) this.data.pendingGeneration = result.lastSeen.generation;
  }

  markDeleted(): void {
    this.data.deleted = true;
    this.data.deletions = (this.data.deletions ?? 0) + 1;
    this.newInput();
  }

  private newInput(): void {
    if (this.data.backoff) this.data.backoff.newInput = true;
  }

  /** A stop the watcher saw that no reconcile has accounted for yet. */
  get pendingStop(): number | undefined {
    const stopped = this.data.stoppedGeneration ?? 0;
    return stopped > (this.data.stopsHandled ?? 0) ? stopped : undefined;
  }

  /**
   * A reconcile gave up (its retries exhausted) with `message`. Its command,
   * if any, fails (with the start of the same restart); the App is reconciled
   * again after a back-off, or as soon as new input arrives.
   */
  reconcileFailed(message: string, seq: number | undefined, at: string): void {
    this.data.lastError = { message, at, recovered: false };
    this.data.backoff = { rounds: (this.data.backoff?.rounds ?? 0) + 1, newInput: false, over: false };
    if (seq === undefined) return;
    const failures = (this.data.failures ??= {});
    // Answers no update reads any more (a restart that timed out) are not kept for ever.
    for (const old of Object.keys(failures).map(Number).sort((a, b) => a - b).slice(0, -20)) delete failures[old];
    failures[seq] = message;
    const dropped = this.data.commands.filter((c) => c.seq === seq || c.after === seq);
    for (const c of dropped) if (c.seq !== seq) failures[c.seq] = `not applied: the stop before it failed: ${message}`;
    this.data.commands = this.data.commands.filter((c) => !dropped.includes(c));
    this.data.appliedSeq = Math.max(this.data.appliedSeq, ...dropped.map((c) => c.seq));
  }

  backoffOver(): void {
    if (this.data.backoff) this.data.backoff.over = true;
  }

  /** Why command `seq` failed, if it did; the entry is dropped once read. */
  takeFailure(seq: number): string | undefined {
    const message = this.data.failures?.[seq];
    if (message !== undefined) delete this.data.failures![seq];
    return message;
  }

  /** How many times the watcher reported another uid: taken when a reconcile starts, handed back to reconciled(). */
  get uidChanges(): number {
    return this.data.uidChanges ?? 0;
  }

  /** How many appDeleted signals have arrived: taken when a reconcile starts, handed back to reconciled(). */
  get deletions(): number {
    return this.data.deletions ?? 0;
  }

  get gone(): boolean {
    return this.data.last?.gone ?? false;
  }

  /**
   * A reconcile's result; `seq` is the command it applied, if any.
   * `deletionsBefore` is `deletions` when that reconcile started: an
   * appDeleted that arrived while it ran (its result may predate the
   * deletion) is not answered by it. `stopSeen` is the stop it was given.
   * `uidChangesBefore` is `uidChanges` when it started: when the watcher has
   * since reported an App with another uid than the one this reconcile found
   * (deleted and created again meanwhile), the result describes an App that
   * is gone. It is dropped (its command still counts as applied) and the new
   * App is reconciled from scratch.
   */
  reconciled(result: ReconcileResult, seq?: number, deletionsBefore?: number, stopSeen?: number, uidChangesBefore?: number): void {
    if (uidChangesBefore !== undefined && uidChangesBefore !== this.uidChanges
      && (result.gone || result.uid !== this.data.watchedUid)) {
      this.data.last = undefined;
      this.data.statusStale = false;
      this.data.backoff = undefined;
      if (this.data.lastError) this.data.lastError.recovered = true;
      if (seq !== undefined) {
        this.data.commands = this.data.commands.filter((c) => c.seq !== seq);
        this.data.appliedSeq = seq;
      }
      return;
    }
    this.data.last = result;
    this.data.statusStale = false;
    this.data.backoff = undefined;
    if (this.data.lastError) this.data.lastError.recovered = true;
    // The stop passed in was decided on (bumped, or found reflected already), and so was
    // every stop up to what the reconcile read as STOPPED or inferred.
    this.data.stopsHandled = Math.max(this.data.stopsHandled ?? 0, stopSeen ?? 0, result.stopsThrough ?? 0);
    if (seq !== undefined) {
      this.data.commands = this.data.commands.filter((c) => c.seq !== seq);
      this.data.appliedSeq = seq;
    }
    // An appDeleted for an App that still exists (a deleted and recreated
    // App, or a stray signal) is answered by the reconcile that found it,
    // if that reconcile started after the signal.
    if (!result.gone && (deletionsBefore === undefined || deletionsBefore === this.deletions)) this.data.deleted = false;
    if (result.gone) {
      this.data.commands = [];
      this.data.appliedSeq = this.data.nextSeq - 1;
      return;
    }
    if (result.settled && this.data.commands.length === 0) {
      this.data.settledSeq = this.data.appliedSeq;
      this.data.waitRounds = 0;
    }
  }

  waited(outcome: WaitOutcome): void {
    this.data.statusStale = true;
    if (outcome === 'timeout') this.data.waitRounds++;
    if (outcome === 'gone') this.data.deleted = true;
  }

  /** Work the loop has to do (as opposed to waiting for it). */
  get hasInput(): boolean {
    return this.data.deleted || this.data.commands.length > 0 || this.needsObservation || this.data.backoff?.over === true;
  }

  private get needsObservation(): boolean {
    const seen = this.data.last?.lastSeen?.generation;
    return this.data.last === undefined || (seen !== undefined && this.data.pendingGeneration > seen) || this.pendingStop !== undefined;
  }
}

/** After a reconcile gave up: 1 min, doubling to 30 min. */
export function backoffSeconds(rounds: number): number {
  return Math.min(60 * 2 ** Math.max(0, Math.min(rounds - 1, 5)), 1800);
}

/** The history facts continue-as-new is decided from. */
export interface HistoryFacts {
  suggested: boolean;
  length: number;
  limit: number;
  /** Every update handler has returned: none would be cut off. */
  handlersFinished: boolean;
}

/**
 * Whether the entity continues-as-new now: when Temporal suggests it or the
 * history passed the limit, whatever the entity waits on (a wait for pods is
 * cancelled and started again in the new run; pending observations, commands
 * and deletions are carried in its state), once no update is being answered.
 * Updates are bounded (a restart by its timeout), so this comes soon.
 */
export function continueAsNewDue(h: HistoryFacts): boolean {
  return (h.suggested || h.length > h.limit) && h.handlersFinished;
}

/** Longest a single wait runs before the status is written again: 2 min, doubling to 30 min while the App does not settle. */
export function waitTimeoutSeconds(rounds: number): number {
  return Math.min(120 * 2 ** Math.min(rounds, 4), 1800);
}

/**
 * What the entity does next. Commands go first, in order; then what the
 * watcher reported; then, while the App has not settled, a wait for its
 * workloads (whose outcome is written to status by one more reconcile).
 */
export function decideNext(e: AppEntityData, waitInFlight: boolean): NextStep {
  if (e.last?.gone) return { kind: 'end' };
  if (e.backoff && !e.backoff.over && !e.backoff.newInput) return { kind: 'backoff', seconds: backoffSeconds(e.backoff.rounds) };
  const stopped = e.stoppedGeneration ?? 0;
  const stop = stopped > (e.stopsHandled ?? 0) ? { stopSeen: stopped } : {};
  if (e.deleted) return { kind: 'reconcile', ...stop };
  const [command] = e.commands;
  if (command) return { kind: 'reconcile', command, ...stop };
  const seen = e.last?.lastSeen?.generation;
  // After a back-off (or new input), a reconcile is tried again even when what failed was only a command.
  if (!e.last || (seen !== undefined && e.pendingGeneration > seen) || e.statusStale || stop.stopSeen !== undefined || e.backoff) {
    return { kind: 'reconcile', ...stop };
  }
  if (!e.last.settled && !e.last.problem && !waitInFlight) return { kind: 'wait', timeoutSeconds: waitTimeoutSeconds(e.waitRounds) };
  return { kind: 'idle' };
}
