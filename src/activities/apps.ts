// App revisions: read the App, move its revision annotations, create, replace
// and delete its Deployments, and write its status. Each activity is a
// read-decide-write that is safe to retry: writes carry resourceVersion or
// UID preconditions, and the decisions are pure functions of what was read.
import type { AppsConfig } from '../config/apps.ts';
import type * as k8s from '@kubernetes/client-node';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { KubeClients } from '../kube/client.ts';
import { log } from '../log.ts';
import { mergePatch } from '../kube/api.ts';
import { deleteDeploymentIfSameUid, errorMessage, isConflict } from '../kube/writes.ts';
import { statusOf } from '../kube/client.ts';
import { noteEvent } from './events.ts';
import type { ReconcileResult, WaitOutcome } from '../apps/entity.ts';
import { stableJson } from '../apps/hash.ts';
import { countedReconcile, noteAppRestart } from '../metrics/apps.ts';
import {
  decideRevisions, processesHash, revOf, revisionsChange, type AppCommand, type LastSeen, type RevisionDecision,
} from '../apps/revisions.ts';
import { computeStatus } from '../apps/status.ts';
import {
  APP_API_VERSION, APP_KIND, APP_REV, LAST_STOP_APP_REV, type App,
} from '../apps/types.ts';
import { appSelector, desiredDeployments, ownedBy, planWorkloads } from '../apps/workloads.ts';
import { appRef, appScopeProblem, readApp } from '../apps/read.ts';
import { APPS_REFUSED } from '../apps/messages.ts';
import { APP_STATUS_MANAGER } from '../apps/watch.ts';
import { recordWould, writeHold, type SafetyGates, type WriteHold } from './safety-gate.ts';

export { appScopeProblem, readApp };

export interface ReconcileAppInput {
  namespace: string;
  name: string;
  command?: AppCommand;
  lastSeen?: LastSeen;
  /** The App's UID as last seen, so that its workloads can be found once it is gone. */
  uid?: string;
  /** The highest generation the watcher saw STOPPED that no reconcile has accounted for (see decideRevisions). */
  stopSeen?: number;
}

export interface WaitForAppInput {
  namespace: string;
  name: string;
  generation: number;
  appRev: number;
  timeoutSeconds: number;
  pollMs?: number;
}

async function listWorkloads(kube: KubeClients, namespace: string, name: string): Promise<k8s.V1Deployment[]> {
  return (await kube.apps.listNamespacedDeployment({ namespace, labelSelector: appSelector(name) })).items;
}

async function deleteWorkload(kube: KubeClients, d: k8s.V1Deployment): Promise<void> {
  // Gone already, or replaced by another object of that name: either way not ours to delete.
  await deleteDeploymentIfSameUid(kube, { namespace: d.metadata!.namespace!, name: d.metadata!.name!, uid: d.metadata!.uid! });
}

function invalid(err: unknown): boolean {
  return statusOf(err) === 422 || statusOf(err) === 400;
}


