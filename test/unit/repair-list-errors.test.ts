// `tend repair-queue list` when the queue does not answer its query: the error names the queue,
// its status and task queue, the server's reason, and what to do.
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { listEntries } from '../../src/starters/repair-commands.ts';
import { OperatorError } from '../../src/starters/cli-support.ts';
import { REPAIR_QUEUE_WORKFLOW_ID } from '../../src/repair/messages.ts';

/** A client whose queue handle fails its query with `queryError` and describes itself as `status`. */
function clientWith(queryError: Error, status?: string): Client {
  const handle = {
    query: async () => { throw queryError; },
    describe: async () => {
      if (!status) throw new Error('describe failed');
      return { status: { name: status }, taskQueue: 'tend' };
    },
  };
  return { workflow: { getHandle: () => handle } } as unknown as Client;
}

const queryFailed = (cause: string) => Object.assign(new Error('Failed to query Workflow'), { cause: new Error(cause) });

async function failure(client: Client): Promise<OperatorError> {
  try {
    await listEntries(client);
  } catch (err) {
    assert.ok(err instanceof OperatorError, `expected an OperatorError, got ${String(err)}`);
    return err;
  }
  assert.fail('listEntries answered');
}

describe('repair-queue list: a queue that does not answer', () => {
  it('a query that timed out on a running queue says so, with the server\'s reason, and to ask again', async () => {
    const err = await failure(clientWith(queryFailed('4 DEADLINE_EXCEEDED: query timed out before a worker could process it'), 'RUNNING'));
    assert.ok(err.message.startsWith(`the repair queue (workflow ${REPAIR_QUEUE_WORKFLOW_ID}, running, task queue "tend")`), err.message);
    assert.match(err.message, /DEADLINE_EXCEEDED: query timed out before a worker could process it/);
    assert.match(err.message, /did not answer in time .* ask again$/);
  });

  it('any other failure on a running queue asks whether a worker polls its task queue', async () => {
    const err = await failure(clientWith(queryFailed('14 UNAVAILABLE: no poller'), 'RUNNING'));
    assert.match(err.message, /\(14 UNAVAILABLE: no poller\)/);
    assert.match(err.message, /is a tend worker polling its task queue\?$/);
  });

  it('a closed queue says only a worker on the task queue it ran on answers, and that add starts a new one', async () => {
    const err = await failure(clientWith(queryFailed('4 DEADLINE_EXCEEDED: query timed out'), 'COMPLETED'));
    assert.match(err.message, /completed, task queue "tend"/);
    assert.match(err.message, /a closed queue answers only through a worker polling the task queue it ran on/);
  });

  it('no queue yet is an empty list, not an error', async () => {
    const client = clientWith(new WorkflowNotFoundError('not found', REPAIR_QUEUE_WORKFLOW_ID, undefined));
    assert.deepEqual(await listEntries(client), []);
  });
});
