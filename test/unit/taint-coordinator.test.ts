// The coordinator's messages (src/taint/coordinator.ts): a table of situations and what each
// message does to the slots, with the give-back patch on (verifies: the holder is asked) and off
// (before it: the message frees what it names), and the adoption patch on (adopts: a slotsHeld is
// a hint, the holder is asked) and off. Each row: the message, whether give-backs are
// verified; then the reason refused (or none), the queue, the slots in flight and the nodes to ask.
import assert from 'node:assert/strict';
import { Coordinator } from '../../src/taint/coordinator.ts';
import { GRANT_CHECK_SECONDS, Slots } from '../../src/taint/slots.ts';
import { STEP_RETRY_MS } from '../../src/taint/replace.ts';

const NOW = 1_000_000;

interface Situation {
  name: string;
  message: 'requestReplacements' | 'releaseReplacements' | 'withdrawNode' | 'slotsHeld';
  body: unknown;
  verifies: boolean;
  /** taint-adopt-confirmed (slots.ts holderFound adopts what the node confirms); off when absent. */
  adopts?: boolean;
}

interface Expected {
  /** The reason a message (or part of it) was refused, matched; absent: none. */
  refused?: RegExp;
  queue: string[];
  inFlight: string[];
  verify: string[];
}

/** A coordinator with one slot free, n1's pod g in flight and n1's pod q queued. */
function coordinator(verifies: boolean, adopts = false): Coordinator {
  const s = Slots.carried(undefined, NOW);
  s.setSettings({ maxConcurrentReplacements: 1, maxTaintedNodes: '100%' });
  s.setCounts({ taintedNodes: 1, totalNodes: 10 });
  const c = new Coordinator(s, { verifies, adoptsConfirmed: adopts, withdrawsUndelivered: adopts });
  assert.equal(c.requests({ node: 'n1', requests: [{ node: 'n1', uid: 'g', pod: 'ns/g', requestedAt: NOW }] }, NOW), undefined);
  s.decideGrants(NOW);
  assert.equal(c.requests({ node: 'n1', requests: [{ node: 'n1', uid: 'q', pod: 'ns/q', requestedAt: NOW }] }, NOW), undefined);
  return c;
}

const table: [Situation, Expected][] = [
  [{ name: 'a request: queued', message: 'requestReplacements', verifies: true, body: { node: 'n2', requests: [{ node: 'n2', uid: 'r', pod: 'ns/r', requestedAt: NOW }] } },
    { queue: ['q', 'r'], inFlight: ['g'], verify: [] }],
  [{ name: 'a request naming another node than its message: refused', message: 'requestReplacements', verifies: true,
    body: { node: 'n2', requests: [{ node: 'n1', uid: 'r', pod: 'ns/r', requestedAt: NOW }] } },
  { refused: /another node/, queue: ['q'], inFlight: ['g'], verify: [] }],
  [{ name: 'a give-back, verified: nothing freed, the holder to be asked', message: 'releaseReplacements', verifies: true, body: { node: 'n1', uids: ['g', 'q'] } },
    { queue: ['q'], inFlight: ['g'], verify: ['n1'] }],
  [{ name: 'a give-back, before the patch: what it names freed', message: 'releaseReplacements', verifies: false, body: { node: 'n1', uids: ['g'] } },
    { queue: ['q'], inFlight: [], verify: [] }],
  [{ name: 'a withdrawal, verified: nothing freed, the holder to be asked', message: 'withdrawNode', verifies: true, body: { node: 'n1' } },
    { queue: ['q'], inFlight: ['g'], verify: ['n1'] }],
  [{ name: 'a withdrawal, before the patch: all the node\'s slots freed', message: 'withdrawNode', verifies: false, body: { node: 'n1' } },
    { queue: [], inFlight: [], verify: [] }],
  [{ name: 'a withdrawal naming no node: refused, nothing freed', message: 'withdrawNode', verifies: true, body: { node: 'Not A Node!' } },
    { refused: /./, queue: ['q'], inFlight: ['g'], verify: [] }],
  [{ name: 'a withdrawal too deep: refused whole, even before the patch', message: 'withdrawNode', verifies: false, body: { node: 'n1', x: [[[[[[[[[[['deep']]]]]]]]]]] } },
    { refused: /deep|levels/, queue: ['q'], inFlight: ['g'], verify: [] }],
  [{ name: 'slots held told to a fresh coordinator, before taint-adopt-confirmed: adopted, even past the limit', message: 'slotsHeld', verifies: true,
    body: { node: 'n2', held: [{ node: 'n2', uid: 'h', pod: 'ns/h', requestedAt: NOW }] } },
  { queue: ['q'], inFlight: ['g', 'h'], verify: [] }],
  [{ name: 'slots held told to a fresh coordinator: nothing adopted, the node to be asked', message: 'slotsHeld', verifies: true, adopts: true,
    body: { node: 'n2', held: [{ node: 'n2', uid: 'h', pod: 'ns/h', requestedAt: NOW }] } },
  { queue: ['q'], inFlight: ['g'], verify: ['n2'] }],
  [{ name: 'slots held naming no node: refused, nothing adopted, nobody asked', message: 'slotsHeld', verifies: true, adopts: true,
    body: { node: 'Not A Node!', held: [{ node: 'Not A Node!', uid: 'h', pod: 'ns/h', requestedAt: NOW }] } },
  { refused: /node/, queue: ['q'], inFlight: ['g'], verify: [] }],
  [{ name: 'slots held too deep: refused whole', message: 'slotsHeld', verifies: true, adopts: true, body: { node: 'n2', x: [[[[[[[[[[['deep']]]]]]]]]]] } },
    { refused: /deep|levels/, queue: ['q'], inFlight: ['g'], verify: [] }],
];

