// takeOverIfOrphaned against the sandbox's Temporal, from this process: singletons started on a
// task queue no worker ever polled (their tend gone) are taken over carrying what they hold; two
// takers at once end with one run; a singleton whose task queue a worker polls, and a workflow of
// another type under a singleton's id, are left alone.
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { sandbox } from '../harness/hooks.ts';
import { resetRepairQueue } from '../harness/repair.ts';
import { temporalCli } from '../harness/temporal.ts';
import { takeOverIfOrphaned, type SingletonsContext } from '../../src/workers/singletons.ts';
import { workflowBundleOptions } from '../../src/workers/worker.ts';
import { applyPause, emptySafetyState, SAFETY_MEMO_KEY, SAFETY_WORKFLOW_ID, SAFETY_WORKFLOW_TYPE } from '../../src/safety/messages.ts';
import { safetyStartOptions, stateOfDescription } from '../../src/safety/pause.ts';
import { REPAIR_QUEUE_WORKFLOW_ID } from '../../src/repair/messages.ts';
import { carriedQuery, type QueueState } from '../../src/repair/queue.ts';
import { queueStartOptions } from '../../src/activities/repair-queue-client.ts';
import { ZERO_TIME } from '../../src/repair/entry.ts';

const end = (id: string) => temporalCli(['workflow', 'terminate', '--workflow-id', id, '--reason', 'test reset']).catch(() => undefined);

