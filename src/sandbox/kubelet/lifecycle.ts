// The life of a simulated pod's containers: a pure state machine.
//
// A pod is a list of containers (init containers in order, then the app
// containers), each in one of the three states the API knows (waiting,
// running, terminated). Each state carries the instant of its next transition,
// so `advance(pod, inputs, now)` can replay every transition that fell due up
// to `now`, in time order, and `nextWake` tells the driver when to call again.
// No clocks, no timers, no I/O here: the driver in pods.ts owns those.
//
// What a real kubelet would get from the container runtime comes from the
// pod's annotations instead (see annotations.ts): a container whose pod is
// "unhealthy" (a Service it depends on is not ready, or it is told to fail)
// runs ~1 s and exits 1; otherwise it runs until killed, or exits 0 after
// exit-after-seconds in a run-to-completion pod. An init container runs ~1 s
// and completes, unless it is one of the inputs' failing init containers: then
// it exits 1 after crash-after-seconds and is restarted (restartPolicy Always
// or OnFailure; with Never the pod fails), holding the app containers in
// PodInitializing. Restarts follow the kubelet's back-off (backoff.ts),
// including its quirk that the first crash restarts at once and only later
// ones wait.
import { createHash } from 'node:crypto';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerBackoffPolicy, inBackoffSince, nextBackoff } from './backoff.ts';
import type { BackoffEntry, BackoffPolicy } from './backoff.ts';
import { goDuration, scaledMs } from './time.ts';

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';
export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';
/** A sidecar is an init container with restartPolicy Always: it starts in init order and keeps running. */
export type ContainerRole = 'init' | 'sidecar' | 'app';

/** How one container instance ended. */
export interface Termination {
  exitCode: number;
  reason: string;
  message?: string;
  startedAt?: number;
  finishedAt?: number;
  containerID?: string;
}

export type ContainerState =
  /** Not started yet, or in back-off; starts at `startAt` (unset: waits for its turn). */
  | { kind: 'waiting'; reason: string; message?: string; startAt?: number }
  /** Ready from `readyAt`; exits 1 at `crashAt`, 0 at `exitAt`, whichever comes first. */
  | { kind: 'running'; startedAt: number; containerID: string; readyAt: number; crashAt?: number; exitAt?: number }
  /** The kubelet notices and decides about a restart at `syncAt` (unset: final). */
  | ({ kind: 'terminated'; syncAt?: number } & Termination);

export interface ContainerSim {
  name: string;
  image: string;
  role: ContainerRole;
  /** readinessProbe.initialDelaySeconds, scaled; 0 without a probe. */
  readinessDelayMs: number;
  state: ContainerState;
  lastState?: Termination;
  restartCount: number;
  backoff?: BackoffEntry;
}

export interface PodSim {
  uid: string;
  namespace: string;
  name: string;
  restartPolicy: RestartPolicy;
  /** When the kubelet admitted the pod: status.startTime. */
  startTime: number;
  containers: ContainerSim[];
  /** Killed for deletion: nothing moves any more. */
  killed: boolean;
}

/** What may change under a pod at any time. Durations already scaled. */
export interface PodInputs {
  /** Every Service the pod depends on is ready, and it is not told to fail. */
  healthy: boolean;
  crashAfterMs: number;
  exitAfterMs?: number;
  /** Init containers (by name) that exit 1 when they run now, instead of completing. */
  failingInits?: readonly string[];
}

/** The kubelet's own pace, scaled. */
export interface Timing {
  timeScale: number;
  /** From admission to the first container start: sandbox, image pull. */
  createMs: number;
  /** How long an init container runs before it completes. */
  initRunMs: number;
  /** From a container's exit to the kubelet's next sync of the pod (PLEG relist + sync). */
  syncMs: number;
  backoff: BackoffPolicy;
}

export function kubeletTiming(timeScale: number): Timing {
  return {
    timeScale,
    createMs: scaledMs(0.5, timeScale),
    initRunMs: scaledMs(1, timeScale),
    syncMs: scaledMs(1, timeScale),
    backoff: containerBackoffPolicy(timeScale),
  };
}

const FIRST_WAIT_REASON = 'ContainerCreating';
const INIT_WAIT_REASON = 'PodInitializing';
export const CRASH_LOOP_REASON = 'CrashLoopBackOff';

