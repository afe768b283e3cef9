// One simulated node's kubelet side of the pod contract: watch the pods bound
// to the node, play each one's containers (lifecycle.ts) and report what
// happens in pods/status (pod-status.ts); kill and finally delete pods that
// are being deleted, which nothing else does, so without this they would stay
// Terminating forever.
//
// Every pod has at most one timer (its state machine's next transition) and
// at most one status write in flight; a newer status waits for it and
// supersedes anything queued. Statuses are written only when they differ from
// the last one the API server accepted.
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClients } from '../../kube/client.ts';
import { statusOf } from '../../kube/client.ts';
import type { Logger } from '../../log.ts';
import { adoptPodSim } from './adopt.ts';
import { FAIL_INIT_ANNOTATION, failingInits, INIT_DEPENDS_ON_ANNOTATION, podBehaviour, unknownInitNames } from './annotations.ts';
import { errorMessage, isConflict, isNotFound, olderVersion, strategicMergePatch } from '../../kube/api.ts';
import { FIELD_MANAGER } from './annotations.ts';
import type { ServiceReadiness } from './endpoints.ts';
import { PodIPAllocator } from './ipam.ts';
import { advance, killPod, newPodSim, nextWake } from './lifecycle.ts';
import { PodmanPod } from './podman-pod.ts';
import type { PodmanRuntime } from './podman-pod.ts';
import { runsForReal } from './podman-spec.ts';
import type { PodInputs, PodSim, Timing } from './lifecycle.ts';
import type { SimNode } from './node-status.ts';
import { KUBELET_CONDITIONS, podStatus, statusDiffers, statusPatch } from './pod-status.ts';
import type { ConditionStatus, PodCondition, PodStatusJSON, ReadinessGate } from './pod-status.ts';
import { rfc3339, scaledMs, toMs } from './time.ts';
import { startInformer } from '../../kube/informer.ts';
import type { RunningInformer } from '../../kube/informer.ts';

/** Pause before retrying a failed write or delete. */
const RETRY_MS = 1000;
/** The most a dying container is given (kubelet seconds, scaled), whatever its grace period. */
const MAX_KILL_SECONDS = 1;

export interface PodRunnerOptions {
  clients: KubeClients;
  node: SimNode;
  timing: Timing;
  readiness: ServiceReadiness;
  log: Logger;
  /** Start with the node's heartbeats stopped. */
  frozen: boolean;
  /** Pods whose images it names run for real, with podman (podman-pod.ts); without it every pod is simulated. */
  podman?: PodmanRuntime;
}

/** A pod run for real is judged by its containers alone: no annotation plays with it. */
const REAL_INPUTS: PodInputs = { healthy: true, crashAfterMs: 0, failingInits: [] };
/** The most a pod run for real is given to stop (seconds), whatever its grace period. */
const MAX_REAL_GRACE_SECONDS = 30;

/** One pod the runner knows, by `namespace/name`. A pod recreated under the same name is a new Tracked. */
interface Tracked {
  key: string;
  uid: string;
  /** The pod as last observed. */
  pod: V1Pod;
  sim?: PodSim;
  /** The pod's containers, when it runs for real. */
  real?: PodmanPod;
  podIP?: string;
  /** Kubelet conditions as last reported, for their lastTransitionTime. */
  conditions: PodCondition[];
  timer?: NodeJS.Timeout;
  /**
   * The kill at the end of the grace period, apart from `timer`: a reconcile
   * during the grace period (the pod updated, a Service it depends on gone
   * with its namespace) clears `timer`, and must not cancel the kill.
   */
  killTimer?: NodeJS.Timeout;
  retry?: NodeJS.Timeout;
  /** The last status the API server accepted, as JSON and as the resourceVersion it made. */
  written?: string;
  writtenStatus?: PodStatusJSON;
  writtenVersion?: string;
  queued?: PodStatusJSON;
  writing?: Promise<void>;
  deleting: boolean;
  gone: boolean;
}

export class PodRunner {
  readonly node: SimNode;
  private readonly opts: PodRunnerOptions;
  private readonly log: Logger;
  private readonly ips: PodIPAllocator;
  private readonly pods = new Map<string, Tracked>();
  private frozen: boolean;
  private stopped = false;

