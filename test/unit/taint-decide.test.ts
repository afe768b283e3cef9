// The pure decisions of taint replacement: which taints match, the breaker,
// the slots, and each pod's conditions and state over time. No cluster.
import assert from 'node:assert/strict';
import { breakerOpen, nodeLimit } from '../../src/taint/breaker.ts';
import { matchingTaints, optionFor, sameTaints, type MatchedTaint, type TaintOption } from '../../src/taint/match.ts';
import {
  applyMoves, decideNode, evictionBackoffMs, markWritten, newNodeTaintData, observeTaints, reconcilePods, replacingDue, statusRows,
  stillWanted, type ListedPod, type NodeTaintData, type TaintSettings,
} from '../../src/taint/node.ts';
import { Slots } from '../../src/taint/slots.ts';

/** As the node's workflow does: the decision, its moves applied to the node's data. */
const decide = (d: NodeTaintData, now: number) => {
  const dec = decideNode(d, now);
  applyMoves(d, dec.moves);
  return dec;
};

const M = 'example.org/maintenance';
const D = 'example.org/disconnected';
const options: TaintOption[] = [{ key: M, durationInSeconds: 7200 }, { key: D, durationInSeconds: 1200 }, { key: '*', durationInSeconds: 3600 }];

describe('taint: matching', () => {
  const cases: { name: string; options: TaintOption[]; key: string; want?: number }[] = [
    { name: 'exact key', options, key: M, want: 7200 },
    { name: 'exact key listed after the wildcard still wins', options: [{ key: '*', durationInSeconds: 1 }, { key: M, durationInSeconds: 9 }], key: M, want: 9 },
    { name: 'other key falls to the wildcard', options, key: 'node.kubernetes.io/unreachable', want: 3600 },
    { name: 'no wildcard: other key ignored', options: [{ key: M, durationInSeconds: 1 }], key: D, want: undefined },
    { name: 'empty options match nothing', options: [], key: M, want: undefined },
  ];
  for (const c of cases) {
    it(c.name, () => assert.equal(optionFor(c.key, c.options)?.durationInSeconds, c.want));
  }

  it('keeps key, effect and timeAdded, sorted, and skips keys without an option', () => {
    const got = matchingTaints([
      { key: 'x', effect: 'NoSchedule' },
      { key: M, effect: 'NoSchedule' },
      { key: D, effect: 'NoExecute', timeAdded: new Date('2026-01-01T00:00:00Z') },
    ], [{ key: M, durationInSeconds: 5 }, { key: D, durationInSeconds: 6 }]);
    assert.deepEqual(got, [
      { key: D, effect: 'NoExecute', timeAdded: '2026-01-01T00:00:00.000Z', durationInSeconds: 6, matchedBy: D },
      { key: M, effect: 'NoSchedule', durationInSeconds: 5, matchedBy: M },
    ]);
  });

  it('compares sets by key, effect, timeAdded and duration, not by when the watcher saw them', () => {
    const a: MatchedTaint[] = [{ key: M, effect: 'NoSchedule', durationInSeconds: 5, matchedBy: M, seenAt: 1 }];
    assert.ok(sameTaints(a, [{ ...a[0]!, seenAt: 2 }]));
    assert.ok(!sameTaints(a, [{ ...a[0]!, effect: 'NoExecute' }]));
    assert.ok(!sameTaints(a, [{ ...a[0]!, durationInSeconds: 6 }]));
    assert.ok(!sameTaints(a, []));
  });
});

describe('taint: breaker', () => {
  const cases: { tainted: number; total: number; limit: number | string; open: boolean }[] = [
    { tainted: 1, total: 3, limit: '50%', open: false },
    { tainted: 2, total: 3, limit: '50%', open: true },
    { tainted: 5, total: 10, limit: '50%', open: false },
    { tainted: 6, total: 10, limit: '50%', open: true },
    { tainted: 3, total: 100, limit: 3, open: false },
    { tainted: 4, total: 100, limit: 3, open: true },
    { tainted: 1, total: 10, limit: 0, open: true },
    { tainted: 0, total: 10, limit: '0%', open: false },
    { tainted: 10, total: 10, limit: '100%', open: false },
  ];
  for (const c of cases) {
    it(`${c.tainted}/${c.total} tainted, limit ${c.limit}: ${c.open ? 'open' : 'closed'}`, () => {
      assert.equal(breakerOpen(c.tainted, c.total, c.limit), c.open);
    });
  }
  it('a percentage rounds down', () => assert.equal(nodeLimit('33%', 10), 3));
});

