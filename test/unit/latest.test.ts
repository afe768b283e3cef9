import assert from 'node:assert/strict';
import { setImmediate as turn } from 'node:timers/promises';
import { LatestSender } from '../../src/latest.ts';

/** A receiver whose sends are answered by hand: each send waits until the test resolves (or fails) it. */
function receiver() {
  const sends: { value: number; answer: (ok: boolean) => void }[] = [];
  const send = (value: number) => new Promise<void>((resolve, reject) => {
    sends.push({ value, answer: (ok) => (ok ? resolve() : reject(new Error('refused'))) });
  });
  return { sends, send };
}

/** Whether a promise has settled, after the pending callbacks ran. */
async function settled<T>(p: Promise<T>): Promise<{ done: boolean; value?: T }> {
  let out: { done: boolean; value?: T } = { done: false };
  void p.then((value) => { out = { done: true, value }; });
  for (let i = 0; i < 5; i++) await turn();
  return out;
}

describe('LatestSender: the newest value, one send at a time', () => {
  it('a value equal to the one delivered is not sent again', async () => {
    let value = 1;
    const r = receiver();
    const s = new LatestSender(() => value, r.send);
    const first = s.deliver();
    await turn();
    r.sends[0]!.answer(true);
    assert.equal(await first, true);
    s.changed();
    assert.equal(await s.deliver(), true);
    assert.equal(r.sends.length, 1);
    value = 2;
    s.changed();
    const second = s.deliver();
    await turn();
    assert.deepEqual(r.sends.map((x) => x.value), [1, 2]);
    r.sends[1]!.answer(true);
    assert.equal(await second, true);
  });

  it('a call made after a change waits for a send read after it, not for the one in flight', async () => {
    let value = 1;
    const r = receiver();
    const s = new LatestSender(() => value, r.send);
    const a = s.deliver();
    await turn();
    value = 2;
    s.changed();
    const b = s.deliver();
    r.sends[0]!.answer(true);
    assert.deepEqual(await settled(a), { done: true, value: true });
    // b saw the change: the first send (value 1) does not do for it.
    assert.equal((await settled(b)).done, false);
    assert.deepEqual(r.sends.map((x) => x.value), [1, 2]);
    r.sends[1]!.answer(true);
    assert.equal(await b, true);
  });

  it('while the value changes at every call, many callers share the sends: each waits for at most two', async () => {
    let value = 0;
    const r = receiver();
    const s = new LatestSender(() => value, r.send);
    const calls: Promise<boolean>[] = [];
    for (let i = 0; i < 16; i++) {
      value++;
      s.changed();
      calls.push(s.deliver());
    }
    await turn();
    // The first call's send is in flight; the 15 others wait for it.
    assert.equal(r.sends.length, 1);
    r.sends[0]!.answer(true);
    await settled(calls[0]!);
    // One send more, of the value as it is now, serves all 15.
    assert.deepEqual(r.sends.map((x) => x.value), [1, 16]);
    // The value changes again while it is in flight: those 15 saw nothing of that change, so
    // they do not wait for a third send.
    value++;
    s.changed();
    r.sends[1]!.answer(true);
    assert.deepEqual(await Promise.all(calls), Array(16).fill(true));
    assert.equal(r.sends.length, 2);
  });

  it('a failed send answers false to those waiting for it, and the next call sends again', async () => {
    const r = receiver();
    const s = new LatestSender(() => 7, r.send);
    const a = s.deliver();
    const b = s.deliver();
    await turn();
    r.sends[0]!.answer(false);
    assert.deepEqual([await a, await b], [false, false]);
    const c = s.deliver();
    await turn();
    assert.equal(r.sends.length, 2);
    r.sends[1]!.answer(true);
    assert.equal(await c, true);
  });

  it('forget(): the same value is sent again (the receiver started afresh)', async () => {
    const r = receiver();
    const s = new LatestSender(() => 3, r.send);
    const a = s.deliver();
    await turn();
    r.sends[0]!.answer(true);
    await a;
    s.forget();
    const b = s.deliver();
    await turn();
    assert.deepEqual(r.sends.map((x) => x.value), [3, 3]);
    r.sends[1]!.answer(true);
    assert.equal(await b, true);
  });
});
