// The taint workflows' handlers of messages from outside (anyone who can write to the namespace):
// bounded (a huge or deep message is refused whole, cheaply), total (no value fails a workflow
// task), and harmless (a forged give-back or withdrawal frees no slot a running holder keeps;
// a workflow under an id that is not its own refuses to run).
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { replaysWithPatches, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { TAINT_UNDELIVERED_WITHDRAWS_PATCH, TAINT_VERIFY_GIVE_BACK_PATCH } from '../../src/taint/coordinator.ts';
import { TAINT_HISTORY_BYTES, TAINT_ID_NAMES_NODE_PATCH } from '../../src/taint/node-machine.ts';
import { nodeStatus, SLOTS, slotsStatus, startNode, startSlots, stubPod, taintWorkflowEnv, untaintNode as untaint } from '../harness/taint-workflows.ts';
import { TaintStubs } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';

const EventType = proto.temporal.api.enums.v1.EventType;

/** The workflow tasks of `workflowId` (every run) that failed or timed out: none, for a handler that is total and cheap. */
async function failedTasks(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED || e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT)
    .map((e) => `${EventType[e.eventType!]}: ${e.workflowTaskFailedEventAttributes?.cause ?? ''} ${e.workflowTaskFailedEventAttributes?.failure?.message ?? ''}`);
}

/** A value nested `depth` arrays deep. */
const nested = (depth: number): unknown => {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};

