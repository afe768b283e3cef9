// The Kubernetes writes every capability makes to objects it did not create:
// evicting a pod and deleting an object, each bound to the UID tend decided
// about, so that a namesake created meanwhile (a StatefulSet's next pod, an
// App's Deployment applied again) is never touched. Each answers with an
// outcome the caller acts on, and throws only what it cannot classify.
//
//   evictPod(kube, { namespace, name, uid }, { gracePeriodSeconds? })
//     -> { outcome: 'evicted' }                   the eviction was accepted (the pod is terminating)
//      | { outcome: 'gone' }                      404, or 409 (another pod under that name now)
//      | { outcome: 'blocked', message }          429 (a PodDisruptionBudget, or throttling), or the
//                                                  500 for a pod under more than one PodDisruptionBudget
//     anything else (403 from a webhook, 5xx) is thrown.
//   deletePodIfSameUid(kube, { namespace, name, uid }, { gracePeriodSeconds? })
//   deleteDeploymentIfSameUid(kube, { namespace, name, uid }, { propagationPolicy? })
//   deleteIfSameUid(del, uid, options)           any kind: `del` sends the delete with the given body
//     -> { outcome: 'deleted' } | { outcome: 'gone' }   (404, or 409 on the UID precondition)
//   evictionOutcome(err) / deleteOutcome(err)    the pure mapping from an error to an outcome
//                                                  (undefined: not one of those; rethrow)
//
// The error predicates (isNotFound, isConflict, isPreconditionFailed,
// isTooManyRequests, isForbidden, isMultiplePodDisruptionBudgets) are
// re-exported from api.ts, so a capability imports its writes from one place.
// Each write takes only the API calls it makes (PodWrites, DeploymentWrites): any KubeClients
// fits, and this module needs nothing of client.ts (which builds on prepared.ts, which builds
// on this).
import type * as k8s from '@kubernetes/client-node';
import { preview } from '../checks/preview.ts';
import { errorMessage, isConflict, isMultiplePodDisruptionBudgets, isNamespaceTerminating, isNotFound, isTooManyRequests } from './api.ts';

export {
  errorMessage, isConflict, isForbidden, isMultiplePodDisruptionBudgets, isNotFound, isPreconditionFailed, isTooManyRequests,
} from './api.ts';
export { statusOf } from './basics.ts';

/** A namespaced object as tend decided about it: the UID binds the write to that very object. */
export interface ObjectRef {
  namespace: string;
  name: string;
  uid: string;
}

/** The core API calls the pod writes make: a KubeClients fits, as does a test's stub of the two. */
export interface PodWrites {
  core: Pick<k8s.CoreV1Api, 'createNamespacedPodEviction' | 'deleteNamespacedPod'>;
}

/** The apps API call the Deployment delete makes. */
export interface DeploymentWrites {
  apps: Pick<k8s.AppsV1Api, 'deleteNamespacedDeployment'>;
}

export type EvictOutcome = { outcome: 'evicted' } | { outcome: 'gone' } | { outcome: 'blocked'; message: string };
export type DeleteOutcome = { outcome: 'deleted' } | { outcome: 'gone' };

export function checkRef(what: string, ref: ObjectRef): void {
  for (const field of ['namespace', 'name', 'uid'] as const) {
    if (typeof ref?.[field] !== 'string' || ref[field] === '') {
      throw new Error(`${what}: ${field} must be a non-empty string (got ${preview(ref)})`);
    }
  }
}

function checkGrace(what: string, seconds: number | undefined): void {
  if (seconds !== undefined && !(Number.isSafeInteger(seconds) && seconds >= 0)) {
    throw new Error(`${what}: gracePeriodSeconds must be a whole number of seconds, 0 or more (got ${seconds})`);
  }
}

