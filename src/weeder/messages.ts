// The weeder workflow's id, signals, updates and query, the refusal types its
// activities and workflow fail with, and the checks every message gets: shared
// by the workflow, the watcher and the CLI. Operators send the signals with the
// temporal CLI (see docs/weeder.md). Anyone who may write to tend's namespace
// can send these too: each is measured (pastLimits) before it is read, checked
// field by field, and a refusal quotes at most a preview of what it refuses.
// Pure: imported by workflow code.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ValueLimits } from '../checks/limits.ts';
import { checkMessage, type Checked } from '../checks/message.ts';
import { above, maxLength, number, optional, strictObject, string, type Shape } from '../checks/shape.ts';
import type { ArmedWeeding, FailedPod, WeededPod, WindowSnapshot } from './window.ts';

/** The failure type of every weeder refusal (a Service or namespace outside the configuration, an input that is not one). */
export const WEEDER_REFUSED = 'WeederRefused';
/** The failure type of a window that could not go on (its watch gave up): the result is its details. */
export const WEEDER_FAILED = 'WeederFailed';
/** The workflow type readers expect under a weeder id (src/workflows/weeder.ts). */
export const WEEDER_WORKFLOW_TYPE = 'weederWorkflow';

/** The window's workflow id, as docs/weeder.md names it: one per Service. */
export function weederWorkflowId(namespace: string, service: string): string {
  return `weeder/${namespace}/${service}`;
}

/** A DNS label, as a namespace's and a Service's names are. */
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The Service a weeder workflow id names (`weeder/<namespace>/<service>`), or undefined when it names none. */
export function serviceOfWeederId(id: string): { namespace: string; service: string } | undefined {
  const parts = id.split('/');
  if (parts.length !== 3 || parts[0] !== 'weeder' || !LABEL.test(parts[1]!) || !LABEL.test(parts[2]!)) return undefined;
  return { namespace: parts[1]!, service: parts[2]! };
}

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

// ------------------------------------------------------------------ checks

/** Longest reason a signal or update may give (it is kept in the window's result). */
export const REASON_MAX_CHARS = 500;
/** Longest extension an operator's signal may ask for: a day (a longer one is cut to a day). */
export const MAX_EXTEND_SECONDS = 24 * 3600;

const reason = optional(string('must be a string', maxLength(REASON_MAX_CHARS, `is longer than ${REASON_MAX_CHARS} characters`),
  (r) => (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(r) ? 'must not contain control characters' : undefined)));
const reasonArgs: Shape<{ reason?: string }> = strictObject({ reason }, 'its payload must be an object like {"reason":"..."}');
const extendArgs: Shape<ExtendArgs> = strictObject({
  seconds: optional(number('must be a number above 0', above(0))),
  reason,
}, 'its payload must be an object like {"seconds":600,"reason":"..."}');

/** The most an extend, arm or stop payload may hold: two fields. */
const SIGNAL_LIMITS: ValueLimits = Object.freeze({ maxDepth: 2, maxNodes: 16, maxChars: 4 * REASON_MAX_CHARS });
export type { Checked };

/** `value` checked against `schema` (src/checks/message.ts), refused unread past SIGNAL_LIMITS; the reason names the first problem. */
const check = <T>(schema: Shape<T>, value: unknown, what: string): Checked<T> => checkMessage(schema, value, what, { limits: SIGNAL_LIMITS, problems: 1 });

/** A payload that may be absent: `null` and `undefined` are the empty one. */
const orEmpty = <T>(schema: Shape<T>, args: unknown, what: string): Checked<T> =>
  (args === undefined || args === null ? { ok: true, value: {} as T } : check(schema, args, what));

/** An arm, stop signal's or stop update's payload: `{ reason? }`, or why it is not one (prefixed with `what`). */
export function checkReasonArgs(args: unknown, what: string): Checked<{ reason?: string }> {
  return orEmpty(reasonArgs, args, what);
}

/** An extend signal's payload, its seconds cut to MAX_EXTEND_SECONDS; or why it is not one (prefixed with `what`). */
export function checkExtendArgs(args: unknown, what: string): Checked<ExtendArgs> {
  const r = orEmpty(extendArgs, args, what);
  if (!r.ok || r.value.seconds === undefined) return r;
  return { ok: true, value: { ...r.value, seconds: Math.min(r.value.seconds, MAX_EXTEND_SECONDS) } };
}
