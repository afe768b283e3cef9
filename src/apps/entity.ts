// The App entity workflow's state and its decision of what to do next, kept
// apart from the workflow so that both are plain data and pure functions.
// Pure: imported by workflow code.
import type { AppCommand, LastSeen } from './revisions.ts';
import type { ActualState, DesiredState } from './types.ts';

export interface QueuedCommand {
  seq: number;
  command: AppCommand;
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
}

export type NextStep =
  | { kind: 'reconcile'; command?: QueuedCommand }
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

  enqueue(command: AppCommand): number {
    const seq = this.data.nextSeq++;
    this.data.commands.push({ seq, command });
    this.data.waitRounds = 0;
    return seq;
  }

  observe(generation: number, uid?: string): void {
    // A new App under the old name (deleted and created again while the
    // watcher was away): what was seen of the old one says nothing about it.
    if (uid && this.data.last?.uid && uid !== this.data.last.uid) {
      this.data.last = undefined;
      this.data.pendingGeneration = generation;
    }
    if (generation > this.data.pendingGeneration) this.data.pendingGeneration = generation;
  }

  markDeleted(): void {
    this.data.deleted = true;
    this.data.deletions = (this.data.deletions ?? 0) + 1;
  }

  /** How many appDeleted signals have arrived: taken when a reconcile starts, handed back to reconciled(). */
  get deletions(): number {
    return this.data.deletions ?? 0;
  }

  get gone(): boolean {
    return this.data.last?.gone ?? false;
  }

  /** Records a reconcile; `seq` is the command it applied, if any. */
  /**
   * A reconcile's result. `deletionsBefore` is `deletions` when that reconcile
   * started: an appDeleted that arrived while it ran (its result may predate
   * the deletion) is not answered by it.
   */
  reconciled(result: ReconcileResult, seq?: number, deletionsBefore?: number): void {
    this.data.last = result;
    this.data.statusStale = false;
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
    return this.data.deleted || this.data.commands.length > 0 || this.needsObservation;
  }

  private get needsObservation(): boolean {
    const seen = this.data.last?.lastSeen?.generation;
    return this.data.last === undefined || (seen !== undefined && this.data.pendingGeneration > seen);
  }
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
  if (e.deleted) return { kind: 'reconcile' };
  const [command] = e.commands;
  if (command) return { kind: 'reconcile', command };
  const seen = e.last?.lastSeen?.generation;
  if (!e.last || (seen !== undefined && e.pendingGeneration > seen) || e.statusStale) return { kind: 'reconcile' };
  if (!e.last.settled && !e.last.problem && !waitInFlight) return { kind: 'wait', timeoutSeconds: waitTimeoutSeconds(e.waitRounds) };
  return { kind: 'idle' };
}
