// The running taint workflows, as Temporal's visibility lists them: for the
// watcher's resync and for `tend taint status`, which loads nothing more.
import type { Client } from '@temporalio/client';
import { TAINT_CAPABILITY } from './messages.ts';

const RUNNING_QUERY = `TendCapability="${TAINT_CAPABILITY}" AND ExecutionStatus="Running"`;

/** A running taint workflow as visibility lists it: its id, its type and the task queue it runs on. */
export interface TaintRun {
  id: string;
  type: string;
  taskQueue: string;
}

/** Running taint workflows (node workflows and the coordinator), with the type and task queue of each. */
export async function runningTaintExecutions(client: Client): Promise<TaintRun[]> {
  const runs: TaintRun[] = [];
  for await (const wf of client.workflow.list({ query: RUNNING_QUERY })) runs.push({ id: wf.workflowId, type: wf.type, taskQueue: wf.taskQueue });
  return runs;
}

/** The ids of running taint workflows (node workflows and the coordinator). */
export async function runningTaintWorkflows(client: Client): Promise<string[]> {
  return (await runningTaintExecutions(client)).map((r) => r.id);
}
