import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { nodeReady, simNodeNamed } from '../../src/sandbox/kubelet/node-ref.ts';

const node = (name: string, ip: string | undefined, ready?: string): k8s.V1Node => ({
  metadata: { name },
  status: {
    ...(ip !== undefined && { addresses: [{ type: 'InternalIP', address: ip }, { type: 'Hostname', address: name }] }),
    ...(ready !== undefined && { conditions: [{ type: 'MemoryPressure', status: 'False' }, { type: 'Ready', status: ready }] }),
  },
});

describe('sandbox node reference', () => {
  const nodes = [node('sim-1', '10.88.0.1'), node('sim-2', '10.88.0.2'), node('sim-3', undefined)];

  it('finds a Node by its name or its InternalIP', () => {
    assert.deepEqual(simNodeNamed(nodes, 'sim-2'), { name: 'sim-2' });
    assert.deepEqual(simNodeNamed(nodes, '10.88.0.1'), { name: 'sim-1' });
    // A Node whose kubelet has not posted its addresses yet is still found by name.
    assert.deepEqual(simNodeNamed(nodes, 'sim-3'), { name: 'sim-3' });
  });

  it('refuses a value that is neither, naming it', () => {
    for (const value of ['sim-9', '10.88.0.9', '127.0.0.1', 'sim-2 ', '']) {
      const r = simNodeNamed(nodes, value);
      assert.ok('problem' in r, value);
      if (value !== '') assert.match(r.problem, new RegExp(JSON.stringify(value).replace(/[.]/g, '\\.')), value);
    }
    // A Hostname address is not an InternalIP.
    assert.ok('problem' in simNodeNamed([{ metadata: { name: 'x' }, status: { addresses: [{ type: 'Hostname', address: 'h' }] } }], 'h'));
  });

  it('shows a long or hostile value by its prefix only', () => {
    const r = simNodeNamed(nodes, `10.88.0.${'9'.repeat(5000)}\u001b[31m`);
    assert.ok('problem' in r);
    assert.ok(r.problem.length < 200, r.problem);
    assert.doesNotMatch(r.problem, /\u001b/);
  });

  it('refuses an address two Nodes share, naming both', () => {
    const r = simNodeNamed([node('a', '10.0.0.1'), node('b', '10.0.0.1')], '10.0.0.1');
    assert.ok('problem' in r && /a, b/.test(r.problem));
  });

  it('is Ready only when the Ready condition is True', () => {
    assert.equal(nodeReady(node('a', undefined, 'True')), true);
    for (const status of ['Unknown', 'False', undefined]) assert.equal(nodeReady(node('a', undefined, status)), false);
  });
});
