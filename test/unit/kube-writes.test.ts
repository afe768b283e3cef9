// The write helpers' outcome mapping: which API answers mean evicted, gone or
// blocked, and what is sent.
import assert from 'node:assert/strict';
import { ApiException } from '@kubernetes/client-node';
import {
  deleteDeploymentIfSameUid, deleteOutcome, deletePodIfSameUid, evictionOutcome, evictPod, isForbidden,
  isMultiplePodDisruptionBudgets, isNotFound, isPreconditionFailed, isTooManyRequests,
} from '../../src/kube/writes.ts';
import type { KubeClients } from '../../src/kube/client.ts';

/** An error as the generated client throws it: the status code and the API server's Status as a JSON string. */
const apiError = (code: number, message: string) =>
  new ApiException(code, 'request failed', JSON.stringify({ kind: 'Status', status: 'Failure', code, message }), {});

const PDB_429 = apiError(429, 'Cannot evict pod as it would violate the pod\'s disruption budget.');
const MULTI_PDB = apiError(500, 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
const NOT_FOUND = apiError(404, 'pods "p" not found');
const UID_MISMATCH = apiError(409, 'Operation cannot be fulfilled on Pod "p": Precondition failed: UID in precondition: a, UID in object meta: b');
const WEBHOOK_403 = apiError(403, 'admission webhook "deny.example" denied the request: no');
const OTHER_500 = apiError(500, 'etcdserver: request timed out');
/** The NamespaceLifecycle admission's answer, with its cause, as kube-apiserver sends it. */
const TERMINATING_403 = new ApiException(403, 'request failed', JSON.stringify({
  kind: 'Status', status: 'Failure', code: 403, reason: 'Forbidden',
  message: 'pods "p" is forbidden: unable to create new content in namespace shop because it is being terminated',
  details: { name: 'p', kind: 'pods', causes: [{ reason: 'NamespaceTerminating', message: 'namespace shop is being terminated', field: 'metadata.namespace' }] },
}), {});
/** The same words from a webhook, without the cause: a refusal like any other. */
const LOOKALIKE_403 = apiError(403, 'pods "p" is forbidden: unable to create new content in namespace shop because it is being terminated');

describe('kube writes: what an eviction\'s answer means', () => {
  const cases: [string, unknown, ReturnType<typeof evictionOutcome>][] = [
    ['429 (a PodDisruptionBudget) is blocked, with the server\'s message', PDB_429,
      { outcome: 'blocked', message: 'Cannot evict pod as it would violate the pod\'s disruption budget.' }],
    ['500 for more than one PodDisruptionBudget is blocked', MULTI_PDB,
      { outcome: 'blocked', message: 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.' }],
    ['404 is gone', NOT_FOUND, { outcome: 'gone' }],
    ['409 on the UID precondition (a namesake) is gone', UID_MISMATCH, { outcome: 'gone' }],
    ['403 (a webhook) is not an outcome: the caller sees the error', WEBHOOK_403, undefined],
    ['403 because the namespace is being deleted (cause NamespaceTerminating) is gone: the namespace controller deletes the pod', TERMINATING_403, { outcome: 'gone' }],
    ['a 403 with the same words but no such cause is not an outcome', LOOKALIKE_403, undefined],
    ['another 500 is not an outcome', OTHER_500, undefined],
    ['an error without a status is not an outcome', new Error('socket hang up'), undefined],
  ];
  for (const [name, err, want] of cases) it(name, () => assert.deepEqual(evictionOutcome(err), want));
});

describe('kube writes: what a delete\'s answer means', () => {
  const cases: [string, unknown, ReturnType<typeof deleteOutcome>][] = [
    ['404 is gone', NOT_FOUND, { outcome: 'gone' }],
    ['409 on the UID precondition is gone', UID_MISMATCH, { outcome: 'gone' }],
    ['403 is not an outcome', WEBHOOK_403, undefined],
    ['429 is not an outcome', PDB_429, undefined],
  ];
  for (const [name, err, want] of cases) it(name, () => assert.deepEqual(deleteOutcome(err), want));
});

describe('kube writes: error predicates', () => {
  it('classify by status code (and message where the code is shared)', () => {
    assert.equal(isNotFound(NOT_FOUND), true);
    assert.equal(isPreconditionFailed(UID_MISMATCH), true);
    assert.equal(isPreconditionFailed(apiError(409, 'the object has been modified; please apply your changes to the latest version')), false);
    assert.equal(isPreconditionFailed(apiError(412, 'precondition')), true);
    assert.equal(isTooManyRequests(PDB_429), true);
    assert.equal(isForbidden(WEBHOOK_403), true);
    assert.equal(isMultiplePodDisruptionBudgets(MULTI_PDB), true);
    assert.equal(isMultiplePodDisruptionBudgets(OTHER_500), false);
    assert.equal(isNotFound(new Error('x')), false);
  });
});

describe('kube writes: what is sent', () => {
  const pod = { namespace: 'ns', name: 'p', uid: 'u-1' };
  const fake = (fail?: unknown) => {
    const calls: { method: string; args: unknown }[] = [];
    const respond = (method: string) => async (args: unknown) => {
      calls.push({ method, args });
      if (fail) throw fail;
      return {};
    };
    const kube = {
      core: { createNamespacedPodEviction: respond('evict'), deleteNamespacedPod: respond('deletePod') },
      apps: { deleteNamespacedDeployment: respond('deleteDeployment') },
    } as unknown as KubeClients;
    return { kube, calls };
  };

  it('an eviction carries the UID precondition and the grace period asked for', async () => {
    const { kube, calls } = fake();
    assert.deepEqual(await evictPod(kube, pod, { gracePeriodSeconds: 5 }), { outcome: 'evicted' });
    assert.deepEqual(calls, [{
      method: 'evict',
      args: {
        namespace: 'ns', name: 'p',
        body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p', namespace: 'ns' }, deleteOptions: { preconditions: { uid: 'u-1' }, gracePeriodSeconds: 5 } },
      },
    }]);
  });

  it('an eviction refused by a budget is returned, a webhook\'s 403 thrown', async () => {
    assert.deepEqual(await evictPod(fake(PDB_429).kube, pod), { outcome: 'blocked', message: 'Cannot evict pod as it would violate the pod\'s disruption budget.' });
    await assert.rejects(evictPod(fake(WEBHOOK_403).kube, pod), (err) => err === WEBHOOK_403);
  });

  it('a pod delete carries the UID precondition; a namesake or nothing is gone', async () => {
    const { kube, calls } = fake();
    assert.deepEqual(await deletePodIfSameUid(kube, pod, { gracePeriodSeconds: 0 }), { outcome: 'deleted' });
    assert.deepEqual(calls[0]!.args, { namespace: 'ns', name: 'p', body: { preconditions: { uid: 'u-1' }, gracePeriodSeconds: 0 } });
    assert.deepEqual(await deletePodIfSameUid(fake(UID_MISMATCH).kube, pod), { outcome: 'gone' });
    assert.deepEqual(await deletePodIfSameUid(fake(NOT_FOUND).kube, pod), { outcome: 'gone' });
    await assert.rejects(deletePodIfSameUid(fake(OTHER_500).kube, pod), (err) => err === OTHER_500);
  });

  it('a Deployment delete carries the UID precondition and propagates in the background', async () => {
    const { kube, calls } = fake();
    assert.deepEqual(await deleteDeploymentIfSameUid(kube, { namespace: 'ns', name: 'd', uid: 'u-2' }), { outcome: 'deleted' });
    assert.deepEqual(calls[0]!.args, { namespace: 'ns', name: 'd', body: { preconditions: { uid: 'u-2' }, propagationPolicy: 'Background' } });
  });

  it('refuses a reference without a uid, naming what is missing', async () => {
    const { kube, calls } = fake();
    await assert.rejects(evictPod(kube, { namespace: 'ns', name: 'p', uid: '' }), /evictPod: uid must be a non-empty string/);
    await assert.rejects(deletePodIfSameUid(kube, { namespace: 'ns', name: 'p', uid: 'u', }, { gracePeriodSeconds: -1 }), /gracePeriodSeconds/);
    assert.deepEqual(calls, []);
  });
});