describe('singletons: takeOverIfOrphaned (e2e, the sandbox\'s Temporal)', function () {
  this.timeout(300_000);
  let native: NativeConnection;
  let connection: Connection;
  let client: Client;
  const suffix = Date.now().toString(36);
  const dead = `tend-single-dead-${suffix}`;
  const { workflowsPath, preloadModules } = workflowBundleOptions();
  const ctx = (taskQueue: string): SingletonsContext => ({
    connection: native, client, namespace: 'default', taskQueue, signal: new AbortController().signal,
    workflowCode: { workflowsPath, bundlerOptions: { preloadModules } },
  });
  const describeRun = (id: string) => client.workflow.getHandle(id).describe();

  before(async () => {
    native = await NativeConnection.connect({ address: sandbox().temporalAddress });
    connection = await Connection.connect({ address: sandbox().temporalAddress });
    client = new Client({ connection, namespace: 'default' });
    await end(SAFETY_WORKFLOW_ID);
    await resetRepairQueue();
  });
  after(async () => {
    await end(SAFETY_WORKFLOW_ID);
    await resetRepairQueue();
    await native?.close();
    await connection?.close();
  });

  it('tend-safety: two takers at once end with one run on one taker\'s task queue, carrying the pause and its revision', async () => {
    const paused = applyPause(emptySafetyState(), { capabilities: ['taint'], reason: 'held across the move', by: 'ops@host' }, new Date().toISOString());
    // As `tend pause` starts it (its memo holds the state), on a task queue no worker polls.
    await client.workflow.start(SAFETY_WORKFLOW_TYPE, { ...safetyStartOptions(dead, paused), args: [{}] });
    const results = await Promise.all([takeOverIfOrphaned(ctx(`${dead}-x`), SAFETY_WORKFLOW_ID), takeOverIfOrphaned(ctx(`${dead}-y`), SAFETY_WORKFLOW_ID)]);
    const outcomes = results.map((r) => r.outcome).sort();
    assert.deepEqual(outcomes, ['lost', 'taken over'], JSON.stringify(results));
    const winner = results.findIndex((r) => r.outcome === 'taken over') === 0 ? `${dead}-x` : `${dead}-y`;
    const now = await describeRun(SAFETY_WORKFLOW_ID);
    assert.equal(now.status.name, 'RUNNING');
    assert.equal(now.taskQueue, winner);
    // One run on the winner's queue (nothing else runs under the id), and it carries the pause, in its memo as readers see it.
    const raw = await client.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: SAFETY_WORKFLOW_ID } });
    assert.ok(raw.workflowExecutionInfo?.memo?.fields?.[SAFETY_MEMO_KEY]);
    const s = stateOfDescription(raw, { taskQueue: winner });
    assert.equal(s?.revision, paused.revision);
    assert.equal(s?.capabilities.taint.reason, 'held across the move');
    // The new run itself took the state (a query, answered by a worker on the winner's task queue).
    const worker = await Worker.create({ connection: native, namespace: 'default', taskQueue: winner, workflowsPath, bundlerOptions: { preloadModules } });
    const fromRun = await worker.runUntil(() => client.workflow.getHandle(SAFETY_WORKFLOW_ID).query<{ revision: number; capabilities: { taint: { paused: boolean } } }>('state'));
    assert.equal(fromRun.revision, paused.revision);
    assert.equal(fromRun.capabilities.taint.paused, true);
    // The run terminated says why, naming the dead queue and the new one.
    const { stdout } = await temporalCli(['workflow', 'list', '--query', `WorkflowId="${SAFETY_WORKFLOW_ID}" AND ExecutionStatus="Terminated"`, '--output', 'json']);
    assert.ok(stdout.includes(SAFETY_WORKFLOW_ID));
  });

  it('repair-queue: read through a worker on the dead task queue, started again with its entries, enabled flag and next index', async () => {
    const state: QueueState = {
      entries: [{
        index: '41', address: '192.0.2.41', nodename: '', machine_type: 'sim', operation: 'heal', status: 'queued', step: 0, step_status: 'waiting',
        drain_backoff_count: 0, drain_backoff_expire: ZERO_TIME, last_transition_time: new Date().toISOString(),
      }],
      nextIndex: 42, enabled: false, closing: {},
    };
    await client.workflow.start('repairQueueWorkflow', { ...queueStartOptions(dead, 42), args: [state] });
    const r = await takeOverIfOrphaned(ctx(`${dead}-x`), REPAIR_QUEUE_WORKFLOW_ID);
    assert.equal(r.outcome, 'taken over', JSON.stringify(r));
    const now = await describeRun(REPAIR_QUEUE_WORKFLOW_ID);
    assert.equal(now.taskQueue, `${dead}-x`);
    const worker = await Worker.create({ connection: native, namespace: 'default', taskQueue: `${dead}-x`, workflowsPath, bundlerOptions: { preloadModules } });
    const carried = await worker.runUntil(() => client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(carriedQuery));
    assert.deepEqual(carried.entries.map((e) => [e.index, e.address, e.status]), [['41', '192.0.2.41', 'queued']]);
    assert.equal(carried.enabled, false);
    assert.equal(carried.nextIndex, 42);
  });

  it('leaves alone a singleton whose task queue a worker polls, and a workflow of another type under the id', async () => {
    // The queue taken over above now runs on `${dead}-x`: with a worker polling it, another taker leaves it.
    const worker = await Worker.create({ connection: native, namespace: 'default', taskQueue: `${dead}-x`, workflowsPath, bundlerOptions: { preloadModules } });
    const r = await worker.runUntil(async () => {
      // Its first poll is listed once it has started.
      for (let i = 0; i < 50; i++) {
        const p = await client.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: `${dead}-x`, kind: 1 }, taskQueueType: 1 });
        if ((p.pollers ?? []).some((x) => !(x.identity ?? '').startsWith('tend-takeover'))) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return takeOverIfOrphaned(ctx(`${dead}-z`), REPAIR_QUEUE_WORKFLOW_ID);
    });
    assert.deepEqual(r, { outcome: 'live', taskQueue: `${dead}-x` });
    await end(SAFETY_WORKFLOW_ID);
    await client.workflow.start('repairQueueWorkflow', { workflowId: SAFETY_WORKFLOW_ID, taskQueue: dead, args: [] });
    const i = await takeOverIfOrphaned(ctx(`${dead}-x`), SAFETY_WORKFLOW_ID);
    assert.deepEqual(i, { outcome: 'impostor', type: 'repairQueueWorkflow' });
    assert.equal((await describeRun(SAFETY_WORKFLOW_ID)).taskQueue, dead);
  });
});
