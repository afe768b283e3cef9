// Which dependants the weeder deletes, and which it only reports. Pure.
import { matches, type LabelSelector } from '../config/selector.ts';

/** The parts of a pod the decision reads (structurally a V1Pod). */
export interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: unknown;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  };
  status?: {
    containerStatuses?: ContainerStatusLike[];
    initContainerStatuses?: ContainerStatusLike[];
  };
}

interface ContainerStatusLike {
  name: string;
  state?: { waiting?: { reason?: string } };
}

export const CRASH_LOOP_BACK_OFF = 'CrashLoopBackOff';

/** The containers (init ones too) waiting in CrashLoopBackOff. */
export function crashLoopingContainers(pod: PodLike): string[] {
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  return statuses.filter((s) => s.state?.waiting?.reason === CRASH_LOOP_BACK_OFF).map((s) => s.name);
}

export function controllerOf(pod: PodLike) {
  return pod.metadata?.ownerReferences?.find((o) => o.controller === true);
}

export function isDependant(pod: PodLike, namespace: string, podSelectors: readonly LabelSelector[]): boolean {
  return pod.metadata?.namespace === namespace && podSelectors.some((s) => matches(s, pod.metadata?.labels ?? {}));
}

export type PodDecision =
  | { action: 'none' }
  | { action: 'delete'; containers: string[] }
  /** Crash-looping, but deleting it would lose it: nobody recreates a pod without a controller. */
  | { action: 'report'; containers: string[] };

/**
 * What to do with a pod while the window is open. `serviceReady` is the
 * upstream's readiness as last seen: nothing is deleted while it is not ready.
 * `handled` holds the UIDs already deleted or reported in this window.
 */
export function decidePod(
  pod: PodLike,
  ctx: { namespace: string; podSelectors: readonly LabelSelector[]; serviceReady: boolean; handled: ReadonlySet<string> },
): PodDecision {
  if (!ctx.serviceReady) return { action: 'none' };
  if (!isDependant(pod, ctx.namespace, ctx.podSelectors)) return { action: 'none' };
  const uid = pod.metadata?.uid;
  if (!uid || ctx.handled.has(uid) || pod.metadata?.deletionTimestamp) return { action: 'none' };
  const containers = crashLoopingContainers(pod);
  if (containers.length === 0) return { action: 'none' };
  return controllerOf(pod) ? { action: 'delete', containers } : { action: 'report', containers };
}
