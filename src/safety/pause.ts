// The worker-side reader of the durable pause (the `tend-safety` workflow,
// src/workflows/safety.ts). A process that may act destructively (a worker)
// keeps one PauseState: it reads the workflow's memo with
// DescribeWorkflowExecution every 250 ms, so no worker has to answer a query,
// and answers its activities from the last good read. No tend-safety workflow
// running means nothing is paused. A state older than 1 s is unknown, and
// unknown fails closed: a destructive write must not happen on a state the
// process cannot confirm. Reads are aged by a monotonic clock and ordered by
// the sequence in which they were issued, never by the wall clock: a wall
// clock stepped back (NTP, an operator) must not keep an old "acting" fresh,
// nor make a newer read look older than an older one.
//
// The API for activities:
//
//   const pause = new PauseState({ read: describeReader(connection.workflowService, namespace) });
//   pause.start();                       // with the worker; pause.stop() when it stops
//   pause.check('taint')                 // { state: 'acting' | 'paused' | 'unknown', ... }: now, no waiting
//   await pause.allowed('taint', signal, (c) => heartbeat(c))
//                                        // right before each destructive write: resolves when the
//                                        // capability may act; waits (re-checking after each read,
//                                        // calling onWait so the caller can heartbeat) while it is
//                                        // paused or unknown; rejects when `signal` aborts or stop() is called
//
// Metrics: tend_paused{capability}, tend_paused_since_timestamp_seconds{capability} and
// tend_pause_state_age_seconds (docs/metrics.md).
import { performance } from 'node:perf_hooks';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { log } from '../log.ts';
import { notePauseState } from '../metrics/pause.ts';
import { onScrape, pauseStateAge } from '../metrics/registry.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import { foundOfDescription, impostor } from '../temporal/identity.ts';
import {
  check as checkSchema, emptySafetyState, PAUSABLE, SAFETY_MEMO_KEY, SAFETY_WORKFLOW_ID, SAFETY_WORKFLOW_TYPE, safetyStateSchema, type PausableCapability, type SafetyState,
} from './messages.ts';

/** How often the state is read. */
export const READ_INTERVAL_MS = 250;
/** A state older than this is unknown (fail closed). */
export const FRESH_MS = 1000;
/** A read that has not answered by then counts as failed, and the next one is issued. */
export const READ_TIMEOUT_MS = 5000;

/** What `check` says about one capability. */
export type PauseCheck =
  | { state: 'acting'; revision: number }
  | { state: 'paused'; revision: number; reason: string; since?: string; by?: string }
  | { state: 'unknown'; reason: string };

/** One read of the pause: the state, or undefined when no tend-safety workflow runs (nothing paused). Throws when it cannot tell. */
export type SafetyReader = () => Promise<SafetyState | undefined>;

export interface PauseStateOptions {
  read: SafetyReader;
  /** A monotonic clock in ms (performance.now by default): it never steps back with the wall clock. */
  monotonic?: () => number;
  intervalMs?: number;
  freshMs?: number;
  readTimeoutMs?: number;
  /** Set tend_paused and tend_pause_state_age_seconds (default true; tests turn it off). */
  metrics?: boolean;
}

/** Thrown by allowed() when the wait ends without the capability being allowed. */
export class PauseWaitAborted extends Error {}

export class PauseState {
  private readonly read: SafetyReader;
  private readonly now: () => number;
  /** The sequence number of the last read issued. */
  private issued = 0;
  private readonly intervalMs: number;
  private readonly freshMs: number;
  private readonly readTimeoutMs: number;
  private readonly metrics: boolean;
  /** The last good read: the state (undefined: no workflow, nothing paused), when that read was issued (monotonic ms) and its sequence number. */
  private last?: { state: SafetyState | undefined; at: number; seq: number };
  private lastError?: string;
  private startedAt?: number;
  private timer?: NodeJS.Timeout;
  private reading = false;
  private waiters = new Set<() => void>();
  private unscrape?: () => void;