describe('taint: the coordinator\'s messages (Coordinator)', () => {
  for (const [c, want] of table) {
    it(c.name, () => {
      const co = coordinator(c.verifies, c.adopts);
      const body = structuredClone(c.body);
      const why = c.message === 'requestReplacements' ? co.requests(body, NOW)
        : c.message === 'releaseReplacements' ? co.releases(body)
          : c.message === 'withdrawNode' ? co.withdrawal(body) : co.held(body, NOW);
      if (want.refused) assert.match(why ?? '', want.refused);
      else assert.equal(why, undefined);
      assert.deepEqual(body, c.body, 'the message is left as it was');
      const d = co.slots.toData();
      assert.deepEqual({ queue: d.queue.map((r) => r.uid), inFlight: d.inFlight.map((g) => g.uid).sort(), verify: d.verify ?? [] },
        { queue: want.queue, inFlight: want.inFlight, verify: want.verify });
    });
  }

  it('a node asked what it holds: its confirmed holds adopted (even past the limit), an unconfirmed hold or one not held never', () => {
    const co = coordinator(true, true);
    co.held({ node: 'n2', held: [] }, NOW);
    const freed = co.slots.holderFound('n2', {
      running: true, held: ['h', 'x'], asking: [],
      // 'x' held but not confirmed (a grant no eviction found at the coordinator); 'y' confirmed but not held: a made-up answer.
      confirmed: [{ uid: 'h', pod: 'ns/h' }, { uid: 'y', pod: 'ns/y' }],
    }, NOW);
    assert.deepEqual(freed, []);
    const d = co.slots.toData();
    assert.deepEqual(d.inFlight.map((g) => `${g.node}/${g.uid} ${g.pod}`).sort(), ['n1/g ns/g', 'n2/h ns/h']);
    assert.equal(d.verify, undefined, 'asked: not to be asked again');
    assert.deepEqual(co.slots.decideGrants(NOW), [], 'in flight past the limit: nothing more granted');
    // A node that is not running confirms nothing, whatever its last answer said.
    co.slots.holderFound('n3', { running: false, held: ['z'], asking: [], confirmed: [{ uid: 'z', pod: 'ns/z' }] }, NOW);
    assert.deepEqual(co.slots.toData().inFlight.map((g) => g.uid).sort(), ['g', 'h']);
  });

  it('a grant that cannot be delivered: its node\'s requests and grants all taken out (before taint-undelivered-withdraws: the grant only)', () => {
    const co = coordinator(true, true);
    // A flood in the name of a node without a workflow: one undelivered grant takes it all out.
    co.requests({ node: 'ghost', requests: Array.from({ length: 1000 }, (_, i) => ({ node: 'ghost', uid: `f${i}`, pod: 'ns/f', requestedAt: NOW })) }, NOW);
    assert.equal(co.slots.toData().queue.length, 1001);
    co.undelivered('ghost', ['f0']);
    assert.deepEqual(co.slots.toData().queue.map((r) => r.uid), ['q']);
    co.undelivered('n1', ['g']);
    assert.deepEqual({ queue: co.slots.toData().queue, inFlight: co.slots.toData().inFlight }, { queue: [], inFlight: [] });
    const before = coordinator(true, false);
    before.undelivered('n1', ['g']);
    assert.deepEqual({ queue: before.slots.toData().queue.map((r) => r.uid), inFlight: before.slots.toData().inFlight }, { queue: ['q'], inFlight: [] });
  });

  it('a give-back that comes while its node is being asked has the node asked again after the answer (before taint-hint-while-asking: the answer ended it)', () => {
    for (const asksAgain of [true, false]) {
      const s = Slots.carried(undefined, NOW);
      s.setSettings({ maxConcurrentReplacements: 1, maxTaintedNodes: '100%' });
      s.setCounts({ taintedNodes: 1, totalNodes: 10 });
      const co = new Coordinator(s, { verifies: true, adoptsConfirmed: true, withdrawsUndelivered: true, asksAgain });
      co.settingsStale = co.countsStale = false;
      co.requests({ node: 'n1', requests: [{ node: 'n1', uid: 'p', pod: 'ns/p', requestedAt: NOW }] }, NOW);
      assert.equal(co.releases({ node: 'n1', uids: [] }), undefined);
      const ask = co.next(NOW, { woken: false, continueSuggested: false });
      assert.deepEqual(ask, { kind: 'ask', nodes: ['n1'] });
      // The node takes a grant and gives it back while the answer is on its way: the answer still shows it held.
      co.releases({ node: 'n1', uids: ['p'] });
      co.holder('n1', { running: true, held: ['p'], asking: [] }, NOW);
      assert.deepEqual(co.slots.toData().verify ?? [], asksAgain ? ['n1'] : [], asksAgain ? 'asked again' : 'not asked again');
      if (asksAgain) {
        co.holder('n1', { running: true, held: [], asking: [] }, NOW);
        assert.deepEqual([...co.slots.toData().inFlight, ...co.slots.toData().queue].map((r) => r.uid), [], 'the second answer frees it');
      }
    }
  });

  it('a grant that cannot be delivered frees its slot; a holder that refuses to answer is not asked again', () => {
    const co = coordinator(true);
    co.undelivered('n1', ['g']);
    assert.deepEqual(co.slots.toData().inFlight, []);
    co.releases({ node: 'n1', uids: ['q'] });
    co.unanswered('n1', false, NOW);
    assert.deepEqual(co.slots.toData().verify, ['n1'], 'a failure: asked again');
    assert.equal(co.retryAt, NOW + STEP_RETRY_MS, '... after STEP_RETRY_MS');
    co.unanswered('n1', true, NOW);
    assert.equal(co.slots.toData().verify, undefined, 'a refusal: not asked again');
  });
});