describe('taint: slots', () => {
  const req = (uid: string, node = 'n1') => ({ node, uid, pod: `ns/${uid}`, requestedAt: 0 });
  const slots = (v: Partial<Pick<Slots, 'maxConcurrentReplacements' | 'maxTaintedNodes' | 'totalNodes' | 'taintedNodes'>>) => Object.assign(new Slots(), v);

  it('grants at most maxConcurrentReplacements, oldest first', () => {
    const s = slots({ maxConcurrentReplacements: 2, totalNodes: 10, taintedNodes: 1 });
    ['a', 'b', 'c'].forEach((u) => s.request(req(u), 0));
    assert.deepEqual(s.decideGrants(5).map((g) => g.uid), ['a', 'b']);
    assert.deepEqual(s.decideGrants(6), []);
    s.release('a');
    assert.deepEqual(s.decideGrants(7).map((g) => g.uid), ['c']);
    assert.equal(s.peakInFlight, 2);
    assert.equal(s.granted, 3);
  });

  it('a request twice is one request; in flight is not requeued', () => {
    const s = slots({ maxConcurrentReplacements: 1, totalNodes: 1 });
    s.request(req('a'), 0);
    s.request(req('a'), 0);
    assert.equal(s.queue.size, 1);
    s.decideGrants(0);
    s.request(req('a'), 0);
    assert.equal(s.queue.size, 0);
  });

  it('0 slots: detect only, nothing granted', () => {
    const s = slots({ maxConcurrentReplacements: 0, totalNodes: 3 });
    s.request(req('a'), 0);
    assert.deepEqual(s.decideGrants(0), []);
  });

  it('the open breaker grants nothing until it closes', () => {
    const s = slots({ maxConcurrentReplacements: 5, maxTaintedNodes: 1, totalNodes: 10, taintedNodes: 2 });
    s.request(req('a'), 0);
    assert.deepEqual(s.decideGrants(0), []);
    s.taintedNodes = 1;
    assert.deepEqual(s.decideGrants(0).map((g) => g.uid), ['a']);
  });

  it('a slot a node says it holds is counted in flight, even above the limit, and leaves the queue; twice is once', () => {
    const s = slots({ maxConcurrentReplacements: 1, totalNodes: 3 });
    s.request(req('a', 'n1'), 0);
    s.request(req('b', 'n2'), 0);
    s.decideGrants(0);
    s.adopt(req('c', 'n3'), 5);
    s.adopt(req('b', 'n2'), 6);
    s.adopt(req('c', 'n3'), 7);
    assert.deepEqual([...s.inFlight.values()].map((g) => [g.uid, g.grantedAt]), [['a', 0], ['c', 5], ['b', 6]]);
    assert.equal(s.queue.size, 0);
    assert.equal(s.peakInFlight, 3);
    s.request(req('d', 'n1'), 0);
    assert.deepEqual(s.decideGrants(8), [], 'nothing granted while more than the limit are in flight');
    s.release('a');
    s.release('c');
    assert.deepEqual(s.decideGrants(9), [], 'b still holds the only slot');
    s.release('b');
    assert.deepEqual(s.decideGrants(10).map((g) => g.uid), ['d']);
  });

  it('withdrawing a node drops its requests and grants only', () => {
    const s = slots({ maxConcurrentReplacements: 1, totalNodes: 3 });
    s.request(req('a', 'n1'), 0);
    s.request(req('b', 'n1'), 0);
    s.request(req('c', 'n2'), 0);
    s.decideGrants(0);
    s.withdraw('n1');
    assert.equal(s.inFlight.size, 0);
    assert.deepEqual([...s.queue.keys()], ['c']);
  });
});

