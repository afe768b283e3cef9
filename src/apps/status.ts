// The App's status from its workloads: instances per process across
// revisions, actualState from ready instances, and the Ready condition. Pure.
import type { V1Deployment } from '@kubernetes/client-node';
import type { RevisionDecision } from './revisions.ts';
import { ownedBy, workloadName } from './workloads.ts';
import {
  APP_REV, LABEL_PROCESS, type ActualState, type App, type AppCondition, type AppStatus, type ProcessStatus, type WorkloadRevision,
} from './types.ts';

/** A rollout is complete as `kubectl rollout status` says: every replica updated, ready, and no old ones left. */
export function rolledOut(d: V1Deployment, instances: number): boolean {
  const s = d.status ?? {};
  return (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0)
    && (d.spec?.replicas ?? 1) === instances
    && (s.updatedReplicas ?? 0) === instances
    && (s.replicas ?? 0) === instances
    && (s.readyReplicas ?? 0) === instances;
}

export interface StatusInput {
  app: App;
  revs: RevisionDecision;
  /** The App's workloads after this reconcile's writes. */
  workloads: V1Deployment[];
  /** A spec the API server refused for a workload (e.g. a pod template without containers). */
  problem?: string;
  now: Date;
}

export interface ComputedStatus {
  status: AppStatus;
  /** actualState has reached desiredState on the current revision, with no problem. */
  settled: boolean;
}

export function computeStatus({ app, revs, workloads, problem, now }: StatusInput): ComputedStatus {
  const mine = workloads.filter((d) => ownedBy(d, app.metadata.uid));
  const started = revs.desiredState === 'STARTED';
  const processes: ProcessStatus[] = [];
  let allRolledOut = true;
  for (const p of app.spec.processes) {
    const current = started ? workloadName(app.metadata.name, p.type, revs.lastStopRev) : undefined;
    const revisions: WorkloadRevision[] = mine
      .filter((d) => d.metadata?.labels?.[LABEL_PROCESS] === p.type)
      .map((d) => ({
        workload: d.metadata!.name!,
        appRev: d.spec?.template?.metadata?.annotations?.[APP_REV] ?? '',
        current: d.metadata!.name === current,
        replicas: d.status?.replicas ?? 0,
        readyReplicas: d.status?.readyReplicas ?? 0,
        updatedReplicas: d.status?.updatedReplicas ?? 0,
      }))
      .sort((a, b) => Number(b.current) - Number(a.current) || a.workload.localeCompare(b.workload));
    const currentDeployment = mine.find((d) => d.metadata?.name === current);
    const done = started && !!currentDeployment && rolledOut(currentDeployment, p.instances)
      && currentDeployment.spec?.template?.metadata?.annotations?.[APP_REV] === String(revs.appRev);
    if (started && !done) allRolledOut = false;
    processes.push({
      type: p.type,
      instances: started ? p.instances : 0,
      readyInstances: done ? p.instances : Math.min(currentDeployment?.status?.updatedReplicas ?? 0, currentDeployment?.status?.readyReplicas ?? 0),
      ...(current && { workload: current }),
      revisions,
    });
  }
  // Workloads of processes no longer in the spec are removed by the same
  // reconcile; any left over still count as old revisions.
  const oldLeft = mine.some((d) => !(started && processes.some((p) => p.workload === d.metadata?.name)));
  let actualState: ActualState;
  if (started) actualState = allRolledOut && !oldLeft ? 'STARTED' : 'STARTING';
  else actualState = mine.length === 0 ? 'STOPPED' : 'STOPPING';
  const settled = actualState === revs.desiredState && !problem;
  const generation = app.metadata.generation;

  const [status, reason, message] = problem
    ? ['False', 'InvalidSpec', problem] as const
    : settled
      ? (started ? ['True', 'Running', 'every process runs its desired instances, ready, on the current revision'] as const
        : ['True', 'Stopped', 'no workloads: the App is stopped'] as const)
      : (started ? ['False', 'RollingOut', rolloutMessage(processes)] as const
        : ['False', 'Stopping', 'deleting the workloads of a stopped App'] as const);
  const previous = app.status?.conditions?.find((c) => c.type === 'Ready');
  const ready: AppCondition = {
    type: 'Ready', status, reason, message, observedGeneration: generation,
    lastTransitionTime: previous && previous.status === status ? previous.lastTransitionTime : now.toISOString(),
  };
  return {
    settled,
    status: {
      observedGeneration: generation,
      observedDesiredState: revs.desiredState,
      actualState,
      revision: String(revs.appRev),
      lastStopRevision: String(revs.lastStopRev),
      processes,
      conditions: [...(app.status?.conditions ?? []).filter((c) => c.type !== 'Ready'), ready],
    },
  };
}

function rolloutMessage(processes: ProcessStatus[]): string {
  const parts = processes.map((p) => `${p.type} ${p.readyInstances}/${p.instances} ready on ${p.workload}`);
  const old = processes.flatMap((p) => p.revisions.filter((r) => !r.current)).map((r) => r.workload);
  return `rolling out: ${parts.join(', ')}${old.length ? `; old workloads left: ${old.join(', ')}` : ''}`;
}
