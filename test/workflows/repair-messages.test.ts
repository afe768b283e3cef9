// Messages from outside to the repair workflows, as anyone with write access
// to the namespace can send them: a forged report frees no repair slot (only
// an entry's workflow ending does), and bounds hold (entries in the queue,
// indexes), each refused with a reason naming the limit.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Client } from '@temporalio/client';
import { entryReportSignal, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId } from '../../src/repair/messages.ts';
import { startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { block, gate, queueClient, resetAll, World } from './repair-stubs.ts';

/** The queue's chain, as its entries carry it: its first run's id. */
async function chainOf(client: Client): Promise<string> {
  const d = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).describe();
  return String(d.raw.workflowExecutionInfo?.firstRunId ?? d.runId);
}

/**
 * Waits until the queue has settled: every workflow task it was given completed, no activity and
 * no child start in flight. A query then sees what its decisions did (queries see the state after
 * every event before them).
 */
async function settled(client: Client): Promise<void> {
  await waitFor('the queue settled', async () => {
    const events = (await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).fetchHistory()).events ?? [];
    const open = new Set<string>();
    for (const e of events) {
      if (e.activityTaskScheduledEventAttributes || e.startChildWorkflowExecutionInitiatedEventAttributes) open.add(String(e.eventId));
      const done = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ??
        e.activityTaskCanceledEventAttributes;
      if (done) open.delete(String(done.scheduledEventId));
      const child = e.childWorkflowExecutionStartedEventAttributes ?? e.startChildWorkflowExecutionFailedEventAttributes;
      if (child) open.delete(String(child.initiatedEventId));
    }
    // No workflow task scheduled after the last one completed.
    const lastScheduled = events.findLastIndex((e) => !!e.workflowTaskScheduledEventAttributes);
    const lastCompleted = events.findLastIndex((e) => !!e.workflowTaskCompletedEventAttributes);
    return open.size === 0 && lastCompleted > lastScheduled;
  }, { timeoutMs: 30_000 });
}

describe('repair workflows: messages from outside (stub activities)', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  let world: World;
  let tq: string;

  before(async () => {
    env = await startWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });
  beforeEach(async () => {
    await resetAll(env.client);
    world = new World();
    tq = taskQueue('repair-messages');
  });

  const run = <T>(fn: (client: Client, q: ReturnType<typeof queueClient>) => Promise<T>) =>
    withWorker(env, tq, world.activities(), (client) => fn(client, queueClient(client, tq)));

  it('a forged entry-report (succeeded, removed) for a running entry frees no slot: the next entry stays queued until the entry\'s workflow ends', async () => {
    const release = gate();
    let running = false;
    world.ops.long = {
      repairRunCommand: async (k) => {
        if (k.kind !== 'repair_command') return { ok: true, output: '', attempts: 1 };
        running = true;
        await block(true, release.wait);
        return { ok: true, output: '', attempts: 1 };
      },
    };
    await run(async (client, q) => {
      world.maxConcurrent = 1;
      const e1 = await q.add('long', '10.0.0.1');
      const e2 = await q.add('fine', '10.0.0.2');
      await waitFor('entry 1 running its command', () => running);
      const chain = await chainOf(client);
      const queue = client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID);
      await queue.signal(entryReportSignal, { index: e1.index, queue: chain, fields: { status: 'succeeded', step_status: 'watching' } });
      await queue.signal(entryReportSignal, { index: e1.index, queue: chain, removed: true });
      // An add after the forged reports makes the queue decide again, on what they left.
      await q.add('fine', '10.0.0.3');
      await settled(client);
      const list = await q.list();
      assert.equal(list.find((e) => e.index === e2.index)?.status, 'queued', `entry 2 started on a forged report: ${JSON.stringify(list)}`);
      assert.equal(list.find((e) => e.index === e1.index)?.status, 'processing', 'entry 1 still runs');
      assert.equal(world.called('repairInspect', e2.index).length, 0, 'entry 2 ran while entry 1 held the only slot');
      release.open();
      await q.until(e1.index, 'succeeded');
      await q.until(e2.index, 'succeeded');
      assert.notEqual((await client.workflow.getHandle(repairEntryWorkflowId(e1.index)).describe()).status.name, 'RUNNING');
    });
  });
});