/** A new pod as the kubelet admits it at `now`. */
export function newPodSim(pod: V1Pod, now: number, timing: Timing): PodSim {
  const initSpecs = pod.spec?.initContainers ?? [];
  const hasInit = initSpecs.length > 0;
  const containers: ContainerSim[] = [
    ...initSpecs.map((c) => containerSim(c, c.restartPolicy === 'Always' ? 'sidecar' : 'init', timing)),
    ...(pod.spec?.containers ?? []).map((c) => containerSim(c, 'app', timing)),
  ];
  const startAt = now + timing.createMs;
  return {
    uid: pod.metadata?.uid ?? '',
    namespace: pod.metadata?.namespace ?? 'default',
    name: pod.metadata?.name ?? '',
    restartPolicy: restartPolicyOf(pod),
    startTime: now,
    // The first init container starts once the sandbox is up, the others in
    // turn; app containers wait for initialisation (cascade() releases them),
    // or start with the sandbox when there is nothing to initialise.
    containers: containers.map((c, i) => {
      if (c.role !== 'app') return i === 0 ? withState(c, { kind: 'waiting', reason: INIT_WAIT_REASON, startAt }) : c;
      return withState(c, hasInit ? { kind: 'waiting', reason: INIT_WAIT_REASON } : { kind: 'waiting', reason: FIRST_WAIT_REASON, startAt });
    }),
    killed: false,
  };
}

export function restartPolicyOf(pod: V1Pod): RestartPolicy {
  const p = pod.spec?.restartPolicy;
  return p === 'Never' || p === 'OnFailure' ? p : 'Always';
}

function containerSim(spec: V1Container, role: ContainerRole, timing: Timing): ContainerSim {
  const delay = spec.readinessProbe ? (spec.readinessProbe.initialDelaySeconds ?? 0) : 0;
  return {
    name: spec.name,
    image: spec.image ?? '',
    role,
    readinessDelayMs: scaledMs(delay, timing.timeScale),
    state: { kind: 'waiting', reason: INIT_WAIT_REASON },
    restartCount: 0,
  };
}

function withState(c: ContainerSim, state: ContainerState): ContainerSim {
  return { ...c, state };
}

/** Guards against a bug turning a replay into an endless loop. */
const MAX_TRANSITIONS = 10_000;

/** The pod at `now`: every transition due by then, in time order, then the inputs applied. */
export function advance(pod: PodSim, inputs: PodInputs, now: number, timing: Timing): PodSim {
  if (pod.killed) return pod;
  let p = pod;
  for (let i = 0; i < MAX_TRANSITIONS; i++) {
    const due = earliestDue(p);
    if (due === undefined || due.at > now) break;
    const containers = p.containers.slice();
    containers[due.index] = fire(p, containers[due.index], due.at, inputs, timing);
    p = cascade({ ...p, containers }, due.at);
  }
  return applyInputs(p, inputs, now, timing);
}

/** When `advance` next has something to do (a transition or a container turning ready); undefined: never. */
export function nextWake(pod: PodSim, now: number): number | undefined {
  if (pod.killed) return undefined;
  let wake: number | undefined;
  const consider = (t: number | undefined) => {
    if (t !== undefined && (wake === undefined || t < wake)) wake = t;
  };
  for (const c of pod.containers) {
    consider(dueOf(c));
    if (c.state.kind === 'running' && c.state.readyAt > now) consider(c.state.readyAt);
  }
  return wake;
}

function dueOf(c: ContainerSim): number | undefined {
  const s = c.state;
  switch (s.kind) {
    case 'waiting':
      return s.startAt;
    case 'running':
      return s.crashAt === undefined ? s.exitAt : s.exitAt === undefined ? s.crashAt : Math.min(s.crashAt, s.exitAt);
    case 'terminated':
      return s.syncAt;
  }
}

function earliestDue(p: PodSim): { index: number; at: number } | undefined {
  let best: { index: number; at: number } | undefined;
  p.containers.forEach((c, index) => {
    const at = dueOf(c);
    if (at !== undefined && (best === undefined || at < best.at)) best = { index, at };
  });
  return best;
}

/** The transition of container `c` due at `t`. */
function fire(p: PodSim, c: ContainerSim, t: number, inputs: PodInputs, timing: Timing): ContainerSim {
  const s = c.state;
  switch (s.kind) {
    case 'waiting':
      return start(p, c, t, inputs, timing);
    case 'running': {
      if (s.crashAt !== undefined && (s.exitAt === undefined || s.crashAt <= s.exitAt)) {
        return terminate(p, c, t, 1, 'Error', timing);
      }
      return terminate(p, c, t, 0, 'Completed', timing);
    }
    case 'terminated': {
      // The kubelet's sync after the exit: kuberuntime's doBackOff.
      const exited = terminationOf(s);
      const finishedAt = s.finishedAt ?? t;
      if (c.backoff && inBackoffSince(timing.backoff, c.backoff, finishedAt, t)) {
        const delay = c.backoff.delayMs;
        return {
          ...c,
          lastState: exited,
          state: {
            kind: 'waiting',
            reason: CRASH_LOOP_REASON,
            message: `back-off ${goDuration(delay)} restarting failed container=${c.name} pod=${podDesc(p)}`,
            startAt: finishedAt + delay,
          },
        };
      }
      return start(p, { ...c, lastState: exited }, t, inputs, timing);
    }
  }
}

