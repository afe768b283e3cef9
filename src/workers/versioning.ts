// Worker Deployment Versioning. With `temporal.deployment` set, the main worker polls as one
// version (deployment name + build id) of a Temporal Worker Deployment, every workflow type
// auto-upgrade, and once its version is registered it makes it the deployment's current version
// unless a newer version is current already (docs/upgrading.md says why).
import type { NativeConnection } from '@temporalio/worker';
import { log } from '../log.ts';
import { abortableSleep } from '../sleep.ts';

/** A build id from the code's fingerprint: the same code gives the same id on every replica. */
export function buildIdOf(fingerprint: string): string {
  return `tend-${fingerprint.slice(0, 12)}`;
}

interface Timestamp { seconds?: unknown; nanos?: number | null }

/** What the promotion looks at, from DescribeWorkerDeployment. */
export interface DeploymentView {
  versions: { buildId: string; createdMs: number }[];
  current?: string;
  ramping?: string;
  /** Set when a manager (the Temporal Worker Controller, an operator) owns the deployment's routing. */
  manager?: string;
}

export type PromotionStep =
  | { do: 'wait'; why: string }
  | { do: 'done'; why: string }
  | { do: 'leave'; why: string }
  | { do: 'promote'; from?: string };

/**
 * What to do about this worker's version, given the deployment as it is now. A version is newer
 * than another when the server registered it later (its first poll): an old replica that restarts
 * in the middle of a roll-out finds a newer version current and leaves it so, where "the last one
 * started wins" would turn every run back to the old code.
 */
export function promotionStep(view: DeploymentView | undefined, buildId: string): PromotionStep {
  const mine = view?.versions.find((v) => v.buildId === buildId);
  if (!view || !mine) return { do: 'wait', why: 'the server has not registered this version yet' };
  if (view.current === buildId) return { do: 'done', why: 'this version is current' };
  if (view.manager !== undefined) {
    return { do: 'leave', why: `the deployment's routing is managed by "${view.manager}"` };
  }
  if (view.ramping !== undefined) {
    return { do: 'leave', why: `version ${view.ramping} is ramping: the operator runs this roll-out` };
  }
  if (view.current === undefined) return { do: 'promote' };
  const current = view.versions.find((v) => v.buildId === view.current);
  if (current && current.createdMs > mine.createdMs) {
    return { do: 'leave', why: `version ${view.current}, newer than this one, is current` };
  }
  return { do: 'promote', from: view.current };
}

const millis = (t: Timestamp | null | undefined) =>
  t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;

async function describe(connection: NativeConnection, namespace: string, name: string) {
  try {
    return await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName: name });
  } catch (err) {
    // NOT_FOUND: no worker of this deployment has polled yet.
    if ((err as { code?: number }).code === 5) return undefined;
    throw err;
  }
}

function viewOf(res: Awaited<ReturnType<typeof describe>>): DeploymentView | undefined {
  const info = res?.workerDeploymentInfo;
  if (!info) return undefined;
  const routing = info.routingConfig;
  return {
    versions: (info.versionSummaries ?? []).flatMap((v) => v.deploymentVersion?.buildId
      ? [{ buildId: v.deploymentVersion.buildId, createdMs: millis(v.createTime as Timestamp) }] : []),
    ...(routing?.currentDeploymentVersion?.buildId ? { current: routing.currentDeploymentVersion.buildId } : {}),
    ...(routing?.rampingDeploymentVersion?.buildId ? { ramping: routing.rampingDeploymentVersion.buildId } : {}),
    ...(info.managerIdentity ? { manager: info.managerIdentity } : {}),
  };
}


/**
 * Makes this worker's version current when promotionStep says so, retrying (1 s doubling to 30 s)
 * while the version is not registered yet, the server refuses (another task queue of the current
 * version not yet polled by this one) or another writer changed the deployment in between
 * (conflict token). Returns what it did; stops when `signal` aborts.
 */
export async function promoteVersion(connection: NativeConnection, namespace: string, name: string, buildId: string,
  signal: AbortSignal): Promise<PromotionStep['do'] | 'stopped'> {
  const where = { deployment: name, buildId };
  let delay = 1000;
  let lastProblem = '';
  while (!signal.aborted) {
    let problem: string;
    try {
      const res = await describe(connection, namespace, name);
      const step = promotionStep(viewOf(res), buildId);
      if (step.do === 'done') {
        log.info(where, `worker deployment: ${step.why}`);
        return 'done';
      }
      if (step.do === 'leave') {
        log.warn({ ...where, rollBack: `temporal worker deployment set-current-version --namespace ${namespace} --deployment-name ${name} --build-id ${buildId}` },
          `worker deployment: this version is not made current: ${step.why}; it serves only what is routed to it (to roll back to it, run the rollBack command)`);
        return 'leave';
      }
      if (step.do === 'wait') {
        problem = step.why;
      } else {
        await connection.workflowService.setWorkerDeploymentCurrentVersion({
          namespace, deploymentName: name, buildId, conflictToken: res!.conflictToken, identity: `tend worker ${buildId}`,
        });
        log.info({ ...where, ...(step.from ? { previous: step.from } : {}) }, 'worker deployment: this version is now current');
        return 'promote';
      }
    } catch (err) {
      problem = (err as Error).message;
    }
    // Each problem is logged once, not at every retry.
    if (problem !== lastProblem) log.info({ ...where, problem }, 'worker deployment: not current yet; trying again');
    lastProblem = problem;
    await abortableSleep(delay, signal);
    delay = Math.min(delay * 2, 30_000);
  }
  return 'stopped';
}
