// The weeder workflow and the safety gates, with stub activities: a deletion
// observe mode recorded, or the pause held, is asked again by a deleting
// activity with a hold (not by a timer per pod); an observed pod is recorded
// once; a window that closes (or is stopped) while a deletion is held ends with
// it held, not made. The activity's side (the gates, the Events, the wait in
// place) is tested end to end in test/e2e/observe-weeder.test.ts and
// test/e2e/pause-weeder.test.ts.
import assert from 'node:assert/strict';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { patchMarkers, startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { weederRun, WeederStubs, type StubCall } from '../harness/weeder.ts';
import type { WatchInput, WeedPodsInput } from '../../src/activities/weeder.ts';
import { extendSignal, stopSignal, stopUpdate, windowQuery } from '../../src/weeder/messages.ts';
import type { Candidate, WeedOutcome, WeederResult } from '../../src/weeder/window.ts';
import { WEED_HOLD_MS, WEEDER_SAFETY_HOLD_PATCH } from '../../src/workflows/weeder.ts';

const PAUSE = 'weeder: paused since 2026-01-01T00:00:00.000Z by ops@host: incident 7';

describe('weeder workflow: observe mode and the pause (deletions recorded, or held and asked again with a hold)', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  // A task queue of its own for each test (its stubs' window length differs).
  let queue = '';
  const run = <T>(stubs: WeederStubs, fn: (client: Client) => Promise<T>) => {
    queue = taskQueue('weeder-safety');
    return withWorker(env, queue, stubs.activities, fn);
  };
  const start = (client: Client) => client.workflow.signalWithStart('weederWorkflow', {
    ...weederRun(), taskQueue: queue, signal: extendSignal, signalArgs: [{}],
  });
  const cand = (name: string): Candidate => ({ name, uid: `uid-${name}`, containers: ['c'], owner: 'ReplicaSet/rs' });
  const observed = (c: Candidate): WeedOutcome => ({ uid: c.uid, outcome: 'observed', at: new Date().toISOString(),
    note: `would delete pod ns/${c.name}: CrashLoopBackOff (c) while ns/db became ready` });
  const held = (c: Candidate): WeedOutcome => ({ uid: c.uid, outcome: 'held', reason: PAUSE });
  const deleted = (c: Candidate): WeedOutcome => ({ uid: c.uid, outcome: 'deleted', at: new Date().toISOString() });
  const weedInput = (c: StubCall) => c.input as WeedPodsInput;
  const podsOf = (c: StubCall) => weedInput(c).pods.map((p) => p.name);
  const detailsOf = async (h: WorkflowHandle) => (await h.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
  const markers = async (h: WorkflowHandle) => patchMarkers(await h.fetchHistory()).filter((id) => id === WEEDER_SAFETY_HOLD_PATCH).length;

  it('observed: recorded once, asked again with a hold (not proposed again), deleted once the weeder acts', async () => {
    const stubs = new WeederStubs(60_000);
    await run(stubs, async (client) => {
      const h = await start(client);
      const next = (kind: StubCall['kind'], pred: (c: StubCall) => boolean = () => true) =>
        waitFor(`a ${kind} call`, () => stubs.of(h.workflowId, kind).find((c) => !c.settled && pred(c)));
      (await next('watch')).reply({ candidates: [cand('a'), cand('b')] });
      const first = await next('weed');
      assert.equal(weedInput(first).holdMs, undefined, 'the first ask does not wait');
      assert.equal(weedInput(first).observed, undefined);
      first.reply([observed(cand('a')), observed(cand('b'))]);

      // Asked again at once, with a hold, saying both are recorded already.
      const again = await next('weed', (c) => c !== first);
      assert.deepEqual(podsOf(again), ['a', 'b']);
      assert.deepEqual(weedInput(again).observed, ['uid-a', 'uid-b']);
      const holdMs = weedInput(again).holdMs ?? 0;
      assert.ok(holdMs > 50_000 && holdMs <= 60_000, `held for the rest of the window (${holdMs} ms)`);
      let state = await h.query(windowQuery);
      assert.deepEqual(state.observed?.map((p) => [p.name, p.note]), [
        ['a', 'would delete pod ns/a: CrashLoopBackOff (c) while ns/db became ready'],
        ['b', 'would delete pod ns/b: CrashLoopBackOff (c) while ns/db became ready'],
      ]);
      assert.deepEqual(state.weeded, []);
      assert.match(await detailsOf(h), /Observe mode, nothing deleted; would have deleted: ns\/a, ns\/b\./);
      assert.doesNotMatch(await detailsOf(h), /Deleting:/);
      // Not proposed again by the window's watch while they are asked again.
      const watch = await next('watch');
      assert.deepEqual([...(watch.input as WatchInput).handled].sort(), ['uid-a', 'uid-b']);

      // The hold ends still observing: asked again, recorded no more.
      again.reply([observed(cand('a')), observed(cand('b'))]);
      const third = await next('weed', (c) => c !== first && c !== again);
      assert.deepEqual(weedInput(third).observed, ['uid-a', 'uid-b']);
      assert.equal((await h.query(windowQuery)).observed?.length, 2, 'each observed pod is recorded once');

      // Switched to act: a is deleted, b recovered meanwhile.
      third.reply([deleted(cand('a')), { uid: 'uid-b', outcome: 'skipped', reason: 'not in CrashLoopBackOff' }]);
      state = await waitFor('settled', async () => {
        const s = await h.query(windowQuery);
        return s.pending?.length === 0 ? s : undefined;
      });
      assert.deepEqual(state.weeded.map((p) => p.name), ['a']);
      assert.match(state.weeded[0]!.note ?? '', /recorded in observe mode at .*; deleted once the weeder acted/);
      assert.equal(stubs.of(h.workflowId, 'weed').length, 3, 'not asked again after an answer that is not gated');
      // b may crash again: the window's watch, told b was handled, starts again without it.
      const rewatch = await next('watch', (c) => c !== watch);
      await waitFor('the watch that knew b as handled cancelled', () => watch.cancelled);
      assert.deepEqual((rewatch.input as WatchInput).handled, ['uid-a']);
      assert.match(await detailsOf(h), /would have deleted: ns\/b\./);
      await h.signal(stopSignal, { reason: 'done' });
      const result = await h.result() as WeederResult;
      assert.deepEqual(result.observed.map((p) => p.name), ['a', 'b']);
      assert.deepEqual(result.weeded.map((p) => p.name), ['a']);
      assert.deepEqual(result.held, []);
      assert.equal(await markers(h), 1, `one ${WEEDER_SAFETY_HOLD_PATCH} marker`);
    });
  });

  it('held by the pause: shown held, asked again with a hold (one activity per hold, no timer), deleted when the answer comes', async () => {
    const stubs = new WeederStubs(3 * WEED_HOLD_MS);
    await run(stubs, async (client) => {
      const h = await start(client);
      const next = (kind: StubCall['kind'], pred: (c: StubCall) => boolean = () => true) =>
        waitFor(`a ${kind} call`, () => stubs.of(h.workflowId, kind).find((c) => !c.settled && pred(c)));
      (await next('watch')).reply({ candidates: [cand('a'), cand('b')] });
      const first = await next('weed');
      // a is held; b's deletion went out before the pause was read.
      first.reply([held(cand('a')), deleted(cand('b'))]);
      const again = await next('weed', (c) => c !== first);
      assert.deepEqual(podsOf(again), ['a']);
      assert.equal(weedInput(again).holdMs, WEED_HOLD_MS, 'held at most WEED_HOLD_MS in a longer window');
      assert.equal(weedInput(again).observed, undefined);
      const state = await h.query(windowQuery);
      assert.deepEqual(state.held?.map((p) => [p.name, p.reason]), [['a', PAUSE]]);
      assert.deepEqual(state.weeded.map((p) => p.name), ['b']);
      assert.deepEqual(state.pending?.map((p) => p.name), ['a'], 'a held pod is still being handled');
      const details = await detailsOf(h);
      assert.match(details, /Paused: 1 deletion\(s\) held \(weeder: paused since .*incident 7\); they go out within a second of tend resume weeder: ns\/a\./);
      assert.doesNotMatch(details, /Deleting:/);
      // The hold runs out still paused: asked again, the same `since`.
      const since = state.held![0]!.since;
      again.reply([held(cand('a'))]);
      const third = await next('weed', (c) => c !== first && c !== again);
      assert.equal((await h.query(windowQuery)).held?.[0]?.since, since);
      // Resumed: the waiting activity deletes.
      third.reply([deleted(cand('a'))]);
      await waitFor('a weeded', async () => (await h.query(windowQuery)).weeded.some((p) => p.name === 'a'));
      assert.deepEqual((await h.query(windowQuery)).held, []);
      const events = (await h.fetchHistory()).events ?? [];
      assert.equal(events.filter((e) => e.timerStartedEventAttributes).length, 0, 'no timer: the activity waits in place');
      await h.signal(stopSignal, {});
      const result = await h.result() as WeederResult;
      assert.deepEqual(result.weeded.map((p) => p.name).sort(), ['a', 'b']);
      assert.deepEqual(result.held, []);
    });
  });

  it('the window closes while a deletion is held: not asked again, not made; the result and details say so', async () => {
    const stubs = new WeederStubs(8_000);
    await run(stubs, async (client) => {
      const h = await start(client);
      const next = (kind: StubCall['kind'], pred: (c: StubCall) => boolean = () => true) =>
        waitFor(`a ${kind} call`, () => stubs.of(h.workflowId, kind).find((c) => !c.settled && pred(c)));
      (await next('watch')).reply({ candidates: [cand('a')] });
      const first = await next('weed');
      first.reply([held(cand('a'))]);
      const again = await next('weed', (c) => c !== first);
      const holdMs = weedInput(again).holdMs ?? 0;
      const { deadline } = await h.query(windowQuery);
      assert.ok(holdMs > 0 && Date.now() + holdMs <= deadline + 1000, `held no longer than the window (${holdMs} ms, ${deadline - Date.now()} ms left)`);
      // The real activity answers at the end of its hold, still paused.
      await waitFor('the window\'s end', () => Date.now() >= deadline, { timeoutMs: 20_000 });
      again.reply([held(cand('a'))]);
      // The window's watch, too, ends at the deadline (a stub ends when told).
      for (const w of stubs.of(h.workflowId, 'watch').filter((c) => !c.settled)) w.reply({ candidates: [] });
      const result = await h.result() as WeederResult;
      assert.deepEqual(result.held.map((p) => [p.name, p.reason]), [['a', PAUSE]]);
      assert.deepEqual(result.weeded, []);
      assert.equal(stubs.of(h.workflowId, 'weed').length, 2, 'not asked again once the window closed');
      assert.match(await detailsOf(h), /Closed while paused: 1 deletion\(s\) held were not made: ns\/a\./);
    });
  });

  it('a stop while a deletion waits held: the wait is cancelled, the pod looked at; still there, it is left held, not deleted', async () => {
    const stubs = new WeederStubs(60_000);
    await run(stubs, async (client) => {
      const h = await start(client);
      const next = (kind: StubCall['kind'], pred: (c: StubCall) => boolean = () => true) =>
        waitFor(`a ${kind} call`, () => stubs.of(h.workflowId, kind).find((c) => !c.settled && pred(c)));
      (await next('watch')).reply({ candidates: [cand('a')] });
      const first = await next('weed');
      first.reply([held(cand('a'))]);
      const again = await next('weed', (c) => c !== first);
      const answer = h.executeUpdate(stopUpdate, { args: [{ reason: 'operator' }] });
      const check = await next('check', () => true);
      assert.ok(again.cancelled, 'the waiting activity was cancelled');
      assert.deepEqual(podsOf(check), ['a']);
      check.reply([{ uid: 'uid-a', seen: 'present' }]);
      const stopped = await answer;
      assert.deepEqual(stopped.weeded, []);
      const result = await h.result() as WeederResult;
      assert.equal(result.stopped, 'operator');
      assert.deepEqual(result.held.map((p) => p.name), ['a']);
      assert.deepEqual(result.failed, []);
      assert.match(await detailsOf(h), /Closed while paused: 1 deletion\(s\) held were not made: ns\/a\./);
    });
  });
});
