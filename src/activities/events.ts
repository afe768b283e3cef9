// The activities' one way to record a Kubernetes Event (src/kube/events.ts):
// an Event is a courtesy to the operator, so a write that fails is logged and
// counted, never a reason for the activity to fail (docs/events.md).
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { Counter } from 'prom-client';
import type { KubeClients } from '../kube/client.ts';
import { errorMessage } from '../kube/api.ts';
import { recordEvent, type EventOutcome, type TendEvent } from '../kube/events.ts';
import { log } from '../log.ts';
import { registry } from '../metrics/registry.ts';

/** By reason (the fixed set docs/events.md lists) and outcome: created, aggregated, repeated, failed, dropped. */
export const eventsRecorded = new Counter({
  name: 'tend_events_total',
  help: 'Kubernetes Events tend recorded, by reason and outcome: created, aggregated (a repeat counted in its series), repeated (an occurrence already counted), failed (not written: logged), dropped (not written: too many waiting).',
  labelNames: ['reason', 'outcome'] as const,
  registers: [registry],
});

/** Records the Event; never throws. Without a Kubernetes connection, nothing is recorded. */
export async function noteEvent(kube: KubeClients | undefined, e: TendEvent): Promise<EventOutcome | 'failed' | undefined> {
  if (!kube) return undefined;
  try {
    const outcome = await recordEvent(kube, e);
    eventsRecorded.inc({ reason: e.reason, outcome });
    return outcome;
  } catch (err) {
    eventsRecorded.inc({ reason: e.reason, outcome: 'failed' });
    log.warn({ reason: e.reason, object: `${e.regarding.kind} ${e.regarding.namespace ? `${e.regarding.namespace}/` : ''}${e.regarding.name}`, error: errorMessage(err) },
      'could not record an Event');
    return 'failed';
  }
}

/** The workflow that called the running activity; undefined outside an activity (a tool, a test). */
export function callingWorkflow(): { workflowId: string; runId: string } | undefined {
  try {
    return Context.current().info.workflowExecution;
  } catch {
    return undefined;
  }
}

/**
 * The running activity's occurrence (its workflow run and activity id, the same for each of its
 * retries): an activity retried after a crash records its Events once. Outside an activity, one of its own.
 */
export function activityOccurrence(): string {
  const caller = callingWorkflow();
  return caller ? `${caller.workflowId}/${caller.runId}/${Context.current().info.activityId}` : randomUUID();
}

/**
 * Events written behind the writes they tell of, a few at a time: the taint marks of a zone outage
 * (an Event per pod marked) would otherwise double the API server's work while the marks are due,
 * when it is the marking's limit. As Kubernetes' own recorders, the queue is bounded (past it, an
 * Event is dropped and counted) and not durable: a worker that dies loses the Events it had not
 * written yet, never a mark. The worker writes what is left when it stops (flushEvents).
 */
export class EventSink {
  private readonly waiting: Array<() => Promise<unknown>> = [];
  private running = 0;
  private readonly idle: Array<() => void> = [];

  private readonly write: (e: TendEvent) => Promise<unknown>;
  private readonly opts: { inFlight: number; queued: number; dropped: (e: TendEvent) => void };

  constructor(write: (e: TendEvent) => Promise<unknown>, opts: { inFlight: number; queued: number; dropped: (e: TendEvent) => void }) {
    this.write = write;
    this.opts = opts;
  }

  /** Queues `e`; false (and `dropped` called) when the queue is full. */
  add(e: TendEvent): boolean {
    if (this.waiting.length >= this.opts.queued) {
      this.opts.dropped(e);
      return false;
    }
    this.waiting.push(() => this.write(e));
    this.pump();
    return true;
  }

  /** How many are queued or being written. */
  get pending(): number {
    return this.waiting.length + this.running;
  }

  /** Resolves once every queued Event is written, or after `timeoutMs`; returns how many were left. */
  async flush(timeoutMs: number): Promise<number> {
    if (this.pending === 0) return 0;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.idle.push(resolve)),
      new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs); }),
    ]);
    clearTimeout(timer);
    return this.pending;
  }

  private pump(): void {
    while (this.running < this.opts.inFlight && this.waiting.length > 0) {
      const next = this.waiting.shift()!;
      this.running++;
      void next().catch(() => undefined).finally(() => {
        this.running--;
        this.pump();
        if (this.pending === 0) for (const resolve of this.idle.splice(0)) resolve();
      });
    }
  }
}

/** Event writes at once in the background: few, so that the writes they tell of go first. */
export const BACKGROUND_EVENTS_IN_FLIGHT = 2;
/** Events waiting to be written, at most: a zone outage of 1,000 Nodes marks about 3,300 pods. */
export const BACKGROUND_EVENTS_QUEUED = 10_000;

/** One queue per Kubernetes connection (a process runs one worker, or a test several). */
const sinks = new Map<KubeClients, EventSink>();

/**
 * Records the Event in the background (noteEvent, a few at a time, behind whatever the activities
 * write meanwhile): for Events told in numbers, one per pod, where waiting for each would slow
 * the writes they tell of. Never throws; without a Kubernetes connection, nothing is recorded.
 */
export function noteEventSoon(kube: KubeClients | undefined, e: TendEvent): void {
  if (!kube) return;
  let sink = sinks.get(kube);
  if (!sink) {
    sink = new EventSink((ev) => noteEvent(kube, ev), {
      inFlight: BACKGROUND_EVENTS_IN_FLIGHT, queued: BACKGROUND_EVENTS_QUEUED,
      dropped: (ev) => eventsRecorded.inc({ reason: ev.reason, outcome: 'dropped' }),
    });
    sinks.set(kube, sink);
  }
  sink.add({ ...e, at: e.at ?? new Date() });
}

/** Writes the background Events still waiting, for at most `timeoutMs`; returns how many were left unwritten. */
export async function flushEvents(timeoutMs: number): Promise<number> {
  const lefts = await Promise.all([...sinks.values()].map((sink) => sink.flush(timeoutMs)));
  const left = lefts.reduce((a, b) => a + b, 0);
  if (left > 0) log.warn({ left }, 'stopping with Kubernetes Events not yet written: they are dropped');
  return left;
}
