// The background Event queue (src/activities/events.ts, EventSink): a few writes at once, in the
// order queued, bounded (past it an Event is dropped and said), and flushed when the worker stops.
import assert from 'node:assert/strict';
import { EventSink } from '../../src/activities/events.ts';
import type { TendEvent } from '../../src/kube/events.ts';

const event = (n: number): TendEvent => ({
  regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'ns', name: `p${n}` }, reason: 'TaintMarked', action: 'Mark', note: `n${n}`, dedupKey: `k${n}`,
});

/** A writer whose writes end when the test says: each call's name and its resolver, in order. */
function gatedWriter() {
  const calls: { name: string; done: () => void; fail: (e: Error) => void }[] = [];
  let most = 0;
  let open = 0;
  const write = (e: TendEvent) => new Promise<void>((resolve, reject) => {
    open++;
    most = Math.max(most, open);
    const end = (f: () => void) => () => { open--; f(); };
    calls.push({ name: e.regarding.name, done: end(resolve), fail: (err) => end(() => reject(err))() });
  });
  return { calls, write, most: () => most };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('EventSink: Events written in the background', () => {
  it('writes at most inFlight at once, in the order queued', async () => {
    const w = gatedWriter();
    const sink = new EventSink(w.write, { inFlight: 2, queued: 100, dropped: () => assert.fail('nothing dropped') });
    for (let i = 1; i <= 5; i++) assert.equal(sink.add(event(i)), true);
    await turn();
    assert.deepEqual(w.calls.map((c) => c.name), ['p1', 'p2']);
    assert.equal(sink.pending, 5);
    w.calls[1]!.done();
    await turn();
    assert.deepEqual(w.calls.map((c) => c.name), ['p1', 'p2', 'p3']);
    for (let i = 0; i < 5; i++) {
      for (const c of w.calls.splice(0)) c.done();
      await turn();
    }
    assert.equal(sink.pending, 0);
    assert.equal(w.most(), 2);
  });

  it('a write that fails does not stop the queue', async () => {
    const w = gatedWriter();
    const sink = new EventSink(w.write, { inFlight: 1, queued: 10, dropped: () => assert.fail('nothing dropped') });
    sink.add(event(1));
    sink.add(event(2));
    await turn();
    w.calls[0]!.fail(new Error('403'));
    await turn();
    assert.deepEqual(w.calls.map((c) => c.name), ['p1', 'p2']);
    w.calls[1]!.done();
    await turn();
    assert.equal(sink.pending, 0);
  });

  it('past `queued` waiting, an Event is dropped and said; the queued ones are kept', async () => {
    const w = gatedWriter();
    const dropped: string[] = [];
    const sink = new EventSink(w.write, { inFlight: 1, queued: 2, dropped: (e) => dropped.push(e.regarding.name) });
    // p1 is being written at once; p2 and p3 wait; p4 finds the queue full.
    assert.equal(sink.add(event(1)), true);
    assert.equal(sink.add(event(2)), true);
    assert.equal(sink.add(event(3)), true);
    assert.equal(sink.add(event(4)), false);
    assert.deepEqual(dropped, ['p4']);
    assert.equal(sink.pending, 3);
  });

  it('flush resolves once all are written, or after its timeout with how many were left', async () => {
    const w = gatedWriter();
    const sink = new EventSink(w.write, { inFlight: 1, queued: 10, dropped: () => undefined });
    assert.equal(await sink.flush(1000), 0, 'nothing queued: at once');
    sink.add(event(1));
    sink.add(event(2));
    assert.equal(await sink.flush(20), 2, 'nothing written within 20 ms: both left');
    const flushed = sink.flush(10_000);
    w.calls[0]!.done();
    await turn();
    w.calls[1]!.done();
    assert.equal(await flushed, 0);
  });
});