  constructor(opts: PodRunnerOptions) {
    this.opts = opts;
    this.node = opts.node;
    this.log = opts.log;
    this.frozen = opts.frozen;
    this.ips = new PodIPAllocator(opts.node.podCIDR);
    opts.readiness.onChange((service) => this.serviceChanged(service));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.pods.values()) clearTimers(t);
    // A kubelet that stops leaves no container behind: the sandbox's `down` must stop everything it started.
    await Promise.allSettled([...this.pods.values()].map((t) => t.real?.stop(1)));
    await Promise.allSettled([...this.pods.values()].map((t) => t.writing));
  }

  /** The node's heartbeats stopped: a dead kubelet does nothing, so neither does this. */
  freeze(): void {
    this.frozen = true;
    for (const t of this.pods.values()) {
      clearTimers(t);
      t.deleting = false; // picked up again on thaw
    }
  }

  /** Heartbeats are back: catch up with everything that fell due meanwhile. */
  thaw(): void {
    this.frozen = false;
    for (const t of this.pods.values()) this.reconcile(t);
  }

  /** A pod bound to this node, as the watch delivers it (watchPods). */
  upsert(pod: V1Pod): void {
    const key = keyOf(pod);
    const uid = pod.metadata?.uid ?? '';
    let t = this.pods.get(key);
    if (t && t.uid !== uid) {
      // Deleted and recreated under the same name (a StatefulSet pod) while
      // the watch was away: a new pod, with fresh state and back-off.
      this.forget(t);
      t = undefined;
    }
    if (!t) {
      t = { key, uid, pod, conditions: [], deleting: false, gone: false };
      this.pods.set(key, t);
    }
    t.pod = pod;
    this.reconcile(t);
  }

  removed(pod: V1Pod): void {
    const t = this.pods.get(keyOf(pod));
    if (t && t.uid === pod.metadata?.uid) this.forget(t);
  }

  private serviceChanged(service: string): void {
    for (const t of this.pods.values()) {
      if (podBehaviour(t.pod.metadata).dependsOn.includes(service)) this.reconcile(t);
    }
  }

  /** Brings a pod's state machine up to now, reports it, and sets its timer for the next transition. */
  private reconcile(t: Tracked): void {
    if (this.frozen || this.stopped || t.gone) return;
    clearTimeout(t.timer);
    t.timer = undefined;
    const pod = t.pod;
    if (pod.metadata?.deletionTimestamp) {
      this.beginDeletion(t);
      return;
    }
    const now = Date.now();
    if (!t.sim && !this.admit(t, now)) return;
    const sim = t.sim;
    if (!sim || !t.podIP) return;
    this.noticeOtherWriters(t);
    if (t.real) {
      t.sim = t.real.snapshot();
      this.report(t, REAL_INPUTS, now);
      return;
    }
    const inputs = this.inputsOf(pod);
    t.sim = advance(sim, inputs, now, this.opts.timing);
    this.report(t, inputs, now);
    const wake = nextWake(t.sim, now);
    // +1 ms: a timer may fire a hair before the wall clock reaches `wake`.
    if (wake !== undefined) t.timer = setTimeout(() => this.reconcile(t), Math.max(0, wake - Date.now()) + 1);
  }

  /** First sight of a pod: start it, or take over where a previous run left it. False: nothing to run. */
  private admit(t: Tracked, now: number): boolean {
    const pod = t.pod;
    const phase = pod.status?.phase;
    // Finished before this kubelet saw it: a terminal pod never runs again.
    if (phase === 'Succeeded' || phase === 'Failed') return false;
    const runtime = this.opts.podman;
    if (runtime && runsForReal(pod, runtime.prefixes)) {
      // Host network: the pod's address is its node's.
      t.podIP = this.node.internalIP;
      t.real = new PodmanPod(runtime, {
        pod, place: { ...runtime.apiserver, nodeName: this.node.name, hostIP: this.node.internalIP },
        timing: this.opts.timing, log: this.log.child({ pod: t.key }), onChange: () => this.reconcile(t),
      });
      t.sim = t.real.snapshot();
      this.log.info({ pod: t.key }, 'pod admitted, to run with podman');
      return true;
    }
    const adopted = adoptPodSim(pod, now, this.opts.timing);
    const previousIP = pod.status?.podIP;
    if (adopted && previousIP && this.ips.reserve(previousIP)) {
      t.sim = adopted;
      t.podIP = previousIP;
      t.conditions = kubeletConditionsOf(pod);
      this.log.info({ pod: t.key }, 'pod adopted');
    } else {
      try {
        t.podIP = this.ips.allocate();
      } catch (err) {
        this.log.error({ pod: t.key, err: errorMessage(err) }, 'cannot admit pod');
        return false;
      }
      t.sim = newPodSim(pod, now, this.opts.timing);
      this.log.info({ pod: t.key, podIP: t.podIP }, 'pod admitted');
    }
    const unknown = unknownInitNames(podBehaviour(pod.metadata), pod.spec?.initContainers ?? []);
    if (unknown.length > 0) {
      this.log.warn({ pod: t.key, containers: unknown },
        `${FAIL_INIT_ANNOTATION} / ${INIT_DEPENDS_ON_ANNOTATION} name containers that are no init container of the pod (sidecars excluded): ignored`);
    }
    return true;
  }

  /**
   * If a newer pod than our last write shows another status, someone else
   * wrote it: take its conditions as the ones to transition from, and write
   * ours again even though they did not change here.
   */
  private noticeOtherWriters(t: Tracked): void {
    if (t.writing || !t.writtenStatus || !t.writtenVersion) return;
    if (!olderVersion({ resourceVersion: t.writtenVersion }, t.pod.metadata)) return;
    if (!statusDiffers(t.pod.status, t.writtenStatus)) return;
    this.log.debug({ pod: t.key }, 'pod status was changed by another writer; writing it again');
    t.conditions = kubeletConditionsOf(t.pod);
    t.written = undefined;
    t.writtenStatus = undefined;
  }

  private inputsOf(pod: V1Pod): PodInputs {
    const b = podBehaviour(pod.metadata);
    const scale = this.opts.timing.timeScale;
    const servicesReady = b.dependsOn.every((s) => this.opts.readiness.isReady(s));
    return {
      healthy: !b.fail && servicesReady,
      failingInits: failingInits(b, servicesReady),
      crashAfterMs: scaledMs(b.crashAfterSeconds, scale),
      exitAfterMs: b.exitAfterSeconds === undefined ? undefined : scaledMs(b.exitAfterSeconds, scale),
    };
  }

  private report(t: Tracked, inputs: PodInputs, now: number): void {
    if (!t.sim || !t.podIP) return;
    const status = podStatus(t.sim, inputs, {
      now,
      hostIP: this.opts.node.internalIP,
      podIP: t.podIP,
      readinessGates: readinessGatesOf(t.pod),
      previous: t.conditions,
    });
    t.conditions = status.conditions;
    this.write(t, status);
  }

  private write(t: Tracked, status: PodStatusJSON): void {
    t.queued = status;
    if (!t.writing) {
      t.writing = this.flush(t).finally(() => {
        t.writing = undefined;
      });
    }
  }

  private async flush(t: Tracked): Promise<void> {
    while (t.queued && !t.gone) {
      const status = t.queued;
      t.queued = undefined;
      const json = JSON.stringify(status);
      if (json === t.written) continue;
      try {
        const updated = await this.opts.clients.core.patchNamespacedPodStatus(
          { name: t.pod.metadata?.name ?? '', namespace: t.pod.metadata?.namespace ?? '', body: statusPatch(t.uid, status), fieldManager: FIELD_MANAGER },
          strategicMergePatch,
        );
        t.written = json;
        t.writtenStatus = status;
        t.writtenVersion = updated.metadata?.resourceVersion;
        this.log.debug({ pod: t.key, phase: status.phase }, 'pod status written');
      } catch (err) {
        this.writeFailed(t, err);
        return;
      }
    }
  }

  private writeFailed(t: Tracked, err: unknown): void {
    const code = statusOf(err);
    if (code === 404 || code === 409 || (code === 422 && /\buid\b/i.test(errorMessage(err)))) {
      // Gone, or replaced by a pod of the same name: its state dies with it.
      this.log.debug({ pod: t.key, code }, 'pod gone; dropping its state');
      this.forget(t);
      return;
    }
    if (code === 422) {
      // The API server refuses this status: a bug here, and retrying cannot help.
      this.log.error({ pod: t.key, err: errorMessage(err) }, 'pod status refused');
      return;
    }
    this.log.warn({ pod: t.key, err: errorMessage(err) }, `pod status write failed; retrying in ${RETRY_MS} ms`);
    clearTimeout(t.retry);
    t.retry = setTimeout(() => this.reconcile(t), RETRY_MS);
  }

  /**
   * A pod being deleted: after its containers had a moment to stop (its grace
   * period, capped), report them terminated and delete the pod for good.
   */
  private beginDeletion(t: Tracked): void {
    if (t.deleting) return;
    t.deleting = true;
    const grace = t.pod.metadata?.deletionGracePeriodSeconds ?? 30;
    if (t.real) {
      // Real containers take their own grace period (SIGTERM, then SIGKILL): the kill starts at once.
      t.killTimer = setTimeout(() => void this.kill(t), 0);
      return;
    }
    const delay = scaledMs(Math.min(grace, MAX_KILL_SECONDS), this.opts.timing.timeScale);
    t.killTimer = setTimeout(() => void this.kill(t), delay);
  }

  private async kill(t: Tracked): Promise<void> {
    if (this.frozen || this.stopped || t.gone) return;
    if (t.real && t.sim && !t.sim.killed) {
      await t.real.stop(Math.min(t.pod.metadata?.deletionGracePeriodSeconds ?? 30, MAX_REAL_GRACE_SECONDS));
      t.sim = t.real.snapshot(true);
      this.report(t, REAL_INPUTS, Date.now());
      await t.writing;
      if (this.frozen || this.stopped || t.gone) return;
    }
    const now = Date.now();
    if (t.sim && !t.sim.killed) {
      const inputs = this.inputsOf(t.pod);
      t.sim = killPod(advance(t.sim, inputs, now, this.opts.timing), now);
      this.report(t, inputs, now);
      await t.writing;
      if (this.frozen || this.stopped || t.gone) return;
    }
    const name = t.pod.metadata?.name ?? '';
    const namespace = t.pod.metadata?.namespace ?? '';
    try {
      // The grace period goes in the body: kube-apiserver ignores the query
      // parameters of a DELETE that has a body, and a delete with the default
      // grace of a pod already being deleted changes nothing.
      await this.opts.clients.core.deleteNamespacedPod({ name, namespace, body: { gracePeriodSeconds: 0, preconditions: { uid: t.uid } } });
      this.log.info({ pod: t.key }, 'pod deleted');
      this.forget(t);
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) {
        this.forget(t);
        return;
      }
      this.log.warn({ pod: t.key, err: errorMessage(err) }, `pod delete failed; retrying in ${RETRY_MS} ms`);
      clearTimeout(t.retry);
      t.retry = setTimeout(() => void this.kill(t), RETRY_MS);
    }
  }

  private forget(t: Tracked): void {
    if (t.gone) return;
    t.gone = true;
    clearTimers(t);
    // Gone from the API without this kubelet's kill (force-deleted): its containers go too.
    if (t.real && !t.sim?.killed) void t.real.stop(0).catch((err: unknown) => this.log.warn({ pod: t.key, err: errorMessage(err) }, 'cannot stop the containers of a pod gone'));
    if (t.podIP) this.ips.release(t.podIP);
    if (this.pods.get(t.key) === t) this.pods.delete(t.key);
  }
}