// One turn of the coordinator's loop (Coordinator.next): the operations the workflow runs, in
// order, until the turn ends. Each row: what is stale or waits; then the operations (`send:g`: the
// grants sent, by pod; `wait@<ms after NOW>`).
interface CoordinatorTurn {
  name: string;
  fresh?: boolean;
  retryAt?: number;
  verify?: string[];
  /** Grants in flight sent longer ago than the check period. */
  checkDue?: boolean;
  continueSuggested?: boolean;
  woken?: boolean;
  now?: number;
}

const coordinatorTurns: [CoordinatorTurn, string[]][] = [
  [{ name: 'a fresh coordinator: the settings and the counts read first, then the queued pod granted', fresh: true },
    ['read:settings', 'read:counts', 'send:q', `wait@${GRANT_CHECK_SECONDS * 1000}`]],
  [{ name: 'a read failed a moment ago: nothing read, no holder asked, until the retry time', fresh: true, verify: ['n1'], retryAt: NOW + 5000 },
    ['send:q', 'wait@5000']],
  [{ name: 'the retry time passed: read again', fresh: true, retryAt: NOW, verify: ['n1'] },
    ['read:settings', 'read:counts', 'ask:n1', 'send:q', `wait@${GRANT_CHECK_SECONDS * 1000}`]],
  [{ name: 'a grant\'s holder due for its check: the grant sent again', checkDue: true, now: NOW + GRANT_CHECK_SECONDS * 1000 },
    ['send:g', 'send:q', `wait@${2 * GRANT_CHECK_SECONDS * 1000}`]],
  [{ name: 'the history long: continue as new at the turn\'s end', continueSuggested: true }, ['send:q', 'continue']],
  [{ name: 'woken during the turn: another turn at once', woken: true }, ['send:q', 'again']],
];

describe('taint: a coordinator\'s turn (Coordinator.next)', () => {
  for (const [c, want] of coordinatorTurns) {
    it(c.name, () => {
      const co = coordinator(true, true);
      // The one slot is g's; q waits. Free it for q (a row that checks g keeps it).
      if (!c.checkDue) co.slots.release('g');
      co.settingsStale = c.fresh === true;
      co.countsStale = c.fresh === true;
      co.retryAt = c.retryAt;
      for (const node of c.verify ?? []) co.slots.holdsHint(node);
      if (c.checkDue) co.slots.setSettings({ maxConcurrentReplacements: 2, maxTaintedNodes: '100%' });
      const now = c.now ?? NOW;
      const ops: string[] = [];
      for (let i = 0; i < 10; i++) {
        const op = co.next(now, { woken: c.woken === true, continueSuggested: c.continueSuggested === true });
        if (op.kind === 'read') {
          ops.push(`read:${op.what}`);
          co.read(op.what === 'settings' ? { maxConcurrentReplacements: c.checkDue ? 2 : 1, maxTaintedNodes: '100%' } : { taintedNodes: 1, totalNodes: 10 });
        } else if (op.kind === 'ask') {
          ops.push(`ask:${op.nodes.join(',')}`);
          for (const node of op.nodes) co.holder(node, { running: true, held: ['g'], asking: ['q'] }, now);
        } else if (op.kind === 'send') {
          ops.push(`send:${op.grants.map((g) => g.uid).join(',')}`);
        } else if (op.kind === 'announce') {
          ops.push(`announce:${op.nodes.join(',')}`);
        } else if (op.kind === 'wait') {
          ops.push(`wait@${op.until === undefined ? 'none' : op.until - NOW}`);
          break;
        } else {
          ops.push(op.kind);
          break;
        }
      }
      assert.deepEqual(ops, want);
    });
  }
});
