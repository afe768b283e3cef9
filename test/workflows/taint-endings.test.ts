// A node workflow never ends while a pod it marked still carries its
// conditions: the shape the fault run found. Replacement pods that a lagging
// scheduler put on the tainted node are marked; the taint is then removed
// while the watcher is down (nobody tells the workflow), so their evictions
// are refused ("the node carries none of the configured taints") and they
// are left as Replaced with their conditions on; when the workflow finally
// learns that the taint is gone, it must clear them before it completes.
import assert from 'node:assert/strict';
import { replaysWithPatches, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { TAINT_GIVE_BACK_FIRST_PATCH } from '../../src/taint/node-machine.ts';
import { nodeStatus, startNode, startSlots, stubPod, taintWorkflowEnv } from '../harness/taint-workflows.ts';
import { TaintStubs } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';

const pod = stubPod;

/** Whether the stub's last condition write for a pod left conditions on it. */
function carriesConditions(stubs: TaintStubs, uid: string): boolean {
  let on = false;
  for (const c of stubs.callsOf('writeTaintConditions')) {
    for (const w of (c.input as { writes: { uid: string; detected: unknown; replacing: unknown }[] }).writes) {
      if (w.uid === uid) on = w.detected !== null || w.replacing !== null;
    }
  }
  return on;
}

describe('taint workflows: no conditions outlive the node workflow (stub activities)', function () {
  this.timeout(180_000);
  const env = taintWorkflowEnv();

  it('replacements placed on the node, marked, then refused once the taint went unseen: cleared when the workflow ends', async () => {
    const stubs = new TaintStubs();
    const node = `end-${Date.now() % 100000}`;
    stubs.taint(node, [pod('a')]);
    const late = ['r1', 'r2', 'r3'];
    // The taint is gone from the Node by the time these are granted: the eviction activity refuses them.
    for (const uid of late) stubs.evictions.set(uid, ['refuse']);
    const queue = taskQueue('taint-endings');
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      await waitFor('a replaced', async () => (await nodeStatus(h)).some((p) => p.pod === 'db-a' && p.state === 'Replaced'), { timeoutMs: 60_000 });
      // The lagging scheduler puts the replacements on the tainted node; the workflow lists them and marks them.
      stubs.pods.set(node, late.map(pod));
      await h.signal('podsChanged');
      await waitFor('the three marked and refused', async () => {
        const rows = await nodeStatus(h);
        return late.every((uid) => rows.some((p) => p.pod === `db-${uid}` && p.state === 'Replaced'));
      }, { timeoutMs: 90_000 });
      for (const uid of late) assert.ok(carriesConditions(stubs, uid), `${uid} was marked`);
      // The watcher is back: the node's taint is gone; the workflow completes.
      stubs.taints.set(node, []);
      await h.signal('nodeTaints', { taints: [] });
      await h.result();
      for (const uid of late) assert.equal(carriesConditions(stubs, uid), false, `${uid}'s conditions cleared before the workflow ended`);
    });
  });

  it('cancelled while it holds a slot, its clears failing: the slot is free at once, the next node granted, while the clears go on', async () => {
    const stubs = new TaintStubs();
    const [n1, n2] = [`hold-${Date.now() % 100000}`, `next-${Date.now() % 100000}`];
    stubs.taint(n1, [pod('k')]);
    stubs.taint(n2, [pod('l')]);
    stubs.evictions.set('k', Array(200).fill('blocked'));
    // Every clear fails, as under a 403 that nobody mends.
    stubs.clearFailures = 1000;
    const queue = taskQueue('taint-give-back-first');
    await withWorker(env(), queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h1 = await startNode(client, queue, n1);
      await waitFor('k holds the slot', async () => (await nodeStatus(h1)).some((p) => p.state === 'Blocked'), { timeoutMs: 30_000 });
      const h2 = await startNode(client, queue, n2);
      await h1.cancel();
      await waitFor('l granted and evicted while taint/<node> of k still clears', () => stubs.evicted('l') === 1, { timeoutMs: 60_000 });
      assert.equal((await h1.describe()).status.name, 'RUNNING', 'the ending node still tries its clears');
      assert.ok(stubs.callsOf('writeTaintConditions:failed').length >= 1);
      await replaysWithPatches(client, h1.workflowId, [TAINT_GIVE_BACK_FIRST_PATCH]);
      await h1.terminate('test over');
      stubs.clearFailures = 0;
      stubs.taints.set(n2, []);
      await h2.signal('nodeTaints', { taints: [] });
      await h2.result();
    });
  });
});
