// The App workflow's handlers against what a writer to tend's namespace can
// send: a forged appChanged (a huge generation; a stop at the current one), any
// JSON as a signal or an update argument (deep, huge, wrong types), and a start
// under another App's id. The numbers a message carries are hints the workflow
// confirms by reading the App; no workflow task fails.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { replaysWithPatches, startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { deepJson, failedWorkflowTasks, hugeJson, rawSignal, rawUpdate } from '../harness/raw-messages.ts';
import { appStubs } from './apps-stubs.ts';
import type { AppEntityData } from '../../src/apps/entity.ts';
import { appChangedSignal, appStateQuery } from '../../src/apps/messages.ts';
import { APP_GENERATION_CONFIRMED_PATCH, APP_ID_NAMES_APP_PATCH, APP_OWN_ID_PATCH } from '../../src/workflows/apps.ts';

describe('App entity workflow: messages are hints, handlers are total (workflow test)', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  const start = (client: Client, q: string, name: string) => client.workflow.start('appWorkflow', {
    workflowId: `app/wf/${name}`, taskQueue: q, args: [{ namespace: 'wf', name }],
  });
  const settledAt = (generation: number) => (s: AppEntityData) => s.last?.lastSeen?.generation === generation && s.pendingGeneration === generation;
  const firstReconciled = (s: AppEntityData) => s.last?.lastSeen?.generation === 1;

  it('a forged appChanged with a huge generation costs one reconcile, not one after another for ever', async () => {
    const q = taskQueue('apps-huge');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      const h = await start(client, q, 'huge');
      await waitFor('the first reconcile', async () => firstReconciled(await h.query(appStateQuery)));
      const before = stubs.reconciles.length;
      await h.signal(appChangedSignal, { generation: Number.MAX_SAFE_INTEGER, uid: 'uid-1' });
      // The reconcile after the report read generation 1: the report is refuted, the read stands.
      await waitFor('the forged generation refuted by the read', async () => settledAt(1)(await h.query(appStateQuery)), { timeoutMs: 20_000 });
      assert.equal(stubs.reconciles.length - before, 1, 'one reconcile for the forged report');
      // The capability still does its job: a genuine change is reconciled.
      stubs.app.generation = 2;
      await h.signal(appChangedSignal, { generation: 2, uid: 'uid-1' });
      await waitFor('generation 2 reconciled', async () => settledAt(2)(await h.query(appStateQuery)));
      assert.deepEqual(await failedWorkflowTasks(h), []);
      await replaysWithPatches(client, h.workflowId, [APP_GENERATION_CONFIRMED_PATCH]);
      await h.terminate('done');
    });
  });

  it('appChanged, appDeleted and the updates: any JSON is ignored or refused, no workflow task fails, and the App is reconciled on', async () => {
    const q = taskQueue('apps-forged');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      const h = await start(client, q, 'forged');
      await waitFor('the first reconcile', async () => firstReconciled(await h.query(appStateQuery)));
      const deep = deepJson(5000);
      const huge = hugeJson();
      const forged = [deep, huge, `{"generation":${deep}}`, `{"generation":1,"uid":${deep}}`, `{"generation":1,"uid":"${'u'.repeat(100_000)}"}`,
        '{"generation":"7"}', '{"generation":-1}', '{"generation":1.5}', '{"generation":2,"stoppedGeneration":9}', '"x"', '7', 'null',
        `{"strategy":${deep}}`, `{"timeoutSeconds":${huge}}`, '{"strategy":"\\ud800🌱"}', '{"timeoutSeconds":1e308}'];
      for (const json of forged) await rawSignal(client, h.workflowId, 'appChanged', json);
      for (const json of [deep, huge]) await rawSignal(client, h.workflowId, 'appDeleted', json);
      for (const json of forged.slice(0, 2).concat(forged.slice(-4))) {
        const r = await rawUpdate(client, h.workflowId, 'restart', json);
        assert.equal(r.accepted, false, `restart ${json.slice(0, 30)} refused`);
        assert.ok((r.message ?? '').length < 400, `a short reason: ${(r.message ?? '').slice(0, 400)}`);
      }
      // start and stop take no argument: one that carries any is no command of tend's, and is refused.
      for (const verb of ['start', 'stop']) {
        for (const json of [deep, '"x"', '{}', '[1]', '{"reason":"r"}']) {
          const r = await rawUpdate(client, h.workflowId, verb, json);
          assert.equal(r.accepted, false, `${verb} ${json.slice(0, 30)} refused`);
          assert.match(r.message ?? '', new RegExp(`^${verb} takes no argument`));
          assert.ok((r.message ?? '').length < 400, `a short reason: ${(r.message ?? '').slice(0, 400)}`);
        }
      }
      const s = await h.query(appStateQuery);
      assert.equal(s.watchedUid, undefined, 'no forged uid taken');
      assert.equal(s.commands.length, 0, 'no forged command queued');
      stubs.app.generation = 3;
      await h.signal(appChangedSignal, { generation: 3, uid: 'uid-1' });
      await waitFor('generation 3 reconciled', async () => settledAt(3)(await h.query(appStateQuery)));
      assert.deepEqual(await failedWorkflowTasks(h), []);
      await h.terminate('done');
    });
  });

  it('a start under an App\'s id whose input names another App (or none) serves the App its id names: the watcher\'s signal is not lost', async () => {
    const q = taskQueue('apps-id');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      for (const args of [{ namespace: 'wf', name: 'other' }, { namespace: 'wf' }, 'wf/impostor']) {
        const before = stubs.reconciles.length;
        const h = await client.workflow.start('appWorkflow', { workflowId: 'app/wf/own', taskQueue: q, args: [args as never] });
        await h.signal(appChangedSignal, { generation: 1, uid: 'uid-1' });
        await waitFor('the App its id names reconciled', async () => firstReconciled(await h.query(appStateQuery)));
        assert.deepEqual(stubs.reconciles.slice(before).map((r) => `${r.namespace}/${r.name}`), ['wf/own'], 'the App its id names, once');
        await h.terminate('done');
        await replaysWithPatches(client, h.workflowId, [APP_ID_NAMES_APP_PATCH]);
      }
    });
  });

  it('a start under an id that names no App is refused before anything is read', async () => {
    const q = taskQueue('apps-no-id');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      for (const workflowId of ['not-an-app/wf/x', 'app/wf', 'app/WF/x']) {
        const h = await client.workflow.start('appWorkflow', { workflowId, taskQueue: q, args: [{ namespace: 'wf', name: 'x' }] });
        const err = await h.result().then(() => undefined, (e: unknown) => e);
        assert.ok(err instanceof WorkflowFailedError, `${workflowId} refused`);
        assert.match(String((err.cause as Error).message), /is not its App's/);
        assert.equal((err.cause as { type?: string }).type, 'AppsRefused');
        await replaysWithPatches(client, workflowId, [APP_OWN_ID_PATCH]);
      }
      assert.equal(stubs.started.filter((a) => a === 'appInScope' || a === 'reconcileApp').length, 0, 'nothing read');
    });
  });
});
