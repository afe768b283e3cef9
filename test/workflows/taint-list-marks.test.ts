// The node workflow's first mark is written by the listing activity itself
// (patch taint-list-marks): the list is the pods' re-read, and a pod found new
// is NodeTaintDetected without a writeTaintConditions of its own. A new run
// reads the node, lists and marks in one activity (patch taint-start-list,
// taintNodeStart), with the hints of the signal it was started with; later
// listings are listTaintPods. Pods a listing did not mark (gone meanwhile, or
// an activity that lists only) are written the old way; the later marks
// (NodeTaintReplacing, clearing) are unchanged.
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { taskQueue, withWorker } from '../harness/workflow-env.ts';
import { nodeStatus, startNode, startSlots, stubPod, taintWorkflowEnv } from '../harness/taint-workflows.ts';
import { TaintStubs, type StubPod } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';
import type { ListTaintPodsInput, TaintNodeStartInput, TaintNodeStartResult } from '../../src/activities/taint.ts';

const pod = stubPod;

/** The stubs, with a taintNodeStart and a listTaintPods that mark the pods they list as new (all but `skip`), as the activities do. */
function marking(stubs: TaintStubs, skip: Set<string> = new Set()) {
  const base = stubs.activities();
  return {
    ...base,
    taintNodeStart: async (input: TaintNodeStartInput) => {
      const r = (await base.taintNodeStart!(input as never)) as TaintNodeStartResult;
      if (!r.pods || !r.mark) return r;
      const at = Date.now();
      const written = r.pods.map((p) => p.uid).filter((uid) => !skip.has(uid));
      const marked = r.mark.replacing ? Object.fromEntries(written.map((uid) => [uid, at])) : {};
      stubs.calls.push({ at, name: 'taintNodeStart:marked', input, result: { ...r, written, marked } });
      return { ...r, written, marked };
    },
    listTaintPods: async (input: ListTaintPodsInput) => {
      const pods = ((await base.listTaintPods!(input as never)) as StubPod[]);
      if (!input.mark) return pods;
      const at = Date.now();
      const written = pods.map((p) => p.uid).filter((uid) => !input.mark!.known.includes(uid) && !skip.has(uid));
      const marked = input.mark.replacing ? Object.fromEntries(written.map((uid) => [uid, at])) : {};
      stubs.calls.push({ at, name: 'listTaintPods:marked', input, result: { written, marked } });
      return { pods, written, marked };
    },
  };
}

