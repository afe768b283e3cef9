import assert from 'node:assert/strict';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { serviceKeyOf, serviceReady } from '../../src/sandbox/kubelet/readiness.ts';

function slice(name: string, ready: (boolean | undefined)[], service = 'etcd', namespace = 'db'): V1EndpointSlice {
  return {
    addressType: 'IPv4',
    metadata: { name, namespace, labels: { 'kubernetes.io/service-name': service } },
    endpoints: ready.map((r, i) => ({ addresses: [`10.244.1.${i + 2}`], conditions: r === undefined ? {} : { ready: r } })),
  };
}

describe('service readiness from EndpointSlices', () => {
  it('is not ready without slices or endpoints', () => {
    assert.equal(serviceReady([]), false);
    assert.equal(serviceReady([slice('a', [])]), false);
    assert.equal(serviceReady([{ ...slice('a', []), endpoints: undefined }]), false);
  });

  it('is not ready when every endpoint is explicitly unready', () => {
    assert.equal(serviceReady([slice('a', [false, false]), slice('b', [false])]), false);
  });

  it('is ready with one ready endpoint in any slice', () => {
    assert.equal(serviceReady([slice('a', [false]), slice('b', [false, true])]), true);
  });

  it('reads a missing ready condition as ready', () => {
    assert.equal(serviceReady([slice('a', [undefined])]), true);
    assert.equal(serviceReady([{ ...slice('a', []), endpoints: [{ addresses: ['10.244.1.2'] }] }]), true);
  });

  it('files a slice under namespace/service', () => {
    assert.equal(serviceKeyOf(slice('etcd-abc', [true])), 'db/etcd');
    assert.equal(serviceKeyOf({ addressType: 'IPv4', endpoints: [], metadata: { name: 'x', namespace: 'db' } }), undefined);
  });
});
