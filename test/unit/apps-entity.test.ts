// The entity workflow's state and decideNext: commands in order, observations, waits, the end.
import assert from 'node:assert/strict';
import { AppEntity, decideNext, waitTimeoutSeconds, type ReconcileResult } from '../../src/apps/entity.ts';
import { decideWatch } from '../../src/apps/watch.ts';
import type { App } from '../../src/apps/types.ts';

const result = (o: Partial<ReconcileResult> & { generation?: number } = {}): ReconcileResult => ({
  gone: false, settled: true, workloads: [],
  lastSeen: { generation: o.generation ?? 1, processesHash: 'h', desiredState: 'STARTED', appRev: 0 }, ...o,
});

describe('apps: entity state and decideNext', () => {
  it('a new entity reconciles first', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile' });
    assert.equal(e.hasInput, true);
  });

  it('commands go first, in order, one reconcile each', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result());
    const stop = e.enqueue({ kind: 'stop' });
    const start = e.enqueue({ kind: 'start' });
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile', command: { seq: stop, command: { kind: 'stop' } } });
    e.reconciled(result({ settled: true }), stop);
    assert.equal(e.data.appliedSeq, stop);
    assert.equal(e.data.settledSeq, 0, 'not settled while commands wait');
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile', command: { seq: start, command: { kind: 'start' } } });
    e.reconciled(result({ settled: false }), start);
    assert.deepEqual(decideNext(e.data, false), { kind: 'wait', timeoutSeconds: 120 });
    assert.deepEqual(decideNext(e.data, true), { kind: 'idle' }, 'one wait at a time');
    e.waited('settled');
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile' }, 'the outcome is written to status');
    e.reconciled(result({ settled: true }));
    assert.equal(e.data.settledSeq, start);
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
  });

  it('an observation newer than the last reconcile is reconciled; an older one is not', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result({ generation: 4 }));
    e.observe(4);
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
    e.observe(5);
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile' });
  });

  it('an App deleted and created again under the same name is reconciled as new', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result({ generation: 6, uid: 'old' }));
    e.observe(1, 'new');
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile' });
    assert.equal(e.data.last, undefined, 'nothing seen of the old App is carried over');
    const same = new AppEntity({ namespace: 'n', name: 'a' });
    same.reconciled(result({ generation: 6, uid: 'old' }));
    same.observe(6, 'old');
    assert.deepEqual(decideNext(same.data, false), { kind: 'idle' });
  });

  it('a refused spec is not waited for', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result({ settled: false, problem: 'bad' }));
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
  });

  it('deleted: one more reconcile, then the end, with every waiting command answered', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result());
    e.enqueue({ kind: 'stop' });
    e.markDeleted();
    assert.equal(decideNext(e.data, false).kind, 'reconcile');
    e.reconciled({ gone: true, settled: true, workloads: [] });
    assert.equal(e.data.appliedSeq, 1);
    assert.deepEqual(decideNext(e.data, false), { kind: 'end' });
  });

  it('appDeleted for an App that still exists is dropped by the reconcile that finds it', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result());
    e.markDeleted();
    e.reconciled(result());
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
  });

  it('appDeleted that arrives while a reconcile runs is not dropped by that reconcile\'s result', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result());
    const before = e.deletions;
    e.markDeleted(); // the signal lands while the reconcile (which still found the App) is in flight
    e.reconciled(result(), undefined, before);
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile' });
    e.reconciled(result(), undefined, e.deletions);
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
  });

  it('waits back off while the App does not settle: 2 min doubling to 30 min', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 9].map(waitTimeoutSeconds), [120, 240, 480, 960, 1800, 1800]);
  });

  it('survives continue-as-new as plain data', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result());
    e.enqueue({ kind: 'rolling' });
    const again = new AppEntity(JSON.parse(JSON.stringify(e.data)));
    assert.deepEqual(decideNext(again.data, false), decideNext(e.data, false));
  });
});

describe('apps: decideWatch', () => {
  const app = (generation: number, observed?: number, deleting = false): App => ({
    apiVersion: 'tend.dev/v1alpha1', kind: 'App',
    metadata: { name: 'a', namespace: 'n', generation, ...(deleting && { deletionTimestamp: new Date() }) },
    spec: { desiredState: 'STARTED', processes: [] },
    ...(observed !== undefined && { status: { observedGeneration: observed } }),
  });
  const cases: [string, App, number | undefined, string][] = [
    ['a new App (no status) is signalled', app(1), undefined, 'changed'],
    ['a spec change (generation past observedGeneration) is signalled', app(3, 2), undefined, 'changed'],
    ['an App tend has caught up with costs nothing (status, annotation writes)', app(3, 3), undefined, 'none'],
    ['the same generation twice is signalled once', app(3, 2), 3, 'none'],
    ['a newer generation after a signalled one is signalled', app(4, 2), 3, 'changed'],
    ['an App being deleted is left to the delete event', app(3, 2, true), undefined, 'none'],
  ];
  for (const [name, a, last, want] of cases) it(name, () => assert.equal(decideWatch(a, last).kind, want));
});
