// What a weeder workflow may act on: the worker's configuration decides (src/weeder/target.ts).
import assert from 'node:assert/strict';
import { carriedWindow } from '../../src/weeder/window.ts';
import { resolveWeederTarget } from '../../src/weeder/target.ts';
import { parseRecordValue, recordKey, recordValue } from '../../src/weeder/record.ts';
import { tendNamespace } from '../../src/config/weeder.ts';

describe('weeder: trust (the worker configuration decides what a workflow may act on)', () => {
  const config = {
    watchDuration: { text: '5m', ms: 300_000 },
    servicesAndDependantSelectors: { etcd: { podSelectors: [{ matchLabels: { role: 'api' } }] } },
    namespaces: ['prod'],
  };
  it('a configured Service in a configured namespace: its selectors and window', () => {
    const r = resolveWeederTarget(config, 'prod', 'etcd');
    assert.ok('target' in r);
    assert.deepEqual(r.target.podSelectors, [{ matchLabels: { role: 'api' } }]);
    assert.equal(r.target.watchDuration.ms, 300_000);
  });
  const refusals: [string, unknown, unknown, RegExp][] = [
    ['another Service', 'prod', 'redis', /Service prod\/redis is not configured: .*lists only etcd/],
    ['another namespace', 'dev', 'etcd', /namespace dev is outside the worker's weeder.namespaces \(prod\)/],
    ['an inherited property name', 'prod', 'constructor', /Service prod\/constructor is not configured/],
    ['a namespace that is no name', '../x', 'etcd', /is not a namespace name/],
    ['no names at all', undefined, 42, /names its Service by namespace and service/],
  ];
  for (const [name, ns, svc, want] of refusals) {
    it(`refuses ${name}`, () => {
      const r = resolveWeederTarget(config, ns, svc);
      assert.ok('refused' in r && want.test(r.refused), JSON.stringify(r));
    });
  }
  it('refuses everything without a weeder section', () => {
    const r = resolveWeederTarget(undefined, 'prod', 'etcd');
    assert.ok('refused' in r && /no weeder section/.test(r.refused));
  });
  it('a carried window: a real one passes; junk and far deadlines are refused', () => {
    const now = 1_000_000_000_000;
    const window = { deadline: now + 60_000, transitions: 1, weeded: [], reported: [] };
    assert.deepEqual(carriedWindow(window, now), { window });
    assert.deepEqual(carriedWindow(undefined, now), {});
    assert.ok('refused' in carriedWindow({ ...window, deadline: now + 90 * 24 * 3600_000 }, now));
    assert.ok('refused' in carriedWindow({ ...window, weeded: [{ uid: 1 }] }, now));
    assert.ok('refused' in carriedWindow('x', now));
  });
  it('the readiness record round-trips through its ConfigMap value; junk reads as unrecorded', () => {
    assert.deepEqual(parseRecordValue(recordValue({ readiness: 'ready', endpoints: ['b', 'a'] })), { readiness: 'ready', endpoints: ['a', 'b'] });
    assert.equal(parseRecordValue('{"readiness":"maybe"}'), undefined);
    assert.equal(parseRecordValue('not json'), undefined);
    assert.equal(parseRecordValue(undefined), undefined);
    assert.equal(recordKey('prod', 'etcd'), 'prod.etcd');
  });
  it("tend's namespace: the setting, else the ServiceAccount's file, else tend-system", () => {
    assert.equal(tendNamespace({ namespace: 'ops' }, '/nonexistent'), 'ops');
    assert.equal(tendNamespace({}, '/nonexistent'), 'tend-system');
  });
});
