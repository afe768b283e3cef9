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

/** By reason (the fixed set docs/events.md lists) and outcome: created, aggregated, repeated, failed. */
export const eventsRecorded = new Counter({
  name: 'tend_events_total',
  help: 'Kubernetes Events tend recorded, by reason and outcome: created, aggregated (a repeat counted in its series), repeated (an occurrence already counted), failed (not written: logged).',
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
