// `tend doctor`: one short workflow that proves the whole path (CLI ->
// Temporal -> worker -> Kubernetes) and reports what the worker sees.
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import type { ClusterFacts } from '../activities/cluster.ts';

const { clusterFacts } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 3 },
});

export interface CheckResult extends ClusterFacts {
  workerTaskQueue: string;
}

/**
 * Takes no input (whatever a start carries is ignored) and only reads: the
 * cluster's version and its Nodes, counted by the worker.
 */
export async function checkWorkflow(): Promise<CheckResult> {
  const facts = await clusterFacts();
  return { ...facts, workerTaskQueue: workflowInfo().taskQueue };
}
