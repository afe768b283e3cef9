// The weeder window's state under the safety gates: observed and held outcomes,
// released pods, a lost answer while held, and a carried window with both lists.
import assert from 'node:assert/strict';
import { carriedWindow, WindowState, type Candidate } from '../../src/weeder/window.ts';

const cand = (name: string): Candidate => ({ name, uid: `uid-${name}`, containers: ['c'], owner: 'ReplicaSet/rs' });
const PAUSE = 'weeder: paused since 2026-01-01T00:00:00.000Z by ops@host: drill';

describe('weeder: the window under observe mode and the pause', () => {
  const open = () => {
    const w = new WindowState();
    w.extend(1000, 60_000);
    return w;
  };

  it('observed: recorded once, stays pending (handled) while asked again, weeded with a note once deleted', () => {
    const w = open();
    w.propose([cand('a'), cand('b')]);
    w.settle([{ uid: 'uid-a', outcome: 'observed', at: 't1', note: 'would delete pod ns/a' }, { uid: 'uid-b', outcome: 'observed', at: 't1', note: 'n' }]);
    w.settle([{ uid: 'uid-a', outcome: 'observed', at: 't2', note: 'would delete pod ns/a' }]);
    assert.deepEqual(w.observed.map((p) => [p.name, p.at, p.note]), [['a', 't1', 'would delete pod ns/a'], ['b', 't1', 'n']]);
    assert.deepEqual(w.pending.map((p) => p.name), ['a', 'b']);
    assert.deepEqual(w.handledUids().sort(), ['uid-a', 'uid-b']);
    assert.deepEqual(w.propose([cand('a')]), [], 'not proposed again while asked again');
    assert.deepEqual(w.observedOf(['uid-a', 'uid-c']), ['uid-a']);
    w.settle([{ uid: 'uid-a', outcome: 'deleted', at: 't3' }, { uid: 'uid-b', outcome: 'skipped', reason: 'not in CrashLoopBackOff' }]);
    assert.deepEqual(w.weeded.map((p) => p.name), ['a']);
    assert.match(w.weeded[0]!.note ?? '', /^recorded in observe mode at t1; deleted once the weeder acted$/);
    assert.deepEqual(w.observed.map((p) => p.name), ['a', 'b'], 'the record of what observe mode saw stays');
    assert.deepEqual(w.handledUids(), ['uid-a'], 'a skipped pod may be proposed again');
    const r = w.result({ namespace: 'ns', service: 'db' }, 2000);
    assert.deepEqual(r.observed.map((p) => p.name), ['a', 'b']);
    assert.deepEqual(r.held, []);
  });

  it('held: listed with the pause since the first time, cleared by any other outcome', () => {
    const w = open();
    w.propose([cand('a'), cand('b')]);
    w.settle([{ uid: 'uid-a', outcome: 'held', reason: PAUSE }, { uid: 'uid-b', outcome: 'held', reason: PAUSE }], 5000);
    w.settle([{ uid: 'uid-a', outcome: 'held', reason: `${PAUSE} 2` }], 9000);
    assert.deepEqual(w.held.map((p) => [p.name, p.since, p.reason]), [
      ['a', new Date(5000).toISOString(), `${PAUSE} 2`], ['b', new Date(5000).toISOString(), PAUSE]]);
    assert.deepEqual(w.pending.map((p) => p.name), ['a', 'b'], 'held pods are still being handled');
    w.settle([{ uid: 'uid-a', outcome: 'deleted', at: 't' }, { uid: 'uid-b', outcome: 'observed', at: 't', note: 'n' }]);
    assert.deepEqual(w.held, []);
    assert.deepEqual(w.weeded.map((p) => p.name), ['a']);
    assert.equal(w.weeded[0]!.note, undefined);
  });

  it('released when not asked again: held stays held (not made), observed stays observed; a stopped wait keeps a present pod held', () => {
    const w = open();
    w.propose([cand('a'), cand('b'), cand('c')]);
    w.settle([{ uid: 'uid-a', outcome: 'held', reason: PAUSE }, { uid: 'uid-b', outcome: 'observed', at: 't', note: 'n' },
      { uid: 'uid-c', outcome: 'held', reason: PAUSE }]);
    w.release(['uid-a', 'uid-b']);
    assert.deepEqual(w.pending.map((p) => p.name), ['c']);
    assert.deepEqual(w.held.map((p) => p.name), ['a', 'c']);
    // c's waiting activity cancelled by a stop: still there, so not deleted, and still held.
    w.stop(10_000, 'operator');
    w.settleLost([cand('c')], [{ uid: 'uid-c', seen: 'present' }], undefined, 10_000);
    assert.deepEqual(w.held.map((p) => p.name), ['a', 'c']);
    assert.deepEqual(w.failed, []);
    const r = w.result({ namespace: 'ns', service: 'db' }, 11_000);
    assert.deepEqual(r.held.map((p) => p.name), ['a', 'c']);
    assert.deepEqual(r.observed.map((p) => p.name), ['b']);
    assert.equal(r.stopped, 'operator');
  });

  it('a lost answer while held: gone means weeded (an attempt may have deleted after the resume), a give-up means failed; neither stays held', () => {
    const w = open();
    w.propose([cand('a'), cand('b')]);
    w.settle([{ uid: 'uid-a', outcome: 'held', reason: PAUSE }, { uid: 'uid-b', outcome: 'held', reason: PAUSE }]);
    w.settleLost([cand('a'), cand('b')], [{ uid: 'uid-a', seen: 'gone' }, { uid: 'uid-b', seen: 'present' }], 'deleting failed: 500', 20_000);
    assert.deepEqual(w.held, []);
    assert.deepEqual(w.weeded.map((p) => p.name), ['a']);
    assert.deepEqual(w.failed.map((p) => [p.name, p.reason]), [['b', 'deleting failed: 500']]);
  });

  it('a carried window keeps its observed and held pods; a carried list of the wrong shape is refused', () => {
    const w = open();
    w.propose([cand('a'), cand('b')]);
    w.settle([{ uid: 'uid-a', outcome: 'held', reason: PAUSE }, { uid: 'uid-b', outcome: 'observed', at: 't', note: 'n' }]);
    w.release(['uid-a', 'uid-b']);
    const carried = carriedWindow(JSON.parse(JSON.stringify(w.snapshot())), 2000);
    assert.ok('window' in carried && carried.window);
    const next = new WindowState(carried.window);
    assert.deepEqual(next.held.map((p) => p.name), ['a']);
    assert.deepEqual(next.observed.map((p) => p.name), ['b']);
    assert.deepEqual(next.observedOf(['uid-b']), ['uid-b'], 'proposed again in the new run, it is not recorded twice');
    assert.ok('refused' in carriedWindow({ ...w.snapshot(), held: [{ uid: 1 }] }, 2000));
    assert.ok('refused' in carriedWindow({ ...w.snapshot(), observed: 'a' }, 2000));
  });
});
