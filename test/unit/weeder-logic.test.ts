// The weeder's pure decisions, table-driven: readiness over slices, the
// watcher's transition decision, which pods are weeded, and the window.
import assert from 'node:assert/strict';
import { readyEndpointIds, serviceReady, serviceKeyOf, serviceUidOf, type SliceLike } from '../../src/weeder/readiness.ts';
import { decideTransition, parseRecorded, type Observed } from '../../src/weeder/transition.ts';
import { crashLoopingContainers, decidePod, type PodLike } from '../../src/weeder/crashloop.ts';
import { lanesWanted, heartbeatTimeoutMs, WindowState, weederWorkflowId } from '../../src/weeder/window.ts';
import type { LabelSelector } from '../../src/config/label-selector.ts';
import { mergeNewest } from '../../src/kube/informer.ts';
import { resolveWeederTarget } from '../../src/weeder/target.ts';
import { ARMED_WEEDING_MAX_PODS, carriedWindow, checkArmedWeeding } from '../../src/weeder/window.ts';
import { parseRecordValue, recordKey, recordValue } from '../../src/weeder/record.ts';
import { tendNamespace } from '../../src/config/weeder.ts';

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

describe('weeder: which dependants are weeded', () => {
  const selectors: LabelSelector[] = [
    { matchExpressions: [{ key: 'role', operator: 'In', values: ['apiserver'] }, { key: 'track', operator: 'NotIn', values: ['canary'] }] },
    { matchLabels: { app: 'kcm' } },
  ];
  const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs-1', controller: true };
  const crashing = { containerStatuses: [{ name: 'c', state: { waiting: { reason: 'CrashLoopBackOff' } } }] };
  const pod = (over: Partial<NonNullable<PodLike['metadata']>> = {}, status: PodLike['status'] = crashing): PodLike => ({
    metadata: { name: 'p', namespace: 'ns', uid: 'u1', labels: { role: 'apiserver' }, ownerReferences: [owner], ...over },
    status,
  });
  const ctx = { namespace: 'ns', podSelectors: selectors, serviceReady: true, handled: new Set<string>() };
  const cases: [string, PodLike, Partial<typeof ctx>, string][] = [
    ['matching, crash-looping, owned', pod(), {}, 'delete'],
    ['second selector matches', pod({ labels: { app: 'kcm' } }), {}, 'delete'],
    ['service not ready: nothing', pod(), { serviceReady: false }, 'none'],
    ['other namespace', pod({ namespace: 'other' }), {}, 'none'],
    ['labels do not match', pod({ labels: { role: 'main' } }), {}, 'none'],
    ['NotIn excludes canary', pod({ labels: { role: 'apiserver', track: 'canary' } }), {}, 'none'],
    ['NotIn keeps a pod without the key', pod({ labels: { role: 'apiserver' } }), {}, 'delete'],
    ['being deleted', pod({ deletionTimestamp: new Date() }), {}, 'none'],
    ['already handled in this window', pod(), { handled: new Set(['u1']) }, 'none'],
    ['no controller: report only', pod({ ownerReferences: [] }), {}, 'report'],
    ['owner that is not a controller: report only', pod({ ownerReferences: [{ ...owner, controller: false }] }), {}, 'report'],
    ['running, not crash-looping', pod({}, { containerStatuses: [{ name: 'c', state: {} }] }), {}, 'none'],
    ['waiting for another reason', pod({}, { containerStatuses: [{ name: 'c', state: { waiting: { reason: 'ContainerCreating' } } }] }), {}, 'none'],
    ['init container in CrashLoopBackOff', pod({}, { initContainerStatuses: [{ name: 'init', state: { waiting: { reason: 'CrashLoopBackOff' } } }] }), {}, 'delete'],
    ['no container statuses yet', pod({}, {}), {}, 'none'],
  ];
  for (const [name, p, over, want] of cases) {
    it(name, () => assert.equal(decidePod(p, { ...ctx, ...over }).action, want));
  }
  it('names every crash-looping container, init ones first', () => {
    assert.deepEqual(crashLoopingContainers({
      status: {
        initContainerStatuses: [{ name: 'i', state: { waiting: { reason: 'CrashLoopBackOff' } } }],
        containerStatuses: [{ name: 'a', state: { running: {} } as never }, { name: 'b', state: { waiting: { reason: 'CrashLoopBackOff' } } }],
      },
    }), ['i', 'b']);
  });
});

