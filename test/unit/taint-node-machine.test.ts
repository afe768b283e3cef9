// The node's decide / forget / ask / give-back sequence (src/taint/node-machine.ts): a table of
// situations and what the machine does, with no cluster and no Temporal. Each row: the node's
// taint (its age), one pod's state, what landed; then the writes, the slot messages, the steps
// and the pod's state after; then a node run's turns (next / apply) and its messages.
import assert from 'node:assert/strict';
import { NodeInbox, NodeMachine, NodeRun, RESEND_MS } from '../../src/taint/node-machine.ts';
import { STEP_RETRY_MS } from '../../src/taint/replace.ts';
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

  it('slots: what it holds (in use, or granted not yet taken), asks for, and holds confirmed (found granted by its eviction)', () => {
    const d = node({ name: '', tainted: true, pod: { state: 'Evicted', ...marked }, now: s(15) });
    d.pods.b = { ...d.pods.a!, uid: 'b', name: 'db-b', state: 'Queued' };
    // Blocked by a PodDisruptionBudget after its eviction found the grant: confirmed.
    d.pods.d = { ...d.pods.a!, uid: 'd', name: 'db-d', state: 'Blocked', confirmed: true };
    // Taken from a grant no eviction has checked yet (perhaps forged): held, not confirmed.
    d.pods.e = { ...d.pods.a!, uid: 'e', name: 'db-e', state: 'Evicting' };
    // Given back: a confirmation left on a pod that holds nothing counts for nothing.
    d.pods.f = { ...d.pods.a!, uid: 'f', name: 'db-f', state: 'Replacing', confirmed: true };
    d.granted = ['c'];
    assert.deepEqual(new NodeMachine(d).slots(), {
      held: ['a', 'd', 'e', 'c'], asking: ['b'], confirmed: [{ uid: 'a', pod: 'ns/db-a' }, { uid: 'd', pod: 'ns/db-d' }],
    });
  });
});

// What a run owes the coordinator at a turn: the slots held when a fresh coordinator asked
// (announceSlots), the outbox's requests and give-backs; nothing while an undelivered message
// waits out RESEND_MS.
interface Owing {
  name: string;
  pod: PodState;
  outbox?: { request: string[]; release: string[] };
  announce?: boolean;
  /** An undelivered message at this time. */
  failedAt?: number;
  now: number;
}

interface Owed {
  /** The slots told to a fresh coordinator, or 'nothing' when no answer is due now. */
  held: string[] | 'nothing';
  requests: string[] | 'nothing';
  releases: string[];
}

const owing: [Owing, Owed][] = [
  [{ name: 'nothing owed: nothing sent', pod: 'Queued', now: s(15) }, { held: 'nothing', requests: 'nothing', releases: [] }],
  [{ name: 'a request in the outbox: sent, the pod named', pod: 'Queued', outbox: { request: ['a'], release: [] }, now: s(15) },
    { held: 'nothing', requests: ['ns/db-a'], releases: [] }],
  [{ name: 'a give-back in the outbox: sent', pod: 'Replacing', outbox: { request: [], release: ['x'] }, now: s(15) },
    { held: 'nothing', requests: [], releases: ['x'] }],
  [{ name: 'undelivered a moment ago: nothing sent before the resend wait', pod: 'Queued', outbox: { request: ['a'], release: [] }, failedAt: s(14), now: s(15) },
    { held: 'nothing', requests: 'nothing', releases: [] }],
  [{ name: 'undelivered, the resend wait over: sent again', pod: 'Queued', outbox: { request: ['a'], release: [] }, failedAt: s(14), now: s(14) + RESEND_MS },
    { held: 'nothing', requests: ['ns/db-a'], releases: [] }],
  [{ name: 'a fresh coordinator asked, the pod evicting: its slot told', pod: 'Evicting', announce: true, now: s(15) },
    { held: ['ns/db-a'], requests: 'nothing', releases: [] }],
  [{ name: 'a fresh coordinator asked, the pod queued: nothing held, the pod asks again', pod: 'Queued', announce: true, now: s(15) },
    { held: [], requests: ['ns/db-a'], releases: [] }],
];

