import assert from 'node:assert/strict';
import { leaseSpec, nodeLabels, nodeStatus, simNode } from '../../src/sandbox/kubelet/node-status.ts';

describe('simulated node status', () => {
  const now = Date.parse('2025-06-01T12:00:00Z');

  it('names, addresses and spreads nodes over three zones', () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((i) => simNode('sim-', i)).map((n) => [n.name, n.zone, n.internalIP]),
      [['sim-1', 'zone-a', '10.88.0.1'], ['sim-2', 'zone-b', '10.88.0.2'], ['sim-3', 'zone-c', '10.88.0.3'], ['sim-4', 'zone-a', '10.88.0.4']],
    );
    assert.deepEqual(nodeLabels(simNode('sim-', 2)), {
      'kubernetes.io/hostname': 'sim-2',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'topology.kubernetes.io/zone': 'zone-b',
      'topology.kubernetes.io/region': 'sim',
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
    assert.deepEqual(s.capacity, { cpu: '8', memory: '32Gi', pods: '110', 'ephemeral-storage': '100Gi' });
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
});
