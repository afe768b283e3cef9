// Messages from outside to the repair workflows, as anyone with write access
// to the namespace can send them: a forged report frees no repair slot (only
// an entry's workflow ending does), and bounds hold (entries in the queue,
// indexes), each refused with a reason naming the limit.
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import {
  addUpdate, enableUpdate, entryReportSignal, MAX_QUEUE_ENTRIES, MAX_REQUESTS_PER_ADD, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId,
} from '../../src/repair/messages.ts';
import type { Config } from '../../src/config/load.ts';
import { queueUpdate } from '../../src/starters/repair-commands.ts';
import { waitFor } from '../harness/wait.ts';
import { block, gate, repairSuite } from './repair-stubs.ts';

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

/** `depth` arrays in one another. */
function nested(depth: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/** A signal whose one argument is `json` as it is (the client's converter cannot write what is nested thousands deep). */
async function rawSignal(client: Client, workflowId: string, name: string, json: string): Promise<void> {
  await client.workflowService.signalWorkflowExecution({
    namespace: 'default',
    workflowExecution: { workflowId },
    signalName: name,
    input: { payloads: [{ metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode(json) }] },
    identity: 'test',
  });
}

describe('repair workflows: messages from outside (stub activities)', function () {
  this.timeout(180_000);
  const suite = repairSuite('repair-messages');

  const { run } = suite;

  it('a forged entry-report (succeeded, removed) for a running entry frees no slot: the next entry stays queued until the entry\'s workflow ends', async () => {
    const release = gate();
    let running = false;
    suite.world.ops.long = {
      repairRunCommand: async (k) => {
        if (k.kind !== 'repair_command') return { ok: true, output: '', attempts: 1 };
        running = true;
        await block(true, release.wait);
        return { ok: true, output: '', attempts: 1 };
      },
    };
    await run(async (client, q) => {
      suite.world.maxConcurrent = 1;
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
      assert.equal(suite.world.called('repairInspect', e2.index).length, 0, 'entry 2 ran while entry 1 held the only slot');
      release.open();
      await q.until(e1.index, 'succeeded');
      await q.until(e2.index, 'succeeded');
      assert.notEqual((await client.workflow.getHandle(repairEntryWorkflowId(e1.index)).describe()).status.name, 'RUNNING');
    });
  });

  /** No workflow task of `workflowId` failed (a throwing handler fails every retry of its task). */
  const noTaskFailed = async (client: Client, workflowId: string) => {
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const failed = events.filter((e) => e.workflowTaskFailedEventAttributes).map((e) => e.workflowTaskFailedEventAttributes?.failure?.message);
    assert.deepEqual(failed, [], `workflow tasks of ${workflowId} failed`);
  };

  it(`the queue holds at most ${MAX_QUEUE_ENTRIES} entries: an add past it is refused naming the limit and delete-finished; hostile messages fail no workflow task`, async () => {
    await run(async (client, q) => {
      await q.disable();
      const requests = Array.from({ length: MAX_REQUESTS_PER_ADD }, (_, i) => ({ operation: 'fine', machine_type: 'sim', address: `10.1.${Math.floor(i / 250)}.${i % 250}` }));
      const config = { temporal: { taskQueue: suite.tq } } as Config;
      for (let n = 0; n < MAX_QUEUE_ENTRIES / MAX_REQUESTS_PER_ADD; n++) await queueUpdate(client, config, addUpdate, { requests });
      await assert.rejects(q.add('fine', '10.0.0.1'), new RegExp(`at most ${MAX_QUEUE_ENTRIES} entries, finished ones included.*delete-finished`));
      const queue = client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID);
      await rawSignal(client, REPAIR_QUEUE_WORKFLOW_ID, 'entry-report', `${'['.repeat(5000)}"x"${']'.repeat(5000)}`);
      await queue.signal(entryReportSignal, { index: '1', queue: 'x'.repeat(100_000) } as never);
      const refusedWith = (re: RegExp) => (err: unknown) => re.test(String((err as { cause?: { message?: string } }).cause?.message));
      await assert.rejects(queue.executeUpdate(addUpdate, { args: [nested(50) as never] }), refusedWith(/nested deeper than/));
      await assert.rejects(queue.executeUpdate(enableUpdate, { args: [nested(50)] as never }), refusedWith(/enable takes no input/));
      assert.equal((await q.list()).length, MAX_QUEUE_ENTRIES);
      await noTaskFailed(client, REPAIR_QUEUE_WORKFLOW_ID);
    });
  });

  it('a queue started with a next index past the bound (a planted repair/9999999999999999) numbers its entries safely and continues as new', async () => {
    await run(async (client, q) => {
      // Its own entries end at 500000 (an index no earlier test used): it goes on after them.
      const own = { index: '500000', address: '10.0.9.9', nodename: '', machine_type: 'sim', operation: 'fine', status: 'succeeded', step: 0, step_status: 'waiting', drain_backoff_count: 0, drain_backoff_expire: '0001-01-01T00:00:00Z' };
      await client.workflow.start('repairQueueWorkflow', {
        taskQueue: suite.tq, workflowId: REPAIR_QUEUE_WORKFLOW_ID, args: [{ entries: [own], nextIndex: Number('9999999999999999'), enabled: true, closing: {} }],
      });
      const e1 = await q.add('fine', '10.0.0.1');
      assert.equal(e1.index, '500001');
      await q.until(e1.index, 'succeeded');
      const queue = client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID);
      const first = (await queue.describe()).runId;
      // A cancelled queue goes on in a new run with its state: the carried state is accepted.
      await queue.cancel();
      await waitFor('the queue going on in a new run', async () => {
        const d = await queue.describe();
        return d.status.name === 'RUNNING' && d.runId !== first;
      });
      const e2 = await q.add('fine', '10.0.0.2');
      assert.equal(e2.index, '500002');
      await q.until(e2.index, 'succeeded');
      await noTaskFailed(client, REPAIR_QUEUE_WORKFLOW_ID);
    });
  });

  it('an entry\'s set-enabled and reset-backoff take any JSON without failing a workflow task', async () => {
    const release = gate();
    suite.world.ops.long = { repairWatchHealth: async () => ({ healthy: (await block(true, release.wait), true), checks: 1 }) };
    await run(async (client, q) => {
      const e1 = await q.add('long', '10.0.0.1');
      await waitFor('watching', () => suite.world.called('repairWatchHealth', e1.index).length > 0);
      const entry = client.workflow.getHandle(repairEntryWorkflowId(e1.index));
      await rawSignal(client, entry.workflowId, 'set-enabled', `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`);
      await entry.signal('set-enabled', 'x'.repeat(200_000));
      await rawSignal(client, entry.workflowId, 'reset-backoff', `${'['.repeat(5000)}1${']'.repeat(5000)}`);
      release.open();
      await q.until(e1.index, 'succeeded');
      await noTaskFailed(client, entry.workflowId);
    });
  });
});
