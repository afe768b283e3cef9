// node/<name>, the Node's countdown, on the dev server with stub activities: it waits out the
// condition's duration (recovery first ends it, the timer dropped), asks the repair queue once
// the duration has run out, asks again after a refusal (at the reboot wait's end when the queue
// says when), follows a queued entry until the Node recovers, and refuses a forged start.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { NodeReading } from '../../src/activities/node-repair.ts';
import { nodeChangedSignal, nodeRepairStatusQuery, type NodeRepairAnswer } from '../../src/noderepair/messages.ts';
import { startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';

/** Stub activities: the Node's reading as the test sets it, the queue's answers in turn, the records kept. */
class Stubs {
  reading: NodeReading = { state: 'healthy' };
  /** In turn; a function is given the time of its ask (a planned reboot's end counted from it). */
  answers: (NodeRepairAnswer | ((askedAt: number) => NodeRepairAnswer))[] = [];
  readonly asked: number[] = [];
  readonly recorded: NodeRepairAnswer[] = [];
  reads = 0;

  unhealthyFor(ms: number, reason = 'Ready=Unknown for 2s'): void {
    const now = Date.now();
    this.reading = { state: 'unhealthy', reason, since: now, expiresAt: now + ms };
  }

  activities() {
    return {
      nodeRepairRead: async () => {
        this.reads += 1;
        return this.reading;
      },
      nodeRepairAsk: async (): Promise<NodeRepairAnswer> => {
        const now = Date.now();
        this.asked.push(now);
        const next = this.answers.shift() ?? { decision: 'refused', reason: 'storm', sentence: 'no answer left' };
        return typeof next === 'function' ? next(now) : next;
      },
      nodeRepairRecord: async (input: { answer: NodeRepairAnswer }) => {
        this.recorded.push(input.answer);
      },
    };
  }
}

const enqueued: NodeRepairAnswer = { decision: 'enqueued', index: '7', address: '10.0.0.7', operation: 'unreachable', sentence: 'enqueue repair of 10.0.0.7' };

describe('node/<name>: a Node\'s countdown', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  it('waits out the duration, asks the queue, then follows the queued entry until the Node recovers', async () => {
    const stubs = new Stubs();
    stubs.answers = [enqueued];
    const queue = taskQueue('node-repair');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      stubs.unhealthyFor(2000);
      const started = Date.now();
      const h = await client.workflow.start('nodeRepairWorkflow', { taskQueue: queue, workflowId: 'node/worker-1', args: [{ node: 'worker-1' }] });
      await waitFor('the queue asked', () => stubs.asked.length === 1, { timeoutMs: 20_000 });
      assert.ok(stubs.asked[0]! - started >= 1900, `asked ${stubs.asked[0]! - started} ms after the start, before the duration ran out`);
      await waitFor('queued, followed', async () => (await h.query(nodeRepairStatusQuery)).phase === 'queued', { timeoutMs: 20_000 });
      assert.deepEqual(stubs.recorded, [enqueued]);
      // The Node recovers: the watcher tells it, it ends.
      stubs.reading = { state: 'healthy' };
      await h.signal(nodeChangedSignal);
      assert.match(await h.result(), /meets no unhealthy condition after repair entry 7 was queued/);
      assert.equal(stubs.asked.length, 1, 'asked once');
    });
  });

  it('ends when the Node recovers before the duration runs out, asking nothing', async () => {
    const stubs = new Stubs();
    stubs.unhealthyFor(60_000);
    const queue = taskQueue('node-repair');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      const h = await client.workflow.start('nodeRepairWorkflow', { taskQueue: queue, workflowId: 'node/worker-2', args: [{ node: 'worker-2' }] });
      // Counting once it has read the Node (its reason known), not merely started.
      const status = await waitFor('counting', async () => {
        const s = await h.query(nodeRepairStatusQuery);
        return s.phase === 'counting' && s.reason !== undefined && s;
      }, { timeoutMs: 20_000 });
      assert.equal(status.reason, 'Ready=Unknown for 2s');
      assert.ok(status.until !== undefined && status.until > Date.now() + 30_000, 'the ask is set for the duration\'s end');
      stubs.reading = { state: 'healthy' };
      await h.signal(nodeChangedSignal);
      assert.match(await h.result(), /meets no unhealthy condition: the countdown ends/);
      assert.equal(stubs.asked.length, 0);
    });
  });

  it('asks again after a refusal: at the planned reboot\'s end when the queue says when, and records each answer', async () => {
    const stubs = new Stubs();
    stubs.unhealthyFor(0);
    // The reboot's wait ends 3 s after the ask, however long the worker took to start.
    let retryAt = 0;
    stubs.answers = [(askedAt) => ({ decision: 'refused', reason: 'rebooting', sentence: 'in a planned reboot', retryAt: retryAt = askedAt + 3000 }), enqueued];
    const queue = taskQueue('node-repair');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      const h = await client.workflow.start('nodeRepairWorkflow', { taskQueue: queue, workflowId: 'node/worker-3', args: [{ node: 'worker-3' }] });
      await waitFor('asked twice', () => stubs.asked.length === 2, { timeoutMs: 30_000 });
      assert.ok(stubs.asked[1]! >= retryAt - 100, 'not asked again before the reboot wait ends');
      await waitFor('queued', async () => (await h.query(nodeRepairStatusQuery)).phase === 'queued', { timeoutMs: 20_000 });
      const status = await h.query(nodeRepairStatusQuery);
      assert.equal(status.refusals, 1);
      assert.deepEqual(stubs.recorded.map((a) => a.decision), ['refused', 'enqueued']);
      await h.terminate('test over');
    });
  });

  it('refuses a start whose input is not a Node name, or that runs under another id', async () => {
    const stubs = new Stubs();
    const queue = taskQueue('node-repair');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      const bad = await client.workflow.start('nodeRepairWorkflow', { taskQueue: queue, workflowId: 'node/x', args: [{ node: 'X'.repeat(300) }] });
      await assert.rejects(bad.result(), (err: Error & { cause?: Error }) => /is not a Node name/.test(err.cause?.message ?? ''));
      const elsewhere = await client.workflow.start('nodeRepairWorkflow', { taskQueue: queue, workflowId: 'repair-queue-forged', args: [{ node: 'worker-4' }] });
      await assert.rejects(elsewhere.result(), (err: Error & { cause?: Error }) => /runs as node\/worker-4 only/.test(err.cause?.message ?? ''));
      const carried = await client.workflow.start('nodeRepairWorkflow', { taskQueue: queue, workflowId: 'node/worker-5', args: [{ node: 'worker-5', carried: { refusals: -1, queued: { index: 'x'.repeat(5000) } } }] });
      await assert.rejects(carried.result(), (err: Error & { cause?: Error }) => /is not what a countdown carries/.test(err.cause?.message ?? ''));
      assert.equal(stubs.reads, 0, 'nothing read for a refused start');
    });
  });
});