  constructor(opts: PauseStateOptions) {
    this.read = opts.read;
    this.now = opts.monotonic ?? (() => performance.now());
    this.intervalMs = opts.intervalMs ?? READ_INTERVAL_MS;
    this.freshMs = opts.freshMs ?? FRESH_MS;
    this.readTimeoutMs = opts.readTimeoutMs ?? READ_TIMEOUT_MS;
    this.metrics = opts.metrics ?? true;
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Reads now and every intervalMs from now on, until stop(). */
  start(): void {
    if (this.timer) return;
    this.startedAt = this.now();
    this.timer = setInterval(() => void this.refresh(), this.intervalMs);
    this.timer.unref?.();
    if (this.metrics) this.unscrape = onScrape(async () => void pauseStateAge.set(this.ageSeconds()));
    void this.refresh();
  }

  /** Stops reading; pending allowed() calls reject. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.unscrape?.();
    this.unscrape = undefined;
    this.wake();
  }

  /** One read (skipped while one is in flight). Its age counts from when it was issued, not answered. */
  async refresh(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    const at = this.now();
    const seq = ++this.issued;
    let timeout: NodeJS.Timeout | undefined;
    try {
      const state = await Promise.race([
        this.read(),
        new Promise<never>((_, reject) => {
          timeout = setTimeout(() => reject(new Error(`no answer within ${this.readTimeoutMs} ms`)), this.readTimeoutMs);
        }),
      ]);
      // Only a read issued after the one kept replaces it.
      if (!this.last || seq > this.last.seq) this.last = { state, at, seq };
      if (this.lastError) log.info({ workflowId: SAFETY_WORKFLOW_ID }, 'pause state: read again');
      this.lastError = undefined;
      if (this.metrics) {
        notePauseState(PAUSABLE, state);
        pauseStateAge.set(this.ageSeconds());
      }
    } catch (err) {
      const message = (err as Error)?.message ?? String(err);
      // Once per run of failures: a line every 250 ms would drown the log.
      if (this.lastError === undefined) {
        log.warn({ workflowId: SAFETY_WORKFLOW_ID, err: message },
          `pause state: cannot read it; destructive actions wait once the last good read is ${this.freshMs} ms old`);
      }
      this.lastError = message;
    } finally {
      clearTimeout(timeout);
      this.reading = false;
      this.wake();
    }
  }

  /** Seconds since the last good read (since start() when none yet). */
  ageSeconds(): number {
    const from = this.last?.at ?? this.startedAt ?? this.now();
    return Math.max(0, this.now() - from) / 1000;
  }

  /** The whole state as last read (undefined: no workflow, or not read yet), and how old it is. */
  snapshot(): { state: SafetyState | undefined; ageMs: number } | undefined {
    return this.last ? { state: this.last.state, ageMs: this.now() - this.last.at } : undefined;
  }

  /** May `capability` act now? Unknown when the last good read is older than freshMs (or there is none). */
  check(capability: PausableCapability): PauseCheck {
    if (!this.last) {
      return { state: 'unknown', reason: `the pause state (workflow ${SAFETY_WORKFLOW_ID}) has not been read yet${this.lastError ? `: ${this.lastError}` : ''}` };
    }
    const age = this.now() - this.last.at;
    // A monotonic clock does not go back; one that seems to (an injected or broken one) cannot age the read: unknown.
    if (age > this.freshMs || age < 0) {
      return {
        state: 'unknown',
        reason: `the pause state (workflow ${SAFETY_WORKFLOW_ID}) was last read ${(age / 1000).toFixed(1)} s ago, more than ${this.freshMs / 1000} s` +
          `${this.lastError ? `: ${this.lastError}` : ''}`,
      };
    }
    const s = this.last.state;
    if (!s) return { state: 'acting', revision: 0 };
    const p = s.capabilities[capability];
    if (!p.paused) return { state: 'acting', revision: s.revision };
    return {
      state: 'paused', revision: s.revision, reason: p.reason ?? '',
      ...(p.since !== undefined ? { since: p.since } : {}), ...(p.by !== undefined ? { by: p.by } : {}),
    };
  }

  /**
   * Resolves when `capability` may act (not paused, state fresh). While it is
   * paused or unknown it waits for the next read (no busy loop), calling
   * `onWait` with the reason each time; rejects with PauseWaitAborted when
   * `signal` aborts or the reader is stopped (or was never started).
   */
  async allowed(capability: PausableCapability, signal?: AbortSignal, onWait?: (c: PauseCheck) => void): Promise<void> {
    for (;;) {
      if (signal?.aborted) throw new PauseWaitAborted(`waiting for ${capability} to be allowed to act: aborted`);
      const c = this.check(capability);
      if (c.state === 'acting') return;
      if (!this.running) throw new PauseWaitAborted(`${capability} may not act (${describeCheck(c)}), and the pause state is not being read`);
      onWait?.(c);
      await this.nextRead(signal);
    }
  }

  /** Resolves after the next read attempt ends (or stop(), or `signal` aborts). */
  private nextRead(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }
}

/** A check in words, for a log line, an Event or a heartbeat's details. */
export function describeCheck(c: PauseCheck): string {
  switch (c.state) {
    case 'acting':
      return `not paused (revision ${c.revision})`;
    case 'paused':
      return `paused since ${c.since ?? '?'} by ${c.by ?? 'unknown'}: ${c.reason} (revision ${c.revision})`;
    case 'unknown':
      return `pause state unknown: ${c.reason}`;
  }
}

/** The part of a WorkflowService (a Client's Connection, or a worker's NativeConnection) the reader uses. */
export interface DescribeService {
  describeWorkflowExecution(req: temporal.api.workflowservice.v1.IDescribeWorkflowExecutionRequest):
    Promise<temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse>;
}

/** gRPC NOT_FOUND; temporal.api.enums.v1.WorkflowExecutionStatus RUNNING. */
const NOT_FOUND = 5;
const RUNNING = 1;

/** Where tend's own tend-safety runs: the worker's `temporal.taskQueue`. */
export interface SafetyExpected {
  /** The task queue tend's workers poll for tend-safety; absent: the workflow type alone is checked. */
  taskQueue?: string;
}

/**
 * Reads tend-safety's memo with DescribeWorkflowExecution (`connection.workflowService` of a
 * @temporalio/client Connection or of the worker's NativeConnection). No workflow, or one that
 * has ended: nothing paused. A running one that is not tend's (another type, another task
 * queue), or without a valid state in its memo: an error naming it (unknown, fail closed).
 */
export function describeReader(service: DescribeService, namespace: string, expected: SafetyExpected = {}): SafetyReader {
  return async () => {
    let r;
    try {
      r = await service.describeWorkflowExecution({ namespace, execution: { workflowId: SAFETY_WORKFLOW_ID } });
    } catch (err) {
      if ((err as { code?: number })?.code === NOT_FOUND) return undefined;
      throw err;
    }
    return stateOfDescription(r, expected);
  };
}

/**
 * Why the running workflow a description shows is not tend's tend-safety, or undefined when
 * it is: anyone who may write to the namespace can start any type on any task queue under
 * the id, and write any memo with it.
 */
export function safetyImpostor(r: temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse, expected: SafetyExpected = {}): string | undefined {
  return impostor(SAFETY_WORKFLOW_ID, foundOfDescription(r), {
    type: SAFETY_WORKFLOW_TYPE, ...(expected.taskQueue !== undefined ? { taskQueues: [expected.taskQueue] } : {}),
  });
}

/** The pause state in a description of tend-safety (exported for tests); throws naming an impostor or a bad memo. */
export function stateOfDescription(r: temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse, expected: SafetyExpected = {}): SafetyState | undefined {
  const info = r.workflowExecutionInfo;
  if (Number(info?.status) !== RUNNING) return undefined;
  const notOurs = safetyImpostor(r, expected);
  if (notOurs !== undefined) throw new Error(`${notOurs}; destructive actions wait until it is gone (terminate it, then \`tend pause\` if a pause is wanted)`);
  const payload = info?.memo?.fields?.[SAFETY_MEMO_KEY];
  if (!payload) throw new Error(`workflow ${SAFETY_WORKFLOW_ID} runs but its memo has no ${SAFETY_MEMO_KEY} yet`);
  let memo: unknown;
  try {
    memo = defaultPayloadConverter.fromPayload(payload);
  } catch {
    throw new Error(`workflow ${SAFETY_WORKFLOW_ID}'s memo ${SAFETY_MEMO_KEY} cannot be decoded`);
  }
  const c = checkSchema(safetyStateSchema, memo, `workflow ${SAFETY_WORKFLOW_ID}'s memo ${SAFETY_MEMO_KEY}`);
  if (!c.ok) throw new Error(c.reason);
  return c.value;
}

/**
 * How tend starts tend-safety on `taskQueue`: `tend pause` with nothing paused, a live tend taking
 * it over (src/workers/singletons.ts) with the state it held, in its input and its memo alike, so a
 * reader never finds the new run without it.
 */
export function safetyStartOptions(taskQueue: string, state?: SafetyState) {
  return {
    workflowId: SAFETY_WORKFLOW_ID,
    taskQueue,
    args: [state ? { state } : {}] as [{ state?: SafetyState }],
    memo: { [SAFETY_MEMO_KEY]: state ?? emptySafetyState() },
    staticSummary: 'pause of destructive actions, cluster-wide: `tend pause status`; details: what is paused, since when, why',
    typedSearchAttributes: [{ key: TendCapability, value: 'safety' }, { key: TendTarget, value: SAFETY_WORKFLOW_ID }],
  };
}
