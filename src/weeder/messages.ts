// The weeder workflow's signals and query, shared by the workflow, the
// watcher and the CLI. Operators send the signals with the temporal CLI (see
// docs/weeder.md).
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ArmedWeeding, FailedPod, WeededPod, WindowSnapshot } from './window.ts';

export interface ExtendArgs {
  /** How long from now the window lasts at least; the configured watchDuration when absent. */
  seconds?: number;
  /** Why, for the history: `transition` when the watcher sends it. */
  reason?: string;
}

export interface ArmArgs {
  /** Why, for the history: the watcher's view of the readiness change. */
  reason?: string;
}

export interface StopArgs {
  reason?: string;
}

/** A not-ready -> ready transition (from the watcher), or an operator's extension. */
export const extendSignal = defineSignal<[ExtendArgs?]>('extend');
/**
 * The Service went not ready (from the watcher): watch it, and weed the moment
 * it is ready again, without waiting for the watcher's transition signal.
 */
export const armSignal = defineSignal<[ArmArgs?]>('arm');
/**
 * Ends the window now: once the workflow has taken it in, no deletion is
 * started; deletions under way are waited for and recorded.
 */
export const stopSignal = defineSignal<[StopArgs?]>('stop');

/**
 * From the workflow's own armed watch, right before it deletes what it found
 * when the Service turned ready: the pods it is deleting, so that they are in
 * the history before the deletions are issued. Carries the token the workflow
 * gave that watch; any other is ignored. Not for operators.
 */
export const armedWeedingSignal = defineSignal<[ArmedWeeding]>('armedWeeding');

/** What the stop update answers: the window as it ended. Nothing is deleted after this answer. */
export interface StopAnswer {
  stopped: string;
  weeded: WeededPod[];
  reported: WeededPod[];
  failed: FailedPod[];
}

/**
 * The stop signal as an update: it answers once every deletion under way has
 * its outcome, so the answer is the acknowledgement that nothing more is
 * deleted, and lists every deletion the window made.
 */
export const stopUpdate = defineUpdate<StopAnswer, [StopArgs]>('stop');
/** The window as it stands: deadline, pods weeded and reported so far. */
export const windowQuery = defineQuery<WindowSnapshot>('window');
