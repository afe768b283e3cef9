// Which dependants are weeded, and which only reported (src/weeder/crashloop.ts), table-driven.
import assert from 'node:assert/strict';
import { crashLoopingContainers, decidePod, type PodLike } from '../../src/weeder/crashloop.ts';
import type { LabelSelector } from '../../src/config/label-selector.ts';

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
