// Picking up pods a previous run of the simulated kubelet already started.
//
// A real kubelet that restarts finds its containers still running in the
// runtime and carries on; only in-memory state such as the restart back-off is
// lost. The simulation's "runtime" is the pod's own status, so rebuild the
// state machine from it: running containers keep running since their
// startedAt, counts and last states are kept, and anything that was waiting
// or had exited is restarted now, with a fresh back-off. Pure.
import type { V1ContainerState, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { cascade, newPodSim } from './lifecycle.ts';
import type { ContainerSim, ContainerState, PodSim, Termination, Timing } from './lifecycle.ts';
import { toMs } from './time.ts';

/** The pod's state machine rebuilt from its status; undefined when the status shows no kubelet ever ran it. */
export function adoptPodSim(pod: V1Pod, now: number, timing: Timing): PodSim | undefined {
  const status = pod.status;
  const startTime = toMs(status?.startTime);
  if (startTime === undefined || !status?.containerStatuses?.length) return undefined;
  const observed = new Map<string, V1ContainerStatus>();
  for (const cs of [...(status.initContainerStatuses ?? []), ...status.containerStatuses]) observed.set(cs.name, cs);

  const fresh = newPodSim(pod, startTime, timing);
  const containers = fresh.containers.map((c) => {
    const cs = observed.get(c.name);
    return cs ? adoptContainer(c, cs, now) : c;
  });
  // Whatever is next in line (an init container, or the app containers once
  // initialisation is through) starts now.
  return cascade({ ...fresh, containers }, now);
}

function adoptContainer(c: ContainerSim, cs: V1ContainerStatus, now: number): ContainerSim {
  const restartCount = cs.restartCount ?? 0;
  const lastState = termination(cs.lastState?.terminated);
  const base: ContainerSim = { ...c, restartCount };
  if (lastState) base.lastState = lastState;
  const state = adoptState(c, cs.state, cs.containerID, now);
  return { ...base, state };
}

function adoptState(c: ContainerSim, state: V1ContainerState | undefined, id: string | undefined, now: number): ContainerState {
  const startedAt = toMs(state?.running?.startedAt);
  if (state?.running && startedAt !== undefined && id) {
    return { kind: 'running', startedAt, containerID: id, readyAt: startedAt + c.readinessDelayMs };
  }
  const t = termination(state?.terminated);
  if (t) {
    // A completed init container stays completed; any other exit is decided
    // about at once, as the restarted kubelet's first sync would.
    const final = c.role === 'init' && t.exitCode === 0;
    return final ? { kind: 'terminated', ...t } : { kind: 'terminated', ...t, syncAt: now };
  }
  // Waiting: one that never ran waits for its turn (cascade() places it);
  // one in back-off restarts now, since the back-off was only in memory.
  return { kind: 'waiting', reason: state?.waiting?.reason ?? 'ContainerCreating' };
}

function termination(t: V1ContainerState['terminated']): Termination | undefined {
  if (!t) return undefined;
  const out: Termination = { exitCode: t.exitCode ?? 0, reason: t.reason ?? (t.exitCode ? 'Error' : 'Completed') };
  if (t.message) out.message = t.message;
  const startedAt = toMs(t.startedAt);
  const finishedAt = toMs(t.finishedAt);
  if (startedAt !== undefined) out.startedAt = startedAt;
  if (finishedAt !== undefined) out.finishedAt = finishedAt;
  if (t.containerID) out.containerID = t.containerID;
  return out;
}
