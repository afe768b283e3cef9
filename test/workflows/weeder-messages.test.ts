// The weeder workflow's handlers against every kind of JSON a writer to tend's
// namespace can send (the `temporal` CLI encodes what the SDK cannot): deep
// nesting, huge arrays, wrong types, unicode. Each is ignored (a signal) or
// refused with a short reason (an update), no workflow task fails, and the
// window goes on taking the watcher's signals.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError } from '@temporalio/client';
import { replaysWithPatches, startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { weederRun, WeederStubs } from '../harness/weeder.ts';
import { deepJson, failedWorkflowTasks, hugeJson, rawSignal, rawUpdate } from '../harness/raw-messages.ts';
import { extendSignal, stopSignal, windowQuery } from '../../src/weeder/messages.ts';
import { WEEDER_ID_NAMES_SERVICE_PATCH, WEEDER_OWN_ID_PATCH } from '../../src/workflows/weeder.ts';

describe('weeder workflow: every handler is total and bounded', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  const queue = taskQueue('weeder-messages');
  const stubs = new WeederStubs(60_000);
  before(async () => {
    env = await startWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  const deep = deepJson(5000);
  const huge = hugeJson();
  const forged = [
    deep, huge, `{"seconds":${deep}}`, `{"reason":${deep}}`, `{"seconds":${huge}}`, `{"reason":${huge}}`,
    '"a string"', '42', 'true', '[1,2]', '{"seconds":"10"}', '{"seconds":-5}', '{"seconds":1e400}',
    '{"reason":7}', `{"reason":"${'x'.repeat(100_000)}"}`, '{"reason":"\\ud800 🌱 \\u0000"}', '{"seconds":60,"command":"rm -rf /"}',
  ];

  it('extend, arm, stop and armedWeeding: every forged payload is ignored, no workflow task fails, and the window goes on', () =>
    withWorker(env, queue, stubs.activities, async (client) => {
      const h = await client.workflow.signalWithStart('weederWorkflow', { ...weederRun(), taskQueue: queue, signal: extendSignal, signalArgs: [{}] });
      await waitFor('the window open', async () => (await h.query(windowQuery)).transitions === 1);
      for (const name of ['extend', 'arm', 'stop', 'armedWeeding']) {
        for (const json of forged) await rawSignal(client, h.workflowId, name, json);
      }
      // Taken in order: once this one is counted, every forged one before it has been handled.
      await h.signal(extendSignal, { reason: 'after the forged ones' });
      await waitFor('the genuine extend taken', async () => (await h.query(windowQuery)).transitions === 2);
      const w = await h.query(windowQuery);
      assert.equal(w.stopped, undefined, 'no forged stop was taken');
      assert.equal(w.armed, undefined, 'no forged arm was taken');
      assert.deepEqual(w.pending, [], 'no forged announcement was taken');
      assert.deepEqual(await failedWorkflowTasks(h), [], 'no workflow task failed');
      await h.signal(stopSignal, { reason: 'done' });
      assert.equal((await h.result()).stopped, 'done');
    }));

  it('the stop update: a forged payload is rejected with a short reason naming what is wrong, and nothing stops', () =>
    withWorker(env, queue, stubs.activities, async (client) => {
      const h = await client.workflow.signalWithStart('weederWorkflow', { ...weederRun(), taskQueue: queue, signal: extendSignal, signalArgs: [{}] });
      await waitFor('the window open', async () => (await h.query(windowQuery)).transitions === 1);
      for (const json of forged) {
        const r = await rawUpdate(client, h.workflowId, 'stop', json);
        assert.equal(r.accepted, false, `stop ${json.slice(0, 40)} rejected`);
        assert.ok((r.message ?? '').length < 400, `a short reason: ${(r.message ?? '').slice(0, 400)}`);
      }
      assert.match((await rawUpdate(client, h.workflowId, 'stop', '{"reason":7}')).message ?? '', /stop refused: reason: must be a string/);
      assert.equal((await h.query(windowQuery)).stopped, undefined);
      assert.deepEqual(await failedWorkflowTasks(h), [], 'no workflow task failed');
      await h.signal(stopSignal, {});
      await h.result();
    }));

  it('the start input: deep, huge or mistyped, it is refused (the workflow fails, non-retryably) before anything is watched', () =>
    withWorker(env, queue, stubs.activities, async (client) => {
      const run = weederRun();
      const id = run.workflowId;
      for (const carried of [JSON.parse(deepJson(2000)) as unknown,
        { deadline: 1, transitions: 0, weeded: Array.from({ length: 20_000 }, () => ({ name: 'a', uid: 'b' })), reported: [] }]) {
        const h = await client.workflow.start('weederWorkflow', { workflowId: id, taskQueue: queue, args: [{ ...run.args[0], carried } as never] });
        const err = await h.result().then(() => undefined, (e: unknown) => e);
        assert.ok(err instanceof WorkflowFailedError, 'refused');
        assert.match(String((err.cause as Error).message), /carried is refused unread|carried is not a window/);
        assert.deepEqual(await failedWorkflowTasks(h), []);
        assert.equal(stubs.of(id, 'watch').length, 0, 'nothing watched');
      }
    }));

  it('a start under a Service\'s weeder id whose input names another Service (or none) serves the Service its id names: the watcher\'s signal is not lost', () =>
    withWorker(env, queue, stubs.activities, async (client) => {
      for (const args of [{ namespace: 'ns', service: 'other' }, { namespace: 'ns' }, 'ns/db']) {
        const run = weederRun();
        const [{ namespace, service }] = run.args;
        // A junk start in the moment before the watcher's signal-with-start: the signal reaches it.
        const junk = await client.workflow.start('weederWorkflow', { workflowId: run.workflowId, taskQueue: queue, args: [args as never] });
        const h = await client.workflow.signalWithStart('weederWorkflow', { ...run, taskQueue: queue, signal: extendSignal, signalArgs: [{ reason: 'transition' }] });
        assert.equal(h.signaledRunId, junk.firstExecutionRunId, 'the signal went to the junk start');
        await waitFor('the window open for the Service its id names', async () => (await h.query(windowQuery)).transitions === 1);
        await waitFor('its dependants watched', () => stubs.of(run.workflowId, 'watch').length > 0);
        const watched = stubs.of(run.workflowId, 'watch')[0]!.input as { namespace: string; service: string };
        assert.deepEqual({ namespace: watched.namespace, service: watched.service }, { namespace, service });
        // UnhandledCommand: the server's answer when a signal lands while a task completes (retried at once), not a failure of the workflow's.
        assert.deepEqual((await failedWorkflowTasks(h)).filter((cause) => cause !== 'UnhandledCommand'), []);
        await h.signal(stopSignal, { reason: 'done' });
        assert.equal((await h.result()).stopped, 'done');
        await replaysWithPatches(client, run.workflowId, [WEEDER_ID_NAMES_SERVICE_PATCH]);
      }
    }));

  it('a start under an id that names no Service is refused before anything is read', () =>
    withWorker(env, queue, stubs.activities, async (client) => {
      const run = weederRun();
      for (const workflowId of [`not-a-weeder-${run.args[0].service}`, `weeder/ns/${run.args[0].service}/x`, `weeder/NS/${run.args[0].service}`]) {
        const h = await client.workflow.start('weederWorkflow', { workflowId, taskQueue: queue, args: run.args });
        const err = await h.result().then(() => undefined, (e: unknown) => e);
        assert.ok(err instanceof WorkflowFailedError, `${workflowId} refused`);
        assert.match(String((err.cause as Error).message), /is not its Service's/);
        assert.equal((err.cause as { type?: string }).type, 'WeederRefused');
        assert.equal(stubs.of(workflowId, 'watch').length, 0, 'nothing watched');
        await replaysWithPatches(client, workflowId, [WEEDER_OWN_ID_PATCH]);
      }
    }));
});
