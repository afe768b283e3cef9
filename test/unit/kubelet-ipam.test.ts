import assert from 'node:assert/strict';
import { PodIPAllocator } from '../../src/sandbox/kubelet/ipam.ts';

describe('pod IP allocation', () => {
  it("hands out unique addresses from the node's /24", () => {
    const ips = new PodIPAllocator(3);
    const a = ips.allocate();
    const b = ips.allocate();
    assert.equal(a, '10.244.3.2');
    assert.equal(b, '10.244.3.3');
  });

  it('does not reuse a released address at once', () => {
    const ips = new PodIPAllocator(1);
    const a = ips.allocate();
    ips.release(a);
    assert.notEqual(ips.allocate(), a);
  });

  it('skips reserved addresses and runs out after 253', () => {
    const ips = new PodIPAllocator(1);
    assert.equal(ips.reserve('10.244.1.2'), true);
    assert.equal(ips.reserve('10.244.2.2'), false, 'another node’s range');
    assert.equal(ips.allocate(), '10.244.1.3');
    for (let i = 0; i < 251; i++) ips.allocate();
    assert.equal(ips.size, 253);
    assert.throws(() => ips.allocate(), /no free pod IP/);
  });

  it('refuses node indexes without a /24', () => {
    assert.throws(() => new PodIPAllocator(0), RangeError);
    assert.throws(() => new PodIPAllocator(255), RangeError);
  });
});

describe('pod IP allocation after adoption', () => {
  it('continues after the highest adopted address rather than reusing a freed one', () => {
    const ips = new PodIPAllocator(2);
    ips.reserve('10.244.2.2');
    ips.reserve('10.244.2.3');
    ips.release('10.244.2.3');
    assert.equal(ips.allocate(), '10.244.2.4');
  });
});