function terminationOf(s: Termination): Termination {
  const t: Termination = { exitCode: s.exitCode, reason: s.reason };
  if (s.message !== undefined) t.message = s.message;
  if (s.startedAt !== undefined) t.startedAt = s.startedAt;
  if (s.finishedAt !== undefined) t.finishedAt = s.finishedAt;
  if (s.containerID !== undefined) t.containerID = s.containerID;
  return t;
}

/** kubelet's format.Pod: name_namespace(uid). */
export function podDesc(p: Pick<PodSim, 'name' | 'namespace' | 'uid'>): string {
  return `${p.name}_${p.namespace}(${p.uid})`;
}

function start(p: PodSim, c: ContainerSim, t: number, inputs: PodInputs, timing: Timing): ContainerSim {
  // A container with a previous instance is a restart: count it and advance
  // the back-off entry (flowcontrol.Next, keyed on the previous exit).
  const restart = c.lastState !== undefined;
  const restartCount = restart ? c.restartCount + 1 : c.restartCount;
  const backoff = restart ? nextBackoff(timing.backoff, c.backoff, c.lastState?.finishedAt ?? t, t) : c.backoff;
  const state: ContainerState = {
    kind: 'running',
    startedAt: t,
    containerID: containerID(p.uid, c.name, restartCount),
    readyAt: t + c.readinessDelayMs,
  };
  if (c.role === 'init') {
    if (initFails(c, inputs)) state.crashAt = t + inputs.crashAfterMs;
    else state.exitAt = t + timing.initRunMs;
  }
  if (c.role === 'app') {
    if (!inputs.healthy) state.crashAt = t + inputs.crashAfterMs;
    if (inputs.exitAfterMs !== undefined && p.restartPolicy !== 'Always') state.exitAt = t + inputs.exitAfterMs;
  }
  return { ...c, restartCount, backoff, state };
}

function terminate(p: PodSim, c: ContainerSim, t: number, exitCode: number, reason: string, timing: Timing): ContainerSim {
  if (c.state.kind !== 'running') return c;
  // The kubelet restarts a failed init container unless the pod's policy is Never.
  const restarts =
    (c.role === 'app' && (p.restartPolicy === 'Always' || (p.restartPolicy === 'OnFailure' && exitCode !== 0))) ||
    (c.role === 'init' && exitCode !== 0 && p.restartPolicy !== 'Never');
  return {
    ...c,
    state: {
      kind: 'terminated',
      exitCode,
      reason,
      startedAt: c.state.startedAt,
      finishedAt: t,
      containerID: c.state.containerID,
      syncAt: restarts ? t + timing.syncMs : undefined,
    },
  };
}

/**
 * Pod-level consequences of a transition at `t`: the next init container
 * starts when the one before it completed (or, for a sidecar, started); app
 * containers start once all are through; sidecars are stopped when the app
 * containers are all done for good.
 */
export function cascade(p: PodSim, t: number): PodSim {
  const containers = p.containers.slice();
  let initialised = true;
  for (let i = 0; i < containers.length; i++) {
    const c = containers[i];
    if (c.role === 'app') continue;
    if (initDone(c)) continue;
    initialised = false;
    if (c.state.kind === 'waiting' && c.state.startAt === undefined) {
      containers[i] = withState(c, { ...c.state, startAt: t });
    }
    break;
  }
  if (initialised) {
    for (let i = 0; i < containers.length; i++) {
      const c = containers[i];
      if (c.role === 'app' && c.state.kind === 'waiting' && c.state.startAt === undefined) {
        containers[i] = withState(c, { ...c.state, startAt: t });
      }
    }
  }
  const apps = containers.filter((c) => c.role === 'app');
  const appsFinished = apps.length > 0 && apps.every((c) => c.state.kind === 'terminated' && c.state.syncAt === undefined);
  if (appsFinished) {
    for (let i = 0; i < containers.length; i++) {
      const c = containers[i];
      if (c.role === 'sidecar' && c.state.kind === 'running') {
        containers[i] = { ...c, state: { kind: 'terminated', exitCode: 0, reason: 'Completed', startedAt: c.state.startedAt, finishedAt: t, containerID: c.state.containerID } };
      }
    }
  }
  return { ...p, containers };
}

/** An init container is through when it completed; a sidecar once it has started. */
export function initDone(c: ContainerSim): boolean {
  if (c.role === 'sidecar') return c.state.kind !== 'waiting' || c.lastState !== undefined;
  return c.state.kind === 'terminated' && c.state.exitCode === 0;
}

