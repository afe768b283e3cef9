// The eviction transitions of taint replacement (src/taint/replace.ts) and the
// grant checks of the coordinator (src/taint/slots.ts), table-tested: pure
// functions of the node's data returning what the workflow must do.
import assert from 'node:assert/strict';
import { applyMoves, decideNode, markWritten, newNodeTaintData, observeTaints, reconcilePods, type NodeTaintData, type PodState, type TaintSettings } from '../../src/taint/node.ts';
import {
  askFor, awaitDone, decideReplacements, evictDone, OBSERVED_RETRY_MS, PAUSED_RETRY_MS, giveBack, holders, noteGrants, outboxOf, takeGrants, type EvictOutcome,
} from '../../src/taint/replace.ts';
import { byNode, Slots } from '../../src/taint/slots.ts';

/** As the node's workflow does: the decision, its moves applied to the node's data. */
const decide = (d: NodeTaintData, now: number) => {
  const dec = decideNode(d, now);
  applyMoves(d, dec.moves);
  return dec;
};

const M = 'example.org/maintenance';
const settings: TaintSettings = {
  taintReplacementOptions: [{ key: M, durationInSeconds: 4 }],
  taintReplacementTimeSeconds: 3,
  maxConcurrentReplacements: 1,
  podSelector: { matchLabels: { app: 'db' } },
};
const T0 = Date.parse('2026-11-22T00:00:00Z');
const s = (n: number) => T0 + n * 1000;

/** A node tainted at T0 with pod a, marked Replacing at 4 s (visible then), in `state`. */
function node(state: PodState, extra: Partial<NodeTaintData['pods'][string]> = {}): NodeTaintData {
  const d = newNodeTaintData('sim-1', settings);
  observeTaints(d, [{ key: M, effect: 'NoSchedule', durationInSeconds: 4, matchedBy: M }], settings, T0);
  reconcilePods(d, [{ uid: 'a', namespace: 'ns', name: 'db-a', controllerUid: 'rs' }], T0);
  for (const w of decide(d, s(4)).writes) markWritten(d, w, s(4));
  Object.assign(d.pods['a']!, { state, ...extra });
  return d;
}

describe('taint: the marking period counts from when the mark became visible', () => {
  it('a mark written late (the worker was down when it was due) waits taintReplacementTimeSeconds from the write', () => {
    const d = newNodeTaintData('sim-1', settings);
    observeTaints(d, [{ key: M, effect: 'NoSchedule', durationInSeconds: 4, matchedBy: M }], settings, T0);
    reconcilePods(d, [{ uid: 'a', namespace: 'ns', name: 'db-a', controllerUid: 'rs' }], T0);
    // Due at 4 s, decided at 4 s, but the write only landed at 5.25 s.
    const dec = decide(d, s(4));
    assert.equal(dec.writes[0]!.replacing!.since, s(4));
    markWritten(d, dec.writes[0]!, s(5.25));
    const at7 = decide(d, s(7));
    assert.deepEqual(at7.request, [], 'not due 3 s after the decision');
    assert.equal(at7.nextAt, s(8.25), 'due 3 s after the mark became visible');
    assert.deepEqual(decide(d, s(8.25)).request, ['a']);
  });

  it('nothing is due before the mark is written at all', () => {
    const d = newNodeTaintData('sim-1', settings);
    observeTaints(d, [{ key: M, effect: 'NoSchedule', durationInSeconds: 4, matchedBy: M }], settings, T0);
    reconcilePods(d, [{ uid: 'a', namespace: 'ns', name: 'db-a', controllerUid: 'rs' }], T0);
    assert.deepEqual(decide(d, s(100)).request, [], 'the write has not happened');
  });
});