describe('weeder: the window', () => {
  it('a transition extends from now and never shortens', () => {
    const w = new WindowState();
    w.extend(1000, 60_000);
    assert.equal(w.openedAt, 1000);
    w.extend(2000, 60_000);
    assert.equal(w.deadline, 62_000);
    w.extend(3000, 10_000); // shorter: keeps the later deadline
    assert.equal(w.deadline, 62_000);
    assert.equal(w.transitions, 3);
    assert.equal(w.openedAt, 1000);
  });
  const cand = (name: string, owner: string | undefined = 'ReplicaSet/rs') => ({ name, uid: `u-${name}`, containers: ['c'], ...(owner ? { owner } : {}) });
  it('a candidate is pending (handled) from the moment it is proposed, and proposed once', () => {
    const w = new WindowState();
    assert.deepEqual(w.propose([cand('a'), cand('a')]).map((c) => c.name), ['a']);
    assert.deepEqual(w.propose([cand('a'), cand('b')]).map((c) => c.name), ['b']);
    assert.deepEqual(w.handledUids(), ['u-a', 'u-b']);
    assert.deepEqual(w.pending.map((c) => c.name), ['a', 'b']);
  });
  it('settles outcomes: deleted and reported are recorded, failed is kept with its reason, skipped may come again', () => {
    const w = new WindowState();
    w.propose([cand('a'), cand('b', undefined), cand('c'), cand('d'), cand('e')]);
    w.settle([
      { uid: 'u-a', outcome: 'deleted', at: 't1' },
      { uid: 'u-b', outcome: 'reported', at: 't2' },
      { uid: 'u-c', outcome: 'skipped', reason: 'not in CrashLoopBackOff' },
      { uid: 'u-d', outcome: 'failed', reason: 'delete refused (403): no', at: 't3' },
      { uid: 'u-e', outcome: 'deleted', at: 't4', earlier: true },
      { uid: 'u-zz', outcome: 'deleted', at: 't5' }, // never proposed: ignored
    ]);
    assert.deepEqual(w.weeded.map((p) => [p.name, p.owner, p.at]), [['a', 'ReplicaSet/rs', 't1'], ['e', 'ReplicaSet/rs', 't4']]);
    assert.match(w.weeded[1]!.note ?? '', /earlier attempt/);
    assert.deepEqual(w.reported.map((p) => p.name), ['b']);
    assert.deepEqual(w.failed, [{ name: 'd', uid: 'u-d', reason: 'delete refused (403): no', at: 't3' }]);
    assert.deepEqual(w.pending, []);
    assert.deepEqual(w.propose([cand('c'), cand('d')]).map((c) => c.name), ['c'], 'skipped may be proposed again, failed not');
  });
  it('a lost answer is settled by a later look: gone or being deleted counts as weeded', () => {
    const w = new WindowState();
    w.propose([cand('a'), cand('b'), cand('c'), cand('d')]);
    w.settleLost([cand('a'), cand('b'), cand('c'), cand('d')],
      [{ uid: 'u-a', seen: 'gone' }, { uid: 'u-b', seen: 'deleting' }, { uid: 'u-c', seen: 'present' }], 'deleting failed: boom', 7);
    assert.deepEqual(w.weeded.map((p) => p.name), ['a', 'b']);
    assert.deepEqual(w.failed.map((p) => [p.name, p.reason]), [['c', 'deleting failed: boom'],
      ['d', 'outcome unknown: deleting failed: boom, and the pod could not be looked at again']]);
    const s = new WindowState();
    s.propose([cand('x')]);
    s.settleLost([cand('x')], [{ uid: 'u-x', seen: 'present' }], undefined, 7);
    assert.deepEqual([s.weeded, s.failed, s.pending], [[], [], []], 'cancelled before it ran: nothing was deleted, nothing to record');
  });
  it('proposes nothing once stopped or failed; lanes stop too', () => {
    const w = new WindowState();
    w.extend(0, 60_000);
    w.stop(1, 'enough');
    assert.deepEqual(w.propose([cand('a')]), []);
    const f = new WindowState();
    f.extend(0, 60_000);
    f.fail(1, 'the watch gave up');
    assert.deepEqual(f.propose([cand('a')]), []);
    assert.equal(lanesWanted(f.snapshot(), 2).size, 0);
    assert.equal(f.result({ namespace: 'n', service: 's' }, 5).failure, 'the watch gave up');
  });
  it('continues from a snapshot (continue-as-new)', () => {
    const w = new WindowState();
    w.arm(0, 3600_000);
    w.extend(1, 500_000);
    w.propose([cand('a'), cand('b')]);
    w.settle([{ uid: 'u-a', outcome: 'deleted', at: 'x' }, { uid: 'u-b', outcome: 'failed', reason: 'no', at: 'y' }]);
    const c = new WindowState(w.snapshot());
    assert.deepEqual(c.snapshot(), w.snapshot());
    assert.ok('window' in carriedWindow(w.snapshot(), 2));
  });
  it('armed: keeps since when armed again, lengthens the limit', () => {
    const w = new WindowState();
    w.arm(1000, 3600_000);
    w.arm(5000, 3600_000);
    assert.deepEqual(w.armed, { since: 1000, until: 3605_000 });
    assert.equal(w.openedAt, undefined);
    assert.equal(w.deadline, 0);
  });
  it('armed: the activity seeing the Service ready opens the window from then', () => {
    const w = new WindowState();
    w.arm(1000, 3600_000);
    w.readySeen(9000, 1000, 60_000);
    assert.equal(w.armed, undefined);
    assert.equal(w.openedAt, 9000);
    assert.equal(w.deadline, 69_000);
    assert.equal(w.transitions, 0, 'transitions count the watcher\'s (and operators\') signals');
  });
  it('armed: the watcher\'s transition and the activity\'s sight of it make one window', () => {
    const w = new WindowState();
    w.arm(1000, 3600_000);
    w.extend(9100, 60_000); // the watcher's signal lands first
    w.readySeen(9000, 1000, 60_000);
    assert.equal(w.armed, undefined);
    assert.equal(w.openedAt, 9100);
    assert.equal(w.deadline, 69_100);
    assert.equal(w.transitions, 1);
  });
  it('armed again after the activity started: stays armed (the Service went down again)', () => {
    const w = new WindowState();
    w.extend(0, 60_000);
    w.arm(5000, 3600_000); // down again; the running activity was started before this
    w.readySeen(4000, undefined, 60_000);
    assert.deepEqual(w.armed, { since: 5000, until: 3605_000 });
  });
  it('a window that never opened reports no openedAt, and when it was armed', () => {
    const w = new WindowState();
    w.arm(1000, 3600_000);
    const r = w.result({ namespace: 'ns', service: 's' }, 3601_000);
    assert.equal(r.openedAt, undefined);
    assert.equal(r.armedAt, new Date(1000).toISOString());
    assert.equal(r.closedAt, new Date(3601_000).toISOString());
  });
  const state = (over: object = {}) => ({ openedAt: 0, deadline: 100_000, transitions: 1, weeded: [], reported: [], ...over });
  const armed = { armed: { since: 50_000, until: 500_000 } };
  const cases: [string, ReturnType<typeof state>, number, [string, number][]][] = [
    ['before the deadline: weed until it', state(), 10_000, [['window', 100_000]]],
    ['past the deadline: nothing (close)', state(), 100_000, []],
    ['less than a second left: nothing', state(), 99_500, []],
    ['stopped: nothing', state({ stopped: { at: 5, reason: 'stop' } }), 10, []],
    ['stopped while armed: nothing', state({ ...armed, stopped: { at: 5, reason: 'stop' } }), 10, []],
    ['armed, never opened: the armed lane, until the limit', state({ openedAt: undefined, deadline: 0, ...armed }), 60_000, [['armed', 500_000]]],
    ['armed inside a window: both lanes', state(armed), 60_000, [['window', 100_000], ['armed', 500_000]]],
    ['armed, past the deadline: the armed lane', state(armed), 150_000, [['armed', 500_000]]],
    ['armed, past the limit: nothing', state(armed), 499_500, []],
  ];
  for (const [name, s, now, want] of cases) {
    it(name, () => assert.deepEqual([...lanesWanted(s, now)], want));
  }
  it('heartbeat timeout: a quarter of the stretch, 10 s to 60 s', () => {
    assert.equal(heartbeatTimeoutMs(5_000), 10_000);
    assert.equal(heartbeatTimeoutMs(120_000), 30_000);
    assert.equal(heartbeatTimeoutMs(300_000), 60_000);
    assert.equal(heartbeatTimeoutMs(3_600_000), 60_000);
  });
  it('names the workflow as DESIGN.md does', () => assert.equal(weederWorkflowId('ns', 'etcd'), 'weeder/ns/etcd'));
  it('reports the result with the stop reason', () => {
    const w = new WindowState();
    w.extend(0, 60_000);
    w.stop(10, 'stop signal');
    w.stop(20, 'again');
    const r = w.result({ namespace: 'ns', service: 's' }, 30);
    assert.equal(r.stopped, 'stop signal');
    assert.equal(r.closedAt, new Date(10).toISOString());
  });
});

