import assert from 'node:assert/strict';
import { leaseSpec, nodeLabels, nodeStatus, simNode, STATUS_REPORT_MS, statusDue } from '../../src/sandbox/kubelet/node-status.ts';

describe('simulated node status', () => {
  const now = Date.parse('2025-06-01T12:00:00Z');

  it('names, addresses and spreads nodes over three zones', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 1000].map((i) => simNode('sim-', i)).map((n) => [n.name, n.zone, n.internalIP, n.podCIDR]),
      [
        ['sim-1', 'zone-a', '10.88.0.1', '10.244.0.0/26'], ['sim-2', 'zone-b', '10.88.0.2', '10.244.0.64/26'],
        ['sim-3', 'zone-c', '10.88.0.3', '10.244.0.128/26'], ['sim-4', 'zone-a', '10.88.0.4', '10.244.0.192/26'],
        ['sim-1000', 'zone-a', '10.88.3.232', '10.244.249.192/26'],
      ],
    );
    assert.deepEqual(nodeLabels(simNode('sim-', 2)), {
      'kubernetes.io/hostname': 'sim-2',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'topology.kubernetes.io/zone': 'zone-b',
      'topology.kubernetes.io/region': 'sim',
      'node.kubernetes.io/instance-type': 'sim',
      'sim.tend.dev/node': 'true',
    });
  });

  it('posts Ready and no pressure, with a fresh heartbeat', () => {
    const s = nodeStatus(simNode('sim-', 1), 'v1.36.3', now, []);
    assert.deepEqual(s.conditions.map((c) => [c.type, c.status, c.lastHeartbeatTime, c.lastTransitionTime]), [
      ['MemoryPressure', 'False', '2025-06-01T12:00:00Z', '2025-06-01T12:00:00Z'],
      ['DiskPressure', 'False', '2025-06-01T12:00:00Z', '2025-06-01T12:00:00Z'],
      ['PIDPressure', 'False', '2025-06-01T12:00:00Z', '2025-06-01T12:00:00Z'],
      ['Ready', 'True', '2025-06-01T12:00:00Z', '2025-06-01T12:00:00Z'],
    ]);
    // A /26 holds 61 pods' addresses: the node offers no more.
    assert.deepEqual(s.capacity, { cpu: '8', memory: '32Gi', pods: '61', 'ephemeral-storage': '100Gi' });
    assert.deepEqual(s.allocatable, s.capacity);
    assert.equal(s.nodeInfo.kubeletVersion, 'v1.36.3');
    assert.deepEqual(s.addresses[0], { type: 'InternalIP', address: '10.88.0.1' });
  });

  it('keeps transition times while status holds, and takes Ready back from Unknown', () => {
    const observed = [
      { type: 'MemoryPressure', status: 'False', lastTransitionTime: new Date('2025-05-01T00:00:00Z') },
      { type: 'Ready', status: 'Unknown', lastTransitionTime: '2025-05-31T00:00:00Z' },
    ];
    const s = nodeStatus(simNode('sim-', 1), 'v1.36.3', now, observed);
    assert.equal(s.conditions.find((c) => c.type === 'MemoryPressure')!.lastTransitionTime, '2025-05-01T00:00:00Z');
    assert.equal(s.conditions.find((c) => c.type === 'Ready')!.lastTransitionTime, '2025-06-01T12:00:00Z');
  });

  it('renews the Lease as its holder', () => {
    assert.deepEqual(leaseSpec(simNode('sim-', 1), now + 123), {
      holderIdentity: 'sim-1', leaseDurationSeconds: 40, renewTime: '2025-06-01T12:00:00.123000Z',
    });
  });

  describe('when a heartbeat posts the status (the Lease is renewed every time)', () => {
    const node = simNode('sim-', 7);
    const posted = nodeStatus(node, 'v1.36.3', now - 10_000, []);
    const cases: { name: string; observed?: object; lastPostedAt?: number; at?: number; due: boolean }[] = [
      { name: 'never posted', observed: posted, lastPostedAt: undefined, due: true },
      { name: 'the Node not seen yet', observed: undefined, lastPostedAt: now - 1000, due: true },
      { name: 'unchanged, posted 10 s ago', observed: posted, due: false },
      { name: 'unchanged, posted a report period ago', observed: posted, at: now - 10_000 + STATUS_REPORT_MS, due: true },
      {
        name: 'Ready=Unknown from the node lifecycle controller',
        observed: { ...posted, conditions: posted.conditions.map((c) => (c.type === 'Ready' ? { ...c, status: 'Unknown' } : c)) },
        due: true,
      },
      { name: 'a condition missing', observed: { ...posted, conditions: posted.conditions.slice(1) }, due: true },
      { name: 'another InternalIP', observed: { ...posted, addresses: [{ type: 'InternalIP', address: '10.88.0.9' }, posted.addresses[1]] }, due: true },
      { name: 'another pod capacity', observed: { ...posted, capacity: { ...posted.capacity, pods: '110' } }, due: true },
      { name: 'no allocatable', observed: { ...posted, allocatable: undefined }, due: true },
      { name: 'another kubelet version', observed: { ...posted, nodeInfo: { ...posted.nodeInfo, kubeletVersion: 'v1.35.0' } }, due: true },
    ];
    for (const c of cases) {
      it(`${c.due ? 'posts' : 'does not post'}: ${c.name}`, () => {
        const lastPostedAt = 'lastPostedAt' in c ? c.lastPostedAt : now - 10_000;
        assert.equal(statusDue(node, 'v1.36.3', c.observed, lastPostedAt, c.at ?? now), c.due);
      });
    }
  });
});
