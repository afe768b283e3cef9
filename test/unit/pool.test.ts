import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { pool } from '../../src/pool.ts';

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