describe('taint: a node run\'s messages to the coordinator (NodeRun)', () => {
  for (const [c, want] of owing) {
    it(c.name, () => {
      const d = node({ name: c.name, tainted: true, pod: { state: c.pod, ...marked }, now: c.now });
      if (c.outbox) d.outbox = c.outbox;
      if (c.announce) d.announce = true;
      const run = new NodeRun(d);
      if (c.failedAt !== undefined) run.delivery(c.failedAt);
      const held = run.announcement(c.now);
      const requests = run.requests(c.now);
      assert.deepEqual({
        held: held ? held.map((r) => r.pod) : 'nothing',
        requests: requests ? requests.batches.flat().map((r) => r.pod) : 'nothing',
        releases: requests ? run.releases().uids : [],
      }, want);
    });
  }

  it('sent: out of the outbox; carry: an unanswered ask goes with the data', () => {
    const d = node({ name: '', tainted: true, pod: { state: 'Queued', ...marked }, now: s(15) });
    d.outbox = { request: ['a'], release: ['x'] };
    const run = new NodeRun(d);
    run.sent('request', ['a']);
    assert.deepEqual(run.data.outbox, { request: [], release: ['x'] });
    run.announce = true;
    run.carry();
    assert.equal(run.data.announce, true);
    assert.equal(d.announce, undefined, 'what the run was given is left as it was');
  });

  it('a failed step pauses the listing for STEP_RETRY_MS; a failed listing lists again', () => {
    const run = new NodeRun(node({ name: '', tainted: true, pod: { state: 'Detected' }, now: s(1) }));
    run.stepFailed(s(1));
    assert.equal(run.paused(s(1) + STEP_RETRY_MS - 1), true);
    assert.equal(run.takeListing(), false, 'paused: no listing');
    assert.equal(run.paused(s(1) + STEP_RETRY_MS), false);
    assert.equal(run.takeListing(), true);
    assert.equal(run.takeListing(), false, 'listed once');
    run.listed(undefined, undefined, s(40), s(40));
    assert.equal(run.takeListing(), true, 'a failed listing is tried again');
  });

  it('no taint: nothing listed', () => {
    const run = new NodeRun(node({ name: '', tainted: false, pod: { state: 'Detected' }, now: s(1) }));
    assert.equal(run.takeListing(), false);
  });
});

describe('taint: what a node\'s signals tell before its first read (NodeInbox)', () => {
  it('a new run keeps the grants for the run it starts, at most NODE_MESSAGE_BOUNDS.uids', () => {
    const inbox = new NodeInbox(undefined);
    assert.equal(inbox.granted({ uids: ['a'] }), undefined);
    inbox.granted({ uids: Array.from({ length: 1000 }, (_, i) => `u${i}`) });
    assert.deepEqual(inbox.early, ['a'], 'past the bound: not kept');
    const run = new NodeRun(node({ name: '', tainted: true, pod: { state: 'Queued', ...marked }, now: s(15) }));
    inbox.started(run);
    assert.deepEqual(run.data.granted, ['a']);
  });

  it('a run continued as new answers and takes grants with its carried data', () => {
    const carried = node({ name: '', tainted: true, pod: { state: 'Queued', ...marked }, now: s(15) });
    const inbox = new NodeInbox(carried);
    assert.equal(inbox.data, carried);
    inbox.granted({ uids: ['a'] });
    assert.deepEqual(carried.granted, ['a']);
  });

  it('nodeTaints: the node read again, the watcher\'s first sight kept; a bad message refused with a reason', () => {
    const inbox = new NodeInbox(undefined);
    assert.equal(inbox.taints({ taints: [{ key: KEY, effect: 'NoSchedule', durationInSeconds: 10, matchedBy: KEY, seenAt: s(3) }] }), undefined);
    assert.equal(inbox.recheck, true);
    assert.deepEqual([...inbox.hints], [[`${KEY}:NoSchedule`, s(3)]]);
    assert.match(inbox.taints({ taints: 'not a list' }) ?? '', /not a list/);
  });
});

// One turn of the node's loop (NodeRun.next / apply): the operations the workflow runs, in
// order, each outcome as scripted (ok, or its activity gave up), until the turn ends.
interface Turn {
  name: string;
  tainted: boolean;
  pod: Partial<PodEntry> & { state: PodState };
  granted?: string[];
  now: number;
  recheck?: boolean;
  listNeeded?: boolean;
  /** Replacement steps under way (by pod) as the turn runs. */
  running?: string[];
  continueSuggested?: boolean;
  /** Operations whose activity gave up. */
  fails?: ('read' | 'list' | 'write')[];
}

interface TurnOps {
  /** Each operation: its kind, with the replacement steps (`replace:evict:a`), or the wait's time (`wait@<s>`). */
  ops: string[];
  state: PodState | 'forgotten';
}