function clearTimers(t: Tracked): void {
  clearTimeout(t.timer);
  clearTimeout(t.killTimer);
  clearTimeout(t.retry);
  t.timer = undefined;
  t.killTimer = undefined;
  t.retry = undefined;
}

function keyOf(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

function readinessGatesOf(pod: V1Pod): ReadinessGate[] {
  return (pod.spec?.readinessGates ?? []).map((g) => ({
    conditionType: g.conditionType,
    status: pod.status?.conditions?.find((c) => c.type === g.conditionType)?.status,
  }));
}

/** The kubelet-owned conditions already on a pod, so an adopted pod keeps their transition times. */
function kubeletConditionsOf(pod: V1Pod): PodCondition[] {
  const owned: readonly string[] = KUBELET_CONDITIONS;
  return (pod.status?.conditions ?? [])
    .filter((c) => owned.includes(c.type))
    .map((c) => ({
      type: c.type,
      status: c.status as ConditionStatus,
      lastTransitionTime: rfc3339(toMs(c.lastTransitionTime) ?? Date.now()),
    }));
}

/**
 * One watch of every pod bound to a node for all the runners, rather than one
 * per node (see watchNodes): each pod goes to its node's runner; pods on nodes
 * of no runner here are ignored. A pod's nodeName never changes once set.
 */
export function watchPods(clients: KubeClients, runners: ReadonlyMap<string, PodRunner>, log: Logger): RunningInformer<V1Pod> {
  const fieldSelector = 'spec.nodeName!=';
  const runnerOf = (pod: V1Pod) => runners.get(pod.spec?.nodeName ?? '');
  return startInformer<V1Pod>({
    kc: clients.kc,
    path: '/api/v1/pods',
    fieldSelector,
    list: () => clients.core.listPodForAllNamespaces({ fieldSelector }),
    log,
    onUpsert: (pod) => runnerOf(pod)?.upsert(pod),
    onDelete: (pod) => runnerOf(pod)?.removed(pod),
  });
}
