// When an evicted pod's controller counts as whole again (the end of "in
// flight"): only from evidence that postdates the eviction. A ReplicaSet's
// status written before the eviction still shows the old ready count; taking
// it for the truth frees the slot while the replacement is not there yet.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { createTaintActivities } from '../../src/activities/taint.ts';
import { controllerWhole } from '../../src/taint/replace.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import type { TaintReplacementConfig } from '../../src/config/taint-replacement.ts';

const RS_UID = 'rs-uid';
const T0 = Date.parse('2026-11-23T15:00:00Z');

function pod(uid: string, o: { createdAt: number; ready: boolean; terminating?: boolean; owner?: string }): k8s.V1Pod {
  return {
    metadata: {
      uid, name: `db-${uid}`, namespace: 'shop', labels: { app: 'db' },
      creationTimestamp: new Date(o.createdAt) as unknown as Date,
      ...(o.terminating ? { deletionTimestamp: new Date(T0 + 60_000) as unknown as Date } : {}),
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'db', uid: o.owner ?? RS_UID, controller: true }],
    },
    spec: { nodeName: 'sim-2', containers: [] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: o.ready ? 'True' : 'False' }] },
  };
}

/** A kube client that answers the reads awaitReplacement makes, from fixed objects. */
function stubKube(pods: k8s.V1Pod[], rs: { replicas: number; readyReplicas: number }): KubeClients {
  const notFound = () => Object.assign(new Error('not found'), { code: 404 });
  return {
    core: {
      readNamespacedPod: async ({ name }: { name: string }) => pods.find((p) => p.metadata?.name === name) ?? Promise.reject(notFound()),
      listNamespacedPod: async () => ({ items: pods }),
    },
    apps: {
      readNamespacedReplicaSet: async () => ({
        metadata: { uid: RS_UID, name: 'db', namespace: 'shop' },
        spec: { replicas: rs.replicas, selector: { matchLabels: { app: 'db' } } },
        status: { replicas: rs.replicas, readyReplicas: rs.readyReplicas },
      }),
    },
  } as unknown as KubeClients;
}

const config = {
  enabled: true,
  podSelector: { matchLabels: { app: 'db' } },
  taintReplacementOptions: [{ key: 'example.org/maintenance', durationInSeconds: 0 }],
  taintReplacementTimeSeconds: 2,
  maxConcurrentReplacements: 1,
  breaker: { maxTaintedNodes: '50%' },
} as unknown as TaintReplacementConfig;

const wait = (kube: KubeClients, evicted: string) =>
  createTaintActivities(kube, config).awaitReplacement({
    namespace: 'shop', name: `db-${evicted}`, uid: evicted, controllerUid: RS_UID,
    controller: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'db' }, waitMs: 0,
  });

describe('taint: an evicted pod\'s controller is whole again only on evidence after the eviction', () => {
  it('the fault run\'s shape: the ReplicaSet\'s status unchanged since before the eviction (3 of 3 ready) is not a replacement', async () => {
    // db-a evicted (terminating); the ReplicaSet controller has written nothing
    // since (the API server restarted): its status still counts db-a as ready.
    const kube = stubKube([
      pod('a', { createdAt: T0, ready: true, terminating: true }),
      pod('b', { createdAt: T0, ready: true }),
      pod('c', { createdAt: T0, ready: true }),
    ], { replicas: 3, readyReplicas: 3 });
    assert.equal(await wait(kube, 'a'), 'pending');
  });

  it('a replacement created but not Ready yet is not a replacement either', async () => {
    const kube = stubKube([
      pod('a', { createdAt: T0, ready: true, terminating: true }),
      pod('b', { createdAt: T0, ready: true }),
      pod('c', { createdAt: T0, ready: true }),
      pod('d', { createdAt: T0 + 5000, ready: false }),
    ], { replicas: 3, readyReplicas: 3 });
    assert.equal(await wait(kube, 'a'), 'pending');
  });

  it('a Ready replacement makes the controller whole, whatever its (stale) status says', async () => {
    const kube = stubKube([
      pod('a', { createdAt: T0, ready: true, terminating: true }),
      pod('b', { createdAt: T0, ready: true }),
      pod('c', { createdAt: T0, ready: true }),
      pod('d', { createdAt: T0 + 5000, ready: true }),
    ], { replicas: 3, readyReplicas: 2 });
    assert.equal(await wait(kube, 'a'), 'replaced');
  });

  it('the evicted pod still running (eviction not acted on yet) is never replaced', async () => {
    const kube = stubKube([
      pod('a', { createdAt: T0, ready: true }),
      pod('b', { createdAt: T0, ready: true }),
      pod('c', { createdAt: T0, ready: true }),
      pod('d', { createdAt: T0 + 5000, ready: true }),
    ], { replicas: 3, readyReplicas: 3 });
    assert.equal(await wait(kube, 'a'), 'pending');
  });

  it('controllerWhole, table', () => {
    const p = (uid: string, createdAt: number, ready = true, terminating = false) => ({ uid, createdAt, ready, terminating });
    const evicted = { uid: 'a', createdAt: T0 };
    const cases: [string, Parameters<typeof controllerWhole>[0], boolean][] = [
      ['desired 3, two others ready, the evicted one terminating', { evicted, desired: 3, pods: [p('a', T0, true, true), p('b', T0), p('c', T0)] }, false],
      ['desired 3, a new ready pod', { evicted, desired: 3, pods: [p('a', T0, true, true), p('b', T0), p('c', T0), p('d', T0 + 1)] }, true],
      ['desired 3, the new pod terminating', { evicted, desired: 3, pods: [p('b', T0), p('c', T0), p('d', T0 + 1, true, true)] }, false],
      ['desired 1 (scaled down meanwhile), one other ready', { evicted, desired: 1, pods: [p('b', T0)] }, true],
      ['no desired count: a ready pod created after the evicted one', { evicted, pods: [p('b', T0), p('d', T0 + 1000)] }, true],
      ['no desired count: only older pods ready', { evicted, pods: [p('b', T0 - 1000), p('c', T0)] }, false],
      ['no desired count, evicted pod\'s creation unknown: another ready pod', { evicted: { uid: 'a' }, pods: [p('b', T0)] }, true],
    ];
    for (const [name, input, want] of cases) assert.equal(controllerWhole(input), want, name);
  });
});
