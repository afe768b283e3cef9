// How tend talks to the API server: patch content types and
// the error classes it handles. Generated client-node 2.x methods pick JSON
// Patch for a patch body unless told otherwise, so every patch names its type.
import * as k8s from '@kubernetes/client-node';
import { statusOf } from './basics.ts';

/** JSON merge patch (RFC 7386): for metadata, where lists are not involved. */
export const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/**
 * Strategic merge patch: for status, so that lists with a merge key
 * (conditions by `type`) keep the entries other writers own, as the kubelet's
 * own status patches do.
 */
export const strategicMergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch);

export const FIELD_MANAGER = 'tend';

export function isNotFound(err: unknown): boolean {
  return statusOf(err) === 404;
}

/** 409: a conflict, a failed precondition among them (see isPreconditionFailed). */
export function isConflict(err: unknown): boolean {
  return statusOf(err) === 409;
}

/**
 * A failed UID or resourceVersion precondition: kube-apiserver answers 409
 * with "Precondition failed: ..." (412 is accepted too, for other servers).
 */
export function isPreconditionFailed(err: unknown): boolean {
  const code = statusOf(err);
  return code === 412 || (code === 409 && /precondition failed/i.test(errorMessage(err)));
}

/** 429: an eviction refused by a PodDisruptionBudget, or the API server's own throttling. */
export function isTooManyRequests(err: unknown): boolean {
  return statusOf(err) === 429;
}

/** 403: RBAC, or an admission webhook that refused the request. */
export function isForbidden(err: unknown): boolean {
  return statusOf(err) === 403;
}

/**
 * 403 from the NamespaceLifecycle admission: the namespace is being deleted, and nothing new
 * (an eviction among them) may be created in it; the namespace controller deletes its pods.
 * Its status names the cause `NamespaceTerminating`.
 */
export function isNamespaceTerminating(err: unknown): boolean {
  if (!isForbidden(err)) return false;
  const body = (err as { body?: unknown })?.body;
  let status: unknown = body;
  if (typeof body === 'string') {
    try {
      status = JSON.parse(body);
    } catch {
      status = undefined;
    }
  }
  // A StatusCause's type is serialized as `reason`.
  const causes = (status as { details?: { causes?: { reason?: unknown }[] } } | undefined)?.details?.causes;
  return Array.isArray(causes) && causes.some((c) => c?.reason === 'NamespaceTerminating');
}

/**
 * The eviction API's 500 for a pod covered by more than one
 * PodDisruptionBudget: it refuses rather than choose, and will refuse again
 * until the budgets change.
 */
export function isMultiplePodDisruptionBudgets(err: unknown): boolean {
  return statusOf(err) === 500 && /more than one PodDisruptionBudget/i.test(errorMessage(err));
}

/** The API server's own words for a failed request, for logs. */
export function errorMessage(err: unknown): string {
  const body = (err as { body?: unknown })?.body;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      // not JSON: fall through to the error's own message
    }
  } else if (body && typeof (body as { message?: unknown }).message === 'string') {
    return (body as { message: string }).message;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Whether `a` is an older version of an object than `b`. resourceVersion is
 * opaque by contract; kube-apiserver's are etcd revisions, so compare them as
 * numbers when both are, and otherwise say no (treat the newcomer as newer).
 */
export function olderVersion(a: { resourceVersion?: string } | undefined, b: { resourceVersion?: string } | undefined): boolean {
  const ra = Number(a?.resourceVersion);
  const rb = Number(b?.resourceVersion);
  return Number.isSafeInteger(ra) && Number.isSafeInteger(rb) && ra < rb;
}
