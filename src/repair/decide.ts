// What to do next, as pure functions of observed state (CKE's DecideOps
// split): the queue's choice of entries to start, an entry's next operation
// (its machine, the drain back-off included: src/repair/entry-machine.ts), and
// a drain's treatment of each pod. Pure:
// imported by workflow code, tested table-driven in test/unit/repair-decide.
import { matches, type LabelSelector } from '../config/selector.ts';
import { isFinished, type RepairQueueEntry, type RepairStepStatus } from './entry.ts';

// ---------------------------------------------------------------- the queue

export interface QueueView {
  entries: readonly Pick<RepairQueueEntry, 'index' | 'address' | 'status'>[];
  /** Addresses whose deleted entries' workflows are still cleaning up: they hold a slot and their address. */
  closing: readonly string[];
  enabled: boolean;
  maxConcurrent: number;
}

/**
 * Queued entries to start now, oldest first: at most max_concurrent_repairs
 * processing (closing ones count), never two unfinished entries for one
 * address at work, none while the queue is disabled (a disabled queue starts
 * no drain and no repair command; starting no entry is the simplest way).
 */
export function decideStarts(q: QueueView): string[] {
  if (!q.enabled) return [];
  const busy = new Set(q.closing);
  let running = q.closing.length;
  for (const e of q.entries) {
    if (e.status === 'processing') {
      busy.add(e.address);
      running++;
    }
  }
  const starts: string[] = [];
  for (const e of q.entries) {
    if (running >= q.maxConcurrent) break;
    if (e.status !== 'queued' || busy.has(e.address)) continue;
    starts.push(e.index);
    busy.add(e.address);
    running++;
  }
  return starts;
}

/** The entries `delete-finished` / `delete-unfinished` remove. */
export function selectForDelete(entries: readonly RepairQueueEntry[], which: 'finished' | 'unfinished'): string[] {
  return entries.filter((e) => isFinished(e) === (which === 'finished')).map((e) => e.index);
}

// ---------------------------------------------------------------- an entry

export interface EntryView {
  step: number;
  steps: number;
  step_status: RepairStepStatus;
  enabled: boolean;
  /** '' when the address is not a Node: no drain. */
  nodename: string;
  needDrain: boolean;
  /** The current step's drain finished. */
  drained: boolean;
  /** The current step's repair command ran and succeeded. */
  commandDone: boolean;
  /** Health before any step: undefined until checked. */
  healthyAtStart?: boolean;
  /** The watch's outcome, when it has ended. */
  healthy?: boolean;
  /** The current step's watch_seconds: 0 (CKE: absent) checks the health once, then moves on. */
  watchSeconds: number;
  /** Epoch ms; 0 when none (or once the watch has ended unhealthy). */
  watchUntil: number;
  backoffExpire: number;
  now: number;
}

export type EntryOp =
  | { op: 'check-health' }
  | { op: 'wait'; reason: 'disabled' | 'backoff'; until?: number }
  | { op: 'drain' }
  /** The queue was disabled while the step was draining: uncordon and back off (CKE counts it as a failed drain). */
  | { op: 'abandon-drain' }
  | { op: 'run-command' }
  | { op: 'watch'; until: number }
  | { op: 'next-step' }
  | { op: 'succeed' }
  | { op: 'fail'; reason: string };

export function decideEntryOp(s: EntryView): EntryOp {
  if (s.healthyAtStart === undefined) return { op: 'check-health' };
  if (s.healthyAtStart || s.healthy) return { op: 'succeed' };
  if (s.step_status === 'watching') {
    // A zero watch still looks once (CKE's next status round checks the health before its strategy moves on).
    const once = s.watchSeconds === 0 && s.watchUntil !== 0;
    if (s.healthy === undefined && (s.now < s.watchUntil || once)) return { op: 'watch', until: s.watchUntil };
    if (s.step + 1 < s.steps) return { op: 'next-step' };
    return { op: 'fail', reason: `not healthy after the last of ${s.steps} step(s)` };
  }
  if (s.step_status === 'draining' && !s.enabled) return { op: 'abandon-drain' };
  if (s.needDrain && s.nodename !== '' && !s.drained) {
    if (!s.enabled) return { op: 'wait', reason: 'disabled' };
    if (s.backoffExpire > s.now) return { op: 'wait', reason: 'backoff', until: s.backoffExpire };
    return { op: 'drain' };
  }
  if (!s.commandDone) {
    if (!s.enabled) return { op: 'wait', reason: 'disabled' };
    return { op: 'run-command' };
  }
  return { op: 'watch', until: s.watchUntil };
}

// ---------------------------------------------------------------- a drain

export interface PodView {
  namespace: string;
  name: string;
  uid: string;
  phase?: string;
  /** Kind of the controlling owner reference, if any. */
  controllerKind?: string;
  labels?: Record<string, string>;
  deleting: boolean;
}

export interface DrainPlan {
  /** Running Job pods that block the drain: uncordon and retry later. */
  blockedBy: PodView[];
  /** Evict first; on 429 retry when the namespace is protected, else delete. */
  evict: PodView[];
  /** Job pods not matching protected_job_pods: deleted. */
  remove: PodView[];
  /** Pods that must be gone before the drain is done (drainLeft of the same pods). */
  waitFor: PodView[];
}

/** CKE's enumeratePods: DaemonSet pods, and Job pods that are pending or finished, are no concern of a drain. */
function drainIgnores(p: PodView): boolean {
  if (p.controllerKind === 'DaemonSet') return true;
  return p.controllerKind === 'Job' && (p.phase === 'Pending' || p.phase === 'Succeeded' || p.phase === 'Failed');
}

/**
 * The pods that keep a drain from being done (CKE's checkPodDeletion): every
 * pod on the node but DaemonSet pods and pending or finished Job pods,
 * whatever its phase and whether or not its deletion has begun. A pod held by
 * a finalizer is still on the node: no repair command runs until it is gone.
 */
export function drainLeft(pods: readonly PodView[]): PodView[] {
  return pods.filter((p) => !drainIgnores(p));
}

/**
 * CKE's enumeratePods: DaemonSet pods stay; Job pods that are not pending or
 * finished block the drain when they match protected_job_pods (all, when it
 * is absent) and are deleted otherwise; every other pod (a finished one too:
 * it is still on the node) is evicted unless its deletion has begun.
 */
export function decideDrain(pods: readonly PodView[], protectedJobPods: LabelSelector | undefined): DrainPlan {
  const plan: DrainPlan = { blockedBy: [], evict: [], remove: [], waitFor: drainLeft(pods) };
  for (const p of plan.waitFor) {
    if (p.controllerKind === 'Job') {
      if (!protectedJobPods || matches(protectedJobPods, p.labels)) plan.blockedBy.push(p);
      else if (!p.deleting) plan.remove.push(p);
      continue;
    }
    if (!p.deleting) plan.evict.push(p);
  }
  return plan;
}
