// What the watcher tells an App's workflow, decided from the App as the
// informer delivers it, and which App workflows are left running for Apps
// that are gone. Pure.
import type { App } from './types.ts';

/** What this watcher already reported for one App (its UID). */
export interface Reported {
  generation: number;
  stoppedGeneration: number;
}

export type WatchAction = { kind: 'changed'; generation: number; stoppedGeneration?: number } | { kind: 'none' };

/** The field manager of tend's status writes: the status.observedGeneration the watcher trusts. */
export const APP_STATUS_MANAGER = 'tend';

/**
 * status.observedGeneration when tend's status writes hold it (the App's managedFields: tend's
 * manager on the status subresource, and no other), else undefined. Another controller's, or a
 * script's, says nothing of what tend reconciled: trusted, one at or above the generation hid
 * every spec change after it, also across a restart.
 */
export function observedByTend(app: App): number | undefined {
  const observed = app.status?.observedGeneration;
  if (observed === undefined) return undefined;
  const owners = (app.metadata.managedFields ?? []).filter((m) => holdsObservedGeneration(m.fieldsV1));
  return owners.length > 0 && owners.every((m) => m.manager === APP_STATUS_MANAGER && m.subresource === 'status') ? observed : undefined;
}

function holdsObservedGeneration(fields: unknown): boolean {
  const status = fields !== null && typeof fields === 'object' ? (fields as Record<string, unknown>)['f:status'] : undefined;
  return status !== null && typeof status === 'object' && 'f:observedGeneration' in status;
}

/**
 * An App needs its workflow when its spec moved past what tend last
 * reconciled (status.observedGeneration, as tend wrote it: observedByTend),
 * including while the watcher was away: the relist after a restart shows it.
 * Writes tend makes to annotations and status do not move the generation, so
 * they cost no signal; an observedGeneration not tend's costs one signal per
 * generation (and per restart), which the workflow answers without a
 * reconcile when it has seen that generation.
 *
 * A version with spec.desiredState STOPPED that tend has not reconciled is
 * reported as such: a start may follow it within milliseconds, and the
 * reconcile reads only the latest version, so without this report a stop +
 * start that also changed the processes would keep the old pods.
 * `reported` is what this watcher already reported for the App.
 */
export function decideWatch(app: App, reported: Reported | undefined): WatchAction {
  if (app.metadata.deletionTimestamp) return { kind: 'none' };
  const generation = app.metadata.generation ?? 0;
  // Equal only: tend writes the generation it read, which the App's can never fall below.
  if (observedByTend(app) === generation) return { kind: 'none' };
  if (reported !== undefined && reported.generation >= generation) return { kind: 'none' };
  const stopped = app.spec?.desiredState === 'STOPPED' ? generation : undefined;
  return { kind: 'changed', generation, ...(stopped !== undefined && { stoppedGeneration: stopped }) };
}

/** Merges a report into what is waiting to be sent for the same App: the highest of each. */
export function mergeReport(a: Reported | undefined, b: Reported): Reported {
  if (!a) return { ...b };
  return { generation: Math.max(a.generation, b.generation), stoppedGeneration: Math.max(a.stoppedGeneration, b.stoppedGeneration) };
}

/** A running App workflow, as its search attribute TendTarget names it. */
export interface AppWorkflowRef {
  namespace: string;
  name: string;
}

/**
 * App workflows still running for Apps that no longer exist, in the
 * namespaces this watcher covers (all when `namespaces` is absent): deletions
 * the watcher missed (it was down, or the deletion signal could not be sent).
 * `apps` is a list taken before the workflows were listed, so an App created
 * in between shows up as missing: its workflow then finds it and goes on.
 */
export function missedDeletions(apps: App[], running: AppWorkflowRef[], namespaces: string[] | undefined): AppWorkflowRef[] {
  const present = new Set(apps.filter((a) => !a.metadata.deletionTimestamp).map((a) => `${a.metadata.namespace}/${a.metadata.name}`));
  return running.filter((w) => (!namespaces || namespaces.includes(w.namespace)) && !present.has(`${w.namespace}/${w.name}`));
}