describe('taint workflows: messages from outside (stub activities)', function () {
  this.timeout(180_000);
  const env = taintWorkflowEnv();
  let n = 0;
  const fresh = () => `m${++n}-${Date.now() % 100000}`;

  it('two 1.6 MB requestReplacements signals are refused whole: the coordinator keeps granting, no workflow task fails', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [stubPod('q')]);
    const queue = taskQueue('taint-flood');
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      const slots = await startSlots(client, queue);
      // Idle, its settings and counts read: each signal comes in a workflow task of its own.
      await waitFor('the coordinator idle', async () => (await slotsStatus(client)).totalNodes === 10, { timeoutMs: 30_000 });
      for (const batch of [0, 1]) {
        const requests = Array.from({ length: 26_000 }, (_, i) => ({ node: 'flood', uid: `f-${batch}-${i}`, pod: `ns/p-${i}`, requestedAt: 0 }));
        assert.ok(JSON.stringify(requests).length > 1_600_000);
        await slots.signal('requestReplacements', { node: 'flood', requests });
      }
      const h = await startNode(client, queue, node);
      await waitFor('the node\'s pod granted and evicted', () => stubs.evicted('q') === 1, { timeoutMs: 30_000 });
      const s = await slotsStatus(client);
      assert.ok(s.queue.every((r) => r.node !== 'flood') && s.inFlight.every((g) => g.node !== 'flood'), 'nothing of the flood taken in');
      assert.deepEqual(await failedTasks(client, SLOTS), []);
      await untaint(stubs, h, node);
    });
  });

  it('junk signals past TAINT_HISTORY_BYTES: the coordinator continues as new before the server suggests it, and still grants', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [stubPod('h')]);
    const queue = taskQueue('taint-bytes');
    let firstRun = '';
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      const slots = await startSlots(client, queue);
      await waitFor('the coordinator idle', async () => (await slotsStatus(client)).totalNodes === 10, { timeoutMs: 30_000 });
      firstRun = (await slots.describe()).runId;
    });
    // No worker now: the signals (0.4 MB each, refused as junk) wait in the history, which grows past
    // the cap and stays below the server's own suggestion (about 4 MB); the next worker replays it whole.
    const slots = env().client.workflow.getHandle(SLOTS);
    for (let i = 0; i < 10 && ((await slots.describe()).historySize ?? 0) < TAINT_HISTORY_BYTES + 100_000; i++) {
      await slots.signal('releaseReplacements', { node: 'junk', uids: ['x'.repeat(400_000)] });
    }
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      await waitFor('a new run of the coordinator', async () => (await client.workflow.getHandle(SLOTS).describe()).runId !== firstRun, { timeoutMs: 60_000 });
      const continued = await client.workflow.getHandle(SLOTS, firstRun).fetchHistory();
      assert.ok((continued.events ?? []).at(-1)?.workflowExecutionContinuedAsNewEventAttributes, 'the first run continued as new');
      const started = (continued.events ?? []).filter((e) => e.workflowTaskStartedEventAttributes);
      assert.ok(started.every((e) => !e.workflowTaskStartedEventAttributes!.suggestContinueAsNew), 'before the server suggested it');
      const h = await startNode(client, queue, node);
      await waitFor('the node\'s pod granted and evicted', () => stubs.evicted('h') === 1, { timeoutMs: 30_000 });
      assert.deepEqual(await failedTasks(client, SLOTS), []);
      await untaint(stubs, h, node);
    });
  });

  it('requests past the queue\'s bound are refused, the queue stays bounded and a real node is still served', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [stubPod('b')]);
    const queue = taskQueue('taint-bound');
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      const slots = await startSlots(client, queue);
      // The breaker open: nothing is granted, so the queue only grows.
      stubs.slotSettings.maxConcurrentReplacements = 0;
      await slots.signal('settings');
      for (let batch = 0; batch < 12; batch++) {
        const requests = Array.from({ length: 1000 }, (_, i) => ({ node: `gone-${batch}`, uid: `g-${batch}-${i}`, pod: `ns/p-${i}`, requestedAt: 0 }));
        await slots.signal('requestReplacements', { node: `gone-${batch}`, requests });
      }
      await waitFor('the flood taken in', async () => (await slotsStatus(client)).queue.length > 0, { timeoutMs: 30_000 });
      const s = await slotsStatus(client);
      assert.ok(s.queue.length <= 5000, `queue of ${s.queue.length}`);
      assert.deepEqual(await failedTasks(client, SLOTS), []);
      // Room again: the real node's pod is granted once the queue drains (the flood's holders do not exist).
      stubs.slotSettings.maxConcurrentReplacements = 50;
      await slots.signal('settings');
      const h = await startNode(client, queue, node);
      await waitFor('the node\'s pod granted and evicted', () => stubs.evicted('b') === 1, { timeoutMs: 120_000 });
      await untaint(stubs, h, node);
    });
  });

  it('a flood of requests in the name of nodes without a workflow costs one grant per node: a real node behind it is served at once', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [stubPod('c')]);
    const queue = taskQueue('taint-flood');
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      const slots = await startSlots(client, queue);
      stubs.slotSettings.maxConcurrentReplacements = 0;
      await slots.signal('settings');
      for (let batch = 0; batch < 4; batch++) {
        const requests = Array.from({ length: 1000 }, (_, i) => ({ node: `ghost-${batch}`, uid: `h-${batch}-${i}`, pod: `ns/p-${i}`, requestedAt: 0 }));
        await slots.signal('requestReplacements', { node: `ghost-${batch}`, requests });
      }
      const h = await startNode(client, queue, node);
      await waitFor('the flood and the real request queued', async () => (await slotsStatus(client)).queue.some((r) => r.node === node), { timeoutMs: 60_000 });
      // One slot at a time, the real request last in line: each ghost node costs one undelivered grant.
      stubs.slotSettings.maxConcurrentReplacements = 1;
      await slots.signal('settings');
      await waitFor('the node\'s pod granted and evicted', () => stubs.evicted('c') === 1, { timeoutMs: 60_000 });
      const s = await slotsStatus(client);
      assert.ok(s.granted <= 5, `${s.granted} grants for 4 ghost nodes and a real one`);
      await replaysWithPatches(client, SLOTS, [TAINT_UNDELIVERED_WITHDRAWS_PATCH]);
      await untaint(stubs, h, node);
    });
  });

  it('a forged give-back (releaseReplacements, withdrawNode) frees no slot its holder keeps: the next node stays queued', async () => {
    const stubs = new TaintStubs();
    const [n1, n2] = [fresh(), fresh()];
    stubs.taint(n1, [stubPod('h')]);
    stubs.taint(n2, [stubPod('w')]);
    stubs.evictions.set('h', Array(200).fill('blocked'));
    const queue = taskQueue('taint-forged-release');
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      const slots = await startSlots(client, queue);
      const h1 = await startNode(client, queue, n1);
      await waitFor('h holds the slot', async () => (await slotsStatus(client)).inFlight.some((g) => g.uid === 'h'), { timeoutMs: 30_000 });
      const h2 = await startNode(client, queue, n2);
      await waitFor('w queued', async () => (await slotsStatus(client)).queue.some((r) => r.uid === 'w'), { timeoutMs: 30_000 });
      await slots.signal('releaseReplacements', { uids: ['h'] });
      await slots.signal('releaseReplacements', { node: n1, uids: ['h'] });
      await slots.signal('withdrawNode', { node: n1 });
      // Past a grant check of h (every 2 s here): the forgeries have been handled long since.
      const since = Date.now();
      await waitFor('a grant check of h passed', async () => ((await slotsStatus(client)).inFlight.find((g) => g.uid === 'h')?.checkedAt ?? 0) > since + 2000,
        { timeoutMs: 30_000 });
      const s = await slotsStatus(client);
      assert.deepEqual(s.inFlight.map((g) => g.uid), ['h'], 'h still holds the only slot');
      assert.equal(stubs.evicted('w'), 0, 'w not evicted while h holds the only slot');
      await untaint(stubs, h1, n1);
      await waitFor('w granted once h gives its slot back itself', () => stubs.evicted('w') === 1, { timeoutMs: 60_000 });
      await untaint(stubs, h2, n2);
      await replaysWithPatches(client, SLOTS, [TAINT_VERIFY_GIVE_BACK_PATCH]);
    });
  });

  it('any JSON value in a node\'s or the coordinator\'s signals fails no workflow task; both still do their job', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.settings.taintReplacementOptions[0]!.durationInSeconds = 2;
    stubs.taint(node, [stubPod('j')]);
    const queue = taskQueue('taint-total');
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      const slots = await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      const odd: unknown[] = [null, 7, 'x', [], nested(1000), { uids: nested(900) }, { uids: 'h' }, { taints: [null, { key: nested(50) }] },
        { node: { toString: 1 }, requests: [null, 1, { uid: 5 }] }, { held: [{ uid: 'z'.repeat(100_000), node: 'x' }] }, { node: 'a'.repeat(10_000) }];
      for (const v of odd) {
        for (const name of ['nodeTaints', 'replacementsGranted', 'podsChanged', 'announceSlots']) await h.signal(name, v);
        for (const name of ['requestReplacements', 'releaseReplacements', 'withdrawNode', 'slotsHeld', 'settings', 'nodeCounts']) await slots.signal(name, v);
      }
      await waitFor('the pod replaced', async () => (await nodeStatus(h)).some((p) => p.state === 'Replaced'), { timeoutMs: 60_000 });
      assert.deepEqual(await failedTasks(client, h.workflowId), []);
      assert.deepEqual(await failedTasks(client, SLOTS), []);
      await untaint(stubs, h, node);
    });
  });

  it('a node workflow under an id that names no node, or a coordinator under another id, refuses before any activity', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [stubPod('i')]);
    const queue = taskQueue('taint-identity');
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      for (const workflowId of [`not-taint/${node}`, `taint/${node}/x`, `taint/Not_A_Node`]) {
        const wrong = await client.workflow.start('taintNodeWorkflow', { taskQueue: queue, workflowId, args: [{ node }] });
        await assert.rejects(wrong.result(), (err: Error) => /runs as taint\//.test(String((err as { cause?: Error }).cause?.message)));
      }
      const other = await client.workflow.start('taintReplacementsWorkflow', { taskQueue: queue, workflowId: 'not-the-coordinator', args: [{}] });
      await assert.rejects(other.result(), (err: Error) => /not-the-coordinator/.test(String((err as { cause?: Error }).cause?.message)));
      assert.deepEqual(stubs.calls.map((c) => c.name), [], 'no activity ran');
    });
  });

  it('a node workflow under a node\'s id whose input names another node (or none) serves the node its id names: the watcher\'s signal is not lost', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [stubPod('j')]);
    const queue = taskQueue('taint-id-names-node');
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      for (const args of [{ node: `other-${node}` }, { node: 7, data: { node, pods: {} } }, 'junk']) {
        const h = await client.workflow.start('taintNodeWorkflow', { taskQueue: queue, workflowId: `taint/${node}`, args: [args as never] });
        await waitFor('the pod of the node its id names marked', async () => (await nodeStatus(h)).some((p) => p.pod === 'db-j' && !!p.condition),
          { timeoutMs: 30_000 });
        await untaint(stubs, h, node);
        await replaysWithPatches(client, h.workflowId, [TAINT_ID_NAMES_NODE_PATCH]);
        stubs.taint(node, [stubPod('j')]);
      }
      assert.ok(stubs.calls.every((c) => (c.input as { node?: string } | undefined)?.node === undefined || (c.input as { node: string }).node === node), 'only its own node read');
    });
  });
});