const turns: [Turn, TurnOps][] = [
  [{ name: 'a new pod, its condition written: told, then another turn (the mark is visible from now)', tainted: true, pod: { state: 'Detected', written: {} }, now: s(1) },
    { ops: ['write', 'tell', 'again'], state: 'Detected' }],
  [{ name: 'told to look again: the node read, then a wait until the pod is due', tainted: true, pod: { state: 'Detected' }, now: s(1), recheck: true },
    { ops: ['read', 'tell', 'wait@10'], state: 'Detected' }],
  [{ name: 'its pods to list: listed (an empty list: the pod has gone, forgotten)', tainted: true, pod: { state: 'Detected' }, now: s(1), listNeeded: true },
    { ops: ['list', 'tell', 'wait@none'], state: 'forgotten' }],
  [{ name: 'the read gives up: no listing, no writes while the step waits', tainted: true, pod: { state: 'Detected', written: {} }, now: s(1), recheck: true, listNeeded: true, fails: ['read'] },
    { ops: ['read', 'tell', 'wait@10'], state: 'Detected' }],
  [{ name: 'the listing gives up: listed again later, the turn waits for what is due next', tainted: true, pod: { state: 'Replacing', ...marked }, now: s(11), listNeeded: true, fails: ['list'] },
    { ops: ['list', 'tell', 'wait@15'], state: 'Replacing' }],
  [{ name: 'the write gives up: the pod is forgotten only once its clear lands', tainted: false, pod: { state: 'Detected' }, now: s(1), fails: ['write'] },
    { ops: ['write', 'tell', `wait@${1 + STEP_RETRY_MS / 1000}`], state: 'Detected' }],
  [{ name: 'granted while queued: its eviction starts beside the turn', tainted: true, pod: { state: 'Queued', ...marked }, granted: ['a'], now: s(15) },
    { ops: ['replace:evict:a', 'tell', 'wait@none'], state: 'Evicting' }],
  [{ name: 'granted, continue-as-new suggested: no new step; with none under way, continue as new', tainted: true, pod: { state: 'Queued', ...marked }, granted: ['a'], now: s(15),
    continueSuggested: true }, { ops: ['tell', 'continue'], state: 'Evicting' }],
  [{ name: 'continue-as-new suggested with a step under way: it finishes first', tainted: true, pod: { state: 'Evicted', ...marked, evictedAt: s(15) }, now: s(16),
    running: ['a'], continueSuggested: true }, { ops: ['tell', 'wait@none'], state: 'Evicted' }],
  [{ name: 'the taint gone, the pod\'s clear landed: forgotten, the workflow done', tainted: false, pod: { state: 'Detected' }, now: s(1) },
    { ops: ['write', 'tell', 'again'], state: 'forgotten' }],
  [{ name: 'nothing left, nothing owed: done', tainted: false, pod: { state: 'Detected', written: {} }, now: s(1) },
    { ops: ['tell', 'done'], state: 'forgotten' }],
];

describe('taint: a node run\'s turn (NodeRun.next / apply)', () => {
  for (const [c, want] of turns) {
    it(c.name, () => {
      const run = new NodeRun(node({ name: c.name, tainted: c.tainted, pod: c.pod, granted: c.granted, now: c.now }));
      run.recheck = c.recheck === true;
      run.listNeeded = c.listNeeded === true;
      const fails = new Set(c.fails ?? []);
      const running = new Set(c.running ?? []);
      const ops: string[] = [];
      for (let i = 0; i < 10; i++) {
        const op = run.next(c.now, { running, woken: false, continueSuggested: c.continueSuggested === true });
        if (op.kind === 'read') {
          run.apply({ kind: 'read', state: fails.has('read') ? undefined : { taints: run.data.taints, settings }, hints: new Map() }, c.now);
        } else if (op.kind === 'list') {
          run.apply({ kind: 'list', listing: fails.has('list') ? undefined : [], mark: undefined, listedAt: op.listedAt }, c.now);
        } else if (op.kind === 'write') {
          run.apply(fails.has('write') ? { kind: 'write', ok: false, marked: undefined } : { kind: 'write', ok: true, marked: {} }, c.now);
        }
        if (op.kind === 'replace') ops.push(...op.steps.map((r) => `replace:${r.kind}:${r.uid}`));
        else if (op.kind === 'wait') ops.push(`wait@${op.until === undefined ? 'none' : (op.until - 1_000_000) / 1000}`);
        else ops.push(op.kind);
        if (['done', 'continue', 'again', 'wait'].includes(op.kind)) break;
      }
      assert.deepEqual({ ops, state: run.data.pods.a?.state ?? 'forgotten' }, want);
    });
  }

  it('the data it was given is left as it was', () => {
    const d = node({ name: '', tainted: true, pod: { state: 'Queued', ...marked }, granted: ['a'], now: s(15) });
    const before = structuredClone(d);
    const run = new NodeRun(d);
    run.listNeeded = false;
    run.next(s(15), { running: new Set(), woken: false, continueSuggested: false });
    assert.equal(run.data.pods.a!.state, 'Evicting');
    assert.deepEqual(d, before);
  });
});
