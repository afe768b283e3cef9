// An App's workloads: one Deployment per process, named from the App, the
// process type and a short hash of last-stop-app-rev, so that a stop + start
// always makes new ones; which existing workloads must go. Pure.
import type { V1Deployment } from '@kubernetes/client-node';
import { shortHash, stableJson } from './hash.ts';
import type { RevisionDecision } from './revisions.ts';
import {
  APP_API_VERSION, APP_KIND, APP_REV, LABEL_APP, LABEL_PROCESS, LABEL_WORKLOAD, LAST_STOP_APP_REV, SPEC_HASH, type App,
} from './types.ts';

/** At most 63 characters: the name is also a label value. */
export function workloadName(app: string, processType: string, lastStopRev: number): string {
  const base = `${app}-${processType}`.slice(0, 54).replace(/[-.]+$/, '');
  return `${base}-${shortHash(String(lastStopRev))}`;
}

export function appSelector(app: string): string {
  return `${LABEL_APP}=${app}`;
}

export function ownedBy(d: V1Deployment, uid: string | undefined): boolean {
  return !!uid && (d.metadata?.ownerReferences ?? []).some((o) => o.uid === uid && o.kind === APP_KIND);
}

/** The Deployments the App should have, given the revisions decided for it. */
export function desiredDeployments(app: App, revs: RevisionDecision): V1Deployment[] {
  if (revs.desiredState !== 'STARTED') return [];
  const { name, namespace, uid } = app.metadata;
  return app.spec.processes.map((p) => {
    const workload = workloadName(name, p.type, revs.lastStopRev);
    const selector = { [LABEL_APP]: name, [LABEL_PROCESS]: p.type, [LABEL_WORKLOAD]: workload };
    const spec = {
      replicas: p.instances,
      selector: { matchLabels: selector },
      template: {
        ...p.template,
        metadata: {
          ...p.template.metadata,
          labels: { ...p.template.metadata?.labels, ...selector },
          // Carrying app-rev in the template is what makes a rolling restart roll.
          annotations: { ...p.template.metadata?.annotations, [APP_REV]: String(revs.appRev) },
        },
      },
    } as V1Deployment['spec'];
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: workload,
        namespace,
        labels: { ...selector, 'app.kubernetes.io/managed-by': 'tend' },
        annotations: { [APP_REV]: String(revs.appRev), [LAST_STOP_APP_REV]: String(revs.lastStopRev), [SPEC_HASH]: shortHash(stableJson(spec)) },
        // No blockOwnerDeletion: it would need update rights on apps/finalizers.
        ownerReferences: [{ apiVersion: APP_API_VERSION, kind: APP_KIND, name, uid: uid ?? '', controller: true }],
      },
      spec,
    } satisfies V1Deployment;
  });
}

export interface WorkloadPlan {
  create: V1Deployment[];
  /** Desired Deployments whose existing spec differs: replaced with the existing resourceVersion. */
  replace: V1Deployment[];
  /** Existing Deployments of this App that are not desired: deleted with a UID precondition. */
  remove: V1Deployment[];
}

/** What to do to go from the App's existing workloads to the desired ones. Only workloads the App owns are touched. */
export function planWorkloads(existing: V1Deployment[], desired: V1Deployment[], appUid: string | undefined): WorkloadPlan {
  const mine = existing.filter((d) => ownedBy(d, appUid) && !d.metadata?.deletionTimestamp);
  const byName = new Map(mine.map((d) => [d.metadata!.name!, d]));
  const wanted = new Set(desired.map((d) => d.metadata!.name!));
  const plan: WorkloadPlan = { create: [], replace: [], remove: mine.filter((d) => !wanted.has(d.metadata!.name!)) };
  for (const d of desired) {
    const have = byName.get(d.metadata!.name!);
    if (!have) plan.create.push(d);
    else if (have.metadata?.annotations?.[SPEC_HASH] !== d.metadata!.annotations![SPEC_HASH]) {
      plan.replace.push({ ...d, metadata: { ...d.metadata, resourceVersion: have.metadata?.resourceVersion } });
    }
  }
  return plan;
}