describe('taint: the listing activity writes the first mark', function () {
  this.timeout(180_000);
  const env = taintWorkflowEnv();
  let n = 0;

  const fresh = () => `lm${++n}-${Date.now() % 100000}`;
  const untaint = async (stubs: TaintStubs, h: WorkflowHandle, node: string) => {
    stubs.taints.set(node, []);
    await h.signal('nodeTaints', { taints: [] });
    return h.result();
  };
  /** The pods each condition write set NodeTaintDetected on without NodeTaintReplacing (a first mark). */
  const firstMarksWritten = (stubs: TaintStubs) => stubs.callsOf('writeTaintConditions')
    .flatMap((c) => (c.input as { writes: { uid: string; detected: unknown; replacing: unknown }[] }).writes)
    .filter((w) => w.detected && !w.replacing).map((w) => w.uid);

  it('pods listed new are marked by the listing: Detected with no write of their own, then Replacing, evicted and cleared as before', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.settings.taintReplacementOptions[0]!.durationInSeconds = 2;
    stubs.settings.taintReplacementTimeSeconds = 1;
    stubs.taint(node, [pod('a'), pod('b')]);
    const queue = taskQueue('taint-list-marks');
    await withWorker(env(), queue, marking(stubs), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      await waitFor('both pods Detected', async () => (await nodeStatus(h)).filter((p) => p.state === 'Detected' && p.condition === 'NodeTaintDetected').length === 2,
        { timeoutMs: 30_000 });
      const start = stubs.callsOf('taintNodeStart:marked')[0]!.result as TaintNodeStartResult;
      assert.equal(start.mark!.replacing, null, 'the taint is 2 s young: Detected only');
      assert.deepEqual(start.written!.sort(), ['a', 'b']);
      assert.equal(stubs.callsOf('taintNodeState').length + stubs.callsOf('listTaintPods').length, 0, 'read, listed and marked in one activity');
      await waitFor('both evicted', () => stubs.evicted('a') === 1 && stubs.evicted('b') === 1, { timeoutMs: 60_000 });
      assert.deepEqual(firstMarksWritten(stubs), [], 'no condition write repeated the listing\'s mark');
      const replacing = stubs.callsOf('writeTaintConditions').flatMap((c) => (c.input as { writes: { uid: string; replacing: unknown }[] }).writes)
        .filter((w) => w.replacing).map((w) => w.uid).sort();
      assert.deepEqual(replacing, ['a', 'b'], 'NodeTaintReplacing written by writeTaintConditions when due');
      await untaint(stubs, h, node);
    });
  });

  it('a pod the listing did not mark is written by writeTaintConditions; a taint already due is marked Replacing by the listing', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.settings.taintReplacementOptions[0]!.durationInSeconds = 0;
    stubs.settings.taintReplacementTimeSeconds = 3600;
    stubs.taint(node, [pod('c'), pod('d')]);
    const queue = taskQueue('taint-list-skip');
    await withWorker(env(), queue, marking(stubs, new Set(['d'])), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      await waitFor('both pods Replacing', async () => (await nodeStatus(h)).filter((p) => p.condition === 'NodeTaintReplacing').length === 2,
        { timeoutMs: 30_000 });
      const mark = (stubs.callsOf('taintNodeStart:marked')[0]!.result as TaintNodeStartResult).mark!;
      assert.ok(mark.replacing, 'a taint of 0 s is due at once: the first mark carries NodeTaintReplacing');
      const writtenUids = () => stubs.callsOf('writeTaintConditions').flatMap((c) => (c.input as { writes: { uid: string }[] }).writes).map((w) => w.uid);
      // The status shows the state the workflow decided; the write it scheduled may still be on its way.
      await waitFor('d written', () => writtenUids().includes('d'), { timeoutMs: 30_000 });
      assert.deepEqual(writtenUids(), ['d'], 'only the pod the listing did not mark is written');
      await untaint(stubs, h, node);
    });
  });

  it("a run started with the watcher's signal decides its first mark with the signal's first sight of the taint", async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    // Due 30 s after it is first seen: the watcher saw it 60 s ago, so it is due already.
    stubs.settings.taintReplacementOptions[0]!.durationInSeconds = 30;
    stubs.settings.taintReplacementTimeSeconds = 3600;
    stubs.taint(node, [pod('s')]);
    const queue = taskQueue('taint-start-hints');
    const seenAt = Date.now() - 60_000;
    await withWorker(env(), queue, marking(stubs), async (client) => {
      await startSlots(client, queue);
      const taint = { ...stubs.taints.get(node)![0]!, seenAt };
      const h = await client.workflow.signalWithStart('taintNodeWorkflow', {
        taskQueue: queue, workflowId: `taint/${node}`, args: [{ node }], signal: 'nodeTaints', signalArgs: [{ taints: [taint] }],
      });
      await waitFor('s marked Replacing', async () => (await nodeStatus(h)).some((p) => p.pod === 'db-s' && p.condition === 'NodeTaintReplacing'),
        { timeoutMs: 30_000 });
      const call = stubs.callsOf('taintNodeStart:marked')[0]!;
      assert.deepEqual((call.input as TaintNodeStartInput).hints, { 'example.org/maintenance:NoSchedule': seenAt }, 'the signal taken in before the activity');
      const r = call.result as TaintNodeStartResult;
      assert.equal(r.taints[0]!.seenAt, seenAt);
      assert.ok(r.mark!.replacing, 'the first mark carries NodeTaintReplacing: the taint is due counted from the watcher\'s sight');
      assert.deepEqual(r.written, ['s']);
      assert.equal(stubs.callsOf('writeTaintConditions').length, 0, 'no write of its own');
      await untaint(stubs, h, node);
    });
  });

  it('a pod that lands later is listed again with the known pods named: only it is marked', async () => {
    const stubs = new TaintStubs();
    const node = fresh();
    stubs.settings.taintReplacementOptions[0]!.durationInSeconds = 3600;
    stubs.taint(node, [pod('e')]);
    const queue = taskQueue('taint-list-later');
    await withWorker(env(), queue, marking(stubs), async (client) => {
      await startSlots(client, queue);
      const h = await startNode(client, queue, node);
      await waitFor('e Detected', async () => (await nodeStatus(h)).some((p) => p.pod === 'db-e' && p.condition === 'NodeTaintDetected'), { timeoutMs: 30_000 });
      stubs.pods.set(node, [pod('e'), pod('f')]);
      await h.signal('podsChanged');
      await waitFor('f Detected', async () => (await nodeStatus(h)).some((p) => p.pod === 'db-f' && p.condition === 'NodeTaintDetected'), { timeoutMs: 30_000 });
      const second = stubs.callsOf('listTaintPods:marked')[0]!;
      assert.deepEqual((second.input as ListTaintPodsInput).mark!.known, ['e']);
      assert.deepEqual((second.result as { written: string[] }).written, ['f']);
      assert.deepEqual(firstMarksWritten(stubs), []);
      await untaint(stubs, h, node);
      assert.ok(stubs.cleared('e') && stubs.cleared('f'), 'both cleared when the taint went');
    });
  });
});
