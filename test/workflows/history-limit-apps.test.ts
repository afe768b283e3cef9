// App entities continue-as-new before Temporal's history limit, whatever they
// wait on: a wait for pods that never become ready (wait, write status, wait
// again, for weeks), and a stream of revisions. The dev server runs with a
// small history limit: past `limit.historyCount.error` events it terminates a
// workflow, so an entity that does not continue-as-new in time fails these
// tests. Nothing pending is lost on the way: the last revision, a reported
// stop and a deletion all reach the next run.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Client } from '@temporalio/client';
import { startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { appStubs } from './apps-stubs.ts';
import type { AppEntityData } from '../../src/apps/entity.ts';

const SUGGEST = 40;
const ERROR = 120;

/** Every run of a workflow id, oldest first, with its status and history length. */
async function runs(client: Client, workflowId: string) {
  const out: { runId: string; status: string; events: number }[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId=${JSON.stringify(workflowId)}` })) {
    out.push({ runId: w.runId, status: w.status.name, events: w.historyLength });
  }
  return out.reverse();
}

describe('App entity under a small history limit (workflow test)', function () {
  this.timeout(240_000);
  let env: TestWorkflowEnvironment;

  before(async () => {
    env = await startWorkflowEnv({ historyLimit: { suggest: SUGGEST, error: ERROR } });
  });
  after(async () => {
    await env?.teardown();
  });

  it('a long wait for pods that never become ready: continues-as-new in time, the wait goes on, a stop and a deletion arriving meanwhile are kept', async () => {
    const q = taskQueue('apps-history-wait');
    const stubs = appStubs({ settled: false });
    stubs.waitMs = 30;
    await withWorker(env, q, stubs.activities, async (client) => {
      const id = 'app/hist/waiting';
      const handle = await client.workflow.start('appWorkflow', { workflowId: id, taskQueue: q, args: [{ namespace: 'hist', name: 'waiting' }] });
      // Rounds of wait + status write until far more events than the limit allow in one run.
      await waitFor('many rounds of waiting', () => stubs.waits.length >= 60, { timeoutMs: 180_000, intervalMs: 100 });
      const all = await runs(client, id);
      assert.ok(all.filter((r) => r.status === 'CONTINUED_AS_NEW').length >= 2, `continued-as-new: ${JSON.stringify(all)}`);
      assert.ok(all.every((r) => r.status !== 'TERMINATED'), `none terminated by the history limit: ${JSON.stringify(all)}`);
      // The current run, read from the execution itself: the list comes from visibility, which
      // may show a run's continue-as-new before the next run's record.
      assert.equal((await client.workflow.getHandle(id).describe()).status.name, 'RUNNING');
      // A stop + start reported while the waits go on reaches a reconcile exactly once.
      stubs.app.generation = 3;
      await handle.signal('appChanged', { generation: 3, uid: 'uid-1', stoppedGeneration: 2 });
      await waitFor('the stop reconciled', () => stubs.reconciles.some((r) => r.stopSeen === 2), { timeoutMs: 30_000 });
      const continuedBefore = all.filter((r) => r.status === 'CONTINUED_AS_NEW').length;
      await waitFor('another continue-as-new after it', async () => (await runs(client, id)).filter((r) => r.status === 'CONTINUED_AS_NEW').length > continuedBefore, { timeoutMs: 60_000 });
      assert.equal(stubs.reconciles.filter((r) => r.stopSeen === 2).length, 1, 'the stop was passed to one reconcile only');
      assert.equal(stubs.app.lastStopRev, 1);
      const state = await client.workflow.getHandle(id).query<AppEntityData>('state');
      assert.equal(state.stopsHandled, 2, 'the accounted stop is carried over');
      // The deletion ends the latest run.
      stubs.app.exists = false;
      await client.workflow.getHandle(id).signal('appDeleted');
      assert.match(await client.workflow.getHandle(id).result(), /deleted/);
    });
  });

  it('a stream of revisions (watcher signals and rolling restarts): continues-as-new in time, the last revision reconciled', async () => {
    const q = taskQueue('apps-history-stream');
    const stubs = appStubs();
    await withWorker(env, q, stubs.activities, async (client) => {
      const id = 'app/hist/stream';
      await client.workflow.start('appWorkflow', { workflowId: id, taskQueue: q, args: [{ namespace: 'hist', name: 'stream' }] });
      let restarts = 0;
      for (let g = 2; g <= 80; g++) {
        stubs.app.generation = g;
        // signal-with-start, as the watcher does: the latest run gets it, whichever that is.
        await client.workflow.signalWithStart('appWorkflow', {
          workflowId: id, taskQueue: q, args: [{ namespace: 'hist', name: 'stream' }], signal: 'appChanged', signalArgs: [{ generation: g, uid: 'uid-1' }],
        });
        if (g % 10 === 0) {
          const r = await client.workflow.getHandle(id).executeUpdate('restart', { args: [{ strategy: 'rolling', timeoutSeconds: 60 }] }) as { ok: boolean; message: string };
          assert.equal(r.ok, true, r.message);
          restarts++;
        }
      }
      await waitFor('the last generation reconciled', async () => {
        const state = await client.workflow.getHandle(id).query<AppEntityData>('state');
        return state.last?.lastSeen?.generation === 80;
      }, { timeoutMs: 60_000 });
      const all = await runs(client, id);
      assert.ok(all.filter((r) => r.status === 'CONTINUED_AS_NEW').length >= 2, `continued-as-new: ${JSON.stringify(all)}`);
      assert.ok(all.every((r) => r.status !== 'TERMINATED'), `none terminated by the history limit: ${JSON.stringify(all)}`);
      assert.equal(stubs.app.appRev, restarts, 'every rolling restart applied once');
      stubs.app.exists = false;
      await client.workflow.getHandle(id).signal('appDeleted');
      assert.match(await client.workflow.getHandle(id).result(), /deleted/);
    });
  });
});
