// `tend taint status` against a real Temporal: what runs under tend's taint ids is checked for
// its type and task queue before anything it answers is shown; an impostor is refused (exit 1,
// OperatorError), named with how to end it.
import assert from 'node:assert/strict';
import { taintStatusOf } from '../../src/starters/taint-commands.ts';
import { OperatorError } from '../../src/errors.ts';
import { TAINT_CAPABILITY } from '../../src/taint/messages.ts';
import { TendCapability, TendTarget } from '../../src/search-attributes.ts';
import { SLOTS, taintWorkflowEnv } from '../harness/taint-workflows.ts';
import { taskQueue, withWorker } from '../harness/workflow-env.ts';
import { TaintStubs } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';

const taintAttributes = (target: string) => [{ key: TendCapability, value: TAINT_CAPABILITY }, { key: TendTarget, value: target }];

describe('tend taint status: what runs under the taint ids is tend\'s', function () {
  this.timeout(120_000);
  const env = taintWorkflowEnv();

  it('another type under taint-replacements (no search attributes): refused, naming it and how to end it', async () => {
    const client = env().client;
    // No worker polls 'elsewhere': it stays running, as an impostor would.
    await client.workflow.start('notTheCoordinator', { taskQueue: 'elsewhere', workflowId: SLOTS, args: [] });
    await assert.rejects(taintStatusOf(client, taskQueue('tend')), (err: unknown) => {
      assert.ok(err instanceof OperatorError, String(err));
      assert.match(err.message, /workflow taint-replacements is of type "notTheCoordinator", not taintReplacementsWorkflow/);
      assert.match(err.message, /temporal workflow terminate --workflow-id "?taint-replacements/);
      return true;
    });
  });

  it('the coordinator\'s type on another task queue: refused, naming the queue', async () => {
    const client = env().client;
    await client.workflow.start('taintReplacementsWorkflow', { taskQueue: 'not-tends-queue', workflowId: SLOTS, args: [{}] });
    await assert.rejects(taintStatusOf(client, taskQueue('tend')), (err: unknown) => {
      assert.ok(err instanceof OperatorError, String(err));
      assert.match(err.message, /runs on task queue "not-tends-queue"/);
      return true;
    });
  });

  it('a node workflow\'s id listed with another type: refused, naming it', async () => {
    const client = env().client;
    const id = `taint/impostor-${Date.now() % 100000}`;
    const h = await client.workflow.start('notANodeWorkflow', { taskQueue: 'elsewhere', workflowId: id, args: [], typedSearchAttributes: taintAttributes(id) });
    try {
      await waitFor('the impostor to be listed and refused', () => taintStatusOf(client, 'tend').then(() => false, (err: unknown) =>
        err instanceof OperatorError && err.message.includes(`workflow ${id} is of type "notANodeWorkflow", not taintNodeWorkflow`)), { timeoutMs: 30_000 });
    } finally {
      await h.terminate('test over');
    }
  });

  it('tend\'s own coordinator on tend\'s queue: its slots shown, nothing refused', async () => {
    const queue = taskQueue('taint-status');
    await withWorker(env(), queue, new TaintStubs().activities(), async (client) => {
      await client.workflow.start('taintReplacementsWorkflow', { taskQueue: queue, workflowId: SLOTS, args: [{}], typedSearchAttributes: taintAttributes(SLOTS) });
      const status = await waitFor('the coordinator to be listed and answer', async () => {
        const s = await taintStatusOf(client, queue);
        return s.slots ? s : undefined;
      }, { timeoutMs: 30_000 });
      assert.deepEqual(status.pods, []);
      assert.equal(status.slots!.inFlight.length, 0);
    });
  });
});
