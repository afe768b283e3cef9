// The App watcher: what it reports (decideWatch), which workflows it tells of
// a deletion it missed (missedDeletions), and the notifier that retries every
// signal until it is delivered.
import assert from 'node:assert/strict';
import { APP_STATUS_MANAGER, decideWatch, mergeReport, missedDeletions } from '../../src/apps/watch.ts';
import type { App, DesiredState } from '../../src/apps/types.ts';
import type { AppChanged } from '../../src/apps/messages.ts';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { AppNotifier, runningAppWorkflows, temporalSignaller, type AppSignaller } from '../../src/starters/apps-watch.ts';
import { log } from '../../src/log.ts';
import { waitFor } from '../harness/wait.ts';

const app = (o: { name?: string; namespace?: string; uid?: string; generation: number; observed?: number; desired?: DesiredState; deleting?: boolean }): App => ({
  apiVersion: 'tend.dev/v1alpha1', kind: 'App',
  metadata: {
    name: o.name ?? 'a', namespace: o.namespace ?? 'n', uid: o.uid ?? 'u1', generation: o.generation,
    ...(o.deleting && { deletionTimestamp: new Date() }),
  },
  spec: { desiredState: o.desired ?? 'STARTED', processes: [] },
  ...(o.observed !== undefined && { status: { observedGeneration: o.observed } }),
});
/** The App as tend's status write leaves it: status.observedGeneration held by tend's manager. */
const reconciled = (a: App): App => ({
  ...a, metadata: { ...a.metadata, managedFields: [{ manager: APP_STATUS_MANAGER, operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': { 'f:observedGeneration': {} } } }] },
});

describe('apps: decideWatch reports the STOPPED versions it sees', () => {
  it('a STOPPED version not yet reconciled is reported as a stop at its generation', () => {
    assert.deepEqual(decideWatch(app({ generation: 2, observed: 1, desired: 'STOPPED' }), undefined), { kind: 'changed', generation: 2, stoppedGeneration: 2 });
  });
  it('the STARTED version right after it is reported without a stop (the stop was reported already)', () => {
    assert.deepEqual(decideWatch(app({ generation: 3, observed: 1 }), { generation: 2, stoppedGeneration: 2 }), { kind: 'changed', generation: 3 });
  });
  it('a STOPPED version tend has reconciled costs nothing', () => {
    assert.deepEqual(decideWatch(reconciled(app({ generation: 2, observed: 2, desired: 'STOPPED' })), undefined), { kind: 'none' });
  });
  it('reports merge to the highest of each', () => {
    assert.deepEqual(mergeReport({ generation: 2, stoppedGeneration: 2 }, { generation: 3, stoppedGeneration: 0 }), { generation: 3, stoppedGeneration: 2 });
  });
});

describe('apps: missedDeletions', () => {
  const running = [{ namespace: 'n', name: 'a' }, { namespace: 'n', name: 'gone' }, { namespace: 'other', name: 'x' }, { namespace: 'n', name: 'dying' }];
  it('a workflow whose App is not listed (or is being deleted) is told, within the watched namespaces only', () => {
    const apps = [app({ name: 'a', generation: 1 }), app({ name: 'dying', generation: 1, deleting: true })];
    assert.deepEqual(missedDeletions(apps, running, ['n']), [{ namespace: 'n', name: 'gone' }, { namespace: 'n', name: 'dying' }]);
  });
  it('every namespace when the watcher watches all', () => {
    assert.deepEqual(missedDeletions([app({ name: 'a', generation: 1 })], running, undefined).map((w) => w.name), ['gone', 'x', 'dying']);
  });
});

/** A signaller that fails the first `failFirst` calls of each kind, as a Temporal restarting would. */
function flaky(failFirst: number) {
  const sent: { kind: string; key: string; report?: AppChanged }[] = [];
  const failed = { changed: 0, deleted: 0 };
  const signaller: AppSignaller = {
    async changed(namespace, name, report) {
      if (failed.changed < failFirst) {
        failed.changed++;
        throw new Error('14 UNAVAILABLE: connection refused');
      }
      sent.push({ kind: 'changed', key: `${namespace}/${name}`, report });
    },
    async deleted(namespace, name) {
      if (failed.deleted < failFirst) {
        failed.deleted++;
        throw new Error('14 UNAVAILABLE: connection refused');
      }
      sent.push({ kind: 'deleted', key: `${namespace}/${name}` });
      return 'delivered';
    },
  };
  return { signaller, sent, failed };
}

describe('apps: AppNotifier', () => {
  const quiet = log.child({ test: 'apps-notifier' });
  let notifier: AppNotifier | undefined;
  afterEach(async () => {
    notifier?.stop();
    await notifier?.idle();
  });

  it('a deletion signal that fails is sent again until it is delivered', async () => {
    const f = flaky(3);
    notifier = new AppNotifier(f.signaller, quiet, { retryMs: 5, maxRetryMs: 20 });
    notifier.deleted('n', 'a');
    await waitFor('the deletion delivered', () => f.sent.some((s) => s.kind === 'deleted'), { timeoutMs: 5000, intervalMs: 5 });
    assert.equal(f.failed.deleted, 3);
    assert.deepEqual(f.sent, [{ kind: 'deleted', key: 'n/a' }]);
  });

  it('a stop + start arriving while signals fail is delivered as one report that keeps the stop', async () => {
    const f = flaky(2);
    notifier = new AppNotifier(f.signaller, quiet, { retryMs: 5, maxRetryMs: 20 });
    notifier.upsert(app({ generation: 2, observed: 1, desired: 'STOPPED' }));
    notifier.upsert(app({ generation: 3, observed: 1 }));
    await waitFor('the change delivered', () => f.sent.some((s) => s.report?.generation === 3), { timeoutMs: 5000, intervalMs: 5 });
    const stops = f.sent.map((s) => s.report?.stoppedGeneration);
    assert.ok(stops.includes(2), `the stop at generation 2 reached the workflow: ${JSON.stringify(f.sent)}`);
  });

  it('changes, then the deletion, in order; repeats of a delivered generation cost nothing', async () => {
    const f = flaky(0);
    notifier = new AppNotifier(f.signaller, quiet, { retryMs: 5 });
    notifier.upsert(app({ generation: 1 }));
    await waitFor('first change', () => f.sent.length === 1, { timeoutMs: 5000, intervalMs: 5 });
    notifier.upsert(app({ generation: 1 }));
    notifier.deleted('n', 'a');
    await waitFor('the deletion', () => f.sent.length === 2, { timeoutMs: 5000, intervalMs: 5 });
    assert.deepEqual(f.sent.map((s) => s.kind), ['changed', 'deleted']);
  });

  it('stops retrying when the watcher stops', async () => {
    const f = flaky(Number.MAX_SAFE_INTEGER);
    notifier = new AppNotifier(f.signaller, quiet, { retryMs: 5, maxRetryMs: 10 });
    notifier.deleted('n', 'a');
    await waitFor('a few attempts', () => f.failed.deleted >= 2, { timeoutMs: 5000, intervalMs: 5 });
    notifier.stop();
    await notifier.idle();
    const attempts = f.failed.deleted;
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(f.failed.deleted, attempts);
  });
});

describe('apps: the watcher checks what runs under an App\'s id', () => {
  const quiet = log.child({}, { level: 'silent' });
  const fake = (runs: { workflowId: string; type: string; taskQueue: string }[], sent: string[]) => ({
    workflow: {
      list: async function* () {
        yield* runs;
      },
      getHandle: (id: string) => ({
        describe: async () => {
          const r = runs.find((w) => w.workflowId === id);
          if (!r) throw new WorkflowNotFoundError('not found', id, undefined);
          return { ...r, status: { name: 'RUNNING' } };
        },
        signal: async () => { sent.push(`signal ${id}`); },
      }),
      signalWithStart: async (_t: string, o: { workflowId: string }) => { sent.push(`signalWithStart ${o.workflowId}`); },
    },
  }) as unknown as Client;
  const runs = [
    { workflowId: 'app/n/mine', type: 'appWorkflow', taskQueue: 'q' },
    { workflowId: 'app/n/evil', type: 'evilWorkflow', taskQueue: 'q' },
    { workflowId: 'app/n/astray', type: 'appWorkflow', taskQueue: 'other' },
  ];

  it('the resync leaves out a workflow of another type or task queue under an App\'s id', async () => {
    assert.deepEqual(await runningAppWorkflows(fake(runs, []), 'q', quiet), [{ namespace: 'n', name: 'mine' }]);
  });

  it('no change or deletion is sent to an impostor: the send fails, naming it', async () => {
    const sent: string[] = [];
    const send = temporalSignaller(fake(runs, sent), 'q');
    await assert.rejects(send.changed('n', 'evil', { generation: 1 }), /app\/n\/evil is of type "evilWorkflow", not appWorkflow/);
    await assert.rejects(send.deleted('n', 'astray'), /runs on task queue "other"/);
    await send.changed('n', 'mine', { generation: 1 });
    await send.changed('n', 'new', { generation: 1 });
    assert.equal(await send.deleted('n', 'mine'), 'delivered');
    assert.deepEqual(sent, ['signalWithStart app/n/mine', 'signalWithStart app/n/new', 'signal app/n/mine']);
  });
});
