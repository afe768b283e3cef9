// The weeder workflow's signals and query, shared by the workflow, the
// watcher and the CLI. Operators send the signals with the temporal CLI (see
// docs/weeder.md).
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { WindowSnapshot } from './window.ts';

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
/** Ends the window now: no more deletions. */
export const stopSignal = defineSignal<[StopArgs?]>('stop');
/** The window as it stands: deadline, pods weeded and reported so far. */
export const windowQuery = defineQuery<WindowSnapshot>('window');
