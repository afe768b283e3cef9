// Runs the check workflow and waits for its answer: if this works, the
// configuration, Temporal, the worker and its Kubernetes access all do.
import { WorkflowFailedError } from '@temporalio/client';
import type { Config } from '../config/load.ts';
import { connectClient } from '../temporal/connection.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import type { CheckResult } from '../workflows/check.ts';
import { OperatorError } from './cli-support.ts';

export class NoWorkerError extends OperatorError {}

export async function doctor(config: Config, timeoutMs: number): Promise<CheckResult> {
  const client = await connectClient(config.temporal);
  try {
    const handle = await client.workflow.start('checkWorkflow', {
      taskQueue: config.temporal.taskQueue,
      workflowId: `check/${new Date().toISOString()}`,
      // If no worker picks it up in time, it should not linger in the queue.
      workflowExecutionTimeout: `${Math.ceil(timeoutMs / 1000)}s`,
      staticSummary: 'tend doctor: cluster facts as the worker sees them',
      typedSearchAttributes: [
        { key: TendCapability, value: 'check' },
        { key: TendTarget, value: 'cluster' },
      ],
    });
    try {
      return await handle.result();
    } catch (err) {
      if (err instanceof WorkflowFailedError && /timed out/i.test(String(err.cause?.message ?? err.message))) {
        throw new NoWorkerError(
          `no worker answered on task queue "${config.temporal.taskQueue}" within ${timeoutMs / 1000}s: ` +
          'is `tend worker` (or `tend run`) running against the same Temporal namespace?');
      }
      throw err;
    }
  } finally {
    await client.connection.close();
  }
}
