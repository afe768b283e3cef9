// The simulated kubelet's pod driver with a fake API: what it writes and
// deletes as pods change under it.
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClients } from '../../src/kube/client.ts';
import { log } from '../../src/log.ts';
import type { ServiceReadiness } from '../../src/sandbox/kubelet/endpoints.ts';
import { kubeletTiming } from '../../src/sandbox/kubelet/lifecycle.ts';
import { PodRunner } from '../../src/sandbox/kubelet/pods.ts';
import { waitFor } from '../harness/wait.ts';

/** A ServiceReadiness whose answers and change events the test controls. */
class FakeReadiness {
  ready = new Map<string, boolean>();
  private listeners: ((key: string, ready: boolean) => void)[] = [];
  isReady(key: string): boolean {
    return this.ready.get(key) ?? false;
  }
  onChange(l: (key: string, ready: boolean) => void): void {
    this.listeners.push(l);
  }
  set(key: string, ready: boolean): void {
    this.ready.set(key, ready);
    for (const l of this.listeners) l(key, ready);
  }
}

function fakeApi() {
  const deleted: { name: string; namespace: string; body: unknown }[] = [];
  let version = 100;
  const clients = {
    core: {
      patchNamespacedPodStatus: async () => ({ metadata: { resourceVersion: String(++version) } }),
      deleteNamespacedPod: async (args: { name: string; namespace: string; body: unknown }) => {
        deleted.push(args);
        return {};
      },
    },
  } as unknown as KubeClients;
  return { clients, deleted };
}

const pod = (extra: Partial<NonNullable<V1Pod['metadata']>> = {}): V1Pod => ({
  metadata: {
    namespace: 'ns', name: 'dependant', uid: 'u-1', resourceVersion: '1',
    annotations: { 'sim.tend.dev/depends-on': 'upstream' }, ...extra,
  },
  spec: { nodeName: 'sim-1', containers: [{ name: 'app', image: 'registry.example/app:1' }] },
});

describe('simulated kubelet: pods being deleted', () => {
  let runner: PodRunner | undefined;
  afterEach(async () => {
    await runner?.stop();
    runner = undefined;
  });

  function start() {
    const api = fakeApi();
    const readiness = new FakeReadiness();
    readiness.ready.set('ns/upstream', true);
    runner = new PodRunner({
      clients: api.clients,
      node: { name: 'sim-1', index: 1, zone: 'z', internalIP: '10.0.0.1', podCIDR: '10.244.0.0/26' },
      timing: kubeletTiming(0.01),
      readiness: readiness as unknown as ServiceReadiness,
      log,
      frozen: false,
    });
    // The informer's handlers, as the watch would call them.
    const upsert = (p: V1Pod) => (runner as unknown as { upsert(p: V1Pod): void }).upsert(p);
    return { ...api, readiness, upsert };
  }

  it('deletes a pod whose upstream Service goes away during its grace period (a namespace being deleted)', async () => {
    const { deleted, readiness, upsert } = start();
    upsert(pod());
    const deleting = { deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30, resourceVersion: '2' };
    upsert(pod(deleting));
    // The namespace's Service and slices go with it: the upstream is no longer ready.
    readiness.set('ns/upstream', false);
    await waitFor('the pod deleted for good', () => deleted.length === 1, { timeoutMs: 5000, intervalMs: 20 });
    assert.deepEqual(deleted[0], { name: 'dependant', namespace: 'ns', body: { gracePeriodSeconds: 0, preconditions: { uid: 'u-1' } } });
  });

  it('deletes a pod that is updated again during its grace period', async () => {
    const { deleted, upsert } = start();
    upsert(pod());
    upsert(pod({ deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30, resourceVersion: '2' }));
    upsert(pod({ deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30, resourceVersion: '3', labels: { x: 'y' } }));
    await waitFor('the pod deleted for good', () => deleted.length === 1, { timeoutMs: 5000, intervalMs: 20 });
  });
});
