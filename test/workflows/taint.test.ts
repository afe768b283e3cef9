// The taint workflows on a real dev server with stub activities: replacements
// carried over continue-as-new, grants carried, slots given back on every
// ending, activities that give up, cancellation at each wait, and the marking
// period counted from when the mark became visible.
import assert from 'node:assert/strict';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { TAINT_CLEAR_UNTIL_DONE_PATCH } from '../../src/taint/node-machine.ts';
import { replaysWithPatches, startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { TaintStubs, type StubPod } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';
import { slotsStatus, untaintNode } from '../harness/taint-workflows.ts';
import type { NodeTaintData } from '../../src/taint/node.ts';

const SLOTS = 'taint-replacements';
const pod = (uid: string): StubPod => ({ uid, namespace: 'ns', name: `db-${uid}` });

describe('taint workflows (stub activities)', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  let n = 0;

  before(async () => {
    // A small history limit: every test here also runs across continue-as-new.
    env = await startWorkflowEnv({ dynamicConfig: ['limit.historyCount.suggestContinueAsNew=60'] });
  });
  after(async () => {
    await env?.teardown();
  });
  afterEach(async () => {
    await env.client.workflow.getHandle(SLOTS).terminate('test over').catch(() => undefined);
  });

  const startSlots = (client: Client, queue: string) =>
    client.workflow.start('taintReplacementsWorkflow', { taskQueue: queue, workflowId: SLOTS, args: [{}] });
  const startNode = (client: Client, queue: string, node: string, data?: NodeTaintData): Promise<WorkflowHandle> =>
    client.workflow.start('taintNodeWorkflow', { taskQueue: queue, workflowId: `taint/${node}`, args: [{ node, ...(data ? { data } : {}) }] });
  const nodeStatus = (h: WorkflowHandle) => h.query<{ pod: string; state: string; attempts: number; lastError?: string; condition?: string }[]>('status');
  const runIdOf = async (h: WorkflowHandle) => (await h.describe()).runId;
  const fresh = () => `n${++n}-${Date.now() % 100000}`;
  const untaint = untaintNode;

  it('a blocked eviction continues as new with its slot; the new run resumes it without a new request or a second eviction', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [pod('a')]);
    stubs.evictions.set('a', ['blocked', 'blocked', 'blocked', 'blocked', 'blocked']);
    const queue = taskQueue('taint-can');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      const firstRun = await runIdOf(h);
      await waitFor('the eviction blocked', async () => (await nodeStatus(h)).some((p) => p.state === 'Blocked'), { timeoutMs: 30_000 });
      await waitFor('taint/<node> to continue as new while the eviction is blocked', async () => {
        const rows = await nodeStatus(h);
        return (await runIdOf(h)) !== firstRun && rows.some((p) => p.state === 'Blocked' || p.state === 'Evicting') && rows;
      }, { timeoutMs: 90_000 });
      await waitFor('the pod replaced', async () => (await nodeStatus(h)).some((p) => p.state === 'Replaced'), { timeoutMs: 90_000 });
      assert.equal(stubs.evicted('a'), 1, 'evicted exactly once');
      // The coordinator frees the slot once it has asked the node's workflow (an activity after the give-back).
      const s = await waitFor('the slot given back', async () => {
        const status = await slotsStatus(client);
        return status.inFlight.length === 0 && status;
      }, { timeoutMs: 30_000 });
      assert.equal(s.granted, 1, 'one slot asked for and granted, over every run');
      await untaint(stubs, h, node);
    });
  });

  it('a hand start carrying state (a grant, pods) is a fresh run: the pod is evicted once, through the coordinator\'s own grant', async () => {
    // Only a run the workflow continued as new takes carried state (its continuedFromExecutionRunId);
    // a grant carried over a real continue-as-new is in 'a blocked eviction continues as new' above.
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [pod('g')]);
    const queue = taskQueue('taint-grant');
    const T = Date.now() - 60_000;
    const data: NodeTaintData = {
      node, settings: stubs.settings, taints: stubs.taints.get(node)!, firstSeen: { 'example.org/maintenance:NoSchedule': T },
      pods: {
        g: {
          uid: 'g', namespace: 'ns', name: 'db-g', controllerUid: 'rs-uid', controller: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'db' },
          state: 'Queued', detectedAt: T, replacingAt: T, markedAt: T, written: { detected: T, replacing: T }, attempts: 0,
        },
      },
      granted: ['g'],
    };
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node, data);
      await waitFor('the pod evicted', () => stubs.evicted('g') === 1, { timeoutMs: 30_000 });
      assert.equal((await slotsStatus(client)).granted, 1, 'granted by the coordinator, not by the forged input');
      await untaint(stubs, h, node);
      assert.equal(stubs.evicted('g'), 1);
    });
  });

  it('a hand start whose carried state would break the run (a null pod) is not wedged: it starts afresh and replaces', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [pod('w')]);
    const queue = taskQueue('taint-forged');
    const broken = { node, taints: [], firstSeen: {}, pods: { x: null } } as unknown as NodeTaintData;
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node, broken);
      await waitFor('the pod evicted', () => stubs.evicted('w') === 1, { timeoutMs: 30_000 });
      assert.ok((await nodeStatus(h)).every((r) => r.pod !== 'x'), 'nothing of the forged state');
      await untaint(stubs, h, node);
    });
  });

  it('a hand-started coordinator carrying slots (one of them null) starts with none: it grants as the limit allows', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [pod('c')]);
    const queue = taskQueue('taint-forged-slots');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await client.workflow.start('taintReplacementsWorkflow', {
        taskQueue: queue, workflowId: SLOTS, args: [{ data: { queue: [], inFlight: [null, { uid: 'z', node: 'elsewhere' }], granted: 7 } }],
      });
      const h = await startNode(client, queue, node);
      await waitFor('the pod evicted', () => stubs.evicted('c') === 1, { timeoutMs: 30_000 });
      const status = await slotsStatus(client);
      assert.equal(status.granted, 1, JSON.stringify(status));
      assert.ok(status.inFlight.every((g) => g.uid !== 'z'), 'nothing of the forged slots');
      await untaint(stubs, h, node);
    });
  });

  it('a node workflow that fails clears its conditions and gives back its slots', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [pod('f')]);
    stubs.evictions.set('f', Array(50).fill('blocked'));
    const queue = taskQueue('taint-fail');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      await waitFor('the slot held', async () => (await slotsStatus(client)).inFlight.length === 1, { timeoutMs: 30_000 });
      stubs.refuseState = true;
      await h.signal('nodeTaints', { taints: [] });
      await assert.rejects(h.result());
      assert.ok(stubs.cleared('f'), 'conditions cleared');
      await waitFor('the slot given back', async () => (await slotsStatus(client)).inFlight.length === 0, { timeoutMs: 30_000 });
    });
  });

  it('a node workflow terminated while it holds a slot: the coordinator takes it back and grants the next', async () => {
    const stubs = new TaintStubs();
    const [n1, n2] = [fresh(), fresh()];
    stubs.taint(n1, [pod('t1')]);
    stubs.taint(n2, [pod('t2')]);
    stubs.evictions.set('t1', Array(50).fill('blocked'));
    const queue = taskQueue('taint-term');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h1 = await startNode(client, queue, n1);
      await waitFor('t1 holds the slot', async () => (await slotsStatus(client)).inFlight.some((g) => g.uid === 't1'), { timeoutMs: 30_000 });
      const h2 = await startNode(client, queue, n2);
      await waitFor('t2 queued', async () => (await slotsStatus(client)).queue.some((r) => r.uid === 't2'), { timeoutMs: 30_000 });
      await h1.terminate('gone wrong');
      await waitFor('t2 granted and evicted', () => stubs.evicted('t2') === 1, { timeoutMs: 60_000 });
      await untaint(stubs, h2, n2);
    });
  });

  it('an announceSlots not yet answered when the node continues as new is answered by the next run', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [pod('k')]);
    stubs.evictions.set('k', Array(200).fill('blocked'));
    const queue = taskQueue('taint-announce-can');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      await waitFor('k holds the slot', async () => (await slotsStatus(client)).inFlight.some((g) => g.uid === 'k'), { timeoutMs: 30_000 });
      // The coordinator is gone: the node cannot tell it what it holds, and keeps the ask.
      await client.workflow.getHandle(SLOTS).terminate('ended by hand');
      const firstRun = await runIdOf(h);
      await h.signal('announceSlots');
      await waitFor('taint/<node> to continue as new, the eviction still blocked', async () => {
        const rows = await nodeStatus(h);
        return (await runIdOf(h)) !== firstRun && rows.some((p) => p.state === 'Blocked' || p.state === 'Evicting');
      }, { timeoutMs: 120_000 });
      // A fresh coordinator, told nothing by anyone else: the new run answers the ask it carried.
      await startSlots(client, queue);
      await waitFor('the fresh coordinator counts k in flight', async () => (await slotsStatus(client)).inFlight.some((g) => g.uid === 'k'), { timeoutMs: 30_000 });
      await h.cancel();
      await assert.rejects(h.result());
    });
  });

  it('a fresh coordinator (the one before terminated) learns the slots held when it asks: nothing is granted beyond the limit', async () => {
    const stubs = new TaintStubs();
    const [n1, n2] = [fresh(), fresh()];
    stubs.taint(n1, [pod('h1')]);
    stubs.taint(n2, [pod('h2')]);
    stubs.evictions.set('h1', Array(100).fill('blocked'));
    const queue = taskQueue('taint-fresh');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h1 = await startNode(client, queue, n1);
      await waitFor('h1 holds the slot', async () => (await slotsStatus(client)).inFlight.some((g) => g.uid === 'h1'), { timeoutMs: 30_000 });
      await client.workflow.getHandle(SLOTS).terminate('ended by hand');
      await startSlots(client, queue);
      // What the watcher does when it starts a coordinator that was not running.
      await h1.signal('announceSlots');
      await waitFor('the fresh coordinator counts h1 in flight', async () => (await slotsStatus(client)).inFlight.some((g) => g.uid === 'h1'), { timeoutMs: 30_000 });
      const h2 = await startNode(client, queue, n2);
      await waitFor('h2 queued behind it', async () => (await slotsStatus(client)).queue.some((r) => r.uid === 'h2'), { timeoutMs: 30_000 });
      // Grant checks come every 2 s here: h1 keeps its slot through them, and h2 stays queued.
      const since = Date.now();
      await waitFor('a grant check of h1 passed', async () => {
        const g = (await slotsStatus(client)).inFlight.find((x) => x.uid === 'h1');
        return (g?.checkedAt ?? 0) > since;
      }, { timeoutMs: 30_000 });
      const s = await slotsStatus(client);
      assert.deepEqual(s.inFlight.map((g) => g.uid), ['h1'], 'one in flight, the limit');
      assert.equal(stubs.evicted('h2'), 0, 'h2 not evicted while h1 holds the only slot');
      await untaint(stubs, h1, n1);
      await waitFor('h2 granted once h1 gives its slot back, and evicted', () => stubs.evicted('h2') === 1, { timeoutMs: 60_000 });
      await untaint(stubs, h2, n2);
    });
  });

  it('an eviction whose activity gives up returns its slot and is asked for again later', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [pod('x')]);
    stubs.evictions.set('x', ['fail', 'evicted']);
    const queue = taskQueue('taint-giveup');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      await waitFor('the failed eviction shown', async () => (await nodeStatus(h)).some((p) => /eviction failed/.test(p.lastError ?? '')), { timeoutMs: 30_000 });
      await waitFor('replaced on the second attempt', async () => (await nodeStatus(h)).some((p) => p.state === 'Replaced'), { timeoutMs: 60_000 });
      await untaint(stubs, h, node);
      assert.equal(stubs.evicted('x'), 1);
      const s = await waitFor('the slot given back', async () => {
        const status = await slotsStatus(client);
        return status.inFlight.length === 0 && status;
      }, { timeoutMs: 30_000 });
      assert.equal(s.granted, 2, 'the slot was given back and granted again');
    });
  });

  it('a refused eviction gives its slot back and is never retried', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.taint(node, [pod('r')]);
    stubs.evictions.set('r', ['refuse']);
    const queue = taskQueue('taint-refuse');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      await waitFor('refused shown', async () => (await nodeStatus(h)).some((p) => p.state === 'Replaced' && /refused/.test(p.lastError ?? '')), { timeoutMs: 30_000 });
      await waitFor('the slot given back', async () => (await slotsStatus(client)).inFlight.length === 0, { timeoutMs: 30_000 });
      assert.equal(stubs.callsOf('evictPod').length, 1);
      await untaint(stubs, h, node);
    });
  });

  it('the marking period counts from when NodeTaintReplacing became visible, not from when it was decided', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.settings.taintReplacementTimeSeconds = 2;
    stubs.writeDelayMs = 1500;
    stubs.taint(node, [pod('m')]);
    const queue = taskQueue('taint-mark');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      await waitFor('evicted', () => stubs.evicted('m') === 1, { timeoutMs: 60_000 });
      const mark = stubs.callsOf('writeTaintConditions').find((c) => (c.result as { marked: Record<string, number> }).marked.m !== undefined)!;
      const visibleAt = mark.at;
      const evictedAt = stubs.callsOf('evictPod')[0]!.at;
      assert.ok(evictedAt - visibleAt >= 2000, `marked visibly for ${evictedAt - visibleAt} ms before the eviction; taintReplacementTimeSeconds is 2`);
      await untaint(stubs, h, node);
    });
  });

  it('a clear that fails at the end is tried again until the conditions are cleared; only then does the workflow end', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.settings.taintReplacementOptions[0]!.durationInSeconds = 3600;
    stubs.taint(node, [pod('e')]);
    stubs.clearFailures = 1;
    const queue = taskQueue('taint-clear-again');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      // Cancelled once NodeTaintDetected is written (before that, the ending has nothing to clear).
      await waitFor('NodeTaintDetected written', async () => (await nodeStatus(h)).some((p) => p.state === 'Detected' && p.condition === 'NodeTaintDetected'), { timeoutMs: 30_000 });
      await h.cancel();
      await waitFor('the failed clear shown', async () => {
        const d = (await h.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
        return /clearing the taint conditions of 1 pod\(s\) on node .* failed \(.*connection refused\); tried again every 30 s/.test(d);
      }, { timeoutMs: 30_000 });
      assert.equal(stubs.cleared('e'), false);
      assert.equal((await h.describe()).status.name, 'RUNNING', 'the workflow waits for its conditions to be cleared');
      await assert.rejects(h.result());
      assert.ok(stubs.cleared('e'), 'cleared before the workflow ended');
      assert.equal(stubs.callsOf('writeTaintConditions:failed').length, 1);
      await replaysWithPatches(client, h.workflowId, [TAINT_CLEAR_UNTIL_DONE_PATCH]);
    });
  });

  for (const at of ['Detected', 'Queued', 'Evicting', 'Blocked', 'Evicted'] as const) {
    it(`cancelled while ${at}: conditions cleared, slots withdrawn`, async () => {
      const stubs = new TaintStubs();
      const node = fresh();
      const uid = `c-${at}`;
      if (at === 'Detected') stubs.settings.taintReplacementOptions[0]!.durationInSeconds = 3600;
      stubs.taint(node, [pod(uid)]);
      let open: () => void = () => undefined;
      if (at === 'Evicting') stubs.evictGate = new Promise<void>((r) => (open = r));
      if (at === 'Blocked') stubs.evictions.set(uid, Array(50).fill('blocked'));
      if (at === 'Evicted') stubs.replacementReady = false;
      const queue = taskQueue(`taint-cancel-${at.toLowerCase()}`);
      await withWorker(env, queue, stubs.activities(), async (client) => {
        await startSlots(client, queue);
        let other: WorkflowHandle | undefined;
        const otherNode = fresh();
        if (at === 'Queued') {
          // A pod on another node holds the only slot (its eviction blocked).
          stubs.taint(otherNode, [pod(`other-${uid}`)]);
          stubs.evictions.set(`other-${uid}`, Array(50).fill('blocked'));
          other = await startNode(client, queue, otherNode);
          await waitFor('the slot taken', async () => (await slotsStatus(client)).inFlight.length === 1, { timeoutMs: 30_000 });
        }
        const h = await startNode(client, queue, node);
        await waitFor(`${at}`, async () => {
          if (at === 'Evicting') return stubs.callsOf('evictPod:start').length === 1;
          // Detected once its condition is written: before that, the ending has nothing to clear.
          return (await nodeStatus(h)).some((p) => p.state === at && (at !== 'Detected' || p.condition === 'NodeTaintDetected'));
        }, { timeoutMs: 30_000 });
        await h.cancel();
        open();
        await assert.rejects(h.result());
        assert.ok(stubs.cleared(uid), 'conditions cleared');
        await waitFor('nothing of the node left at the coordinator', async () => {
          const s = await slotsStatus(client);
          return ![...s.inFlight, ...s.queue].some((r) => r.node === node);
        }, { timeoutMs: 30_000 });
        if (other) await untaint(stubs, other, otherNode);
      });
    });
  }
});
