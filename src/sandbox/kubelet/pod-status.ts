// The pod status a kubelet would report for a simulated pod: phase, IPs,
// the kubelet-owned conditions and the container statuses. Pure.
//
// Only the four conditions the kubelet owns are built. The status is written
// with a strategic merge patch, where `conditions` merge by `type`, so the
// scheduler's PodScheduled and anyone else's conditions (DisruptionTarget,
// tend's NodeTaintDetected …) are left as they are; `containerStatuses` is an
// atomic list and is replaced whole, as the kubelet does.
import { containerReady, imageID, initDone, initialised, podPhase } from './lifecycle.ts';
import type { ContainerSim, PodInputs, PodPhase, PodSim, Termination } from './lifecycle.ts';
import { rfc3339 } from './time.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface PodCondition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  lastTransitionTime: string;
}

export const KUBELET_CONDITIONS = ['PodReadyToStartContainers', 'Initialized', 'ContainersReady', 'Ready'] as const;

export interface ContainerStateJSON {
  waiting?: { reason: string; message?: string };
  running?: { startedAt: string };
  terminated?: TerminatedJSON;
}

interface TerminatedJSON {
  exitCode: number;
  reason: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID?: string;
}

export interface ContainerStatusJSON {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: ContainerStateJSON;
  lastState: ContainerStateJSON;
}

export interface PodStatusJSON {
  phase: PodPhase;
  hostIP: string;
  hostIPs: { ip: string }[];
  podIP: string;
  podIPs: { ip: string }[];
  startTime: string;
  conditions: PodCondition[];
  initContainerStatuses?: ContainerStatusJSON[];
  containerStatuses: ContainerStatusJSON[];
}

export interface ReadinessGate {
  conditionType: string;
  /** The gate's condition status on the pod now; undefined when the condition is absent. */
  status?: string;
}

export interface StatusContext {
  now: number;
  hostIP: string;
  podIP: string;
  readinessGates: ReadinessGate[];
  /** The kubelet conditions as last reported, whose lastTransitionTime holds while their status holds. */
  previous: readonly PodCondition[];
}

export function podStatus(p: PodSim, inputs: PodInputs, ctx: StatusContext): PodStatusJSON {
  const inits = p.containers.filter((c) => c.role !== 'app');
  const apps = p.containers.filter((c) => c.role === 'app');
  const status: PodStatusJSON = {
    phase: podPhase(p),
    hostIP: ctx.hostIP,
    hostIPs: [{ ip: ctx.hostIP }],
    podIP: ctx.podIP,
    podIPs: [{ ip: ctx.podIP }],
    startTime: rfc3339(p.startTime),
    conditions: kubeletConditions(p, inputs, ctx),
    containerStatuses: apps.map((c) => containerStatus(c, inputs, ctx.now)),
  };
  if (inits.length > 0) status.initContainerStatuses = inits.map((c) => containerStatus(c, inputs, ctx.now));
  return status;
}

/**
 * The strategic merge patch for a status. Conditions merge by type, field by
 * field: a reason or message the condition no longer has must be deleted
 * explicitly (null), or the one from its previous status would stay (a True
 * condition still saying "containers with unready status"). metadata.uid
 * makes the patch fail on a pod recreated under the same name rather than
 * overwrite its status, as the kubelet's does.
 */
export function statusPatch(uid: string, status: PodStatusJSON) {
  const conditions = status.conditions.map((c) => ({ ...c, reason: c.reason ?? null, message: c.message ?? null }));
  return { metadata: { uid }, status: { ...status, conditions } };
}

/** PodReadyToStartContainers, Initialized, ContainersReady and Ready, as the kubelet's status generator words them. */
export function kubeletConditions(p: PodSim, inputs: PodInputs, ctx: StatusContext): PodCondition[] {
  const phase = podPhase(p);
  const desired: Omit<PodCondition, 'lastTransitionTime'>[] = [];

  desired.push({ type: 'PodReadyToStartContainers', status: p.killed ? 'False' : 'True' });

  const incomplete = p.containers.filter((c) => c.role !== 'app' && !initDone(c)).map((c) => c.name);
  desired.push(
    initialised(p)
      ? { type: 'Initialized', status: 'True' }
      : { type: 'Initialized', status: 'False', reason: 'ContainersNotInitialized', message: `containers with incomplete status: [${incomplete.join(' ')}]` },
  );

  let containersReady: Omit<PodCondition, 'lastTransitionTime'>;
  if (phase === 'Succeeded') {
    containersReady = { type: 'ContainersReady', status: 'False', reason: 'PodCompleted' };
  } else {
    const unready = p.containers
      .filter((c) => c.role !== 'init' && !containerReady(c, inputs, ctx.now))
      .map((c) => c.name);
    containersReady =
      unready.length === 0 && !p.killed
        ? { type: 'ContainersReady', status: 'True' }
        : { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: `containers with unready status: [${unready.join(' ')}]` };
  }
  desired.push(containersReady);

  if (containersReady.status !== 'True') {
    desired.push({ ...containersReady, type: 'Ready' });
  } else {
    const gateProblems = ctx.readinessGates.flatMap((g) => {
      if (g.status === undefined) return [`corresponding condition of pod readiness gate "${g.conditionType}" does not exist.`];
      if (g.status !== 'True') return [`the status of pod readiness gate "${g.conditionType}" is not "True", but ${g.status}`];
      return [];
    });
    desired.push(
      gateProblems.length === 0
        ? { type: 'Ready', status: 'True' }
        : { type: 'Ready', status: 'False', reason: 'ReadinessGatesNotReady', message: gateProblems.join(', ') },
    );
  }

  return desired.map((d) => withTransitionTime(d, ctx.previous, ctx.now));
}

