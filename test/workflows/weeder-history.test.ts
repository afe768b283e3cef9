// The weeder workflow under a small history limit (the dev server's dynamic
// config): an armed window may watch for an hour and a window may be extended
// for a day, so the workflow must continue-as-new whatever it waits on: a
// watch that never returns, a deletion under way.
import assert from 'node:assert/strict';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { weederRun, WeederStubs, type StubCall } from '../harness/weeder.ts';
import type { WatchInput } from '../../src/activities/weeder.ts';
import { armSignal, extendSignal, stopSignal, windowQuery } from '../../src/weeder/messages.ts';
import type { Candidate, WeederResult } from '../../src/weeder/window.ts';

/** History events after which the dev server suggests continue-as-new here (its default is thousands). */
const SUGGEST_AT = 40;

describe('weeder workflow: continue-as-new before the history limit, whatever it waits on', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  const queue = taskQueue('weeder-history');
  const stubs = new WeederStubs(600_000);
  before(async () => {
    env = await startWorkflowEnv({
      dynamicConfig: [`limit.historyCount.suggestContinueAsNew=${SUGGEST_AT}`, 'limit.historyCount.warn=300', 'limit.historyCount.error=400'],
    });
  });
  after(async () => {
    await env?.teardown();
  });

  const run = <T>(fn: (client: Client) => Promise<T>) => withWorker(env, queue, stubs.activities, fn);
  const start = (client: Client, signal: typeof armSignal | typeof extendSignal) => client.workflow.signalWithStart('weederWorkflow', {
    ...weederRun(), taskQueue: queue, signal, signalArgs: [{}],
  });
  const next = (h: WorkflowHandle, kind: StubCall['kind'], pred: (c: StubCall) => boolean = () => true) =>
    waitFor(`a ${kind} call of ${h.workflowId}`, () => stubs.of(h.workflowId, kind).find((c) => !c.settled && pred(c)));
  const cand = (name: string): Candidate => ({ name, uid: `uid-${name}`, containers: ['c'], owner: 'ReplicaSet/rs' });
  const runIdOf = async (h: WorkflowHandle) => (await h.describe()).runId;
  /** Signals (each grows the history) until the workflow runs as a new run, or gives up well past the limit. */
  const growUntilNewRun = async (h: WorkflowHandle, firstRun: string) => {
    for (let i = 0; i < 60; i++) {
      await h.signal(armSignal, { reason: 'still not ready' });
      if (await runIdOf(h) !== firstRun) return;
    }
    await waitFor('a new run', async () => (await runIdOf(h)) !== firstRun, { timeoutMs: 20_000 });
  };

  it('armed, its watch never returning: continues as new in time, carrying the arming, and watches again', () => run(async (client) => {
    const h = await start(client, armSignal);
    const firstRun = await runIdOf(h);
    const armed = await next(h, 'watch');
    const since = (await h.query(windowQuery)).armed!.since;
    await growUntilNewRun(h, firstRun);
    const events = (await client.workflow.getHandle(h.workflowId, firstRun).fetchHistory()).events ?? [];
    assert.ok(events.length < 400, `continued as new at ${events.length} events, before the limit`);
    assert.ok(events.some((e) => e.workflowExecutionContinuedAsNewEventAttributes), 'the first run continued as new');
    // The new run is armed since the same moment and watches again.
    const again = await next(h, 'watch', (c) => c !== armed && (c.input as WatchInput).openOnReady === true);
    assert.equal((await h.query(windowQuery)).armed?.since, since);
    again.reply({ candidates: [cand('a')], readyAt: Date.now() });
    (await next(h, 'weed')).reply([{ uid: 'uid-a', outcome: 'deleted', at: new Date().toISOString() }]);
    await waitFor('a weeded', async () => (await h.query(windowQuery)).weeded.length === 1);
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.weeded.map((p) => p.name), ['a']);
    assert.ok(result.armedAt && result.openedAt);
  }));

  it('a deletion under way when continue-as-new is due: waited for, its outcome carried into the new run', () => run(async (client) => {
    const h = await start(client, extendSignal);
    const firstRun = await runIdOf(h);
    (await next(h, 'watch')).reply({ candidates: [cand('b')] });
    const weed = await next(h, 'weed');
    // Grow the history past the suggestion while the deletion is out: the run must wait for it.
    for (let i = 0; i < SUGGEST_AT; i++) await h.signal(extendSignal, { reason: 'more' });
    assert.equal(await runIdOf(h), firstRun, 'not carried over while a deletion is under way');
    weed.reply([{ uid: 'uid-b', outcome: 'deleted', at: new Date().toISOString() }]);
    await waitFor('a new run', async () => (await runIdOf(h)) !== firstRun, { timeoutMs: 20_000 });
    const state = await h.query(windowQuery);
    assert.deepEqual(state.weeded.map((p) => p.name), ['b']);
    assert.deepEqual(state.pending, []);
    const window = await next(h, 'watch', (c) => (c.input as WatchInput).handled.includes('uid-b'));
    assert.ok(window);
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.weeded.map((p) => p.name), ['b']);
  }));
});
