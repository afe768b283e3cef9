// The node's decide / forget / ask / give-back sequence (src/taint/node-machine.ts): a table of
// situations and what the machine does, with no cluster and no Temporal. Each row: the node's
// taint (its age), one pod's state, what landed; then the writes, the slot messages, the steps
// and the pod's state after.
import assert from 'node:assert/strict';
import { NodeMachine } from '../../src/taint/node-machine.ts';
import { decideNode, newNodeTaintData, type NodeTaintData, type PodEntry, type PodState, type TaintSettings } from '../../src/taint/node.ts';

const s = (sec: number) => 1_000_000 + sec * 1000;
const KEY = 'example.org/maintenance';
const settings: TaintSettings = {
  taintReplacementOptions: [{ key: KEY, durationInSeconds: 10 }], taintReplacementTimeSeconds: 5, maxConcurrentReplacements: 1,
  podSelector: { matchLabels: { app: 'db' } },
};

interface Situation {
  name: string;
  /** Whether the node carries the taint (first seen at s(0), due at s(10)). */
  tainted: boolean;
  pod: Partial<PodEntry> & { state: PodState };
  granted?: string[];
  now: number;
  /** Whether the decision's writes landed. */
  written?: boolean;
}

interface Expected {
  writes: string[];
  request: string[];
  release: string[];
  steps: string[];
  /** The pod's state after, or 'forgotten'. */
  state: PodState | 'forgotten';
}

function node(c: Situation): NodeTaintData {
  const d = newNodeTaintData('sim-1', settings);
  if (c.tainted) {
    d.taints = [{ key: KEY, effect: 'NoSchedule', durationInSeconds: 10, matchedBy: KEY }];
    d.firstSeen = { [`${KEY}:NoSchedule`]: s(0) };
  }
  d.pods.a = { uid: 'a', namespace: 'ns', name: 'db-a', controllerUid: 'rs', detectedAt: s(0), written: { detected: s(0) }, attempts: 0, ...c.pod };
  if (c.granted) d.granted = c.granted;
  return d;
}

const marked = { replacingAt: s(10), markedAt: s(10), written: { detected: s(0), replacing: s(10) } };

const table: [Situation, Expected][] = [
  [{ name: 'a new pod, the taint young: Detected, nothing asked', tainted: true, pod: { state: 'Detected', written: {} }, now: s(1) },
    { writes: ['a'], request: [], release: [], steps: [], state: 'Detected' }],
  [{ name: 'the taint past its duration: Replacing, marked', tainted: true, pod: { state: 'Detected' }, now: s(10) },
    { writes: ['a'], request: [], release: [], steps: [], state: 'Replacing' }],
  [{ name: 'marked long enough: Queued, a slot asked for', tainted: true, pod: { state: 'Replacing', ...marked }, now: s(15) },
    { writes: [], request: ['a'], release: [], steps: [], state: 'Queued' }],
  [{ name: 'marked long enough, no controller: never asked', tainted: true, pod: { state: 'Replacing', ...marked, controllerUid: undefined }, now: s(15) },
    { writes: [], request: [], release: [], steps: [], state: 'NoController' }],
  [{ name: 'an eviction that failed: asked again only after its back-off', tainted: true, pod: { state: 'Replacing', ...marked, retryAt: s(20) }, now: s(15) },
    { writes: [], request: [], release: [], steps: [], state: 'Replacing' }],
  [{ name: 'queued, its grant come: Evicting, the eviction started', tainted: true, pod: { state: 'Queued', ...marked }, granted: ['a'], now: s(16) },
    { writes: [], request: [], release: [], steps: ['evict a'], state: 'Evicting' }],
  [{ name: 'a grant for a pod it does not know: given back', tainted: true, pod: { state: 'Queued', ...marked }, granted: ['x'], now: s(16) },
    { writes: [], request: [], release: ['x'], steps: [], state: 'Queued' }],
  [{ name: 'queued, the taint gone: the request given back, cleared, forgotten', tainted: false, pod: { state: 'Queued', ...marked }, now: s(16) },
    { writes: ['a'], request: [], release: ['a'], steps: [], state: 'forgotten' }],
  [{ name: 'the taint gone, the clear not landed: kept, to be cleared again', tainted: false, pod: { state: 'Replacing', ...marked }, now: s(16), written: false },
    { writes: ['a'], request: [], release: [], steps: [], state: 'Replacing' }],
  [{ name: 'evicting, the taint gone: the slot given back', tainted: false, pod: { state: 'Evicting', ...marked }, now: s(16) },
    { writes: [], request: [], release: ['a'], steps: [], state: 'Replacing' }],
];

describe('taint: the node machine (decide, forget, ask, give back)', () => {
  for (const [c, want] of table) {
    it(c.name, () => {
      const given = node(c);
      const before = structuredClone(given);
      const m = new NodeMachine(given);
      const decision = m.decide(c.now);
      const replacements = m.settle(decision, c.written ?? true, new Set(), c.now);
      assert.deepEqual(given, before, 'what the machine was given is left as it was');
      assert.deepEqual({
        writes: decision.writes.map((w) => w.uid),
        request: m.data.outbox?.request ?? [],
        release: m.data.outbox?.release ?? [],
        steps: replacements.ops.map((o) => `${o.kind} ${o.uid}`),
        state: m.data.pods.a?.state ?? 'forgotten',
      }, want);
    });
  }

  it('decideNode returns moves and leaves the data as it was', () => {
    const d = node({ name: '', tainted: true, pod: { state: 'Replacing', ...marked }, now: s(15) });
    const before = structuredClone(d);
    const decision = decideNode(d, s(15));
    assert.deepEqual(d, before);
    assert.deepEqual(decision.moves, [{ uid: 'a', state: 'Queued', replacingAt: s(10), clearRetry: true }]);
  });

  it('slots: what it holds (in use, or granted not yet taken) and asks for', () => {
    const d = node({ name: '', tainted: true, pod: { state: 'Evicted', ...marked }, now: s(15) });
    d.pods.b = { ...d.pods.a!, uid: 'b', state: 'Queued' };
    d.granted = ['c'];
    assert.deepEqual(new NodeMachine(d).slots(), { held: ['a', 'c'], asking: ['b'] });
  });
});