describe('weeder: the armed watch\'s announcement (armedWeeding)', () => {
  const pod = { name: 'a', uid: 'u-a', containers: ['c'], owner: 'ReplicaSet/rs' };

  it('taken only with this run\'s token, and only names and UIDs', () => {
    assert.deepEqual(checkArmedWeeding({ token: 't', pods: [pod] }, 't'), { pods: [pod] });
    assert.deepEqual(checkArmedWeeding({ token: 't', pods: [{ name: 'b', uid: 'u-b', containers: [1, 'x'], extra: 'dropped' }] }, 't'),
      { pods: [{ name: 'b', uid: 'u-b', containers: ['x'] }] });
    const ignored: [string, unknown, string | undefined, RegExp][] = [
      ['another token', { token: 'x', pods: [pod] }, 't', /token/],
      ['no token given to any watch', { token: 't', pods: [pod] }, undefined, /token/],
      ['no token', { pods: [pod] }, 't', /token/],
      ['not an object', 'pods', 't', /not an object/],
      ['pods not a list', { token: 't', pods: 'a' }, 't', /list/],
      ['too many pods', { token: 't', pods: Array.from({ length: ARMED_WEEDING_MAX_PODS + 1 }, () => pod) }, 't', /at most/],
      ['a pod without a uid', { token: 't', pods: [{ name: 'a' }] }, 't', /name, uid/],
      ['an empty name', { token: 't', pods: [{ name: '', uid: 'u' }] }, 't', /name, uid/],
    ];
    for (const [what, args, token, why] of ignored) {
      const r = checkArmedWeeding(args, token);
      assert.ok('ignored' in r, what);
      assert.match(r.ignored, why, what);
    }
  });

  it('announced pods become pending once, even after a stop; handled ones are not taken again', () => {
    const w = new WindowState();
    w.stop(1, 'done');
    assert.deepEqual(w.announce([pod]).map((p) => p.uid), ['u-a']);
    assert.deepEqual(w.announce([pod]), [], 'pending already');
    assert.ok(w.isPending('u-a'));
    w.settle([{ uid: 'u-a', outcome: 'deleted', at: 'now' }]);
    assert.equal(w.isPending('u-a'), false);
    assert.deepEqual(w.weeded.map((p) => p.uid), ['u-a']);
    assert.deepEqual(w.announce([pod]), [], 'weeded already');
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