describe('taint: one node over time', () => {
  const settings: TaintSettings = {
    taintReplacementOptions: [{ key: M, durationInSeconds: 4 }, { key: '*', durationInSeconds: 100 }],
    taintReplacementTimeSeconds: 3,
    maxConcurrentReplacements: 1,
    podSelector: { matchLabels: { app: 'db' } },
  };
  const T0 = Date.parse('2026-11-22T00:00:00Z');
  const s = (n: number) => T0 + n * 1000;
  const pod = (uid: string, extra: Partial<ListedPod> = {}): ListedPod => ({ uid, namespace: 'ns', name: `p-${uid}`, controllerUid: 'rs', ...extra });
  const taint = (key: string, extra: Partial<MatchedTaint> = {}): MatchedTaint =>
    ({ key, effect: 'NoSchedule', durationInSeconds: settings.taintReplacementOptions.find((o) => o.key === key)?.durationInSeconds ?? 100, matchedBy: key, ...extra });

  /** A node tainted at T0 with one pod listed at T0, its first writes done. */
  const tainted = (taints: MatchedTaint[] = [taint(M)], pods: ListedPod[] = [pod('a')], set: TaintSettings = settings): NodeTaintData => {
    const d = newNodeTaintData('sim-1', set);
    observeTaints(d, taints, set, T0);
    reconcilePods(d, pods, T0);
    return d;
  };
  /** As the workflow does: decide, write (the marks visible at once here), and once a write landed decide again. */
  const apply = (d: NodeTaintData, now: number) => {
    const dec = decide(d, now);
    dec.writes.forEach((w) => markWritten(d, w));
    dec.forget.forEach((uid) => delete d.pods[uid]);
    if (dec.writes.length === 0) return dec;
    const again = decide(d, now);
    return { ...again, writes: dec.writes, forget: dec.forget, request: [...dec.request, ...again.request], withdraw: [...dec.withdraw, ...again.withdraw] };
  };

  const timeline: { name: string; at: number; state: string; detected?: number; replacing?: number | null; request?: boolean; nextAt?: number }[] = [
    { name: 'at once: Detected, wake at 4 s', at: 0, state: 'Detected', detected: 0, replacing: null, nextAt: 4 },
    { name: '3.9 s: still Detected', at: 3.9, state: 'Detected', nextAt: 4 },
    { name: '4 s: Replacing since 4 s, wake at 7 s', at: 4, state: 'Replacing', replacing: 4, nextAt: 7 },
    { name: '6.9 s: not yet', at: 6.9, state: 'Replacing', nextAt: 7 },
    { name: '7 s: Queued, a slot requested', at: 7, state: 'Queued', replacing: 4, request: true },
    { name: '8 s: Queued, not requested twice', at: 8, state: 'Queued', request: false },
  ];
  it('follows the seed\'s timing: Detected, Replacing after the duration, due after taintReplacementTimeSeconds', () => {
    const d = tainted();
    for (const step of timeline) {
      const dec = apply(d, s(step.at));
      const p = d.pods['a']!;
      assert.equal(p.state, step.state, step.name);
      if (step.detected !== undefined) assert.equal(p.written.detected, s(step.detected), step.name);
      if (step.replacing === null) assert.equal(p.written.replacing, undefined, step.name);
      else if (step.replacing !== undefined) assert.equal(p.written.replacing, s(step.replacing), step.name);
      if (step.request !== undefined) assert.deepEqual(dec.request, step.request ? ['a'] : [], step.name);
      if (step.nextAt !== undefined) assert.equal(dec.nextAt, s(step.nextAt), step.name);
    }
  });

  it('writes nothing when nothing changed', () => {
    const d = tainted();
    apply(d, s(0));
    assert.deepEqual(decide(d, s(1)).writes, []);
  });

  it('a timeAdded in the past counts from it: Replacing at once', () => {
    const d = tainted([taint(M, { timeAdded: new Date(s(-10)).toISOString() })]);
    apply(d, s(0));
    assert.equal(d.pods['a']!.state, 'Replacing');
    assert.equal(d.pods['a']!.written.replacing, s(0), 'since the pod was marked');
    assert.equal(decide(d, s(0)).nextAt, s(3));
  });

  it('the first-seen time given by the watcher is kept, and kept over later signals', () => {
    const d = newNodeTaintData('sim-1', settings);
    observeTaints(d, [taint(M, { seenAt: s(-2) })], settings, s(0));
    observeTaints(d, [taint(M, { seenAt: s(5) })], settings, s(5));
    assert.equal(replacingDue(d)?.at, s(2));
  });

  it('each key counts on its own; the earliest deadline decides', () => {
    const d = newNodeTaintData('sim-1', settings);
    observeTaints(d, [taint('other')], settings, s(0));
    observeTaints(d, [taint('other'), taint(M)], settings, s(50));
    assert.equal(replacingDue(d)?.at, s(54));
    assert.equal(replacingDue(d)?.taint.key, M);
  });

  it('the taint goes before replacement: conditions cleared, request withdrawn, pod forgotten, done', () => {
    const d = tainted();
    apply(d, s(7));
    observeTaints(d, [], settings, s(8));
    const dec = apply(d, s(8));
    assert.deepEqual(dec.withdraw, ['a']);
    assert.deepEqual(dec.writes, [{ uid: 'a', namespace: 'ns', name: 'p-a', detected: null, replacing: null }]);
    assert.deepEqual(d.pods, {});
    assert.ok(dec.done);
  });

  it('a pod in flight keeps the workflow open after the taint goes', () => {
    const d = tainted();
    apply(d, s(7));
    d.pods['a']!.state = 'Evicted';
    observeTaints(d, [], settings, s(8));
    const dec = apply(d, s(8));
    assert.ok(!dec.done);
    assert.deepEqual(dec.writes, []);
  });

  it('a pod scheduled later on an old taint: Detected and Replacing at once, due taintReplacementTimeSeconds later', () => {
    const d = tainted();
    apply(d, s(5));
    reconcilePods(d, [pod('a'), pod('b')], s(20));
    const dec = apply(d, s(20));
    assert.equal(d.pods['b']!.state, 'Replacing');
    assert.equal(d.pods['b']!.written.detected, s(20));
    assert.equal(d.pods['b']!.written.replacing, s(20));
    assert.deepEqual(dec.request, ['a']);
    assert.equal(dec.nextAt, s(23));
  });

  it('a new workflow does not trust conditions left by an earlier one: it rewrites them with its own times', () => {
    const d = tainted([taint(M)], [pod('a', { detectedSince: s(-100), replacingSince: s(-96) })]);
    const dec = apply(d, s(0));
    assert.equal(d.pods['a']!.state, 'Detected');
    assert.deepEqual(dec.writes.map((w) => [w.detected?.since, w.replacing]), [[s(0), null]]);
    assert.deepEqual(d.pods['a']!.written, { detected: s(0) });
  });

  it('a pod without a controller is reported, never queued', () => {
    const d = tainted([taint(M)], [pod('a', { controllerUid: undefined })]);
    const dec = apply(d, s(7));
    assert.equal(d.pods['a']!.state, 'NoController');
    assert.deepEqual(dec.request, []);
    assert.match(statusRows(d)[0]!.replaceAt, /never/);
  });

  it('maxConcurrentReplacements 0 detects but never asks for a slot', () => {
    const d = tainted([taint(M)], [pod('a')], { ...settings, maxConcurrentReplacements: 0 });
    const dec = apply(d, s(100));
    assert.equal(d.pods['a']!.state, 'Replacing');
    assert.deepEqual(dec.request, []);
  });

  it('pods that left the node while waiting are forgotten; pods in flight are kept', () => {
    const d = tainted([taint(M)], [pod('a'), pod('b')]);
    d.pods['b']!.state = 'Evicted';
    reconcilePods(d, [], s(1));
    assert.deepEqual(Object.keys(d.pods), ['b']);
  });

  it('still wanted only while the taint is there and the pod is due', () => {
    const d = tainted();
    apply(d, s(7));
    assert.ok(stillWanted(d, 'a', s(7)));
    observeTaints(d, [], settings, s(8));
    assert.ok(!stillWanted(d, 'a', s(8)));
  });

  it('eviction back-off doubles from 2 s to 60 s', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 10].map(evictionBackoffMs), [2000, 4000, 8000, 16000, 32000, 60000, 60000]);
  });

  it('status rows: node, taint, condition, since, replace at, state', () => {
    const d = tainted();
    apply(d, s(4));
    assert.deepEqual(statusRows(d), [{
      node: 'sim-1', namespace: 'ns', pod: 'p-a', taint: `${M}:NoSchedule`, condition: 'NodeTaintReplacing',
      since: new Date(s(4)).toISOString(), replaceAt: new Date(s(7)).toISOString(), state: 'Replacing', attempts: 0,
    }]);
  });
});
