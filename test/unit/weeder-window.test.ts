// The window's state and the lanes it wants (src/weeder/window.ts), and the armed watch's
// announcement as the workflow checks it.
import assert from 'node:assert/strict';
import { lanesWanted, heartbeatTimeoutMs, WindowState, ARMED_WEEDING_MAX_PODS, carriedWindow, checkArmedWeeding, type Candidate } from '../../src/weeder/window.ts';
import { weederWorkflowId } from '../../src/weeder/messages.ts';

describe('weeder: the window', () => {
  it('a transition extends from now and never shortens', () => {
    const w = new WindowState();
    w.extend(1000, 60_000);
    assert.equal(w.openedAt, 1000);
    w.extend(2000, 60_000);
    assert.equal(w.deadline, 62_000);
    w.extend(3000, 10_000); // shorter: keeps the later deadline
    assert.equal(w.deadline, 62_000);
    assert.equal(w.transitions, 3);
    assert.equal(w.openedAt, 1000);
  });
  const cand = (name: string, owner: string | undefined = 'ReplicaSet/rs') => ({ name, uid: `u-${name}`, containers: ['c'], ...(owner ? { owner } : {}) });
  it('a candidate is pending (handled) from the moment it is proposed, and proposed once', () => {
    const w = new WindowState();
    assert.deepEqual(w.propose([cand('a'), cand('a')]).map((c) => c.name), ['a']);
    assert.deepEqual(w.propose([cand('a'), cand('b')]).map((c) => c.name), ['b']);
    assert.deepEqual(w.handledUids(), ['u-a', 'u-b']);
    assert.deepEqual(w.pending.map((c) => c.name), ['a', 'b']);
  });
  it('settles outcomes: deleted and reported are recorded, failed is kept with its reason, skipped may come again', () => {
    const w = new WindowState();
    w.propose([cand('a'), cand('b', undefined), cand('c'), cand('d'), cand('e')]);
    w.settle([
      { uid: 'u-a', outcome: 'deleted', at: 't1' },
      { uid: 'u-b', outcome: 'reported', at: 't2' },
      { uid: 'u-c', outcome: 'skipped', reason: 'not in CrashLoopBackOff' },
      { uid: 'u-d', outcome: 'failed', reason: 'delete refused (403): no', at: 't3' },
      { uid: 'u-e', outcome: 'deleted', at: 't4', earlier: true },
      { uid: 'u-zz', outcome: 'deleted', at: 't5' }, // never proposed: ignored
    ]);
    assert.deepEqual(w.weeded.map((p) => [p.name, p.owner, p.at]), [['a', 'ReplicaSet/rs', 't1'], ['e', 'ReplicaSet/rs', 't4']]);
    assert.match(w.weeded[1]!.note ?? '', /earlier attempt/);
    assert.deepEqual(w.reported.map((p) => p.name), ['b']);
    assert.deepEqual(w.failed, [{ name: 'd', uid: 'u-d', reason: 'delete refused (403): no', at: 't3' }]);
    assert.deepEqual(w.pending, []);
    assert.deepEqual(w.propose([cand('c'), cand('d')]).map((c) => c.name), ['c'], 'skipped may be proposed again, failed not');
  });
  it('a lost answer is settled by a later look: gone or being deleted counts as weeded', () => {
    const w = new WindowState();
    w.propose([cand('a'), cand('b'), cand('c'), cand('d')]);
    w.settleLost([cand('a'), cand('b'), cand('c'), cand('d')],
      [{ uid: 'u-a', seen: 'gone' }, { uid: 'u-b', seen: 'deleting' }, { uid: 'u-c', seen: 'present' }], 'deleting failed: boom', 7);
    assert.deepEqual(w.weeded.map((p) => p.name), ['a', 'b']);
    assert.deepEqual(w.failed.map((p) => [p.name, p.reason]), [['c', 'deleting failed: boom'],
      ['d', 'outcome unknown: deleting failed: boom, and the pod could not be looked at again']]);
    const s = new WindowState();
    s.propose([cand('x')]);
    s.settleLost([cand('x')], [{ uid: 'u-x', seen: 'present' }], undefined, 7);
    assert.deepEqual([s.weeded, s.failed, s.pending], [[], [], []], 'cancelled before it ran: nothing was deleted, nothing to record');
  });
  it('proposes nothing once stopped or failed; lanes stop too', () => {
    const w = new WindowState();
    w.extend(0, 60_000);
    w.stop(1, 'enough');
    assert.deepEqual(w.propose([cand('a')]), []);
    const f = new WindowState();
    f.extend(0, 60_000);
    f.fail(1, 'the watch gave up');
    assert.deepEqual(f.propose([cand('a')]), []);
    assert.equal(lanesWanted(f.snapshot(), 2).size, 0);
    assert.equal(f.result({ namespace: 'n', service: 's' }, 5).failure, 'the watch gave up');
  });
  it('continues from a snapshot (continue-as-new)', () => {
    const w = new WindowState();
    w.arm(0, 3600_000);
    w.extend(1, 500_000);
    w.propose([cand('a'), cand('b')]);
    w.settle([{ uid: 'u-a', outcome: 'deleted', at: 'x' }, { uid: 'u-b', outcome: 'failed', reason: 'no', at: 'y' }]);
    const c = new WindowState(w.snapshot());
    assert.deepEqual(c.snapshot(), w.snapshot());
    assert.ok('window' in carriedWindow(w.snapshot(), 2));
  });
  it('armed: keeps since when armed again, lengthens the limit', () => {
    const w = new WindowState();
    w.arm(1000, 3600_000);
    w.arm(5000, 3600_000);
    assert.deepEqual(w.armed, { since: 1000, until: 3605_000 });
    assert.equal(w.openedAt, undefined);
    assert.equal(w.deadline, 0);
  });
  it('armed: the activity seeing the Service ready opens the window from then', () => {
    const w = new WindowState();
    w.arm(1000, 3600_000);
    w.readySeen(9000, 1000, 60_000);
    assert.equal(w.armed, undefined);
    assert.equal(w.openedAt, 9000);
    assert.equal(w.deadline, 69_000);
    assert.equal(w.transitions, 0, 'transitions count the watcher\'s (and operators\') signals');
  });
  it('armed: the watcher\'s transition and the activity\'s sight of it make one window', () => {
    const w = new WindowState();
    w.arm(1000, 3600_000);
    w.extend(9100, 60_000); // the watcher's signal lands first
    w.readySeen(9000, 1000, 60_000);
    assert.equal(w.armed, undefined);
    assert.equal(w.openedAt, 9100);
    assert.equal(w.deadline, 69_100);
    assert.equal(w.transitions, 1);
  });
  it('armed again after the activity started: stays armed (the Service went down again)', () => {
    const w = new WindowState();
    w.extend(0, 60_000);
    w.arm(5000, 3600_000); // down again; the running activity was started before this
    w.readySeen(4000, undefined, 60_000);
    assert.deepEqual(w.armed, { since: 5000, until: 3605_000 });
  });
  it('a window that never opened reports no openedAt, and when it was armed', () => {
    const w = new WindowState();
    w.arm(1000, 3600_000);
    const r = w.result({ namespace: 'ns', service: 's' }, 3601_000);
    assert.equal(r.openedAt, undefined);
    assert.equal(r.armedAt, new Date(1000).toISOString());
    assert.equal(r.closedAt, new Date(3601_000).toISOString());
  });
  const state = (over: object = {}) => ({ openedAt: 0, deadline: 100_000, transitions: 1, weeded: [], reported: [], ...over });
  const armed = { armed: { since: 50_000, until: 500_000 } };
  const cases: [string, ReturnType<typeof state>, number, [string, number][]][] = [
    ['before the deadline: weed until it', state(), 10_000, [['window', 100_000]]],
    ['past the deadline: nothing (close)', state(), 100_000, []],
    ['less than a second left: nothing', state(), 99_500, []],
    ['stopped: nothing', state({ stopped: { at: 5, reason: 'stop' } }), 10, []],
    ['stopped while armed: nothing', state({ ...armed, stopped: { at: 5, reason: 'stop' } }), 10, []],
    ['armed, never opened: the armed lane, until the limit', state({ openedAt: undefined, deadline: 0, ...armed }), 60_000, [['armed', 500_000]]],
    ['armed inside a window: both lanes', state(armed), 60_000, [['window', 100_000], ['armed', 500_000]]],
    ['armed, past the deadline: the armed lane', state(armed), 150_000, [['armed', 500_000]]],
    ['armed, past the limit: nothing', state(armed), 499_500, []],
  ];
  for (const [name, s, now, want] of cases) {
    it(name, () => assert.deepEqual([...lanesWanted(s, now)], want));
  }
  it('heartbeat timeout: a quarter of the stretch, 10 s to 60 s', () => {
    assert.equal(heartbeatTimeoutMs(5_000), 10_000);
    assert.equal(heartbeatTimeoutMs(120_000), 30_000);
    assert.equal(heartbeatTimeoutMs(300_000), 60_000);
    assert.equal(heartbeatTimeoutMs(3_600_000), 60_000);
  });
  it('names the workflow as docs/weeder.md does', () => assert.equal(weederWorkflowId('ns', 'etcd'), 'weeder/ns/etcd'));
  it('reports the result with the stop reason', () => {
    const w = new WindowState();
    w.extend(0, 60_000);
    w.stop(10, 'stop signal');
    w.stop(20, 'again');
    const r = w.result({ namespace: 'ns', service: 's' }, 30);
    assert.equal(r.stopped, 'stop signal');
    assert.equal(r.closedAt, new Date(10).toISOString());
  });
});

