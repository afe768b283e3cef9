// The durable pause: its workflow id, updates, signals and query, the state it
// keeps, and the checks every message gets. Shared by the `tend-safety`
// workflow, the `tend pause` CLI, the readers in workers (src/safety/pause.ts)
// and the docs' `temporal workflow signal` lines (docs/safety.md). Anyone who
// may write to tend's namespace can send these: they carry capability names, a
// reason and who says so, never a command, a selector or a namespace, and
// anything else (an unknown field, a name tend does not know) is refused with
// the reason. Pure: imported by workflow code.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ValueLimits } from '../checks/limits.ts';
import { checkMessage, type Checked } from '../checks/message.ts';
import { preview } from '../checks/preview.ts';
import { array, boolean, integer, max, maxItems, maxLength, min, number, optional, rfc3339, strictObject, string, type Shape } from '../checks/shape.ts';

/** One per Temporal namespace, like `repair-queue`. */
export const SAFETY_WORKFLOW_ID = 'tend-safety';
/** The workflow type readers expect under SAFETY_WORKFLOW_ID (src/workflows/safety.ts): anything else is an impostor. */
export const SAFETY_WORKFLOW_TYPE = 'safetyWorkflow';
/** The memo key the workflow writes its state to at every change (readers use DescribeWorkflowExecution). */
export const SAFETY_MEMO_KEY = 'tendSafety';

/**
 * A run of tend-safety started afresh with a state in its input (not continued into) takes that
 * state: a live tend that takes tend-safety over from a task queue no worker polls starts it again
 * on its own, carrying every pause (src/workers/singletons.ts). Runs recorded before ignored it.
 */
export const SAFETY_TAKEOVER_PATCH = 'safety-takeover-carries';

/** The capabilities that can be paused: the same names as src/activities/index.ts CAPABILITIES (a unit test keeps them equal). */
export const PAUSABLE = ['weeder', 'taint', 'apps', 'repair'] as const;
export type PausableCapability = (typeof PAUSABLE)[number];

export const REASON_MAX = 500;
export const BY_MAX = 200;

export interface PauseInput {
  /** Absent or empty: every capability. */
  capabilities?: PausableCapability[];
  reason: string;
  /** Who asks, as the sender declares it (the CLI: user@host); not authenticated. */
  by?: string;
}

export interface ResumeInput {
  /** Absent or empty: every capability. */
  capabilities?: PausableCapability[];
  by?: string;
}

export interface CapabilityPause {
  paused: boolean;
  /** While paused: why, since when (RFC 3339) and who paused it. */
  reason?: string;
  since?: string;
  by?: string;
}

export interface SafetyState {
  /** Grows by one with every change (a pause or a resume that changed something). */
  revision: number;
  capabilities: Record<PausableCapability, CapabilityPause>;
  /** When the last change was made (RFC 3339); absent before the first. */
  changedAt?: string;
}

export const pauseUpdate = defineUpdate<SafetyState, [PauseInput]>('pause');
export const resumeUpdate = defineUpdate<SafetyState, [ResumeInput]>('resume');
export const pauseSignal = defineSignal<[PauseInput]>('pause');
export const resumeSignal = defineSignal<[ResumeInput]>('resume');
export const stateQuery = defineQuery<SafetyState>('state');

export function emptySafetyState(): SafetyState {
  return {
    revision: 0,
    capabilities: Object.fromEntries(PAUSABLE.map((c) => [c, { paused: false }])) as Record<PausableCapability, CapabilityPause>,
  };
}

// ------------------------------------------------------------------ checks

const capabilitiesSchema = array(string('capabilities must be a list of capability names'),
  `capabilities must be a list of capability names (${PAUSABLE.join(', ')})`,
  maxItems(PAUSABLE.length * 4, 'capabilities lists too many names'),
  (names) => {
    const unknown = names.filter((n) => !(PAUSABLE as readonly string[]).includes(n));
    return unknown.length > 0 ? `unknown capability ${unknown.map((n) => preview(n, 60)).join(', ')} (known: ${PAUSABLE.join(', ')})` : undefined;
  }) as Shape<PausableCapability[]>;

const textSchema = (what: string, maxChars: number, required: boolean) => string(`${what} must be a string`,
  maxLength(maxChars, `${what} is longer than ${maxChars} characters`),
  (s) => (required && s.trim() === '' ? `${what} must not be empty` : undefined),
  (s) => (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(s) ? `${what} must not contain control characters` : undefined));

const byOf = optional(textSchema('by', BY_MAX, false));

export const pauseInputSchema: Shape<PauseInput> = strictObject({
  capabilities: optional(capabilitiesSchema),
  reason: textSchema('reason', REASON_MAX, true),
  by: byOf,
}, 'pause takes {"capabilities"?: [names], "reason": "text", "by"?: "who"}');

export const resumeInputSchema: Shape<ResumeInput> = strictObject({
  capabilities: optional(capabilitiesSchema),
  by: byOf,
}, 'resume takes {"capabilities"?: [names], "by"?: "who"}');


const capabilityPauseSchema = strictObject({
  paused: boolean(),
  reason: optional(textSchema('reason', REASON_MAX, false)),
  since: optional(rfc3339),
  by: byOf,
});