export function createAppActivities(kube: KubeClients, apps?: AppsConfig, gates?: SafetyGates) {
  const inScope = (namespace: unknown, name: unknown) => {
    const problem = appScopeProblem(apps, namespace, name);
    if (problem) throw ApplicationFailure.nonRetryable(`refused: ${problem}; nothing was read or changed`, APPS_REFUSED);
  };
  const activities = {
    /** Whether the worker's configuration lets it act on this App: the workflow asks first. */
    async appInScope(input: { namespace: string; name: string }): Promise<void> {
      inScope(input?.namespace, input?.name);
    },

    /** One reconcile of one App: revisions, workloads, status. */
    async reconcileApp(input: ReconcileAppInput): Promise<ReconcileResult> {
      inScope(input?.namespace, input?.name);
      const { namespace, name } = input;
      let app = await readApp(kube, namespace, name);
      // Observe mode, or paused: nothing is written (src/activities/safety-gate.ts).
      const hold = writeHold(gates, 'apps');
      if (hold) return heldReconcile(kube, app, input, hold);
      if (!app || app.metadata.deletionTimestamp) {
        // The garbage collector would delete owned workloads too; doing it here
        // makes "App deleted -> workloads deleted" hold before the workflow ends.
        const uid = app?.metadata.uid ?? input.uid;
        for (const d of await listWorkloads(kube, namespace, name)) if (ownedBy(d, uid)) await deleteWorkload(kube, d);
        return { gone: true, settled: true, workloads: [] };
      }
      const revs = decideRevisions(app, input.command, input.lastSeen, input.stopSeen);
      if (revisionsChange(app, revs)) {
        try {
          app = (await kube.custom.patchNamespacedCustomObject({
            ...appRef(namespace, name),
            body: {
              metadata: {
                resourceVersion: app.metadata.resourceVersion,
                annotations: { [APP_REV]: String(revs.appRev), [LAST_STOP_APP_REV]: String(revs.lastStopRev) },
              },
              spec: { desiredState: revs.desiredState },
            },
          }, mergePatch)) as App;
          if (revs.reason === 'rolling-restart') noteAppRestart(namespace);
        } catch (err) {
          // Someone else wrote the App since it was read: retried from a fresh read.
          if (isConflict(err)) throw ApplicationFailure.retryable(`App ${namespace}/${name} changed while being reconciled: ${errorMessage(err)}`, 'Conflict');
          throw err;
        }
      }
      if (revs.reason) {
        // What an operator sees with `kubectl events`: why the revisions moved. Named from the
        // App's UID and the new app-rev, so a retried reconcile records it once.
        const current = app;
        await noteEvent(kube, {
          regarding: { apiVersion: APP_API_VERSION, kind: APP_KIND, namespace, name, uid: current.metadata.uid },
          reason: revs.reason === 'rolling-restart' ? 'RollingRestart' : 'Stopped',
          action: revs.reason === 'rolling-restart' ? 'RollingRestart' : 'BumpRevision',
          note: eventNote(revs),
          dedupKey: `${current.metadata.uid}/app-rev/${revs.appRev}`,
        }); // an Event is a courtesy: never a reason to fail the reconcile (noteEvent logs and counts a failed write)
      }
      const workloads = await applyWorkloads(kube, app, revs);
      const computed = computeStatus({ app, revs, workloads: workloads.workloads, problem: workloads.problem, now: new Date() });
      if (stableJson(withoutTimes(computed.status)) !== stableJson(withoutTimes(app.status ?? {}))) {
        // As tend's manager: the watcher trusts only the observedGeneration tend wrote (apps/watch.ts).
        await kube.custom.patchNamespacedCustomObjectStatus({ ...appRef(namespace, name), body: { status: computed.status }, fieldManager: APP_STATUS_MANAGER }, mergePatch);
      }
      return {
        gone: false,
        uid: app.metadata.uid,
        lastSeen: { generation: app.metadata.generation ?? 0, processesHash: processesHash(app), desiredState: revs.desiredState, appRev: revs.appRev },
        lastStopRev: revs.lastStopRev,
        desiredState: revs.desiredState,
        actualState: computed.status.actualState,
        settled: computed.settled,
        workloads: workloads.workloads.filter((d) => ownedBy(d, app.metadata.uid)).map((d) => d.metadata!.name!),
        ...(workloads.problem && { problem: workloads.problem }),
        ...(revs.reason && { reason: revs.reason }),
        // A stop tend wrote itself moved the generation: that STOPPED version is reflected too.
        ...(stopsThrough(revs, app) !== undefined && { stopsThrough: stopsThrough(revs, app) }),
      };
    },

    /**
     * Waits, polling, until the App's workloads have caught up with it, the
     * App changes (a newer command or edit takes over), it is gone, or the
     * time is up. Heartbeats so a lost worker is noticed within the heartbeat timeout.
     */
    async waitForApp(input: WaitForAppInput): Promise<WaitOutcome> {
      inScope(input?.namespace, input?.name);
      const ctx = Context.current();
      const deadline = Date.now() + input.timeoutSeconds * 1000;
      for (;;) {
        ctx.heartbeat();
        const app = await readApp(kube, input.namespace, input.name);
        if (!app || app.metadata.deletionTimestamp) return 'gone';
        if ((app.metadata.generation ?? 0) !== input.generation || revOf(app, APP_REV) !== input.appRev) return 'changed';
        const revs: RevisionDecision = { appRev: revOf(app, APP_REV), lastStopRev: revOf(app, LAST_STOP_APP_REV), desiredState: app.spec.desiredState };
        const workloads = await listWorkloads(kube, input.namespace, input.name);
        if (computeStatus({ app, revs, workloads, now: new Date() }).settled) return 'settled';
        // A desired workload that does not exist (its name was still held by the Deployment of a
        // deleted App of the same name, now collected): a reconcile creates it.
        const present = new Set(workloads.map((d) => d.metadata?.name));
        if (desiredDeployments(app, revs).some((d) => !present.has(d.metadata!.name))) return 'changed';
        if (Date.now() > deadline) return 'timeout';
        await ctx.sleep(input.pollMs ?? 1000);
      }
    },
  };
  // Counted for /metrics: every reconcile attempt, and those that failed.
  return { ...activities, reconcileApp: countedReconcile(activities.reconcileApp) };
}

