// The write helpers against the real API server: evictions a
// PodDisruptionBudget holds are blocked (one budget: 429; two: the 500 the
// eviction API answers), a stale UID is gone, an eviction in a namespace being
// deleted is gone (the namespace controller deletes the pod), and a delete
// touches only the pod it names.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import type { KubeClients } from '../../src/kube/client.ts';
import { deletePodIfSameUid, evictPod, type ObjectRef } from '../../src/kube/writes.ts';
import { admin, deleteNamespace, isReady, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';

function pod(namespace: string, name: string, labels: Record<string, string>): k8s.V1Pod {
  return {
    metadata: { namespace, name, labels },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }], terminationGracePeriodSeconds: 1 },
  };
}

function budget(namespace: string, name: string, app: string): k8s.V1PodDisruptionBudget {
  return { metadata: { namespace, name }, spec: { minAvailable: 1, selector: { matchLabels: { app } } } };
}

describe('kube writes against the API server', function () {
  let kube: KubeClients;
  let ns: string;

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'writes');
  });
  after(async () => deleteNamespace(kube, ns));

  /** Creates a pod and waits until it runs (a pending pod ignores budgets). */
  async function running(name: string, app: string): Promise<ObjectRef> {
    const created = await kube.core.createNamespacedPod({ namespace: ns, body: pod(ns, name, { app }) });
    await waitFor(`pod ${name} Ready`, async () => isReady(await kube.core.readNamespacedPod({ namespace: ns, name })), { timeoutMs: 60_000 });
    return { namespace: ns, name, uid: created.metadata!.uid! };
  }

  /** Waits until the disruption controller has judged the budget: no disruption allowed. */
  async function judged(name: string): Promise<void> {
    await waitFor(`PodDisruptionBudget ${name} observed with 0 disruptions allowed`, async () => {
      const p = await kube.policy.readNamespacedPodDisruptionBudget({ namespace: ns, name });
      return p.status?.observedGeneration === p.metadata?.generation && p.status?.currentHealthy === 1 && p.status?.disruptionsAllowed === 0;
    }, { timeoutMs: 60_000 });
  }

  it('an eviction a PodDisruptionBudget refuses is blocked, with its message, and the pod stays', async () => {
    const held = await running('held', 'held');
    await kube.policy.createNamespacedPodDisruptionBudget({ namespace: ns, body: budget(ns, 'held', 'held') });
    await judged('held');
    const r = await evictPod(kube, held);
    assert.equal(r.outcome, 'blocked');
    assert.match((r as { message: string }).message, /disruption budget/i);
    const still = await kube.core.readNamespacedPod({ namespace: ns, name: 'held' });
    assert.equal(still.metadata?.deletionTimestamp, undefined);
  });

  it('an eviction of a pod under two PodDisruptionBudgets is blocked (the API answers 500)', async () => {
    const twice = await running('twice', 'twice');
    await kube.policy.createNamespacedPodDisruptionBudget({ namespace: ns, body: budget(ns, 'twice-a', 'twice') });
    await kube.policy.createNamespacedPodDisruptionBudget({ namespace: ns, body: budget(ns, 'twice-b', 'twice') });
    const r = await evictPod(kube, twice);
    assert.equal(r.outcome, 'blocked');
    assert.match((r as { message: string }).message, /more than one PodDisruptionBudget/);
  });

  it('a stale UID is gone, for an eviction and for a delete, and the pod under that name is untouched', async () => {
    const current = await running('namesake', 'namesake');
    const stale = { ...current, uid: '00000000-0000-0000-0000-000000000000' };
    assert.deepEqual(await evictPod(kube, stale), { outcome: 'gone' });
    assert.deepEqual(await deletePodIfSameUid(kube, stale), { outcome: 'gone' });
    const still = await kube.core.readNamespacedPod({ namespace: ns, name: 'namesake' });
    assert.equal(still.metadata?.deletionTimestamp, undefined);
    assert.equal(still.metadata?.uid, current.uid);
  });

  it('evicts a pod no budget holds, and a pod that no longer exists is gone', async () => {
    const free = await running('free', 'free');
    assert.deepEqual(await evictPod(kube, free), { outcome: 'evicted' });
    await waitFor('the evicted pod gone', async () => {
      try {
        await kube.core.readNamespacedPod({ namespace: ns, name: 'free' });
        return false;
      } catch {
        return true;
      }
    }, { timeoutMs: 60_000 });
    assert.deepEqual(await evictPod(kube, free), { outcome: 'gone' });
    assert.deepEqual(await deletePodIfSameUid(kube, free), { outcome: 'gone' });
  });

  it('an eviction in a namespace being deleted is gone: the namespace controller deletes the pod', async () => {
    // A pod held by a finalizer keeps its namespace Terminating while the eviction is asked.
    const doomedNs = await tempNamespace(kube, 'writes-terminating');
    const held = await kube.core.createNamespacedPod({ namespace: doomedNs, body: { ...pod(doomedNs, 'held', { app: 'held' }), metadata: { namespace: doomedNs, name: 'held', finalizers: ['test.tend.dev/hold'] } } });
    try {
      await kube.core.deleteNamespace({ name: doomedNs });
      await waitFor('the namespace Terminating', async () => (await kube.core.readNamespace({ name: doomedNs })).status?.phase === 'Terminating', { timeoutMs: 30_000 });
      assert.deepEqual(await evictPod(kube, { namespace: doomedNs, name: 'held', uid: held.metadata!.uid! }), { outcome: 'gone' });
    } finally {
      await kube.core.patchNamespacedPod({ namespace: doomedNs, name: 'held', body: [{ op: 'remove', path: '/metadata/finalizers' }] }).catch(() => undefined);
    }
  });

  it('deletes the pod it names', async () => {
    const doomed = await running('doomed', 'doomed');
    assert.deepEqual(await deletePodIfSameUid(kube, doomed, { gracePeriodSeconds: 0 }), { outcome: 'deleted' });
    await waitFor('the deleted pod gone', async () =>
      (await kube.core.listNamespacedPod({ namespace: ns, fieldSelector: 'metadata.name=doomed' })).items.length === 0, { timeoutMs: 60_000 });
  });
});
