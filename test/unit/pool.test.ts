import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { drainKeyed, pool } from '../../src/pool.ts';

describe('pool: bounded concurrency', () => {
  it('runs every item once, never more than `size` at a time, starting the next as soon as one ends', async () => {
    let running = 0;
    let peak = 0;
    const done: number[] = [];
    await pool([200, 5, 5, 5, 5, 5], 2, async (ms) => {
      running++;
      peak = Math.max(peak, running);
      await sleep(ms);
      done.push(ms);
      running--;
    });
    assert.equal(peak, 2);
    // The 200 ms item holds one lane while the other runs the five short ones.
    assert.deepEqual(done, [5, 5, 5, 5, 5, 200]);
  });

  it('an empty list resolves at once', async () => {
    let calls = 0;
    await pool([], 5, async () => { calls++; });
    assert.equal(calls, 0);
  });
});

describe('drainKeyed: lanes over keyed queues', () => {
  it('never more than `size` at once, a lane free takes the next key at once, the first queue before the next', async () => {
    const first = new Set(['a', 'b', 'c', 'd']);
    const second = new Set(['x']);
    let running = 0;
    let peak = 0;
    const order: string[] = [];
    const run = (ms: Record<string, number>) => async (key: string) => {
      running++;
      peak = Math.max(peak, running);
      order.push(`start ${key}`);
      await sleep(ms[key] ?? 5);
      order.push(`end ${key}`);
      running--;
    };
    await drainKeyed([{ pending: first, run: run({ a: 200 }) }, { pending: second, run: run({}) }], 2);
    assert.equal(peak, 2);
    assert.equal(first.size + second.size, 0, 'nothing left pending');
    // a holds one lane; the other runs b, c, d, then x, all before a ends.
    assert.deepEqual(order.filter((e) => e.startsWith('start')), ['start a', 'start b', 'start c', 'start d', 'start x']);
    assert.equal(order.at(-1), 'end a');
  });

  it('a key is never run twice at once, in either queue: pending again while it runs, it runs again after', async () => {
    const nodes = new Set(['n1', 'n2']);
    const pods = new Set(['n1']);
    const runningKeys = new Set<string>();
    const runs: string[] = [];
    let overlap = false;
    const run = (what: string) => async (key: string) => {
      if (runningKeys.has(key)) overlap = true;
      runningKeys.add(key);
      runs.push(`${what} ${key}`);
      // While n1's first run is under way it changes again.
      if (what === 'node' && key === 'n1' && runs.length === 1) nodes.add('n1');
      await sleep(20);
      runningKeys.delete(key);
    };
    await drainKeyed([{ pending: nodes, run: run('node') }, { pending: pods, run: run('pods') }], 4);
    assert.equal(overlap, false, 'no key ran in two lanes at once');
    assert.equal(runs.filter((r) => r === 'node n1').length, 2, 'the change that came while n1 ran was acted on after it');
    assert.ok(runs.includes('pods n1') && runs.includes('node n2'));
  });

  it('nothing pending resolves at once', async () => {
    let calls = 0;
    await drainKeyed([{ pending: new Set(), run: async () => { calls++; } }], 3);
    assert.equal(calls, 0);
  });
});
