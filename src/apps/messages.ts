// The App entity workflow's signals and updates, shared by the workflow, the
// watcher and the CLI. Each is documented, with a `temporal` CLI line, in docs/apps.md.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AppEntityData } from './entity.ts';
import type { ActualState, DesiredState } from './types.ts';

/** The watcher saw the App at this generation (a spec change, or a change made while it was away). */
export interface AppChanged {
  generation: number;
  /** The App's UID: an App deleted and created again under the same name is a new App. */
  uid?: string;
  /**
   * The highest generation the watcher saw with spec.desiredState STOPPED, not
   * yet reconciled when seen: a stop that a start right after it may hide
   * from the reconcile, which reads only the App's latest version.
   */
  stoppedGeneration?: number;
}
export const appChangedSignal = defineSignal<[AppChanged]>('appChanged');

/** The App is gone: delete its workloads and end. */
export const appDeletedSignal = defineSignal<[]>('appDeleted');

export type RestartStrategy = 'stop-start' | 'rolling';

export interface RestartRequest {
  /** stop-start (default): new workloads; rolling: bump app-rev only, rolling the same workloads. */
  strategy?: RestartStrategy;
  /** How long the update waits for the App to run on new, ready pods (default 300). */
  timeoutSeconds?: number;
}

export interface AppCommandResult {
  /** For restart: the App runs on new, ready pods. For start/stop: the command was applied. */
  ok: boolean;
  message: string;
  desiredState?: DesiredState;
  actualState?: ActualState;
  appRev?: number;
  lastStopRev?: number;
  workloads: string[];
}

export const startUpdate = defineUpdate<AppCommandResult, []>('start');
export const stopUpdate = defineUpdate<AppCommandResult, []>('stop');
export const restartUpdate = defineUpdate<AppCommandResult, [RestartRequest?]>('restart');
export const appStateQuery = defineQuery<AppEntityData>('state');
