// The App entity workflow's id, signals and updates, the refusal type its
// activities and workflow fail with, and the checks every message gets: shared
// by the workflow, the watcher and the CLI. Each message is documented, with a
// `temporal` CLI line, in docs/apps.md. Anyone who may write to tend's
// namespace can send them: each is measured before it is read and checked field
// by field (src/checks/message.ts), and its numbers are hints the workflow
// confirms by reading the App itself.
// Pure: imported by workflow code.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ValueLimits } from '../checks/limits.ts';
import { checkMessage } from '../checks/message.ts';
import { maxLength, minLength, number, object, oneOf, optional, strictObject, string, type Shape } from '../checks/shape.ts';
import type { AppEntityData } from './entity.ts';
import { MAX_RESTART_TIMEOUT_SECONDS, type ActualState, type DesiredState } from './types.ts';

export { appOfWorkflowId, appWorkflowId } from './types.ts';

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

const wholeNumber = (what: string) => number(`${what} must be a whole number`, (n) => (Number.isSafeInteger(n) && n >= 0 ? undefined : `${what} must be a whole number`));

// Fields it does not take are dropped, as they always were: a run that took such a signal replays the same way.
const appChangedShape: Shape<AppChanged> = object({
  generation: wholeNumber('generation'),
  uid: optional(string(`uid must be a UID of at most ${UID_MAX} characters`,
    minLength(1, `uid must be a UID of at most ${UID_MAX} characters`), maxLength(UID_MAX, `uid must be a UID of at most ${UID_MAX} characters`))),
  stoppedGeneration: optional(wholeNumber('stoppedGeneration')),
}, 'its payload must be an object like {"generation":3,"uid":"..."}');

const restartShape: Shape<RestartRequest> = strictObject({
  strategy: optional(oneOf(['stop-start', 'rolling'] as const, 'strategy must be stop-start or rolling')),
  timeoutSeconds: optional(number(`timeoutSeconds must be a whole number from 1 to ${MAX_RESTART_TIMEOUT_SECONDS}`,
    (t) => (Number.isSafeInteger(t) && t >= 1 && t <= MAX_RESTART_TIMEOUT_SECONDS ? undefined : `timeoutSeconds must be a whole number from 1 to ${MAX_RESTART_TIMEOUT_SECONDS}`))),
}, 'the request must be an object like {"strategy":"rolling","timeoutSeconds":300}');

/**
 * An appChanged payload, or why it is ignored (`appChanged signal ignored: ...`, src/checks/message.ts): a generation (a whole
 * number), an optional UID and an optional stopped generation at most the generation; other fields dropped.
 */
export function appChangedOf(args: unknown): AppChanged | { ignored: string } {
  const c = checkMessage(appChangedShape, args, 'appChanged signal ignored', { limits: MESSAGE_LIMITS });
  if (!c.ok) return { ignored: c.reason };
  const { generation: g, uid, stoppedGeneration: stopped } = c.value;
  if (stopped !== undefined && stopped > g) return { ignored: `appChanged signal ignored: stoppedGeneration must be at most generation (got ${stopped} and ${g})` };
  return { generation: g, ...(uid !== undefined && { uid }), ...(stopped !== undefined && { stoppedGeneration: stopped }) };
}

/** Why a restart request is not one, or undefined when it is (absent: the defaults). */
export function restartRequestProblem(req: unknown): string | undefined {
  if (req === undefined || req === null) return undefined;
  const c = checkMessage(restartShape, req, 'restart refused', { limits: MESSAGE_LIMITS });
  return c.ok ? undefined : c.reason;
}
