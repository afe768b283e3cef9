// The entity workflow's state and decideNext: commands in order, observations, waits, the end.
import assert from 'node:assert/strict';
import { AppEntity, backoffSeconds, continueAsNewDue, decideNext, waitTimeoutSeconds, type ReconcileResult } from '../../src/apps/entity.ts';
import { APP_STATUS_MANAGER, decideWatch } from '../../src/apps/watch.ts';
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

  it('a reconcile of the old App that ends after the new App was reported is dropped, and the new App reconciled', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.observe(1, 'old');
    e.reconciled(result({ generation: 1, uid: 'old' }));
    e.observe(2, 'old');
    const seq = e.enqueue({ kind: 'rolling' });
    const before = e.uidChanges;
    e.observe(1, 'new'); // deleted and created again while the reconcile ran
    e.reconciled(result({ generation: 2, uid: 'old' }), seq, e.deletions, undefined, before);
    assert.equal(e.data.last, undefined, 'the old App\'s result is not kept');
    assert.equal(e.data.appliedSeq, seq, 'its command counts as applied');
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile' });
    e.reconciled(result({ generation: 1, uid: 'new' }), undefined, e.deletions, undefined, e.uidChanges);
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
  });

  it('a reconcile that already found the new App is kept; so is one when the reported uid did not change', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.observe(1, 'old');
    e.reconciled(result({ generation: 1, uid: 'old' }));
    const before = e.uidChanges;
    e.observe(1, 'new');
    e.reconciled(result({ generation: 1, uid: 'new' }), undefined, e.deletions, undefined, before);
    assert.equal(e.data.last?.uid, 'new');
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
    const same = new AppEntity({ namespace: 'n', name: 'a' });
    same.observe(1, 'u');
    const unchanged = same.uidChanges;
    same.observe(2, 'u');
    same.reconciled(result({ generation: 2, uid: 'u' }), undefined, same.deletions, undefined, unchanged);
    assert.equal(same.data.last?.lastSeen?.generation, 2);
  });

  it('without the uid count (histories from before), the result is kept as it always was', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.observe(1, 'old');
    e.reconciled(result({ generation: 1, uid: 'old' }));
    e.observe(1, 'new');
    e.reconciled(result({ generation: 1, uid: 'old' }));
    assert.equal(e.data.last?.uid, 'old');
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

describe('apps: a reported generation is a hint the reconcile confirms', () => {
  const cases: { name: string; reported: number; during?: number; read: number; refuted: boolean }[] = [
    { name: 'a report above what a later read found (forged, or of an App gone since) is refuted', reported: Number.MAX_SAFE_INTEGER, read: 4, refuted: true },
    { name: 'a report the read confirms stands', reported: 4, read: 4, refuted: false },
    { name: 'a read beyond the report stands too', reported: 4, read: 6, refuted: false },
    { name: 'a report that came while the reconcile ran is not judged by it (the read may predate it)', reported: 4, during: 9, read: 4, refuted: false },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const e = new AppEntity({ namespace: 'n', name: 'a' });
      e.reconciled(result({ generation: 1, uid: 'u' }));
      e.observe(c.reported, 'u');
      const pendingBefore = e.data.pendingGeneration;
      if (c.during !== undefined) e.observe(c.during, 'u');
      const res = result({ generation: c.read, uid: 'u' });
      e.reconciled(res);
      assert.equal(e.generationRefuted(res, pendingBefore), c.refuted);
      if (c.refuted) {
        e.takeReadGeneration(res);
        assert.equal(e.data.pendingGeneration, c.read);
        assert.deepEqual(decideNext(e.data, false), { kind: 'idle' }, 'no reconcile after reconcile for a generation that never comes');
      }
    });
  }
});

describe('apps: a stop the watcher saw, accounted for once', () => {
  it('a reported stop is passed to the next reconcile, and to none after it', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result({ generation: 1 }));
    e.observe(2, 'u', 2); // STOPPED at 2
    e.observe(3, 'u'); // STARTED again at 3, before any reconcile
    const step = decideNext(e.data, false);
    assert.deepEqual(step, { kind: 'reconcile', stopSeen: 2 });
    e.reconciled(result({ generation: 3, reason: 'stop-seen-by-watcher', stopsThrough: 2 }), undefined, e.deletions, 2);
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
    e.observe(3, 'u', 2); // a repeat of the same report (a resync)
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
  });

  it('a stop reported after a reconcile already read the start (a late signal) is still reconciled', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result({ generation: 1 }));
    e.observe(3, 'u');
    e.reconciled(result({ generation: 3 }));
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
    e.observe(3, 'u', 2);
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile', stopSeen: 2 });
  });

  it('a stop the reconcile read as STOPPED (or inferred) is not passed again when its report comes late', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result({ generation: 2, stopsThrough: 2 }));
    e.observe(2, 'u', 2);
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
    const inferred = new AppEntity({ namespace: 'n', name: 'a' });
    inferred.reconciled(result({ generation: 3, reason: 'stop-and-start-seen-as-result', stopsThrough: 2 }));
    inferred.observe(3, 'u', 2);
    assert.deepEqual(decideNext(inferred.data, false), { kind: 'idle' });
  });

  it('a reported stop goes with a command\'s reconcile too, and with a deletion\'s', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result({ generation: 1 }));
    e.observe(2, 'u', 2);
    const seq = e.enqueue({ kind: 'rolling' });
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile', command: { seq, command: { kind: 'rolling' } }, stopSeen: 2 });
  });

  it('a new App under the old name forgets the old one\'s stops', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result({ generation: 9, uid: 'old', stopsThrough: 9 }));
    e.observe(1, 'new', 1);
    assert.deepEqual(decideNext(e.data, false), { kind: 'reconcile', stopSeen: 1 });
  });

  it('a reported stop above the reported generation is ignored', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result({ generation: 1 }));
    e.observe(1, 'u', 5);
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
  });
});

