// Runs the check workflow and waits for its answer: if this works, the
// configuration, Temporal, the worker and its Kubernetes access all do.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { Config } from '../config/load.ts';
import { connectClient } from '../temporal/connection.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import type { CheckResult } from '../workflows/check.ts';
import { OperatorError } from './cli-support.ts';
import { commandQueuePollers, LIVE_POLLER_SECONDS } from './repair-commands.ts';
import { searchAttributeCommands, searchAttributeProblems, type SearchAttributeProblem } from './setup-commands.ts';

export class NoWorkerError extends OperatorError {}

/** The Temporal namespace lacks what tend needs: exactly what, and how to add it. */
export class TemporalSetupError extends OperatorError {}

/**
 * What the namespace lacks of tend's search attributes, as an error that names each and the fix;
 * undefined when nothing is missing, or when the server does not let tend ask (Temporal Cloud's
 * API keys have no operator service: starting the check workflow then says it instead).
 */
async function setupProblem(client: Client, config: Config): Promise<TemporalSetupError | undefined> {
  let problems: SearchAttributeProblem[];
  try {
    problems = await searchAttributeProblems(client, config.temporal.namespace);
  } catch {
    return undefined;
  }
  if (problems.length === 0) return undefined;
  const { address, namespace } = config.temporal;
  return new TemporalSetupError(
    `Temporal namespace ${namespace} at ${address} is missing what tend needs:\n` +
    problems.map((p) => `  - search attribute ${p.name}: ${p.problem}`).join('\n') + '\n' +
    'Register them with `tend setup temporal` (same configuration), or run:\n' +
    searchAttributeCommands(config.temporal).map((l) => `  ${l}`).join('\n'));
}

/**
 * With repair.taskQueue set, the workers polling it for activities (the repair command worker):
 * their identities, or an error that names the task queue and what to start.
 */
async function repairCommandWorkers(client: Client, config: Config): Promise<string[] | undefined> {
  const live = await commandQueuePollers(client, config);
  if (live?.length === 0) {
    throw new NoWorkerError(
      `no worker has polled repair.taskQueue "${config.repair?.taskQueue}" in the last ${LIVE_POLLER_SECONDS}s: repair commands would wait there; ` +
      'start `tend worker --capabilities repair` (same configuration) on the host that runs them');
  }
  return live;
}

export async function doctor(config: Config, timeoutMs: number): Promise<CheckResult & { repairCommandWorkers?: string[] }> {
  // Connecting checks the namespace exists (and says so when it does not).
  const client = await connectClient(config.temporal);
  try {
    const missing = await setupProblem(client, config);
    if (missing) throw missing;
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
    let result: CheckResult;
    try {
      result = await handle.result();
    } catch (err) {
      if (err instanceof WorkflowFailedError && /timed out/i.test(String(err.cause?.message ?? err.message))) {
        throw new NoWorkerError(
          `no worker answered on task queue "${config.temporal.taskQueue}" within ${timeoutMs / 1000}s: ` +
          'is `tend worker` (or `tend run`) running against the same Temporal namespace?');
      }
      throw err;
    }
    const commandWorkers = await repairCommandWorkers(client, config);
    return { ...result, ...(commandWorkers ? { repairCommandWorkers: commandWorkers } : {}) };
  } finally {
    await client.connection.close();
  }
}
