// The running taint workflows, as Temporal's visibility lists them: for the
// watcher's resync and for `tend taint status`, which loads nothing more.
import type { Client } from '@temporalio/client';
import { TAINT_CAPABILITY } from './messages.ts';

const RUNNING_QUERY = `TendCapability="${TAINT_CAPABILITY}" AND ExecutionStatus="Running"`;

/** Running taint workflows (node workflows and the coordinator), with the task queue each runs on. */
export async function runningTaintExecutions(client: Client): Promise<{ id: string; taskQueue: string }[]> {
  const runs: { id: string; taskQueue: string }[] = [];
  for await (const wf of client.workflow.list({ query: RUNNING_QUERY })) runs.push({ id: wf.workflowId, taskQueue: wf.taskQueue });
  return runs;
}

/** The ids of running taint workflows (node workflows and the coordinator). */
export async function runningTaintWorkflows(client: Client): Promise<string[]> {
  return (await runningTaintExecutions(client)).map((r) => r.id);
}