describe('taint: eviction transitions', () => {
  const blocked: EvictOutcome = { outcome: 'blocked', message: 'PDB' };
  const cases: {
    name: string; state: PodState; extra?: Partial<NodeTaintData['pods'][string]>; now: number; running?: string[];
    untaint?: boolean; ops: string[]; after: PodState; release?: boolean; nextAt?: number;
  }[] = [
    { name: 'Evicting, due: evict', state: 'Evicting', now: s(8), ops: ['evict:a'], after: 'Evicting' },
    { name: 'Evicting with its activity under way: nothing', state: 'Evicting', now: s(8), running: ['a'], ops: [], after: 'Evicting' },
    { name: 'Evicting, taint gone: slot back, Replacing', state: 'Evicting', now: s(8), untaint: true, ops: [], after: 'Replacing', release: true },
    { name: 'Blocked before retryAt: wait', state: 'Blocked', extra: { retryAt: s(10) }, now: s(8), ops: [], after: 'Blocked', nextAt: s(10) },
    { name: 'Blocked at retryAt: evict again', state: 'Blocked', extra: { retryAt: s(10) }, now: s(10), ops: ['evict:a'], after: 'Evicting' },
    { name: 'Blocked, taint gone: slot back', state: 'Blocked', extra: { retryAt: s(10) }, now: s(9), untaint: true, ops: [], after: 'Replacing', release: true },
    { name: 'Evicted: wait for the replacement', state: 'Evicted', extra: { evictedAt: s(8) }, now: s(9), ops: ['await:a'], after: 'Evicted' },
    { name: 'Evicted, taint gone: still waits (in flight)', state: 'Evicted', extra: { evictedAt: s(8) }, now: s(9), untaint: true, ops: ['await:a'], after: 'Evicted' },
    { name: 'Evicted 10 min ago: Replaced, slot back', state: 'Evicted', extra: { evictedAt: s(8) }, now: s(8 + 600), ops: [], after: 'Replaced', release: true },
    { name: 'Evicted, a failed wait backs off', state: 'Evicted', extra: { evictedAt: s(8), retryAt: s(40) }, now: s(9), ops: [], after: 'Evicted', nextAt: s(40) },
    { name: 'Queued: nothing (waits for a grant)', state: 'Queued', now: s(8), ops: [], after: 'Queued' },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = node(c.state, c.extra);
      if (c.untaint) observeTaints(d, [], settings, c.now);
      const dec = decideReplacements(d, c.now, new Set(c.running ?? []));
      assert.deepEqual(dec.ops.map((o) => `${o.kind}:${o.uid}`), c.ops);
      assert.equal(d.pods['a']!.state, c.after);
      assert.deepEqual(outboxOf(d).release, c.release ? ['a'] : []);
      if (c.nextAt !== undefined) assert.equal(dec.nextAt, c.nextAt);
    });
  }

  // confirmed: the hold was found granted at the coordinator (what a coordinator may adopt).
  const outcomes: { name: string; r: EvictOutcome; after: PodState; release: boolean; confirmed: boolean; retryAt?: number; error?: RegExp }[] = [
    { name: 'evicted: Evicted, keeps the slot, confirmed', r: { outcome: 'evicted' }, after: 'Evicted', release: false, confirmed: true },
    { name: 'gone: Evicted, says so, confirmed', r: { outcome: 'gone' }, after: 'Evicted', release: false, confirmed: true, error: /gone/ },
    { name: 'blocked: Blocked, keeps the slot, backs off 2 s, confirmed', r: blocked, after: 'Blocked', release: false, confirmed: true, retryAt: s(10), error: /PDB/ },
    { name: 'refused: Replaced, slot back, never retried', r: { outcome: 'refused', message: 'refused: x' }, after: 'Replaced', release: true, confirmed: false, error: /refused/ },
    {
      name: 'the activity gave up: slot back, asks again after a back-off', r: { outcome: 'failed', message: '500' }, after: 'Replacing', release: true, confirmed: false,
      retryAt: s(10), error: /eviction failed: 500/,
    },
  ];
  for (const c of outcomes) {
    it(`eviction outcome ${c.name}`, () => {
      const d = node('Evicting');
      evictDone(d, 'a', c.r, s(8));
      const p = d.pods['a']!;
      assert.equal(p.state, c.after);
      assert.equal(p.attempts, 1);
      assert.deepEqual(outboxOf(d).release, c.release ? ['a'] : []);
      assert.equal(p.retryAt, c.retryAt);
      assert.equal(p.confirmed === true, c.confirmed);
      if (c.error) assert.match(p.lastError ?? '', c.error);
      if (c.after === 'Evicted') assert.equal(p.evictedAt, s(8));
    });
  }

  it('ungranted (a grant the coordinator does not hold): nothing asked, no slot held, Queued and asking again, not an attempt', () => {
    const d = node('Evicting');
    evictDone(d, 'a', { outcome: 'ungranted', message: 'taint-replacements holds no slot granted to this pod on node sim-1' }, s(8));
    const p = d.pods['a']!;
    assert.equal(p.state, 'Queued');
    assert.equal(p.attempts, 0);
    assert.equal(p.confirmed, undefined);
    assert.equal(p.retryAt, undefined);
    assert.match(p.lastError ?? '', /holds no slot granted/);
    assert.deepEqual(holders(d), [], 'it holds nothing');
    assert.deepEqual(outboxOf(d), { request: ['a'], release: [] }, 'it asks for a slot again');
    // The coordinator's own grant then starts its eviction as any grant does.
    noteGrants(d, ['a']);
    takeGrants(d);
    assert.equal(d.pods['a']!.state, 'Evicting');
  });

  it('a confirmed hold given back is confirmed no more (a later grant is checked again)', () => {
    const d = node('Evicting');
    evictDone(d, 'a', blocked, s(8));
    assert.equal(d.pods['a']!.confirmed, true);
    observeTaints(d, [], settings, s(9));
    decideReplacements(d, s(9), new Set());
    assert.equal(d.pods['a']!.state, 'Replacing');
    assert.equal(d.pods['a']!.confirmed, undefined);
  });

  it('paused: nothing was asked; held (slot kept), tried again in 5 s, not counted as an attempt', () => {
    const d = node('Evicting');
    evictDone(d, 'a', { outcome: 'paused', message: 'taint: paused since T by me: drill (revision 1)' }, s(8));
    const p = d.pods['a']!;
    assert.equal(p.state, 'Blocked');
    assert.equal(p.attempts, 0);
    assert.equal(p.retryAt, s(8) + PAUSED_RETRY_MS);
    assert.match(p.lastError ?? '', /paused since T by me: drill/);
    assert.deepEqual(outboxOf(d).release, []);
    // Held for as long as the pause lasts: each retry paused again is the same wait, never a longer back-off.
    assert.deepEqual(decideReplacements(d, s(8) + PAUSED_RETRY_MS, new Set()).ops.map((o) => `${o.kind}:${o.uid}`), ['evict:a']);
    evictDone(d, 'a', { outcome: 'paused', message: 'still' }, s(20));
    assert.equal(d.pods['a']!.retryAt, s(20) + PAUSED_RETRY_MS);
    assert.equal(d.pods['a']!.attempts, 0);
  });

  it('observed: nothing was asked; recorded once, the slot goes to the next pod, asked again after 10 s, not an attempt', () => {
    const d = node('Evicting');
    evictDone(d, 'a', { outcome: 'observed', message: 'observe mode: would evict pod ns/db-a from node sim-1: tainted ' + M }, s(8));
    const p = d.pods['a']!;
    assert.equal(p.state, 'Replacing');
    assert.equal(p.attempts, 0);
    assert.equal(p.observed, true);
    assert.equal(p.retryAt, s(8) + OBSERVED_RETRY_MS);
    assert.match(p.lastError ?? '', /would evict pod ns\/db-a/);
    // The slot is given back at once: the next pod is observed too, as act mode would evict it.
    assert.deepEqual(outboxOf(d).release, ['a']);
    // No new request before the retry time; a request after it (then evicted if the mode is act by then).
    assert.deepEqual(decide(d, s(8) + OBSERVED_RETRY_MS - 1).request, []);
    assert.equal(d.pods['a']!.state, 'Replacing');
    assert.deepEqual(decide(d, s(8) + OBSERVED_RETRY_MS).request, ['a']);
    assert.equal(d.pods['a']!.state, 'Queued');
  });

  it('an outcome for a pod no longer Evicting changes nothing (a late result)', () => {
    const d = node('Replacing');
    evictDone(d, 'a', { outcome: 'evicted' }, s(8));
    assert.equal(d.pods['a']!.state, 'Replacing');
  });

  it('a failed eviction is asked for again only after its back-off', () => {
    const d = node('Evicting');
    evictDone(d, 'a', { outcome: 'failed', message: '500' }, s(8));
    const early = decide(d, s(9));
    assert.deepEqual(early.request, []);
    assert.equal(early.nextAt, s(10));
    assert.deepEqual(decide(d, s(10)).request, ['a']);
    assert.equal(d.pods['a']!.state, 'Queued');
  });

  it('replacement outcomes: replaced gives the slot back; pending waits; a failed wait retries later', () => {
    const d = node('Evicted', { evictedAt: s(8) });
    awaitDone(d, 'a', 'pending', s(9));
    assert.equal(d.pods['a']!.state, 'Evicted');
    awaitDone(d, 'a', { failed: 'timeout' }, s(10));
    assert.equal(d.pods['a']!.retryAt, s(40));
    awaitDone(d, 'a', 'replaced', s(41));
    assert.equal(d.pods['a']!.state, 'Replaced');
    assert.deepEqual(outboxOf(d).release, ['a']);
  });

  const grants: { name: string; state: PodState; after: PodState; release: boolean }[] = [
    { name: 'Queued: starts (Evicting)', state: 'Queued', after: 'Evicting', release: false },
    { name: 'already holding (Blocked): a repeated grant is ignored', state: 'Blocked', after: 'Blocked', release: false },
    { name: 'already holding (Evicted): ignored', state: 'Evicted', after: 'Evicted', release: false },
    { name: 'not waiting for one (Replacing): given back', state: 'Replacing', after: 'Replacing', release: true },
    { name: 'Replaced: given back', state: 'Replaced', after: 'Replaced', release: true },
  ];
  for (const c of grants) {
    it(`a grant for a pod ${c.name}`, () => {
      const d = node(c.state);
      noteGrants(d, ['a']);
      takeGrants(d);
      assert.equal(d.pods['a']!.state, c.after);
      assert.deepEqual(outboxOf(d).release, c.release ? ['a'] : []);
      assert.deepEqual(d.granted, []);
    });
  }

  it('a grant for a pod the node does not know is given back', () => {
    const d = node('Replacing');
    noteGrants(d, ['zzz', 'zzz']);
    takeGrants(d);
    assert.deepEqual(outboxOf(d).release, ['zzz']);
  });

  it('the outbox: asking takes back a pending release and the other way round', () => {
    const d = node('Replacing');
    askFor(d, ['a']);
    giveBack(d, 'a');
    assert.deepEqual(outboxOf(d), { request: [], release: ['a'] });
    askFor(d, ['a']);
    assert.deepEqual(outboxOf(d), { request: ['a'], release: [] });
  });

  it('holders are the pods with a slot', () => {
    assert.deepEqual(holders(node('Blocked')), ['a']);
    assert.deepEqual(holders(node('Queued')), []);
  });
});

