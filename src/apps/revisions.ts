// The revision annotations: what tend.dev/app-rev, tend.dev/last-stop-app-rev
// and spec.desiredState become, given the App as read, the command being
// applied and what tend saw at its last reconcile. This is the seed's mutating
// webhook, moved into the entity workflow. Pure.
import { shortHash, stableJson } from './hash.ts';
import { APP_REV, LAST_STOP_APP_REV, type App, type DesiredState } from './types.ts';

export type AppCommand = { kind: 'stop' } | { kind: 'start' } | { kind: 'rolling' };

/** What the workflow saw of the App when its last reconcile finished. */
export interface LastSeen {
  generation: number;
  /** Hash of spec.processes: a generation that moved while the processes did not means desiredState moved. */
  processesHash: string;
  desiredState: DesiredState;
  appRev: number;
}

export interface RevisionDecision {
  appRev: number;
  lastStopRev: number;
  desiredState: DesiredState;
  /** Why the revisions move, when they do. */
  reason?: 'stop' | 'rolling-restart' | 'stopped-outside-tend' | 'stop-seen-by-watcher' | 'stop-and-start-seen-as-result';
  /**
   * Every STARTED -> STOPPED transition up to this generation is reflected in
   * the revisions once this decision is written (bumped now, or earlier), so
   * a report of one of them that arrives later must not bump again.
   */
  stopsThrough?: number;
}

export function revOf(app: App, key: string): number {
  const n = Number(app.metadata.annotations?.[key]);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

export function processesHash(app: App): string {
  return shortHash(stableJson(app.spec.processes ?? []));
}

/**
 * The revisions for the App as read. `stopSeen` is the highest generation the
 * watcher saw with spec.desiredState STOPPED that no reconcile has accounted
 * for yet: a stop made outside tend that the reconcile may no longer see,
 * because a start (perhaps with other changes) followed it before the read.
 */
export function decideRevisions(app: App, command: AppCommand | undefined, lastSeen: LastSeen | undefined, stopSeen?: number): RevisionDecision {
  const appRev = revOf(app, APP_REV);
  const lastStopRev = revOf(app, LAST_STOP_APP_REV);
  const desired = app.spec.desiredState;
  const generation = app.metadata.generation ?? 0;
  // Read STOPPED: any stop up to this generation is (now) reflected.
  const keep: RevisionDecision = { appRev, lastStopRev, desiredState: desired, ...(desired === 'STOPPED' && { stopsThrough: generation }) };
  const stop = (reason: RevisionDecision['reason'], stopsThrough: number): RevisionDecision =>
    ({ appRev: appRev + 1, lastStopRev: lastStopRev + 1, desiredState: 'STOPPED', reason, stopsThrough });
  // tend is the only writer of app-rev: above what it last saw (or last wrote
  // to status, for a workflow that has seen nothing yet) means this very
  // reconcile already bumped it (an activity retried after its patch
  // landed), so it must not bump twice.
  const statusRev = Number(app.status?.revision);
  const written = lastSeen?.appRev ?? (app.status?.revision !== undefined && Number.isSafeInteger(statusRev) ? statusRev : undefined);
  const alreadyBumped = written !== undefined && appRev > written;
  const observed = app.status?.observedDesiredState ?? lastSeen?.desiredState;
  // A STOPPED version the watcher saw is older than the App read STARTED now: one
  // at this generation (or above) is refuted by the read itself, whoever sent it.
  const seenStop = stopSeen !== undefined && stopSeen > 0 && stopSeen < generation ? stopSeen : undefined;

  // A stop made with kubectl: the webhook's rule, STOPPED while last observed STARTED.
  if (desired === 'STOPPED' && observed === 'STARTED' && !alreadyBumped) {
    return command?.kind === 'start' || command?.kind === 'rolling'
      ? { ...stop('stopped-outside-tend', generation), desiredState: 'STARTED' }
      : stop('stopped-outside-tend', generation);
  }
  // A stop the watcher saw, followed by a start before this read (with other
  // spec changes or not): the webhook's rule applied to the STOPPED version
  // the watcher saw. Already reflected when the App was last observed stopped
  // (its start makes new workloads anyway) or when this reconcile bumped.
  if (desired === 'STARTED' && seenStop !== undefined) {
    const base = applyCommand();
    if (observed === 'STARTED' && !alreadyBumped) {
      return { ...stop('stop-seen-by-watcher', seenStop), desiredState: base.desiredState };
    }
    return { ...base, stopsThrough: Math.max(base.stopsThrough ?? 0, seenStop) };
  }
  // A stop + start made with kubectl between two observations, the watcher
  // not seeing the STOPPED version (down, or relisting): only the result is
  // seen. The generation moved by two or more while the processes are as
  // they were and the App is STARTED as before: desiredState went away and
  // came back. (Processes edited and edited back look the same: they roll too.)
  if (desired === 'STARTED' && lastSeen && lastSeen.desiredState === 'STARTED' && generation >= lastSeen.generation + 2
    && processesHash(app) === lastSeen.processesHash && !alreadyBumped) {
    return { ...stop('stop-and-start-seen-as-result', generation - 1), desiredState: 'STARTED' };
  }
  return applyCommand();

  function applyCommand(): RevisionDecision {
    switch (command?.kind) {
      case 'stop':
        return desired === 'STARTED' && !alreadyBumped ? stop('stop', generation) : { ...keep, desiredState: 'STOPPED', stopsThrough: generation };
      case 'start':
        return { ...keep, desiredState: 'STARTED' };
      case 'rolling':
        // A stopped App has nothing to roll: starting it runs new pods anyway.
        if (desired === 'STARTED' && !alreadyBumped) return { ...keep, appRev: appRev + 1, reason: 'rolling-restart' };
        return { ...keep, desiredState: 'STARTED' };
      default:
        return keep;
    }
  }
}

/** Whether the decision changes the App (annotations missing count as a change: they are written once). */
export function revisionsChange(app: App, d: RevisionDecision): boolean {
  const a = app.metadata.annotations ?? {};
  return a[APP_REV] !== String(d.appRev) || a[LAST_STOP_APP_REV] !== String(d.lastStopRev) || app.spec.desiredState !== d.desiredState;
}