function stopsThrough(revs: RevisionDecision, written: App): number | undefined {
  const after = revs.desiredState === 'STOPPED' ? written.metadata.generation ?? 0 : undefined;
  if (revs.stopsThrough === undefined) return after;
  return Math.max(revs.stopsThrough, after ?? 0);
}

function eventNote(revs: RevisionDecision): string {
  const why = {
    'stop': 'stopped through tend',
    'stop-seen-by-watcher': 'spec.desiredState was set to STOPPED (seen by the watcher), then back to STARTED',
    'rolling-restart': 'rolling restart: the same workloads roll their pods',
    'stopped-outside-tend': 'spec.desiredState set to STOPPED',
    'stop-and-start-seen-as-result': 'a stop + start seen only as its result (generation moved, processes unchanged)',
  }[revs.reason!];
  return `${why}: app-rev ${revs.appRev}, last-stop-app-rev ${revs.lastStopRev}`;
}

/** Status without its timestamps, to tell a real change from a rewrite of the same. */
function withoutTimes(status: object): unknown {
  return JSON.parse(JSON.stringify(status, (k, v: unknown) => (k === 'lastTransitionTime' ? undefined : v)));
}

async function applyWorkloads(kube: KubeClients, app: App, revs: RevisionDecision): Promise<{ workloads: k8s.V1Deployment[]; problem?: string }> {
  const { namespace, name } = app.metadata;
  const existing = await listWorkloads(kube, namespace, name);
  const plan = planWorkloads(existing, desiredDeployments(app, revs), app.metadata.uid);
  const problems: string[] = [];
  const removed = new Set(plan.remove.map((d) => d.metadata!.uid));
  for (const d of plan.remove) await deleteWorkload(kube, d);
  const result = new Map(existing.filter((d) => !removed.has(d.metadata!.uid)).map((d) => [d.metadata!.name!, d]));
  for (const d of plan.create) {
    try {
      result.set(d.metadata!.name!, await kube.apps.createNamespacedDeployment({ namespace, body: d }));
    } catch (err) {
      if (invalid(err)) problems.push(`process workload ${d.metadata!.name}: ${errorMessage(err)}`);
      // 409 AlreadyExists: a retry after the create landed, or the name still held by a deleted
      // App's workload that the garbage collector has yet to remove (the wait notices when it goes).
      else if (!isConflict(err)) throw err;
    }
  }
  for (const d of plan.replace) {
    try {
      result.set(d.metadata!.name!, await kube.apps.replaceNamespacedDeployment({ namespace, name: d.metadata!.name!, body: d }));
    } catch (err) {
      if (invalid(err)) problems.push(`process workload ${d.metadata!.name}: ${errorMessage(err)}`);
      else if (isConflict(err)) throw ApplicationFailure.retryable(`Deployment ${namespace}/${d.metadata!.name} changed while being replaced`, 'Conflict');
      else throw err;
    }
  }
  return { workloads: [...result.values()], ...(problems.length && { problem: problems.join('; ') }) };
}


const deploymentTarget = (namespace: string, name: string, uid?: string) => ({ apiVersion: 'apps/v1', kind: 'Deployment', namespace, name, ...(uid ? { uid } : {}) });

/**
 * A reconcile in observe mode or while paused: reads as in act mode, decides
 * the same writes, and makes none. Observe mode records each (a Would<Write>
 * Event, tend_apps_would_write_total) and answers as if the App had settled
 * as it is, so the workflow goes on; paused answers `held`, and the workflow
 * tries again shortly (a command stays queued). The App's status is not
 * written either: it goes on showing the last state tend wrote.
 */
