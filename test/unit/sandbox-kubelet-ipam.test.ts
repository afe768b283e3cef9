import assert from 'node:assert/strict';
import { MAX_NODES, nodeIP, podCapacity, podCIDR, PodIPAllocator } from '../../src/sandbox/kubelet/ipam.ts';

describe('simulated node addresses', () => {
  it('gives each node its own address and /26 pod range, for 1,024 nodes', () => {
    assert.equal(MAX_NODES, 1024);
    assert.deepEqual([1, 2, 254, 255, 256, 1000, 1024].map((i) => [nodeIP(i), podCIDR(i)]), [
      ['10.88.0.1', '10.244.0.0/26'],
      ['10.88.0.2', '10.244.0.64/26'],
      ['10.88.0.254', '10.244.63.64/26'],
      ['10.88.0.255', '10.244.63.128/26'],
      ['10.88.1.0', '10.244.63.192/26'],
      ['10.88.3.232', '10.244.249.192/26'],
      ['10.88.4.0', '10.244.255.192/26'],
    ]);
  });

  it('never gives two nodes the same address or overlapping ranges', () => {
    const ips = new Set<string>();
    const ranges = new Set<string>();
    for (let i = 1; i <= MAX_NODES; i++) {
      ips.add(nodeIP(i));
      ranges.add(podCIDR(i));
    }
    assert.equal(ips.size, MAX_NODES);
    // Equal-sized aligned ranges overlap only when equal.
    assert.equal(ranges.size, MAX_NODES);
  });

  it('refuses node indexes without a range', () => {
    for (const i of [0, MAX_NODES + 1, 1.5, -1]) {
      assert.throws(() => podCIDR(i), RangeError, String(i));
      assert.throws(() => nodeIP(i), RangeError, String(i));
    }
  });

  it('counts a range’s pods as its addresses less network, broadcast and bridge', () => {
    assert.equal(podCapacity('10.244.0.0/26'), 61);
    assert.equal(podCapacity('10.244.1.0/24'), 253);
  });
});

describe('pod IP allocation', () => {
  it("hands out unique addresses from the node's range, from .2 on", () => {
    const ips = new PodIPAllocator(podCIDR(3));
    assert.equal(ips.allocate(), '10.244.0.130');
    assert.equal(ips.allocate(), '10.244.0.131');
  });

  it('does not reuse a released address at once', () => {
    const ips = new PodIPAllocator(podCIDR(1));
    const a = ips.allocate();
    ips.release(a);
    assert.notEqual(ips.allocate(), a);
  });

  it('skips reserved addresses and runs out when the range is full, never leaving it', () => {
    const ips = new PodIPAllocator('10.244.0.64/26');
    assert.equal(ips.reserve('10.244.0.66'), true);
    assert.equal(ips.reserve('10.244.0.2'), false, 'another node’s range');
    assert.equal(ips.reserve('10.244.0.64'), false, 'the network address');
    assert.equal(ips.reserve('10.244.0.65'), false, 'the bridge');
    assert.equal(ips.reserve('10.244.0.127'), false, 'the broadcast address');
    assert.equal(ips.allocate(), '10.244.0.67');
    const all = new Set(['10.244.0.66', '10.244.0.67']);
    for (let i = 0; i < 59; i++) all.add(ips.allocate());
    assert.equal(ips.size, 61);
    assert.equal(all.size, 61);
    for (const ip of all) {
      const last = Number(ip.split('.')[3]);
      assert.ok(ip.startsWith('10.244.0.') && last >= 66 && last <= 126, ip);
    }
    assert.throws(() => ips.allocate(), /no free pod IP left in 10.244.0.64\/26/);
  });

  it('works from a node’s own podCIDR, whatever its size', () => {
    const ips = new PodIPAllocator('10.244.7.0/24');
    assert.equal(ips.allocate(), '10.244.7.2');
    assert.equal(ips.reserve('10.244.7.254'), true);
    assert.equal(ips.reserve('10.244.7.255'), false);
  });

  it('refuses what is not an IPv4 range it can use', () => {
    for (const bad of ['10.244.0.0', '10.244.0.1/26', '10.244.0.0/31', 'fd00::/64', '10.244.0.300/24']) {
      assert.throws(() => new PodIPAllocator(bad), RangeError, bad);
    }
  });
});

describe('pod IP allocation after adoption', () => {
  it('continues after the highest adopted address rather than reusing a freed one', () => {
    const ips = new PodIPAllocator(podCIDR(2));
    ips.reserve('10.244.0.66');
    ips.reserve('10.244.0.67');
    ips.release('10.244.0.67');
    assert.equal(ips.allocate(), '10.244.0.68');
  });
});