/** What an eviction's error means; undefined when it is none of the expected answers. */
export function evictionOutcome(err: unknown): EvictOutcome | undefined {
  // A pod whose namespace is being deleted goes with it: the namespace controller deletes it.
  if (isNotFound(err) || isConflict(err) || isNamespaceTerminating(err)) return { outcome: 'gone' };
  if (isTooManyRequests(err) || isMultiplePodDisruptionBudgets(err)) return { outcome: 'blocked', message: errorMessage(err) };
  return undefined;
}

/** What a delete's error means; undefined when it is neither "not found" nor a failed UID precondition. */
export function deleteOutcome(err: unknown): DeleteOutcome | undefined {
  if (isNotFound(err) || isConflict(err)) return { outcome: 'gone' };
  return undefined;
}

/**
 * Asks for the pod's eviction (policy/v1) with a UID precondition, so that
 * PodDisruptionBudgets are honoured and a namesake is never evicted.
 */
export async function evictPod(kube: PodWrites, pod: ObjectRef, opts: { gracePeriodSeconds?: number } = {}): Promise<EvictOutcome> {
  checkRef('evictPod', pod);
  checkGrace(`evictPod ${pod.namespace}/${pod.name}`, opts.gracePeriodSeconds);
  try {
    await kube.core.createNamespacedPodEviction({
      namespace: pod.namespace,
      name: pod.name,
      body: {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: pod.name, namespace: pod.namespace },
        deleteOptions: {
          preconditions: { uid: pod.uid },
          ...(opts.gracePeriodSeconds !== undefined && { gracePeriodSeconds: opts.gracePeriodSeconds }),
        },
      },
    });
    return { outcome: 'evicted' };
  } catch (err) {
    const outcome = evictionOutcome(err);
    if (outcome) return outcome;
    throw err;
  }
}

/**
 * Deletes an object of any kind only while it is the one with `uid`: `del`
 * sends the delete with the body given (preconditions and options).
 */
export async function deleteIfSameUid(
  del: (body: k8s.V1DeleteOptions) => Promise<unknown>, uid: string,
  opts: { gracePeriodSeconds?: number; propagationPolicy?: 'Background' | 'Foreground' | 'Orphan' } = {},
): Promise<DeleteOutcome> {
  if (typeof uid !== 'string' || uid === '') throw new Error(`deleteIfSameUid: uid must be a non-empty string (got ${preview(uid)})`);
  checkGrace('deleteIfSameUid', opts.gracePeriodSeconds);
  try {
    await del({
      preconditions: { uid },
      ...(opts.gracePeriodSeconds !== undefined && { gracePeriodSeconds: opts.gracePeriodSeconds }),
      ...(opts.propagationPolicy !== undefined && { propagationPolicy: opts.propagationPolicy }),
    });
    return { outcome: 'deleted' };
  } catch (err) {
    const outcome = deleteOutcome(err);
    if (outcome) return outcome;
    throw err;
  }
}

/** Deletes the pod only while it is the one with `pod.uid` (an optional grace period overrides the pod's own). */
export async function deletePodIfSameUid(kube: PodWrites, pod: ObjectRef, opts: { gracePeriodSeconds?: number } = {}): Promise<DeleteOutcome> {
  checkRef('deletePodIfSameUid', pod);
  return deleteIfSameUid((body) => kube.core.deleteNamespacedPod({ namespace: pod.namespace, name: pod.name, body }), pod.uid, opts);
}

/** Deletes the Deployment only while it is the one with `ref.uid`; its pods go in the background unless told otherwise. */
export async function deleteDeploymentIfSameUid(
  kube: DeploymentWrites, ref: ObjectRef, opts: { propagationPolicy?: 'Background' | 'Foreground' | 'Orphan' } = {},
): Promise<DeleteOutcome> {
  checkRef('deleteDeploymentIfSameUid', ref);
  return deleteIfSameUid((body) => kube.apps.deleteNamespacedDeployment({ namespace: ref.namespace, name: ref.name, body }), ref.uid,
    { propagationPolicy: opts.propagationPolicy ?? 'Background' });
}