async function heldReconcile(kube: KubeClients, app: App | undefined, input: ReconcileAppInput, hold: WriteHold): Promise<ReconcileResult> {
  const { namespace, name } = input;
  const label = `${namespace}/${name}`;
  const writes: { verb: 'create' | 'replace' | 'delete' | 'patch'; kind: string; target: { apiVersion: string; kind: string; namespace: string; name: string; uid?: string }; note: string; key: string }[] = [];
  if (!app || app.metadata.deletionTimestamp) {
    const uid = app?.metadata.uid ?? input.uid;
    for (const d of await listWorkloads(kube, namespace, name)) {
      if (!ownedBy(d, uid)) continue;
      writes.push({
        verb: 'delete', kind: 'Deployment', target: deploymentTarget(namespace, d.metadata!.name!, d.metadata!.uid),
        note: `would delete Deployment ${namespace}/${d.metadata!.name}: App ${label} was deleted`, key: `${d.metadata!.uid}/delete`,
      });
    }
    if (writes.length === 0) return { gone: true, settled: true, workloads: [] };
    if (hold.kind === 'paused') return { gone: false, settled: false, workloads: [], held: hold.message };
    await recordAll(kube, writes);
    return { gone: true, settled: true, workloads: [], observed: writes.map((w) => w.note) };
  }
  const revs = decideRevisions(app, input.command, input.lastSeen, input.stopSeen);
  const uid = app.metadata.uid;
  const appTarget = { apiVersion: APP_API_VERSION, kind: APP_KIND, namespace, name, uid };
  if (revisionsChange(app, revs)) {
    writes.push({
      verb: 'patch', kind: APP_KIND, target: appTarget, key: `${uid}/app-rev/${revs.appRev}/${revs.desiredState}`,
      note: `would set App ${label} to app-rev ${revs.appRev}, desiredState ${revs.desiredState}${revs.reason ? ` (${eventNote(revs)})` : ''}`,
    });
  }
  const existing = await listWorkloads(kube, namespace, name);
  const plan = planWorkloads(existing, desiredDeployments(app, revs), uid);
  const why = revs.reason === 'rolling-restart' ? ': rolling restart' : revs.reason ? `: ${revs.reason}` : `: App ${label} generation ${app.metadata.generation ?? 0}`;
  for (const d of plan.remove) {
    writes.push({ verb: 'delete', kind: 'Deployment', target: deploymentTarget(namespace, d.metadata!.name!, d.metadata!.uid), key: `${d.metadata!.uid}/delete`, note: `would delete Deployment ${namespace}/${d.metadata!.name}: no longer a process of App ${label}` });
  }
  for (const d of plan.create) {
    writes.push({ verb: 'create', kind: 'Deployment', target: appTarget, key: `${uid}/create/${d.metadata!.name}/${revs.appRev}/${app.metadata.generation ?? 0}`, note: `would create Deployment ${namespace}/${d.metadata!.name}${why}` });
  }
  for (const d of plan.replace) {
    const live = existing.find((x) => x.metadata?.name === d.metadata!.name);
    writes.push({
      verb: 'replace', kind: 'Deployment', target: deploymentTarget(namespace, d.metadata!.name!, live?.metadata?.uid),
      key: `${live?.metadata?.uid}/replace/${revs.appRev}/${app.metadata.generation ?? 0}`, note: `would replace Deployment ${namespace}/${d.metadata!.name}${why}`,
    });
  }
  const mine = existing.filter((d) => ownedBy(d, uid));
  const computed = computeStatus({ app, revs: { appRev: revOf(app, APP_REV), lastStopRev: revOf(app, LAST_STOP_APP_REV), desiredState: app.spec.desiredState }, workloads: mine, now: new Date() });
  if (writes.length > 0 && hold.kind === 'paused') {
    log.info({ app: label, writes: writes.length, reason: hold.message }, `apps: paused: the reconcile of App ${label} is held, nothing written`);
    return { gone: false, uid, settled: false, workloads: mine.map((d) => d.metadata!.name!), held: hold.message };
  }
  if (writes.length > 0) await recordAll(kube, writes);
  return {
    gone: false,
    uid,
    // As the App is, not as tend would have written it: the next reconcile decides the same again.
    lastSeen: { generation: app.metadata.generation ?? 0, processesHash: processesHash(app), desiredState: app.spec.desiredState, appRev: revOf(app, APP_REV) },
    lastStopRev: revOf(app, LAST_STOP_APP_REV),
    desiredState: app.spec.desiredState,
    actualState: computed.status.actualState,
    // Nothing to wait for: nothing was written.
    settled: true,
    workloads: mine.map((d) => d.metadata!.name!),
    ...(writes.length > 0 && { observed: writes.map((w) => w.note) }),
    ...(revs.reason && { reason: revs.reason }),
    ...(stopsThrough(revs, app) !== undefined && { stopsThrough: stopsThrough(revs, app) }),
  };
}

async function recordAll(kube: KubeClients, writes: { verb: string; kind: string; target: { apiVersion: string; kind: string; namespace: string; name: string; uid?: string }; note: string; key: string }[]): Promise<void> {
  for (const w of writes) {
    await recordWould(kube, { capability: 'apps', action: 'write', regarding: w.target, note: w.note, dedupKey: `apps/${w.key}`, kind: w.kind, verb: w.verb });
  }
}
