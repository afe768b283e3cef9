// The repair workflows under a small history limit (the dev server's dynamic
// config): the queue, with entries queued and processing, and entries in a
// long drain back-off, a long watch and a long drain, continue-as-new before
// the limit terminates them, and carry their state across.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Client } from '@temporalio/client';
import { disableUpdate, enableUpdate, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId, setEnabledSignal } from '../../src/repair/messages.ts';
import { startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { block, gate, plan, queueClient, resetAll, World } from './repair-stubs.ts';

/** Temporal suggests continue-as-new past SUGGEST events and terminates a run past ERROR. */
const SUGGEST = 60;
const ERROR = 150;

describe('repair workflows under a small history limit', function () {
  this.timeout(240_000);
  let env: TestWorkflowEnvironment;
  let world: World;
  let tq: string;

  before(async () => {
    env = await startWorkflowEnv({ historyLimit: { suggest: SUGGEST, error: ERROR } });
  });
  after(async () => {
    await env?.teardown();
  });
  beforeEach(async () => {
    await resetAll(env.client);
    world = new World();
    tq = taskQueue('repair-limit');
  });

  const run = <T>(fn: (client: Client, q: ReturnType<typeof queueClient>) => Promise<T>) =>
    withWorker(env, tq, world.activities(), (client) => fn(client, queueClient(client, tq)));

  // Set after resetAll has terminated the previous test's runs: a run that one
  // continued-as-new just before would otherwise count as this test's.
  let since = '';
  beforeEach(() => {
    since = new Date().toISOString();
  });
  /** The runs of a workflow id started during this test, oldest first, with how each ended. */
  const runs = async (client: Client, id: string) => {
    const out: { runId: string; status: string; length: number }[] = [];
    for await (const w of client.workflow.list({ query: `WorkflowId="${id}" AND StartTime >= "${since}"` })) {
      out.push({ runId: w.runId, status: w.status.name, length: w.historyLength ?? 0 });
    }
    return out.reverse();
  };
  const neverTerminated = async (client: Client, id: string) => {
    const all = await runs(client, id);
    assert.deepEqual(all.filter((r) => r.status === 'TERMINATED'), [], `${id}: a run was terminated (the history limit?)`);
    assert.ok(all.every((r) => r.length <= ERROR), `${id}: a run grew past ${ERROR} events: ${JSON.stringify(all)}`);
    return all;
  };

  it('the setting is honoured: the queue continues-as-new at Temporal\'s suggestion, far below its own limit of 4000 events', async () => {
    // Updates grow the queue's history; only the dev server's suggestion (SUGGEST events) can make it continue-as-new this early.
    await run(async (client, q) => {
      await q.disable();
      const h = client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID);
      for (let i = 0; i < 40; i++) await h.executeUpdate(i % 2 ? disableUpdate : enableUpdate, { args: [] });
      // The list comes from visibility, which may show the next run a moment after the last one's end.
      await waitFor('the queue continued-as-new', async () => (await runs(client, REPAIR_QUEUE_WORKFLOW_ID)).length >= 2, { timeoutMs: 10_000 });
      await neverTerminated(client, REPAIR_QUEUE_WORKFLOW_ID);
      assert.ok((await h.describe()).status.name === 'RUNNING');
    });
  });

  it('the queue continues-as-new with entries queued and processing: they survive it, report to the new run, and run in turn', async () => {
    const release = gate();
    world.ops.held = { repairWatchHealth: async () => ({ healthy: (await block(true, release.wait), true), checks: 1 }) };
    await run(async (client, q) => {
      const e1 = await q.add('held', '10.0.0.1');
      const e2 = await q.add('fine', '10.0.0.2');
      const e3 = await q.add('fine', '10.0.0.3');
      await waitFor('watching', () => world.called('repairWatchHealth', e1.index).length > 0);
      const h = client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID);
      const first = (await h.describe()).runId;
      for (let i = 0; i < 40 && (await h.describe()).runId === first; i++) await h.executeUpdate(i % 2 ? enableUpdate : disableUpdate, { args: [] });
      await h.executeUpdate(enableUpdate, { args: [] });
      assert.notEqual((await h.describe()).runId, first, 'the queue did not continue-as-new');
      const list = await q.list();
      assert.deepEqual(list.map((e) => [e.index, e.status]), [[e1.index, 'processing'], [e2.index, 'queued'], [e3.index, 'queued']]);
      release.open();
      await q.until(e1.index, 'succeeded');
      await q.until(e2.index, 'succeeded');
      await q.until(e3.index, 'succeeded');
      await neverTerminated(client, REPAIR_QUEUE_WORKFLOW_ID);
    });
  });

  it('an entry in a long drain back-off continues-as-new, keeps its count, and resumes', async () => {
    let refuse = true;
    // CKE's back-off (300 s + a random share of 300 s x count) at a scale where many fit in the test's time.
    world.plans.budget = plan({ time_scale: 0.001 });
    world.ops.budget = { repairDrain: async () => (refuse ? { ok: false, reason: 'eviction refused for ns/db-1 (1 time(s): budget)' } : { ok: true, evicted: 1, deleted: 0 }) };
    await run(async (client, q) => {
      const e1 = await q.add('budget', '10.0.0.1');
      const id = repairEntryWorkflowId(e1.index);
      await waitFor('the entry continued-as-new', async () => (await runs(client, id)).length >= 2, { timeoutMs: 120_000 });
      const before = (await q.entry(e1.index))!.drain_backoff_count;
      assert.ok(before >= 1, `back-off count ${before}: the run continued as new with back-offs counted`);
      // Its back-off goes on from where it was: the count keeps growing from the carried value.
      await q.until(e1.index, 'processing', 60_000, (e) => e.drain_backoff_count > before);
      refuse = false;
      const done = await q.until(e1.index, 'succeeded', 60_000);
      assert.ok(done.drain_backoff_count > before);
      await neverTerminated(client, id);
    });
  });

  it('an entry in a long watch or a long drain continues-as-new without losing its deadline; its cordon stays', async () => {
    const releaseWatch = gate();
    const releaseDrain = gate();
    world.maxConcurrent = 2;
    world.ops.watch = { repairWatchHealth: async () => ({ healthy: (await block(true, releaseWatch.wait), true), checks: 1 }) };
    world.ops.drain = {
      repairDrain: async (k) => {
        world.cordon(k);
        await block(true, releaseDrain.wait);
        return { ok: true, evicted: 1, deleted: 0 };
      },
    };
    await run(async (client, q) => {
      const w = await q.add('watch', '10.0.0.1');
      const d = await q.add('drain', '10.0.0.2');
      await waitFor('watching and draining', () => world.called('repairWatchHealth', w.index).length > 0 && world.called('repairDrain', d.index).length > 0);
      // Signals grow their histories while they wait on one long activity each.
      for (const e of [w, d]) {
        const h = client.workflow.getHandle(repairEntryWorkflowId(e.index));
        const first = (await h.describe()).runId;
        // Past the suggestion, then no more: the run must cut its activity short and continue-as-new before the limit.
        while ((await h.describe()).historyLength <= SUGGEST) await h.signal(setEnabledSignal, true);
        await waitFor(`${e.index} continued-as-new`, async () => (await h.describe()).runId !== first);
      }
      await waitFor('both resumed', () => world.called('repairWatchHealth', w.index).length >= 2 && world.called('repairDrain', d.index).length >= 2);
      const untils = world.called('repairWatchHealth', w.index).map((c) => c.input.until);
      assert.equal(new Set(untils).size, 1, `the watch deadline changed: ${untils.join(', ')}`);
      const deadlines = world.called('repairDrain', d.index).map((c) => c.input.deadline);
      assert.equal(new Set(deadlines).size, 1, `the drain deadline changed: ${deadlines.join(', ')}`);
      assert.equal(world.cordons.get('node-2'), d.index, 'the drain\'s cordon was lifted by continue-as-new');
      releaseWatch.open();
      releaseDrain.open();
      await q.until(w.index, 'succeeded');
      await q.until(d.index, 'succeeded');
      assert.equal(world.cordons.size, 0);
      for (const e of [w, d]) await neverTerminated(client, repairEntryWorkflowId(e.index));
    });
  });
});
