// The App entity workflow with stub activities on a real dev server:
// continue-as-new with work pending, reconciles that give up (an error an
// operator can see; the entity goes on once the cause is fixed), and
// cancellation at each await.
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowUpdateStage, type Client, type WorkflowHandle } from '@temporalio/client';
import { startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { appStubs, type AppStubs } from './apps-stubs.ts';
import type { AppEntityData } from '../../src/apps/entity.ts';
import type { AppCommandResult } from '../../src/apps/messages.ts';

const state = (h: WorkflowHandle) => h.query<AppEntityData>('state');

/** Resolves a gate the stubs wait on. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('App entity workflow (workflow test)', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  const start = (client: Client, q: string, name: string, extra: object = {}) => client.workflow.start('appWorkflow', {
    workflowId: `app/wf/${name}`, taskQueue: q, args: [{ namespace: 'wf', name, ...extra }],
  });

  it('continues-as-new with work pending: a reported stop, a newer generation and a deletion reach the next run', async () => {
    const q = taskQueue('apps-can');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      const g = gate();
      const h = await start(client, q, 'can', { historyLimit: 12 });
      await waitFor('the first reconcile', () => stubs.reconciles.length >= 1);
      stubs.gate = g.promise; // the next reconcile blocks
      stubs.gated = ['reconcileApp'];
      stubs.app.generation = 3;
      await h.signal('appChanged', { generation: 2, uid: 'uid-1', stoppedGeneration: 2 });
      await waitFor('the stop being reconciled', () => stubs.reconciles.some((r) => r.stopSeen === 2));
      await h.signal('appChanged', { generation: 3, uid: 'uid-1' });
      await h.signal('appChanged', { generation: 5, uid: 'uid-1', stoppedGeneration: 4 });
      stubs.app.generation = 5;
      stubs.gate = undefined;
      g.open();
      await waitFor('the second stop reconciled', () => stubs.reconciles.some((r) => r.stopSeen === 4));
      await waitFor('generation 5 seen', async () => (await state(client.workflow.getHandle(h.workflowId))).last?.lastSeen?.generation === 5);
      stubs.app.exists = false;
      await client.workflow.getHandle(h.workflowId).signal('appDeleted');
      assert.match(await client.workflow.getHandle(h.workflowId).result(), /deleted/);
      const first = await client.workflow.getHandle(h.workflowId, h.firstExecutionRunId).describe();
      assert.equal(first.status.name, 'CONTINUED_AS_NEW', 'the first run continued-as-new');
      assert.notEqual((await client.workflow.getHandle(h.workflowId).describe()).runId, h.firstExecutionRunId);
      assert.deepEqual(stubs.reconciles.filter((r) => r.stopSeen !== undefined).map((r) => r.stopSeen), [2, 4], 'each reported stop passed once');
    });
  });

  it('a hand start carrying state, or a history limit out of range, is a fresh run that reconciles (never wedged nor looping)', async () => {
    // Only a run the workflow continued as new takes carried state; this one would break decideNext.
    const q = taskQueue('apps-forged');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      const h = await start(client, q, 'forged', { state: { namespace: 'wf', name: 'forged', nextSeq: 1 }, historyLimit: 0 });
      await waitFor('the App reconciled', async () => (await state(h)).last?.lastSeen?.generation === stubs.app.generation);
      const runs = [];
      for await (const w of client.workflow.list({ query: `WorkflowId="${h.workflowId}"` })) runs.push(w.status.name);
      assert.deepEqual(runs.filter((r) => r === 'CONTINUED_AS_NEW'), [], 'no continue-as-new loop from historyLimit 0');
      stubs.app.exists = false;
      await h.signal('appDeleted');
      assert.match(await h.result(), /deleted/);
    });
  });

  it('an App deleted and created again while a reconcile of the old one runs: the new App is reconciled, not taken as handled', async () => {
    const q = taskQueue('apps-new-uid');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      const g = gate();
      const h = await start(client, q, 'new-uid');
      await h.signal('appChanged', { generation: 1, uid: 'uid-1' });
      await waitFor('the first App reconciled', async () => (await state(h)).last?.uid === 'uid-1');
      stubs.gate = g.promise;
      stubs.gated = ['reconcileApp'];
      stubs.readFirst = true;
      stubs.app.generation = 2;
      await h.signal('appChanged', { generation: 2, uid: 'uid-1' });
      await waitFor('a reconcile of the old App under way', () => stubs.reconciles.length >= 2);
      // Meanwhile the App is deleted and created again: the same name, a new uid, generation 1.
      stubs.app.uid = 'uid-2';
      stubs.app.generation = 1;
      await h.signal('appChanged', { generation: 1, uid: 'uid-2' });
      await waitFor('the new uid seen by the workflow', async () => (await state(h)).watchedUid === 'uid-2');
      stubs.gate = undefined;
      g.open();
      await waitFor('the new App reconciled', async () => (await state(h)).last?.uid === 'uid-2');
      const last = (await state(h)).last!;
      assert.equal(last.lastSeen?.generation, 1);
      assert.equal(stubs.reconciles.length, 3, 'one more reconcile, for the new App');
    });
  });

  it('a reconcile that gives up: the command fails with the reason, the error is visible, and the entity goes on once the cause is fixed', async () => {
    const q = taskQueue('apps-fail');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      const h = await start(client, q, 'fail');
      await waitFor('the first reconcile', () => stubs.reconciles.length >= 1);
      await waitFor('settled', async () => (await state(h)).settledSeq === 0 && (await state(h)).last?.settled === true);
      // Retries over at once (non-retryable) stands for retries exhausted: the workflow sees the same failure.
      stubs.failWith = ApplicationFailure.create({ message: 'apps "fail" is forbidden: User cannot patch', nonRetryable: true });
      const stop = await h.executeUpdate('stop') as AppCommandResult;
      assert.equal(stop.ok, false);
      assert.match(stop.message, /forbidden/);
      const restart = await h.executeUpdate('restart', { args: [{}] }) as AppCommandResult;
      assert.equal(restart.ok, false);
      assert.match(restart.message, /forbidden/);
      const s = await state(h);
      assert.match(s.lastError?.message ?? '', /forbidden/);
      assert.equal(s.lastError?.recovered, false);
      assert.equal(s.commands.length, 0, 'failed commands are not left queued');
      // The cause fixed: the next command goes through at once (no waiting out the back-off).
      stubs.failWith = undefined;
      const again = await h.executeUpdate('restart', { args: [{ strategy: 'rolling' }] }) as AppCommandResult;
      assert.equal(again.ok, true, again.message);
      const after = await state(h);
      assert.equal(after.lastError?.recovered, true, 'the failure stays visible, marked recovered');
      assert.equal(after.backoff, undefined);
      await h.terminate('test over');
    });
  });

  it('paused: a command waits, nothing applied, the reconcile tried again every 5 s; applied after the resume', async () => {
    const q = taskQueue('apps-held');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      const h = await start(client, q, 'held');
      await waitFor('settled', async () => (await state(h)).last?.settled === true);
      stubs.held = 'apps: paused since T by me: freeze (revision 1)';
      const before = stubs.reconciles.length;
      const restart = h.executeUpdate('restart', { args: [{ strategy: 'rolling' }] }) as Promise<AppCommandResult>;
      await waitFor('the held reconcile asked again', () => stubs.reconciles.length >= before + 2, { timeoutMs: 30_000 });
      const s = await state(h);
      assert.equal(s.commands.length, 1, 'the command was dropped while held');
      assert.ok(s.appliedSeq < s.commands[0]!.seq, 'the command counted as applied while held');
      assert.equal(s.lastError, undefined, 'a held reconcile counted as a failure');
      stubs.held = undefined;
      const r = await restart;
      assert.equal(r.ok, true, r.message);
      assert.equal(stubs.app.appRev, 1, 'the rolling restart was not applied after the resume');
      await h.terminate('test over');
    });
  });

  it('observe mode: a command answers with what would have been written', async () => {
    const q = taskQueue('apps-observed');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      const h = await start(client, q, 'observed');
      await waitFor('settled', async () => (await state(h)).last?.settled === true);
      stubs.observed = ['would set App wf/observed to app-rev 1, desiredState STARTED', 'would replace Deployment wf/observed-web-0: rolling restart'];
      const r = await h.executeUpdate('restart', { args: [{ strategy: 'rolling' }] }) as AppCommandResult;
      assert.equal(r.ok, true, r.message);
      assert.match(r.message, /^observe mode, nothing restarted; would have: would set App wf\/observed to app-rev 1.*; would replace Deployment/);
      assert.deepEqual((await state(h)).last?.observed, stubs.observed);
      await h.terminate('test over');
    });
  });

  it('a wait for pods that fails is recorded and the entity goes on', async () => {
    const q = taskQueue('apps-waitfail');
    const stubs = appStubs({ settled: false });
    const failing = stubs.activities as { waitForApp: (i: unknown) => Promise<unknown> };
    const real = failing.waitForApp;
    let fail = true;
    failing.waitForApp = async (i) => {
      if (fail) throw ApplicationFailure.create({ message: 'deployments.apps is forbidden', nonRetryable: true });
      return real(i);
    };
    await withWorker(env, q, stubs.activities, async (client) => {
      const h = await start(client, q, 'waitfail');
      await waitFor('the failure recorded', async () => /forbidden/.test((await state(h)).lastError?.message ?? ''));
      fail = false;
      stubs.app.settled = true;
      stubs.app.generation = 2;
      await h.signal('appChanged', { generation: 2, uid: 'uid-1' });
      await waitFor('recovered and settled', async () => {
        const s = await state(h);
        return s.lastError?.recovered === true && s.last?.settled === true && s.last.lastSeen?.generation === 2;
      });
      await h.terminate('test over');
    });
  });

  describe('cancellation at each await ends the workflow cancelled, answering the updates waiting on it', () => {
    const cases: { name: string; at: (s: AppStubs) => Partial<AppStubs>; gated?: boolean; withUpdate?: boolean; ready: (s: AppStubs, h: WorkflowHandle) => Promise<boolean> }[] = [
      { name: 'the namespace check (local activity)', at: () => ({}), gated: true, withUpdate: true, ready: async (s) => s.started.includes('appInScope') },
      { name: 'a reconcile', at: () => ({}), gated: true, withUpdate: true, ready: async (s) => s.started.includes('reconcileApp') },
      { name: 'a wait for pods', at: (s) => ({ app: { ...s.app, settled: false }, waitMs: 60_000 }), ready: async (s) => s.waits.length >= 1 },
      { name: 'idle', at: () => ({}), ready: async (_s, h) => (await state(h)).last?.settled === true },
      { name: 'a back-off', at: () => ({ failWith: ApplicationFailure.create({ message: 'boom', nonRetryable: true }) }),
        ready: async (_s, h) => (await state(h)).backoff !== undefined },
    ];
    for (const [i, c] of cases.entries()) {
      it(c.name, async () => {
        const q = taskQueue('apps-cancel');
        const stubs = appStubs();
        Object.assign(stubs, c.at(stubs));
        const g = gate();
        if (c.gated) {
          stubs.gate = g.promise;
          stubs.gated = [c.name === 'a reconcile' ? 'reconcileApp' : 'appInScope'];
        }
        await withWorker(env, q, stubs.activities, async (client) => {
          const h = await start(client, q, `cancel-${i}`);
          await waitFor(`the workflow at ${c.name}`, () => c.ready(stubs, h), { timeoutMs: 30_000 });
          // An update accepted before the cancellation, its handler waiting on the blocked step.
          const pending = c.withUpdate
            ? (await h.startUpdate('stop', { waitForStage: WorkflowUpdateStage.ACCEPTED })).result().then((r) => r as AppCommandResult, (e: unknown) => e as Error)
            : undefined;
          await h.cancel();
          const outcome = await h.result().then(() => 'completed', (e: Error) => `${e.name}: ${e.message}`);
          assert.match(outcome, /cancel/i, `the workflow ends cancelled (${outcome})`);
          if (pending) {
            const answer = await pending;
            assert.ok(answer instanceof Error || answer.ok === false, `the stop was answered as not applied: ${JSON.stringify(answer)}`);
          }
          assert.equal((await h.describe()).status.name, 'CANCELLED');
          g.open();
        });
        if (c.name === 'a wait for pods') assert.ok(stubs.cancelledActivities.includes('waitForApp'), 'the wait was cancelled');
      });
    }
  });
});
