import assert from 'node:assert/strict';
import { goDuration, microTime, rfc3339, scaledMs, toMs } from '../../src/sandbox/kubelet/time.ts';

describe('kubelet time formats', () => {
  const t = Date.parse('2025-01-02T03:04:05.678Z');

  it('formats metav1.Time in whole seconds', () => {
    assert.equal(rfc3339(t), '2025-01-02T03:04:05Z');
  });

  it('formats metav1.MicroTime with six fraction digits', () => {
    assert.equal(microTime(t), '2025-01-02T03:04:05.678000Z');
  });

  it('reads both Date and string timestamps', () => {
    assert.equal(toMs(new Date(t)), t);
    assert.equal(toMs('2025-01-02T03:04:05.678Z'), t);
    assert.equal(toMs(undefined), undefined);
    assert.equal(toMs('nonsense'), undefined);
  });

  it("writes durations as Go's time.Duration does", () => {
    assert.equal(goDuration(10_000), '10s');
    assert.equal(goDuration(80_000), '1m20s');
    assert.equal(goDuration(300_000), '5m0s');
    assert.equal(goDuration(1_500), '1.5s');
    assert.equal(goDuration(500), '500ms');
    assert.equal(goDuration(0), '0s');
  });

  it('scales kubelet seconds', () => {
    assert.equal(scaledMs(10, 0.1), 1_000);
    assert.equal(scaledMs(300, 1), 300_000);
  });
});