describe('taint: the coordinator checks grant holders', () => {
  it('a grant is checked once every grantCheckSeconds; nothing in flight, nothing to check', () => {
    const sl = Object.assign(new Slots(), { maxConcurrentReplacements: 2, totalNodes: 10, grantCheckSeconds: 60 });
    assert.equal(sl.nextCheckAt(), undefined);
    sl.request({ node: 'n1', uid: 'a', pod: 'ns/a', requestedAt: 0 }, 0);
    sl.request({ node: 'n2', uid: 'b', pod: 'ns/b', requestedAt: 0 }, 0);
    sl.decideGrants(s(0));
    assert.equal(sl.nextCheckAt(), s(60));
    assert.deepEqual(sl.grantsToCheck(s(59)), []);
    assert.deepEqual(sl.grantsToCheck(s(60)).map((g) => g.uid), ['a', 'b']);
    assert.equal(sl.nextCheckAt(), s(120));
    assert.deepEqual([...byNode([...sl.inFlight.values()])], [['n1', ['a']], ['n2', ['b']]]);
  });

  it('the default check period bounds a leaked slot at 5 minutes', () => {
    const sl = Object.assign(new Slots(), { totalNodes: 10 });
    sl.request({ node: 'n1', uid: 'a', pod: 'ns/a', requestedAt: 0 }, 0);
    sl.decideGrants(s(0));
    assert.equal(sl.nextCheckAt(), s(300));
  });
});

