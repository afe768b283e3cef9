// Messages as an attacker with the `temporal` CLI sends them: any JSON text as
// a signal's or an update's argument, however deep or large, which the SDK's
// client (its JSON.stringify) could not encode. For the handlers' totality
// tests: after each, the workflow must have no failed workflow task.
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';

/** One JSON payload holding `json` verbatim. */
function payloads(json: string) {
  return { payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(json) }] };
}

/** Signals `workflowId` with one argument, the JSON text `json`. */
export async function rawSignal(client: Client, workflowId: string, signalName: string, json: string): Promise<void> {
  await client.workflowService.signalWorkflowExecution({
    namespace: client.options.namespace, workflowExecution: { workflowId }, signalName, input: payloads(json),
    identity: 'raw-messages', requestId: randomUUID(),
  });
}

/** Sends update `name` with one argument, the JSON text `json`; answers whether it was accepted and, if not, the rejection's message. */
export async function rawUpdate(client: Client, workflowId: string, name: string, json: string): Promise<{ accepted: boolean; message?: string }> {
  const r = await client.workflowService.updateWorkflowExecution({
    namespace: client.options.namespace,
    workflowExecution: { workflowId },
    request: { meta: { updateId: randomUUID(), identity: 'raw-messages' }, input: { name, args: payloads(json) } },
    // UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED: a rejection (the validator's) is answered by then.
    waitPolicy: { lifecycleStage: 2 },
  });
  const failure = r.outcome?.failure;
  return failure ? { accepted: false, message: failure.message ?? '' } : { accepted: true };
}

/** JSON text of `[[[...1...]]]`, `depth` arrays deep: JSON.stringify cannot write it back. */
export function deepJson(depth: number): string {
  return `${'['.repeat(depth)}1${']'.repeat(depth)}`;
}

/** JSON text of an array of `length` zeros: past every count limit, small enough to send. */
export function hugeJson(length = 30_000): string {
  return `[${Array.from({ length }, () => '0').join(',')}]`;
}

/** The history's failed workflow tasks, with their causes: none after a message means its handler was total. */
export async function failedWorkflowTasks(h: WorkflowHandle): Promise<string[]> {
  const events = (await h.fetchHistory()).events ?? [];
  return events.filter((e) => e.workflowTaskFailedEventAttributes)
    .map((e) => (e.workflowTaskFailedEventAttributes!.failure?.message ?? '').slice(0, 200));
}
