import assert from 'node:assert/strict';
import { containerBackoffPolicy, hasExpired, inBackoffSince, nextBackoff } from '../../src/sandbox/kubelet/backoff.ts';
import type { BackoffEntry } from '../../src/sandbox/kubelet/backoff.ts';

describe('kubelet back-off', () => {
  const policy = containerBackoffPolicy(1);

  it('starts at 10 s and doubles to a cap of 300 s', () => {
    const delays: number[] = [];
    let entry: BackoffEntry | undefined;
    let t = 0;
    for (let i = 0; i < 8; i++) {
      entry = nextBackoff(policy, entry, t, t);
      delays.push(entry.delayMs / 1000);
      t += 1000; // each restart runs a second before the next crash
    }
    assert.deepEqual(delays, [10, 20, 40, 80, 160, 300, 300, 300]);
  });

  it('has no back-off for a first exit', () => {
    assert.equal(inBackoffSince(policy, undefined, 0, 0), false);
  });

  it('holds a container that exited less than the delay ago', () => {
    const entry = { delayMs: 20_000, lastUpdateMs: 0 };
    assert.equal(inBackoffSince(policy, entry, 1_000, 1_000), true);
    assert.equal(inBackoffSince(policy, entry, 1_000, 20_999), true);
    assert.equal(inBackoffSince(policy, entry, 1_000, 21_000), false);
  });

  it('forgets after a container ran 10 minutes without crashing', () => {
    const entry = { delayMs: 300_000, lastUpdateMs: 0 };
    assert.equal(hasExpired(policy, entry, 600_000), false);
    assert.equal(hasExpired(policy, entry, 600_001), true);
    assert.equal(inBackoffSince(policy, entry, 600_001, 600_002), false);
    assert.deepEqual(nextBackoff(policy, entry, 600_001, 600_002), { delayMs: 10_000, lastUpdateMs: 600_002 });
    // Short of that, the delay keeps doubling (here: capped).
    assert.deepEqual(nextBackoff(policy, entry, 599_000, 599_000), { delayMs: 300_000, lastUpdateMs: 599_000 });
  });

  it('scales every duration with the time scale', () => {
    const fast = containerBackoffPolicy(0.1);
    assert.deepEqual(fast, { initialMs: 1_000, maxMs: 30_000 });
    const entry = { delayMs: 30_000, lastUpdateMs: 0 };
    assert.equal(hasExpired(fast, entry, 60_001), true, 'reset after 10 min × 0.1');
    assert.equal(hasExpired(fast, entry, 60_000), false);
  });
});