describe('taint: the node is done only once no pod carries its conditions', () => {
  const untainted = (d: NodeTaintData) => observeTaints(d, [], settings, s(20));

  it('a pod whose eviction was refused (Replaced, conditions on): cleared when the taint goes, and the node not done before', () => {
    const d = node('Evicting');
    evictDone(d, 'a', { outcome: 'refused', message: 'refused: node sim-1 carries none of the configured taints' }, s(8));
    assert.equal(d.pods['a']!.state, 'Replaced');
    untainted(d);
    const first = decide(d, s(20));
    assert.deepEqual(first.writes.map((w) => [w.uid, w.detected, w.replacing]), [['a', null, null]]);
    assert.equal(first.done, false, 'not done while the pod still carries its conditions');
    for (const w of first.writes) markWritten(d, w);
    const second = decide(d, s(21));
    assert.deepEqual(second.writes, []);
    assert.equal(second.done, true);
  });

  it('a clearing write that did not land keeps the node from being done', () => {
    const d = node('Replacing');
    untainted(d);
    const first = decide(d, s(20));
    assert.deepEqual(first.writes.map((w) => w.uid), ['a']);
    // The write failed: the workflow keeps the pod (it forgets only what it cleared).
    assert.equal(first.done, false);
    assert.equal(decide(d, s(50)).done, false);
  });

  it('while the taint is there, a Replaced pod keeps its conditions (no write)', () => {
    const d = node('Replaced');
    assert.deepEqual(decide(d, s(20)).writes, []);
  });
});