export function initialised(p: PodSim): boolean {
  return p.containers.every((c) => c.role === 'app' || initDone(c));
}

function initFails(c: ContainerSim, inputs: PodInputs): boolean {
  return c.role === 'init' && (inputs.failingInits?.includes(c.name) ?? false);
}

/**
 * A running app container of an unhealthy pod is doomed: it exits after
 * crashAfter (what an app does when its upstream vanishes). If the pod heals
 * before that, the container survives. Likewise a running init container that
 * starts failing exits 1 after crashAfter, unless it completes first; one that
 * stops failing completes after its usual run.
 */
function applyInputs(p: PodSim, inputs: PodInputs, now: number, timing: Timing): PodSim {
  let changed = false;
  const containers = p.containers.map((c) => {
    if (c.role === 'init' && c.state.kind === 'running') {
      const fails = initFails(c, inputs);
      if (fails && c.state.crashAt === undefined) {
        changed = true;
        return withState(c, { ...c.state, crashAt: now + inputs.crashAfterMs });
      }
      if (!fails && c.state.crashAt !== undefined) {
        changed = true;
        const state = { ...c.state, exitAt: c.state.exitAt ?? Math.max(now, c.state.startedAt + timing.initRunMs) };
        delete state.crashAt;
        return withState(c, state);
      }
      return c;
    }
    if (c.role !== 'app' || c.state.kind !== 'running') return c;
    if (!inputs.healthy && c.state.crashAt === undefined) {
      changed = true;
      return withState(c, { ...c.state, crashAt: now + inputs.crashAfterMs });
    }
    if (inputs.healthy && c.state.crashAt !== undefined) {
      changed = true;
      const state = { ...c.state };
      delete state.crashAt;
      return withState(c, state);
    }
    return c;
  });
  return changed ? { ...p, containers } : p;
}

/**
 * The pod after the kubelet killed it at `now` for deletion: running
 * containers exit 0 (they honoured SIGTERM), containers that were not running
 * are reported as the kubelet reports containers it cannot find any more.
 */
export function killPod(p: PodSim, now: number): PodSim {
  if (p.killed) return p;
  const containers = p.containers.map((c): ContainerSim => {
    const s = c.state;
    if (s.kind === 'running') {
      return withState(c, { kind: 'terminated', exitCode: 0, reason: 'Completed', startedAt: s.startedAt, finishedAt: now, containerID: s.containerID });
    }
    if (s.kind === 'terminated') return withState(c, { kind: 'terminated', ...terminationOf(s) });
    if (c.role === 'init') return c;
    return withState(c, {
      kind: 'terminated',
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
      message: 'The container could not be located when the pod was terminated',
    });
  });
  return { ...p, containers, killed: true };
}

/** The kubelet's getPhase. */
export function podPhase(p: PodSim): PodPhase {
  const apps = p.containers.filter((c) => c.role === 'app');
  if (p.killed) {
    return apps.every((c) => c.state.kind === 'terminated' && c.state.exitCode === 0) ? 'Succeeded' : 'Failed';
  }
  // An init container that failed for good (restartPolicy Never): the pod failed.
  if (p.containers.some((c) => c.role === 'init' && c.state.kind === 'terminated' && c.state.exitCode !== 0 && c.state.syncAt === undefined)) {
    return 'Failed';
  }
  if (!initialised(p)) return 'Pending';
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of apps) {
    const s = c.state;
    if (s.kind === 'running') running++;
    else if (s.kind === 'waiting') {
      if (c.lastState) stopped++;
      else waiting++;
    } else {
      stopped++;
      if (s.exitCode === 0) succeeded++;
    }
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (p.restartPolicy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    // OnFailure restarts the failed ones; Never has failed for good.
    return p.restartPolicy === 'OnFailure' ? 'Running' : 'Failed';
  }
  return 'Pending';
}

export function containerReady(c: ContainerSim, inputs: PodInputs, now: number): boolean {
  const s = c.state;
  if (c.role === 'init') return s.kind === 'terminated' && s.exitCode === 0;
  if (s.kind !== 'running' || now < s.readyAt) return false;
  // An app container whose pod is unhealthy is failing its readiness, as an
  // app that lost its upstream would, until it crashes or heals.
  return c.role === 'sidecar' || inputs.healthy;
}

/** A runtime container ID, stable for a pod, container and attempt. */
export function containerID(uid: string, name: string, attempt: number): string {
  return `sim://${createHash('sha256').update(`${uid}/${name}/${attempt}`).digest('hex')}`;
}

export function imageID(image: string): string {
  return `sim://sha256:${createHash('sha256').update(image).digest('hex')}`;
}