describe('weeder: the armed watch\'s announcement (armedWeeding)', () => {
  const pod = { name: 'a', uid: 'u-a', containers: ['c'], owner: 'ReplicaSet/rs' };

  it('taken only with this run\'s token, and only names and UIDs', () => {
    assert.deepEqual(checkArmedWeeding({ token: 't', pods: [pod] }, 't'), { pods: [pod] });
    assert.deepEqual(checkArmedWeeding({ token: 't', pods: [{ name: 'b', uid: 'u-b', containers: [1, 'x'], extra: 'dropped' }] }, 't'),
      { pods: [{ name: 'b', uid: 'u-b', containers: ['x'] }] });
    const ignored: [string, unknown, string | undefined, RegExp][] = [
      ['another token', { token: 'x', pods: [pod] }, 't', /token/],
      ['no token given to any watch', { token: 't', pods: [pod] }, undefined, /token/],
      ['no token', { pods: [pod] }, 't', /token/],
      ['not an object', 'pods', 't', /not an object/],
      ['pods not a list', { token: 't', pods: 'a' }, 't', /list/],
      ['too many pods', { token: 't', pods: Array.from({ length: ARMED_WEEDING_MAX_PODS + 1 }, () => pod) }, 't', /at most/],
      ['a pod without a uid', { token: 't', pods: [{ name: 'a' }] }, 't', /name, uid/],
      ['an empty name', { token: 't', pods: [{ name: '', uid: 'u' }] }, 't', /name, uid/],
    ];
    for (const [what, args, token, why] of ignored) {
      const r = checkArmedWeeding(args, token);
      assert.ok('ignored' in r, what);
      assert.match(r.ignored, why, what);
    }
  });

  it('announced pods become pending once, even after a stop; handled ones are not taken again', () => {
    const w = new WindowState();
    w.stop(1, 'done');
    assert.deepEqual(w.announce([pod]).map((p) => p.uid), ['u-a']);
    assert.deepEqual(w.announce([pod]), [], 'pending already');
    assert.ok(w.isPending('u-a'));
    w.settle([{ uid: 'u-a', outcome: 'deleted', at: 'now' }]);
    assert.equal(w.isPending('u-a'), false);
    assert.deepEqual(w.weeded.map((p) => p.uid), ['u-a']);
    assert.deepEqual(w.announce([pod]), [], 'weeded already');
  });
});

// The weeder window's state under the safety gates: observed and held outcomes,
// released pods, a lost answer while held, and a carried window with both lists.
describe('weeder: the window under observe mode and the pause', () => {
  const cand = (name: string): Candidate => ({ name, uid: `uid-${name}`, containers: ['c'], owner: 'ReplicaSet/rs' });
  const PAUSE = 'weeder: paused since 2026-01-01T00:00:00.000Z by ops@host: drill';

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