/** The whole state: what a continued run carries and what readers find in the memo. */
export const safetyStateSchema: Shape<SafetyState> = strictObject({
  revision: number(undefined, integer, min(0), max(Number.MAX_SAFE_INTEGER)),
  capabilities: strictObject(Object.fromEntries(PAUSABLE.map((c) => [c, capabilityPauseSchema])) as Record<PausableCapability, typeof capabilityPauseSchema>),
  changedAt: optional(rfc3339),
});

export type { Checked };

/**
 * The most any safety message (a pause, a resume, a carried state, a memo) may hold, measured
 * before it is read field by field: a valid one is a few dozen values and under 4 KiB of text.
 */
export const SAFETY_LIMITS: ValueLimits = Object.freeze({ maxDepth: 4, maxNodes: 256, maxChars: 16 * 1024 });
/** Checks `value` against `schema` (src/checks/message.ts), refused unread past SAFETY_LIMITS. */
export const check = <T>(schema: Shape<T>, value: unknown, what: string): Checked<T> => checkMessage(schema, value, what, { limits: SAFETY_LIMITS });

/** The capabilities a message names: all when none. */
export function targets(names: readonly PausableCapability[] | undefined): PausableCapability[] {
  return names && names.length > 0 ? PAUSABLE.filter((c) => names.includes(c)) : [...PAUSABLE];
}

// ------------------------------------------------------------------ transitions (pure)

/** The revision after a change: it stops at the largest the state's check takes, so a carried state always passes it. */
const nextRevision = (s: SafetyState) => Math.min(s.revision + 1, Number.MAX_SAFE_INTEGER);

/**
 * The state after a pause. A capability paused already keeps its `since` and takes
 * the new reason and sender. The revision grows when anything changed.
 */
export function applyPause(s: SafetyState, input: PauseInput, now: string): SafetyState {
  const next: SafetyState = { ...s, capabilities: { ...s.capabilities } };
  let changed = false;
  for (const c of targets(input.capabilities)) {
    const was = s.capabilities[c];
    const after: CapabilityPause = { paused: true, reason: input.reason, since: was.paused && was.since ? was.since : now, by: input.by ?? 'unknown' };
    if (!was.paused || was.reason !== after.reason || was.by !== after.by) {
      next.capabilities[c] = after;
      changed = true;
    }
  }
  return changed ? { ...next, revision: nextRevision(s), changedAt: now } : s;
}

/** The state after a resume: the named capabilities (all when none) act again. */
export function applyResume(s: SafetyState, input: ResumeInput, now: string): SafetyState {
  const next: SafetyState = { ...s, capabilities: { ...s.capabilities } };
  let changed = false;
  for (const c of targets(input.capabilities)) {
    if (s.capabilities[c].paused) {
      next.capabilities[c] = { paused: false };
      changed = true;
    }
  }
  return changed ? { ...next, revision: nextRevision(s), changedAt: now } : s;
}

/**
 * The state a run starts with, from what its own previous run carried (undefined: nothing paused).
 * A carried state this code cannot read (a schema changed?) pauses every capability, saying why:
 * failing the run instead would drop every pause at once. `problem` is that reason.
 */
export function startingState(carried: unknown, now: string): { state: SafetyState; problem?: string } {
  if (carried === undefined) return { state: emptySafetyState() };
  const c = check(safetyStateSchema, carried, 'the state carried from the previous run could not be read');
  if (c.ok) return { state: c.value };
  const reason = `${c.reason.slice(0, REASON_MAX - 40)}; check, then tend resume`;
  return { state: applyPause(emptySafetyState(), { reason, by: SAFETY_WORKFLOW_ID }, now), problem: reason };
}

/**
 * The state a run started afresh takes from its start's input (SAFETY_TAKEOVER_PATCH). A start's
 * input is anyone's who may start workflows: it is taken only when it pauses something (with its
 * revision), which a fresh run, with nothing paused, would let act; one that pauses nothing
 * leaves the run as a fresh one (revision 0), and one that cannot be read too, saying why in
 * `problem`. `taken`: the input's state was taken.
 */
export function takenOverState(raw: unknown): { state: SafetyState; problem?: string; taken: boolean } {
  const c = check(safetyStateSchema, raw, 'the state in the start input could not be read');
  if (!c.ok) return { state: emptySafetyState(), problem: `${c.reason}; nothing is paused`, taken: false };
  return pausedOf(c.value).length > 0 ? { state: c.value, taken: true } : { state: emptySafetyState(), taken: false };
}

/** The paused capabilities, in PAUSABLE's order. */
export function pausedOf(s: SafetyState): PausableCapability[] {
  return PAUSABLE.filter((c) => s.capabilities[c].paused);
}

/** One line saying what is paused, since when and why (the Web UI's details, the CLI's summary). */
export function describeState(s: SafetyState): string {
  const paused = pausedOf(s);
  if (paused.length === 0) return `Nothing is paused: every capability acts (revision ${s.revision}).`;
  const lines = paused.map((c) => {
    const p = s.capabilities[c];
    return `${c} paused since ${p.since ?? '?'} by ${p.by ?? 'unknown'}: ${p.reason ?? ''}`;
  });
  const acting = PAUSABLE.filter((c) => !s.capabilities[c].paused);
  return `Paused (revision ${s.revision}): no destructive action of ${paused.join(', ')}.\n\n${lines.join('\n\n')}` +
    (acting.length ? `\n\nActing: ${acting.join(', ')}.` : '');
}
