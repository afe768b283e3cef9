// The weeder workflow on a real Temporal dev server with stub activities: the
// test decides when each watching, deleting and checking attempt answers (or
// never does, as when its worker died). The real activities are tested end to
// end in test/e2e/weeder-*.
import assert from 'node:assert/strict';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { patchMarkers, startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { weederRun, WeederStubs, type StubCall } from '../harness/weeder.ts';
import type { WatchInput, WeedPodsInput } from '../../src/activities/weeder.ts';
import { armedWeedingSignal, armSignal, extendSignal, stopSignal, stopUpdate, windowQuery } from '../../src/weeder/messages.ts';
import type { Candidate, WatchOutput, WeedOutcome, WeederResult } from '../../src/weeder/window.ts';
import { WEEDER_ARMED_RECORD_PATCH, WEEDER_REPROPOSE_SKIPPED_PATCH } from '../../src/workflows/weeder.ts';

describe('weeder workflow: watching lanes, deletions through their own activity, stop and cancellation', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  const queue = taskQueue('weeder');
  const stubs = new WeederStubs(20_000);
  before(async () => {
    env = await startWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  const run = <T>(fn: (client: Client) => Promise<T>) => withWorker(env, queue, stubs.activities, fn);
  const start = (client: Client, signal: typeof armSignal | typeof extendSignal, service = 'db') => client.workflow.signalWithStart('weederWorkflow', {
    ...weederRun(service), taskQueue: queue, signal, signalArgs: [{}],
  });
  const cand = (name: string): Candidate => ({ name, uid: `uid-${name}`, containers: ['c'], owner: 'ReplicaSet/rs' });
  const deleted = (c: Candidate): WeedOutcome => ({ uid: c.uid, outcome: 'deleted', at: new Date().toISOString() });
  /** The first unsettled call of a kind for the workflow, past the first `skip` of them. */
  const next = (h: WorkflowHandle, kind: StubCall['kind'], pred: (c: StubCall) => boolean = () => true) =>
    waitFor(`a ${kind} call of ${h.workflowId}`, () => stubs.of(h.workflowId, kind).find((c) => !c.settled && pred(c)));
  const lane = (which: 'armed' | 'window') => (c: StubCall) => ((c.input as WatchInput).openOnReady === true) === (which === 'armed');
  const podsOf = (c: StubCall) => (c.input as WeedPodsInput).pods.map((p) => p.name);
  const failureOf = async (h: WorkflowHandle) => {
    const err = await h.result().then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof WorkflowFailedError, `the workflow failed (${String(err)})`);
    return err.cause;
  };

  it('armed: the watch that sees the Service ready hands its candidates to a deleting activity, and the window lane carries on', () => run(async (client) => {
    const h = await start(client, armSignal);
    const armed = await next(h, 'watch', lane('armed'));
    const readyAt = Date.now();
    armed.reply({ candidates: [cand('a')], readyAt } satisfies WatchOutput);
    const weed = await next(h, 'weed');
    assert.deepEqual(podsOf(weed), ['a']);
    // The intent is in the history before the deletion is issued.
    assert.deepEqual((await h.query(windowQuery)).pending?.map((p) => p.name), ['a']);
    const window = await next(h, 'watch', lane('window'));
    assert.deepEqual((window.input as WatchInput).handled, ['uid-a'], 'the window lane does not propose a pending pod again');
    weed.reply([deleted(cand('a'))]);
    await waitFor('a recorded as weeded', async () => (await h.query(windowQuery)).weeded.some((p) => p.name === 'a'));
    const state = await h.query(windowQuery);
    assert.equal(state.openedAt, readyAt);
    assert.equal(state.armed, undefined);
    assert.equal(state.deadline, readyAt + 20_000);
    const meta = await h.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    assert.match(meta.currentDetails ?? '', /Window open until .*Weeded: a\./s);
    await h.signal(stopSignal, { reason: 'done' });
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.weeded.map((p) => [p.name, p.owner]), [['a', 'ReplicaSet/rs']]);
    assert.equal(result.stopped, 'done');
    assert.ok(result.armedAt && result.openedAt === new Date(readyAt).toISOString());
  }));

  /** What the real armed watch does the moment the Service is ready: announce the pods (with its token), then delete. */
  const announce = (h: WorkflowHandle, watch: StubCall, pods: Candidate[], token = (watch.input as WatchInput).weedToken!) =>
    h.signal(armedWeedingSignal, { token, pods });
  const pendingNames = async (h: WorkflowHandle) => ((await h.query(windowQuery)).pending ?? []).map((p) => p.name);

  it('armed, deleting at once: the watch announces the pods (in the history before its answer), deletes, and answers with the outcomes; no deleting activity', () => run(async (client) => {
    const h = await start(client, armSignal);
    const armed = await next(h, 'watch', lane('armed'));
    const token = (armed.input as WatchInput).weedToken;
    assert.ok(typeof token === 'string' && token.length > 0, 'the armed watch is given a token');
    await announce(h, armed, [cand('a'), cand('b')]);
    await waitFor('a and b pending', async () => (await pendingNames(h)).join() === 'a,b');
    const readyAt = Date.now();
    armed.reply({ candidates: [], readyAt, weeded: [deleted(cand('a')), { uid: 'uid-b', outcome: 'skipped', reason: 'gone (or replaced) when deleted' }] } satisfies WatchOutput);
    await waitFor('a weeded, nothing pending', async () => {
      const w = await h.query(windowQuery);
      return w.weeded.some((p) => p.name === 'a') && (w.pending ?? []).length === 0;
    });
    const window = await next(h, 'watch', lane('window'));
    assert.equal((window.input as WatchInput).weedToken, undefined, 'the window lane deletes nothing itself');
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.weeded.map((p) => [p.name, p.owner]), [['a', 'ReplicaSet/rs']]);
    assert.equal(stubs.of(h.workflowId, 'weed').length, 0, 'no deleting activity');
    assert.equal(stubs.of(h.workflowId, 'check').length, 0, 'nothing to look at');
    const events = (await h.fetchHistory()).events ?? [];
    const signalAt = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'armedWeeding');
    const answerAt = events.findIndex((e) => e.activityTaskCompletedEventAttributes);
    assert.ok(signalAt > 0 && signalAt < answerAt, 'the announcement is in the history before the watch\'s answer');
  }));

  it('armed, deleting at once, beside an open window\'s lane that found the same pods: the armed watch\'s deletions are recorded though the deleting activity found them being deleted', () => run(async (client) => {
    // Open, then armed (the Service turned not ready): both lanes watch. At its return, the open
    // window's lane proposes the pods and the armed watch announces and deletes them; the deleting
    // activity then finds them being deleted (by the watch) and skips them, before the watch answers.
    const h = await start(client, extendSignal);
    const window = await next(h, 'watch', lane('window'));
    await h.signal(armSignal, {});
    const armed = await next(h, 'watch', lane('armed'));
    const readyAt = Date.now();
    window.reply({ candidates: [cand('a'), cand('b')], readyAt } satisfies WatchOutput);
    const weed = await next(h, 'weed');
    assert.deepEqual(podsOf(weed), ['a', 'b']);
    await announce(h, armed, [cand('a'), cand('b')]);
    weed.reply(['a', 'b'].map((n) => ({ uid: `uid-${n}`, outcome: 'skipped', reason: 'being deleted already' }) satisfies WeedOutcome));
    await waitFor('a and b no longer pending', async () => (await pendingNames(h)).length === 0);
    armed.reply({ candidates: [], readyAt, weeded: [deleted(cand('a')), deleted(cand('b'))] } satisfies WatchOutput);
    await waitFor('a and b recorded as weeded', async () => (await h.query(windowQuery)).weeded.map((p) => p.name).sort().join() === 'a,b');
    await h.signal(stopSignal, {});
    assert.deepEqual((await h.result() as WeederResult).weeded.map((p) => p.name).sort(), ['a', 'b']);
    assert.equal(patchMarkers(await h.fetchHistory()).filter((id) => id === WEEDER_ARMED_RECORD_PATCH).length, 1, 'the behaviour is marked in the history');
  }));

  it('armed, deleting at once: an announcement without the watch\'s token is ignored', () => run(async (client) => {
    const h = await start(client, armSignal);
    const armed = await next(h, 'watch', lane('armed'));
    await announce(h, armed, [cand('forged')], 'not-the-token');
    await h.signal(armedWeedingSignal, { pods: [cand('forged')] } as never);
    await announce(h, armed, [cand('real')]);
    await waitFor('the real announcement pending', async () => (await pendingNames(h)).includes('real'));
    assert.deepEqual(await pendingNames(h), ['real'], 'only the announcement with the token is taken');
    armed.reply({ candidates: [], readyAt: Date.now(), weeded: [deleted(cand('real'))] });
    await waitFor('real weeded', async () => (await h.query(windowQuery)).weeded.some((p) => p.name === 'real'));
    await h.signal(stopSignal, {});
    assert.deepEqual((await h.result() as WeederResult).weeded.map((p) => p.name), ['real']);
  }));

  it('armed, deleting at once: a watch lost after its announcement: the next attempt answers, the announced pods are looked at and a pod gone is recorded as weeded', () => run(async (client) => {
    const h = await start(client, armSignal);
    const first = await next(h, 'watch', lane('armed'));
    await announce(h, first, [cand('a')]);
    await waitFor('a pending', async () => (await pendingNames(h)).includes('a'));
    first.fail(new Error('worker lost'));
    const second = await next(h, 'watch', (c) => lane('armed')(c) && c.attempt === 2);
    // The pod is gone (the first attempt deleted it): the second sees the Service ready and nothing to weed.
    second.reply({ candidates: [], readyAt: Date.now(), weeded: [] });
    const check = await next(h, 'check');
    assert.deepEqual(podsOf(check), ['a']);
    check.reply([{ uid: 'uid-a', seen: 'gone' }]);
    await waitFor('a recorded as weeded', async () => (await h.query(windowQuery)).weeded.some((p) => p.name === 'a'));
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.match(result.weeded[0]?.note ?? '', /answer was lost/);
    assert.equal(stubs.of(h.workflowId, 'weed').length, 0, 'no deleting activity');
  }));

  it('armed, deleting at once: a stop while the watch deletes answers after the watch does, with its deletions', () => run(async (client) => {
    const h = await start(client, armSignal);
    const armed = await next(h, 'watch', lane('armed'));
    armed.deleting = true;
    await announce(h, armed, [cand('a')]);
    await waitFor('a pending', async () => (await pendingNames(h)).includes('a'));
    const answer = h.executeUpdate(stopUpdate, { args: [{ reason: 'investigating' }] });
    await waitFor('the stop taken in', async () => (await h.query(windowQuery)).stopped);
    let answered = false;
    void answer.then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(answered, false, 'the answer waits for the armed watch that is deleting');
    await waitFor('the stop reaching the armed watch', () => armed.cancelled, { timeoutMs: 20_000 });
    assert.equal(answered, false, 'the answer waits for the armed watch that is deleting');
    armed.reply({ candidates: [], readyAt: Date.now(), weeded: [deleted(cand('a'))] });
    const stopped = await answer;
    assert.deepEqual(stopped.weeded.map((p) => p.name), ['a']);
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.weeded.map((p) => p.name), ['a']);
    assert.equal(stubs.of(h.workflowId, 'weed').length, 0);
  }));

  it('armed: a lost armed watch does not hold up the window the watcher\'s transition opens', () => run(async (client) => {
    const h = await start(client, armSignal);
    const armed = await next(h, 'watch', lane('armed'));
    await h.signal(extendSignal, { reason: 'not-ready -> ready' });
    const window = await next(h, 'watch', lane('window'));
    assert.ok(!armed.settled, 'the armed attempt is still out');
    window.reply({ candidates: [cand('b')] });
    (await next(h, 'weed')).reply([deleted(cand('b'))]);
    await next(h, 'watch', (c) => lane('window')(c) && c !== window);
    assert.ok((await h.query(windowQuery)).armed, 'still armed: no watch has seen the Service ready yet');
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.equal(result.stopped, 'stop signal');
    assert.deepEqual(result.weeded.map((p) => p.name), ['b']);
  }));

  it('armed again during a window: the armed lane runs beside the window lane', () => run(async (client) => {
    const h = await start(client, extendSignal);
    const window = await next(h, 'watch', lane('window'));
    await h.signal(armSignal, { reason: 'ready -> not-ready' });
    const armed = await next(h, 'watch', lane('armed'));
    assert.ok(!window.settled, 'both lanes run side by side');
    assert.equal((armed.input as WatchInput).until, (await h.query(windowQuery)).armed!.until);
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.ok(result.openedAt && result.armedAt && result.openedAt < result.armedAt);
    const events = (await h.fetchHistory()).events ?? [];
    assert.equal(events.filter((e) => e.activityTaskCancelRequestedEventAttributes).length, 2, 'both watches\' cancellation asked for');
  }));

  it('stop while a deletion is under way: the stop update answers after it, with it; nothing proposed after the stop is deleted', () => run(async (client) => {
    const h = await start(client, extendSignal);
    (await next(h, 'watch', lane('window'))).reply({ candidates: [cand('a')] });
    const weed = await next(h, 'weed');
    const answer = h.executeUpdate(stopUpdate, { args: [{ reason: 'investigating' }] });
    await waitFor('the stop taken in', async () => (await h.query(windowQuery)).stopped);
    // A watch still out when the stop came: whatever it finds now is not acted on.
    for (const w of stubs.of(h.workflowId, 'watch').filter((c) => !c.settled)) w.reply({ candidates: [cand('late')] });
    let answered = false;
    void answer.then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(answered, false, 'the answer waits for the deletion under way');
    weed.reply([deleted(cand('a'))]);
    const stopped = await answer;
    assert.deepEqual(stopped.weeded.map((p) => p.name), ['a']);
    assert.equal(stopped.stopped, 'investigating');
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.weeded.map((p) => p.name), ['a']);
    assert.deepEqual(stubs.of(h.workflowId, 'weed').map(podsOf), [['a']], 'no deleting activity after the stop');
  }));

  it('a stop update with a payload that is not one is refused, and changes nothing', () => run(async (client) => {
    const h = await start(client, extendSignal);
    await next(h, 'watch', lane('window'));
    const refusal = await h.executeUpdate(stopUpdate, { args: [{ reason: 42 } as never] }).then(() => undefined, (e: Error) => e);
    assert.match(String((refusal?.cause as Error | undefined)?.message), /stop refused: reason: must be a string/);
    assert.equal((await h.query(windowQuery)).stopped, undefined);
    await h.signal(stopSignal, {});
    await h.result();
  }));

  it('a pod skipped between two crashes is proposed again when it crash-loops again: the window\'s watch that knew it as handled starts again', () => run(async (client) => {
    const h = await start(client, extendSignal);
    const first = await next(h, 'watch', lane('window'));
    first.reply({ candidates: [cand('a'), cand('b')] });
    const weed = await next(h, 'weed');
    assert.deepEqual(podsOf(weed), ['a', 'b']);
    // The next watch starts while both are being deleted: told both are handled.
    const watch = await next(h, 'watch', (c) => c !== first && lane('window')(c));
    assert.deepEqual([...(watch.input as WatchInput).handled].sort(), ['uid-a', 'uid-b']);
    // b's container was running again when the deleting activity looked (between two crashes).
    weed.reply([deleted(cand('a')), { uid: 'uid-b', outcome: 'skipped', reason: 'not in CrashLoopBackOff' }]);
    await waitFor('the watch that knew b as handled cancelled', () => watch.cancelled);
    const rewatch = await next(h, 'watch', (c) => c !== first && c !== watch && lane('window')(c));
    assert.deepEqual((rewatch.input as WatchInput).handled, ['uid-a']);
    // b crash-loops again: proposed, and deleted.
    rewatch.reply({ candidates: [cand('b')] });
    const again = await next(h, 'weed', (c) => c !== weed);
    assert.deepEqual(podsOf(again), ['b']);
    again.reply([deleted(cand('b'))]);
    await waitFor('both weeded', async () => (await h.query(windowQuery)).weeded.length === 2);
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.weeded.map((p) => p.name), ['a', 'b']);
    const markers = patchMarkers(await h.fetchHistory()).filter((id) => id === WEEDER_REPROPOSE_SKIPPED_PATCH).length;
    assert.equal(markers, 1, `one ${WEEDER_REPROPOSE_SKIPPED_PATCH} marker`);
  }));

  it('a deletion whose answer is lost (worker gone) is retried, and a pod found gone then is recorded as weeded', () => run(async (client) => {
    const h = await start(client, extendSignal);
    (await next(h, 'watch', lane('window'))).reply({ candidates: [cand('a')] });
    const first = await next(h, 'weed');
    assert.equal(first.attempt, 1);
    // The first attempt deleted, then its answer was lost: a retryable error stands for the lost worker.
    first.fail(new Error('connection reset after the delete'));
    const retry = await next(h, 'weed', (c) => c.attempt === 2);
    retry.reply([{ uid: 'uid-a', outcome: 'deleted', at: new Date().toISOString(), earlier: true }]);
    await waitFor('a recorded', async () => (await h.query(windowQuery)).weeded.length === 1);
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.weeded.map((p) => p.name), ['a']);
    assert.match(result.weeded[0]!.note ?? '', /earlier attempt/);
  }));

  it('a deletion that exhausts its retries: the pods are looked at; still there, they are recorded as failed with the reason, and the window goes on', () => run(async (client) => {
    const h = await start(client, extendSignal);
    (await next(h, 'watch', lane('window'))).reply({ candidates: [cand('a'), cand('b')] });
    for (let attempt = 1; attempt <= 5; attempt++) {
      (await next(h, 'weed', (c) => c.attempt === attempt)).fail(new Error(`apiserver said 500 (attempt ${attempt})`));
    }
    const check = await next(h, 'check');
    assert.deepEqual(podsOf(check), ['a', 'b']);
    check.reply([{ uid: 'uid-a', seen: 'gone' }, { uid: 'uid-b', seen: 'present' }]);
    const state = await waitFor('settled', async () => {
      const s = await h.query(windowQuery);
      return s.pending?.length === 0 ? s : undefined;
    });
    assert.deepEqual(state.weeded.map((p) => p.name), ['a']);
    assert.match(state.weeded[0]!.note ?? '', /answer was lost .*gone/);
    assert.deepEqual(state.failed?.map((p) => p.name), ['b']);
    assert.match(state.failed![0]!.reason, /deleting failed: .*apiserver said 500 \(attempt 5\)/);
    // The window goes on; b is not proposed again.
    const window = await next(h, 'watch', lane('window'));
    assert.deepEqual([...(window.input as WatchInput).handled].sort(), ['uid-a', 'uid-b']);
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.failed.map((p) => p.name), ['b']);
  }));

  it('a watch that gives up: the window fails with the reason and what it weeded, after its deletions under way answer', () => run(async (client) => {
    const h = await start(client, armSignal);
    const armed = await next(h, 'watch', lane('armed'));
    armed.reply({ candidates: [cand('a')], readyAt: Date.now() });
    const weed = await next(h, 'weed');
    const window = await next(h, 'watch', lane('window'));
    window.fail(ApplicationFailure.nonRetryable('the pod watch cannot be opened: forbidden', 'Forbidden'));
    await waitFor('the failure taken in', async () => (await h.query(windowQuery)).failure);
    weed.reply([deleted(cand('a'))]);
    const cause = await failureOf(h) as ApplicationFailure;
    assert.equal(cause.type, 'WeederFailed');
    assert.match(cause.message, /weeder window failed: the window's watch of ns\/db-\w+ gave up: .*forbidden/);
    const result = cause.details?.[0] as WeederResult;
    assert.deepEqual(result.weeded.map((p) => p.name), ['a']);
    assert.match(result.failure ?? '', /gave up/);
  }));

  it('a refused Service fails the workflow at once', () => run(async (client) => {
    const h = await start(client, extendSignal);
    (await next(h, 'watch', lane('window'))).fail(ApplicationFailure.nonRetryable('refused: not configured', 'WeederRefused'));
    const cause = await failureOf(h) as Error & { cause?: Error };
    assert.match(`${cause?.message}: ${cause?.cause?.message}`, /refused: not configured/);
  }));

  describe('cancellation at each await', () => {
    /** Runs fn with a worker whose settings lookup never answers; `looking()` says whether one is under way. */
    const settingsHang = (fn: (client: Client, looking: () => boolean) => Promise<void>) => {
      let lookups = 0;
      return withWorker(env, queue, {
        ...stubs.activities,
        weederSettings: async () => {
          lookups++;
          await Context.current().cancelled;
        },
      }, (client) => fn(client, () => lookups > 0));
    };

    it('during the settings lookup: cancelled before anything is watched', () => settingsHang(async (client, looking) => {
      const h = await start(client, extendSignal);
      await waitFor('the settings lookup under way', looking);
      await h.cancel();
      await assert.rejects(h.result(), /cancel/i);
      assert.equal(stubs.of(h.workflowId, 'watch').length, 0);
    }));

    it('during the settings lookup of a run carried over: the window answers queries already', () => settingsHang(async (client, looking) => {
      const weeded = [{ name: 'a', uid: 'uid-a', at: new Date().toISOString() }];
      const carried = { deadline: Date.now() + 60_000, openedAt: Date.now(), transitions: 2, weeded, reported: [] };
      const run = weederRun();
      const h = await client.workflow.start('weederWorkflow', {
        workflowId: run.workflowId, taskQueue: queue, args: [{ ...run.args[0], carried }],
      });
      await waitFor('the settings lookup under way', looking);
      const state = await h.query(windowQuery);
      assert.deepEqual(state.weeded.map((p) => p.name), ['a']);
      assert.equal(state.transitions, 2);
      await h.terminate('test done');
    }));

    it('while watching: the watches are cancelled and the workflow ends cancelled', () => run(async (client) => {
      const h = await start(client, armSignal);
      const armed = await next(h, 'watch', lane('armed'));
      await h.cancel();
      await assert.rejects(h.result(), /cancel/i);
      // The watch deletes nothing, so it is not waited for: its cancellation is asked for, in the history.
      const events = (await h.fetchHistory()).events ?? [];
      assert.ok(events.some((e) => e.activityTaskCancelRequestedEventAttributes), 'the watch\'s cancellation was requested');
      assert.ok(!armed.settled || armed.cancelled);
    }));

    it('while a deletion is under way: the workflow waits for its answer, so it is in the history, then ends cancelled', () => run(async (client) => {
      const h = await start(client, extendSignal);
      (await next(h, 'watch', lane('window'))).reply({ candidates: [cand('a')] });
      const weed = await next(h, 'weed');
      await h.cancel();
      await waitFor('the stop taken in', async () => (await h.query(windowQuery)).stopped?.reason === 'workflow cancelled');
      assert.equal((await h.describe()).status.name, 'RUNNING', 'waits for the deletion under way');
      weed.reply([deleted(cand('a'))]);
      await assert.rejects(h.result(), /cancel/i);
      const events = (await h.fetchHistory()).events ?? [];
      assert.ok(events.some((e) => e.activityTaskCompletedEventAttributes), 'the deletion\'s answer is in the history');
    }));

    it('while looking at pods whose deletion was cancelled: the look finishes and is recorded', () => run(async (client) => {
      const h = await start(client, extendSignal);
      (await next(h, 'watch', lane('window'))).reply({ candidates: [cand('a')] });
      const weed = await next(h, 'weed');
      for (let attempt = 1; attempt <= 5; attempt++) {
        if (attempt > 1) await next(h, 'weed', (c) => c.attempt === attempt).then((c) => c.fail(new Error('500')));
        else weed.fail(new Error('500'));
      }
      const check = await next(h, 'check');
      await h.signal(stopSignal, { reason: 'enough' });
      await waitFor('the stop taken in', async () => (await h.query(windowQuery)).stopped);
      check.reply([{ uid: 'uid-a', seen: 'deleting' }]);
      const result = await h.result() as WeederResult;
      assert.deepEqual(result.weeded.map((p) => p.name), ['a']);
      assert.equal(result.stopped, 'enough');
    }));
  });
});
