// Readiness per Service over all of its slices (src/weeder/readiness.ts), table-driven.
import assert from 'node:assert/strict';
import { serviceReady, serviceKeyOf, type SliceLike } from '../../src/weeder/readiness.ts';

const slice = (...ready: (boolean | null | undefined)[]): SliceLike => ({
  endpoints: ready.map((r) => ({ conditions: r === undefined ? {} : { ready: r } })),
});

describe('weeder: readiness over all of a Service\'s slices', () => {
  const cases: [string, SliceLike[], boolean][] = [
    ['no slices', [], false],
    ['one slice, no endpoints', [{ endpoints: [] }], false],
    ['one slice, endpoints null', [{ endpoints: null }], false],
    ['one ready endpoint', [slice(true)], true],
    ['ready missing means ready', [slice(undefined)], true],
    ['ready null means ready', [slice(null)], true],
    ['endpoint without conditions is ready', [{ endpoints: [{}] }], true],
    ['all not ready', [slice(false, false)], false],
    ['one of several ready', [slice(false, true)], true],
    ['ready in the second slice only', [slice(false), slice(true)], true],
    ['not ready in every slice', [slice(false), slice(false), { endpoints: [] }], false],
  ];
  for (const [name, slices, want] of cases) {
    it(name, () => assert.equal(serviceReady(slices), want));
  }
  it('keys a slice by its namespace and service-name label', () => {
    assert.equal(serviceKeyOf({ metadata: { namespace: 'ns', labels: { 'kubernetes.io/service-name': 'etcd' } } }), 'ns/etcd');
    assert.equal(serviceKeyOf({ metadata: { namespace: 'ns', labels: {} } }), undefined);
  });
});