describe('apps: a reconcile that gives up', () => {
  it('fails its command (and the start of the same restart), records the error, backs off, and goes on', () => {
    const e = new AppEntity({ namespace: 'n', name: 'a' });
    e.reconciled(result());
    const stop = e.enqueue({ kind: 'stop' });
    const start = e.enqueue({ kind: 'start' }, stop);
    e.reconcileFailed('403 forbidden', stop, '2025-01-01T00:00:00.000Z');
    assert.match(e.takeFailure(stop)!, /403/);
    assert.match(e.takeFailure(start)!, /stop before it failed/);
    assert.equal(e.takeFailure(start), undefined, 'read once');
    assert.equal(e.data.commands.length, 0);
    assert.equal(e.data.appliedSeq, start);
    assert.deepEqual(e.data.lastError, { message: '403 forbidden', at: '2025-01-01T00:00:00.000Z', recovered: false });
    assert.deepEqual(decideNext(e.data, false), { kind: 'backoff', seconds: 60 });
    e.backoffOver();
    assert.deepEqual(decideNext(e.data, false).kind, 'reconcile', 'the App is reconciled again after the back-off');
    e.reconcileFailed('403 forbidden', undefined, '2025-01-01T00:01:00.000Z');
    assert.deepEqual(decideNext(e.data, false), { kind: 'backoff', seconds: 120 });
    e.reconciled(result());
    assert.equal(e.data.backoff, undefined);
    assert.equal(e.data.lastError?.recovered, true, 'the failure stays visible, marked recovered');
    assert.deepEqual(decideNext(e.data, false), { kind: 'idle' });
  });

  it('a new command, change or deletion ends the back-off at once', () => {
    for (const input of [(e: AppEntity) => e.enqueue({ kind: 'start' }), (e: AppEntity) => e.observe(7), (e: AppEntity) => e.markDeleted()]) {
      const e = new AppEntity({ namespace: 'n', name: 'a' });
      e.reconciled(result());
      e.reconcileFailed('boom', undefined, 't');
      assert.equal(decideNext(e.data, false).kind, 'backoff');
      input(e);
      assert.equal(decideNext(e.data, false).kind, 'reconcile');
    }
  });

  it('back-off: 1 min doubling to 30 min', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 20].map(backoffSeconds), [60, 120, 240, 480, 960, 1800, 1800]);
  });
});

describe('apps: continueAsNewDue', () => {
  const facts = { suggested: false, length: 10, limit: 2000, handlersFinished: true };
  it('when Temporal suggests it or the history passed the limit, whatever is pending', () => {
    assert.equal(continueAsNewDue(facts), false);
    assert.equal(continueAsNewDue({ ...facts, suggested: true }), true);
    assert.equal(continueAsNewDue({ ...facts, length: 2001 }), true);
  });
  it('not while an update is being answered (it would be cut off)', () => {
    assert.equal(continueAsNewDue({ ...facts, suggested: true, handlersFinished: false }), false);
  });
});

describe('apps: decideWatch', () => {
  /** `observedBy`: the managers whose status writes hold status.observedGeneration (tend's unless said). */
  const app = (generation: number, observed?: number, deleting = false, observedBy: string[] = [APP_STATUS_MANAGER]): App => ({
    apiVersion: 'tend.dev/v1alpha1', kind: 'App',
    metadata: {
      name: 'a', namespace: 'n', generation, ...(deleting && { deletionTimestamp: new Date() }),
      managedFields: [
        { manager: 'kubectl-client-side-apply', operation: 'Update', fieldsV1: { 'f:spec': { 'f:processes': {} } } },
        ...(observed !== undefined ? observedBy.map((manager) => ({ manager, operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': { 'f:observedGeneration': {}, 'f:actualState': {} } } })) : []),
      ],
    },
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
    // Another writer's observedGeneration says nothing of what tend reconciled.
    ['observedGeneration at the generation, written by another controller, is signalled', app(3, 3, false, ['korifi-controllers']), undefined, 'changed'],
    ['observedGeneration above the generation, written by a script, is signalled', app(3, 9, false, ['kubectl-patch']), undefined, 'changed'],
    ['observedGeneration held by tend and by another manager is signalled', app(3, 3, false, [APP_STATUS_MANAGER, 'other']), undefined, 'changed'],
    ['observedGeneration nobody is recorded to hold is signalled', app(3, 3, false, []), undefined, 'changed'],
    ['observedGeneration of tend above the generation (never written so) is signalled', app(3, 4), undefined, 'changed'],
    ['another writer\'s observedGeneration costs one signal per generation, not one per event', app(3, 9, false, ['kubectl-patch']), 3, 'none'],
  ];
  for (const [name, a, last, want] of cases) {
    it(name, () => assert.equal(decideWatch(a, last === undefined ? undefined : { generation: last, stoppedGeneration: 0 }).kind, want));
  }
});
