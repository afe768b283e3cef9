// The App entity workflow's id, signals and updates, the refusal type its
// activities and workflow fail with, and the checks every message gets: shared
// by the workflow, the watcher and the CLI. Each message is documented, with a
// `temporal` CLI line, in docs/apps.md. Anyone who may write to tend's
// namespace can send them: each is measured (pastLimits) before it is read, and
// its numbers are hints the workflow confirms by reading the App itself.
// Pure: imported by workflow code.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { pastLimits, type ValueLimits } from '../checks/limits.ts';
import { preview } from '../checks/preview.ts';
import type { AppEntityData } from './entity.ts';
import { MAX_RESTART_TIMEOUT_SECONDS, type ActualState, type DesiredState } from './types.ts';

export { appWorkflowId } from './types.ts';

/** The failure type of an App outside the worker's configuration, or a start input that is not one. */
export const APPS_REFUSED = 'AppsRefused';
/** The workflow type readers expect under an App's id (src/workflows/apps.ts). */
export const APP_WORKFLOW_TYPE = 'appWorkflow';

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

// ------------------------------------------------------------------ checks

/** The most an appChanged or restart payload may hold: three fields. */
const MESSAGE_LIMITS: ValueLimits = Object.freeze({ maxDepth: 2, maxNodes: 16, maxChars: 1024 });
/** Longest UID taken from a message (Kubernetes writes 36 characters). */
const UID_MAX = 128;
/** Most commands an App's workflow keeps queued: an update past it is refused (a restart queues two). */
export const MAX_QUEUED_COMMANDS = 64;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const generation = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * An appChanged payload, or why it is ignored: a generation (a whole number),
 * an optional UID and an optional stopped generation at most the generation.
 */
export function appChangedOf(args: unknown): AppChanged | { ignored: string } {
  const past = pastLimits(args, MESSAGE_LIMITS);
  if (past !== undefined) return { ignored: `refused unread: ${past}` };
  if (!isRecord(args)) return { ignored: `its payload must be an object like {"generation":3,"uid":"..."} (got ${preview(args, 60)})` };
  const { generation: g, uid, stoppedGeneration: stopped } = args;
  if (!generation(g)) return { ignored: `generation must be a whole number (got ${preview(g, 60)})` };
  if (uid !== undefined && (typeof uid !== 'string' || uid === '' || uid.length > UID_MAX)) {
    return { ignored: `uid must be a UID of at most ${UID_MAX} characters (got ${preview(uid, 60)})` };
  }
  if (stopped !== undefined && (!generation(stopped) || stopped > g)) {
    return { ignored: `stoppedGeneration must be a whole number at most generation (got ${preview(stopped, 60)})` };
  }
  return { generation: g, ...(uid !== undefined && { uid }), ...(stopped !== undefined && { stoppedGeneration: stopped }) };
}

/** Why a restart request is not one, or undefined when it is (absent: the defaults). */
export function restartRequestProblem(req: unknown): string | undefined {
  if (req === undefined || req === null) return undefined;
  const past = pastLimits(req, MESSAGE_LIMITS);
  if (past !== undefined) return `the request is refused unread: ${past}`;
  if (!isRecord(req)) return `the request must be an object like {"strategy":"rolling","timeoutSeconds":300} (got ${preview(req, 60)})`;
  if (req.strategy !== undefined && req.strategy !== 'stop-start' && req.strategy !== 'rolling') {
    return `strategy must be stop-start or rolling (got ${preview(req.strategy, 60)})`;
  }
  const t = req.timeoutSeconds;
  if (t !== undefined && (typeof t !== 'number' || !Number.isInteger(t) || t < 1 || t > MAX_RESTART_TIMEOUT_SECONDS)) {
    return `timeoutSeconds must be a whole number from 1 to ${MAX_RESTART_TIMEOUT_SECONDS} (got ${preview(t, 60)})`;
  }
  return undefined;
}
