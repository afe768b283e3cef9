// src/starters/repair-commands.ts: `tend repair-queue`'s INDEX, and list when the queue does not answer.
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { InvalidArgumentError } from 'commander';
import { index, indexAfter, listEntries } from '../../src/starters/repair-commands.ts';
import { OperatorError } from '../../src/starters/cli-support.ts';
import { MAX_INDEX, REPAIR_QUEUE_WORKFLOW_ID } from '../../src/repair/messages.ts';

describe('repair-queue CLI: INDEX', () => {
  it('takes an index as the queue writes it, dropping leading zeros', () => {
    assert.equal(index('3'), '3');
    assert.equal(index('007'), '7');
    assert.equal(index(String(MAX_INDEX)), String(MAX_INDEX));
  });
  it('refuses what no entry can have, quoting it as typed (never as 1e+23)', () => {
    for (const bad of ['0', '00', '99999999999999999999999', '10000000000000000', String(MAX_INDEX + 1), '-1', '1.5', 'x', '']) {
      assert.throws(() => index(bad), (err: Error) => err instanceof InvalidArgumentError && err.message.includes(`(got "${bad}")`), bad);
    }
  });
  it('quotes a hostile INDEX bounded, its control characters escaped', () => {
    assert.throws(() => index(`\x1b[2J${'9'.repeat(500)}`), (err: Error) => err.message.length < 200 && err.message.includes('"\\u001b[2J'));
  });
});

describe('repair-queue CLI: the index a new queue starts from', () => {
  it('is one past the highest repair/<index> an earlier queue left; other ids are not entries', () => {
    assert.equal(indexAfter([]), 1);
    assert.equal(indexAfter(['repair/3', 'repair/12', 'repair/7', 'repair/12/lift', 'repair-queue', 'repair/012']), 13);
  });
  it('skips an id no entry can have (past MAX_INDEX, an unsafe integer), so a planted workflow cannot use the indexes up', () => {
    assert.equal(indexAfter(['repair/4', `repair/${MAX_INDEX + 1}`, 'repair/9999999999999999', `repair/${'9'.repeat(400)}`]), 5);
    assert.equal(indexAfter([`repair/${MAX_INDEX}`]), MAX_INDEX + 1);
  });
});

// `tend repair-queue list` when the queue does not answer its query: the error names the queue,
// its status and task queue, the server's reason, and what to do.

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
