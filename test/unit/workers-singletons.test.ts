// The pure parts of the singletons' take-over and of the repair queue's add without a worker:
// whether a task queue's pollers are live, the state a fresh tend-safety takes, an add's update id.
import assert from 'node:assert/strict';
import { lastPollWords, queuePolls, STALE_POLL_MS, TAKEOVER_IDENTITY } from '../../src/workers/singletons.ts';
import { applyPause, emptySafetyState, takenOverState } from '../../src/safety/messages.ts';
import { addUpdateId } from '../../src/starters/repair-commands.ts';

const NOW = Date.parse('2026-11-28T00:10:00Z');
const at = (msAgo: number) => ({ seconds: Math.floor((NOW - msAgo) / 1000), nanos: ((NOW - msAgo) % 1000) * 1e6 });
const service = (pollers: { identity: string; lastAccessTime?: { seconds: number; nanos: number } }[]) => ({
  describeTaskQueue: async () => ({ pollers }),
}) as unknown as Parameters<typeof queuePolls>[0];

describe('singletons: a task queue\'s pollers', () => {
  const cases: { name: string; pollers: { identity: string; msAgo?: number }[]; live: boolean; lastPollAgo?: number }[] = [
    { name: 'none listed: no worker, no last poll', pollers: [], live: false },
    { name: 'an idle live worker: its long poll began up to a minute ago', pollers: [{ identity: '1@a', msAgo: 61_000 }], live: true, lastPollAgo: 61_000 },
    { name: 'a worker gone for longer than the threshold', pollers: [{ identity: '1@a', msAgo: STALE_POLL_MS + 1000 }], live: false, lastPollAgo: STALE_POLL_MS + 1000 },
    { name: 'the newest of several pollers counts', pollers: [{ identity: '1@a', msAgo: 200_000 }, { identity: '2@b', msAgo: 5000 }], live: true, lastPollAgo: 5000 },
    { name: 'a taker\'s short-lived worker is no live tend', pollers: [{ identity: `${TAKEOVER_IDENTITY} 7@c`, msAgo: 1000 }], live: false },
    { name: 'a poller without a time is never live', pollers: [{ identity: '1@a' }], live: false, lastPollAgo: NOW },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const p = await queuePolls(service(c.pollers.map((x) => ({ identity: x.identity, ...(x.msAgo !== undefined ? { lastAccessTime: at(x.msAgo) } : {}) }))), 'default', 'q', STALE_POLL_MS, NOW);
      assert.equal(p.live, c.live);
      assert.equal(p.lastPoll === undefined ? undefined : NOW - p.lastPoll, c.lastPollAgo);
    });
  }

  it('says the last poll\'s time and age, or that none is listed', () => {
    assert.equal(lastPollWords({ live: false, lastPoll: NOW - 95_000 }, NOW), 'last polled at 2026-11-28T00:08:25.000Z (95 s ago)');
    assert.equal(lastPollWords({ live: false }, NOW), 'no poll in the last few minutes');
  });
});

describe('tend-safety: the state a run started afresh takes', () => {
  it('one that pauses something, whole: its pauses, reasons and revision', () => {
    const paused = applyPause(emptySafetyState(), { capabilities: ['taint'], reason: 'storm', by: 'ops@h' }, '2026-11-28T00:00:00Z');
    assert.deepEqual(takenOverState(paused), { state: paused, taken: true });
  });
  it('one that pauses nothing: a fresh run\'s (its revision is not taken)', () => {
    assert.deepEqual(takenOverState({ ...emptySafetyState(), revision: 7 }), { state: emptySafetyState(), taken: false });
  });
  it('one it cannot read: nothing paused, as a fresh run, saying why', () => {
    for (const bad of [{ revision: -1, capabilities: {} }, 'x', { ...emptySafetyState(), extra: 1 }]) {
      const r = takenOverState(bad);
      assert.deepEqual(r.state, emptySafetyState());
      assert.equal(r.taken, false);
      assert.match(r.problem ?? '', /could not be read.*nothing is paused/);
    }
  });
});

describe('repair-queue add: its update id', () => {
  const heal = { operation: 'heal', machine_type: 'sim', address: '192.0.2.1' };
  it('the same requests give the same id (a retry is the same update); any other word another', () => {
    assert.equal(addUpdateId([heal]), addUpdateId([{ ...heal }]));
    assert.match(addUpdateId([heal]), /^add-[0-9a-f]{32}$/);
    for (const other of [[{ ...heal, address: '192.0.2.2' }], [{ ...heal, serial: 'S1' }], [{ ...heal, operation: 'reboot' }], [heal, heal]]) {
      assert.notEqual(addUpdateId(other), addUpdateId([heal]));
    }
  });
  it('after an earlier add of the same requests finished, the next id names its last entry', () => {
    assert.equal(addUpdateId([heal], '7'), `${addUpdateId([heal])}-after-7`);
  });
});
