// The drain's per-pod policy, out of the drain activity: what to do after
// each answer to a pod's eviction. Pure (no clients, no clock): the activity
// (src/activities/repair.ts) asks, acts, and asks again. Which pods are
// evicted, deleted or block the drain at all is decideDrain's
// (src/repair/decide.ts); the back-off after an interrupted drain is the entry's.
//
// | the eviction's answer                                  | namespace protected | attempts left | next step                     |
// |--------------------------------------------------------|---------------------|---------------|-------------------------------|
// | evicted                                                | any                 | any           | next pod (counted as evicted) |
// | gone (the pod is no more)                              | any                 | any           | next pod                      |
// | 429: a PodDisruptionBudget says "not now"              | no                  | any           | delete the pod                |
// | 429                                                    | yes                 | yes           | retry after evict_interval    |
// | 429                                                    | yes                 | no            | give up on it (drain interrupted once every pod had its chance) |
// | 500 "more than one PodDisruptionBudget"                | any                 | any           | refuse (the entry fails)      |
// | 403 (RBAC, a webhook), 400, 422                        | any                 | any           | refuse                        |
// | any other error                                        | any                 | any           | rethrow (the activity retries)|

/** The answer to one eviction: evictPod's outcome, or the error it threw (its HTTP status, if any). */
export type EvictionAnswer =
  | { outcome: 'evicted' }
  | { outcome: 'gone' }
  | { outcome: 'blocked'; message: string }
  | { outcome: 'error'; status?: number; message: string };

export interface EvictionSituation {
  pod: { namespace: string; name: string };
  answer: EvictionAnswer;
  /** This eviction's attempt, from 1. */
  attempt: number;
  /** repair.evict_retries: attempts past the first before giving up on a pod a budget holds. */
  evictRetries: number;
  /** repair.evict_interval, time-scaled (ms). */
  intervalMs: number;
  /** Whether protected_namespaces covers the pod's namespace (a budget there is waited for, never bypassed). */
  namespaceProtected: boolean;
}

export type EvictionStep =
  | { op: 'next'; evicted: boolean }
  | { op: 'delete'; why: string }
  | { op: 'retry'; afterMs: number }
  | { op: 'give-up'; refused: string }
  | { op: 'refuse'; why: string }
  | { op: 'rethrow' };

/** kube-apiserver's 500 for a pod covered by more than one PodDisruptionBudget: no retry helps. */
const MULTIPLE_BUDGETS = /more than one PodDisruptionBudget/i;

export function nextEviction(s: EvictionSituation): EvictionStep {
  const a = s.answer;
  const pod = `${s.pod.namespace}/${s.pod.name}`;
  switch (a.outcome) {
    case 'evicted':
      return { op: 'next', evicted: true };
    case 'gone':
      return { op: 'next', evicted: false };
    case 'error':
      if (a.status === 403 || a.status === 400 || a.status === 422) return { op: 'refuse', why: `eviction of ${pod} refused: ${a.status}: ${a.message}` };
      if (a.status === 500 && MULTIPLE_BUDGETS.test(a.message)) return { op: 'refuse', why: `eviction of ${pod} refused: 500: ${a.message}` };
      return { op: 'rethrow' };
    case 'blocked':
      // evictPod answers `blocked` for a 429 and for the two-budget 500 alike; only the 429 is worth waiting for.
      if (MULTIPLE_BUDGETS.test(a.message)) return { op: 'refuse', why: `eviction of ${pod} refused: 500: ${a.message}` };
      if (!s.namespaceProtected) return { op: 'delete', why: 'a PodDisruptionBudget refuses its eviction and its namespace is not protected' };
      if (s.attempt > s.evictRetries) return { op: 'give-up', refused: `${pod} (${s.attempt} time(s): ${a.message})` };
      return { op: 'retry', afterMs: s.intervalMs };
  }
}

/** Whether protected_namespaces (absent: every namespace) covers `namespace`. */
export function namespaceProtected(namespace: string, protectedNamespaces: ReadonlySet<string> | 'all'): boolean {
  return protectedNamespaces === 'all' || protectedNamespaces.has(namespace);
}

/** Why a drain whose eviction timeout passed is interrupted: how many pods are left, one of them named. */
export function timeoutReason(left: readonly { namespace: string; name: string }[]): string {
  return `eviction timeout: ${left.length} pod(s) still on the node, e.g. ${left[0]!.namespace}/${left[0]!.name}`;
}