/** A condition's lastTransitionTime moves only when its status does. */
export function withTransitionTime(
  condition: Omit<PodCondition, 'lastTransitionTime'>,
  previous: readonly PodCondition[],
  now: number,
): PodCondition {
  const before = previous.find((c) => c.type === condition.type);
  const lastTransitionTime = before && before.status === condition.status ? before.lastTransitionTime : rfc3339(now);
  return { ...condition, lastTransitionTime };
}

export function containerStatus(c: ContainerSim, inputs: PodInputs, now: number): ContainerStatusJSON {
  const s = c.state;
  let state: ContainerStateJSON;
  let containerID: string | undefined;
  if (s.kind === 'waiting') {
    state = { waiting: s.message === undefined ? { reason: s.reason } : { reason: s.reason, message: s.message } };
    // In back-off the kubelet still reports the ID of the instance that died.
    containerID = c.lastState?.containerID;
  } else if (s.kind === 'running') {
    state = { running: { startedAt: rfc3339(s.startedAt) } };
    containerID = s.containerID;
  } else {
    state = { terminated: terminatedJSON(s) };
    containerID = s.containerID;
  }
  const status: ContainerStatusJSON = {
    name: c.name,
    image: c.image,
    imageID: imageID(c.image),
    ready: containerReady(c, inputs, now),
    started: s.kind === 'running',
    restartCount: c.restartCount,
    state,
    lastState: c.lastState ? { terminated: terminatedJSON(c.lastState) } : {},
  };
  if (containerID !== undefined) status.containerID = containerID;
  return status;
}

function terminatedJSON(t: Termination): TerminatedJSON {
  const json: TerminatedJSON = { exitCode: t.exitCode, reason: t.reason };
  if (t.message !== undefined) json.message = t.message;
  if (t.startedAt !== undefined) json.startedAt = rfc3339(t.startedAt);
  if (t.finishedAt !== undefined) json.finishedAt = rfc3339(t.finishedAt);
  if (t.containerID !== undefined) json.containerID = t.containerID;
  return json;
}

/** Enough of a pod status, as read back from the API or as built here, to tell whether they say the same. */
interface StatusLike {
  phase?: string;
  podIP?: string;
  conditions?: { type: string; status: string; reason?: string | null; message?: string | null }[];
  initContainerStatuses?: ContainerStatusLike[];
  containerStatuses?: ContainerStatusLike[];
}

interface ContainerStatusLike {
  name: string;
  ready: boolean;
  restartCount: number;
  state?: { waiting?: { reason?: string }; running?: object; terminated?: { exitCode: number; reason?: string } };
}

/**
 * Whether the status on the pod says something else than the status last
 * written: someone else wrote it since. The node lifecycle controller does,
 * setting Ready=False on the pods of a node that stopped heartbeating; when the
 * node is back, the kubelet must write its own view again, just as the real
 * kubelet's status manager compares against the API's copy and not only its
 * own cache. Timestamps are left out: they come back in other shapes.
 */
export function statusDiffers(observed: StatusLike | undefined, written: StatusLike): boolean {
  return digest(observed ?? {}) !== digest(written);
}

function digest(s: StatusLike): string {
  const owned: readonly string[] = KUBELET_CONDITIONS;
  const containers = (list: ContainerStatusLike[] | undefined) =>
    (list ?? []).map((c) => {
      const st = c.state;
      const state = st?.running
        ? 'running'
        : st?.terminated
          ? `terminated/${st.terminated.exitCode}/${st.terminated.reason ?? ''}`
          : `waiting/${st?.waiting?.reason ?? ''}`;
      return [c.name, c.ready, c.restartCount, state];
    });
  return JSON.stringify([
    s.phase ?? '',
    s.podIP ?? '',
    (s.conditions ?? [])
      .filter((c) => owned.includes(c.type))
      .map((c) => [c.type, c.status, c.reason ?? '', c.message ?? ''])
      .sort((a, b) => a[0].localeCompare(b[0])),
    containers(s.initContainerStatuses),
    containers(s.containerStatuses),
  ]);
}
