// The watcher's transition decision (src/weeder/transition.ts) and its durable record
// (src/weeder/record.ts), table-driven; and a resync that never rolls back what the watch saw.
import assert from 'node:assert/strict';
import { readyEndpointIds, serviceReady, serviceUidOf, type SliceLike } from '../../src/weeder/readiness.ts';
import { decideTransition, parseRecorded, type Observed } from '../../src/weeder/transition.ts';
import { mergeNewest } from '../../src/kube/informer.ts';
import { parseRecordValue, recordValue } from '../../src/weeder/record.ts';

describe('weeder: transition decisions', () => {
  const ready = (...endpoints: string[]): Observed => ({ readiness: 'ready', endpoints });
  const notReady: Observed = { readiness: 'not-ready', endpoints: [] };
  // recorded, now, first look after a (re)start, open, arm, records, opens after arming
  const cases: [string, Observed | undefined, Observed, boolean, boolean, boolean, boolean, boolean][] = [
    ['first seen ready', undefined, ready('a'), true, true, false, true, false],
    ['first seen not ready', undefined, notReady, true, false, true, true, false],
    ['not ready -> ready', notReady, ready('a'), false, true, false, true, true],
    ['not ready -> ready, seen after a restart', notReady, ready('a'), true, true, false, true, true],
    ['ready -> not ready', ready('a'), notReady, false, false, true, true, false],
    ['ready -> not ready, seen after a restart', ready('a'), notReady, true, false, true, true, false],
    ['ready -> ready, same pods', ready('a'), ready('a'), false, false, false, false, false],
    ['ready -> ready, one more pod', ready('a'), ready('a', 'b'), false, false, false, true, false],
    ['ready -> ready, all pods replaced while watching', ready('a'), ready('b'), false, false, false, true, false],
    ['restart, same pods serving: no transition', ready('a', 'b'), ready('a', 'b'), true, false, false, false, false],
    ['restart, some of the same pods serving', ready('a', 'b'), ready('b', 'c'), true, false, false, true, false],
    ['restart, none of the recorded pods serving: went down and back while away', ready('a', 'b'), ready('c'), true, true, false, true, false],
    ['not ready -> not ready', notReady, notReady, false, false, false, false, false],
    ['restart, still not ready: armed again (the workflow may have ended)', notReady, notReady, true, false, true, false, false],
    // A Service deleted and applied again: its slices name another owner UID.
    ['Service re-created, ready at once, the same pods serving', { ...ready('a'), service: 's1' }, { ...ready('a'), service: 's2' }, false, true, false, true, false],
    ['Service re-created, seen after a restart', { ...ready('a'), service: 's1' }, { ...ready('a'), service: 's2' }, true, true, false, true, false],
    ['Service re-created while not ready, ready now: never armed for this one', { ...notReady, service: 's1' }, { ...ready('a'), service: 's2' }, false, true, false, true, false],
    ['Service re-created, not ready yet: armed', { ...ready('a'), service: 's1' }, { ...notReady, service: 's2' }, false, false, true, true, false],
    ['the same Service, ready -> ready', { ...ready('a'), service: 's1' }, { ...ready('a'), service: 's1' }, true, false, false, false, false],
    ['a record from before UIDs were kept: no transition, the UID is recorded', ready('a'), { ...ready('a'), service: 's1' }, true, false, false, true, false],
  ];
  for (const [name, recorded, now, firstLook, open, arm, records, afterArming] of cases) {
    it(`${name}: ${open ? 'open' : arm ? 'arm' : 'nothing'}${afterArming ? ' after arming' : ''}${records ? ', record' : ''}`, () => {
      const d = decideTransition(recorded, now, firstLook);
      assert.equal(d.open, open);
      assert.equal(d.arm, arm);
      assert.equal(d.afterArming, afterArming);
      assert.deepEqual(d.record, records ? now : undefined);
    });
  }
  it('names the change: a re-created Service is not "unrecorded"', () => {
    assert.equal(decideTransition({ ...ready('a'), service: 's1' }, { ...ready('a'), service: 's2' }, true).reason, 'Service re-created -> ready');
    assert.equal(decideTransition(undefined, ready('a'), true).reason, 'unrecorded -> ready');
    assert.equal(decideTransition(notReady, ready('a'), false).reason, 'not-ready -> ready');
  });
  it('the slices of a deleted Service that linger do not stand for the Service applied again', () => {
    const owned = (uid: string, at: string, ready: boolean): SliceLike => ({
      metadata: { creationTimestamp: at, ownerReferences: [{ kind: 'Service', uid, controller: true }] },
      endpoints: [{ conditions: { ready }, targetRef: { uid: `pod-${uid}` } }],
    });
    const old = owned('s1', '2026-01-01T00:00:00Z', true);
    const fresh = owned('s2', '2026-01-01T00:05:00Z', false);
    assert.equal(serviceUidOf([old, fresh]), 's2');
    assert.equal(serviceReady([old, fresh]), false, 'only the new Service\'s slices count');
    assert.deepEqual(readyEndpointIds([old, owned('s2', '2026-01-01T00:05:00Z', true)]), ['pod-s2']);
    assert.equal(serviceUidOf([{ endpoints: [] }]), undefined);
  });
  it('records the Service UID and reads it back', () => {
    assert.deepEqual(parseRecordValue(recordValue({ ...ready('b', 'a'), service: 's1' })), { ...ready('a', 'b'), service: 's1' });
    assert.deepEqual(parseRecordValue(recordValue(ready('a'))), ready('a'));
  });
  it('reads the record an earlier version left in the Service\'s annotations', () => {
    assert.deepEqual(parseRecorded({ 'weeder.tend.dev/last-readiness': 'ready', 'weeder.tend.dev/ready-endpoints': 'b,a' }), ready('a', 'b'));
    assert.deepEqual(parseRecorded({ 'weeder.tend.dev/last-readiness': 'not-ready', 'weeder.tend.dev/ready-endpoints': '' }), notReady);
    assert.equal(parseRecorded({ 'weeder.tend.dev/last-readiness': 'true' }), undefined);
    assert.equal(parseRecorded(undefined), undefined);
  });
  it('identifies serving pods by UID, else by address; not-ready endpoints do not serve', () => {
    assert.deepEqual(readyEndpointIds([
      { endpoints: [{ targetRef: { uid: 'u2' } }, { targetRef: { uid: 'u1' }, conditions: { ready: true } }] },
      { endpoints: [{ addresses: ['10.0.0.9'] }, { targetRef: { uid: 'u3' }, conditions: { ready: false } }] },
    ]), ['10.0.0.9', 'u1', 'u2']);
  });
});

describe('weeder: a resync never rolls back what the watch saw', () => {
  const o = (name: string, rv: string, tag: string) => ({ metadata: { namespace: 'ns', name, resourceVersion: rv }, tag });
  const cases: [string, ReturnType<typeof o>[], ReturnType<typeof o>[], string[]][] = [
    ['the list adds what the watch missed', [o('a', '5', 'watch')], [o('a', '5', 'list'), o('b', '7', 'list')], ['watch', 'list']],
    ['a newer listed version wins', [o('a', '5', 'watch')], [o('a', '9', 'list')], ['list']],
    ['an older listed version loses', [o('a', '9', 'watch')], [o('a', '5', 'list')], ['watch']],
    ['objects only the watch has are kept', [o('a', '9', 'watch')], [], ['watch']],
  ];
  for (const [name, cached, listed, want] of cases) {
    it(name, () => assert.deepEqual(mergeNewest(cached, listed).map((x) => x.tag), want));
  }
});
