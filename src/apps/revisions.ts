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
  reason?: 'stop' | 'rolling-restart' | 'stopped-outside-tend' | 'stop-and-start-seen-as-result';
}

export function revOf(app: App, key: string): number {
  const n = Number(app.metadata.annotations?.[key]);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

export function processesHash(app: App): string {
  return shortHash(stableJson(app.spec.processes ?? []));
}

export function decideRevisions(app: App, command: AppCommand | undefined, lastSeen: LastSeen | undefined): RevisionDecision {
  const appRev = revOf(app, APP_REV);
  const lastStopRev = revOf(app, LAST_STOP_APP_REV);
  const desired = app.spec.desiredState;
  const keep: RevisionDecision = { appRev, lastStopRev, desiredState: desired };
  const stop = (reason: RevisionDecision['reason']): RevisionDecision => ({ appRev: appRev + 1, lastStopRev: lastStopRev + 1, desiredState: 'STOPPED', reason });
  // tend is the only writer of app-rev: one above what it last saw means this
  // very reconcile already bumped it (an activity retried after its patch
  // landed), so it must not bump twice.
  const alreadyBumped = lastSeen !== undefined && appRev > lastSeen.appRev;
  const observed = app.status?.observedDesiredState ?? lastSeen?.desiredState;
  const generation = app.metadata.generation ?? 0;

  // A stop made with kubectl: the webhook's rule, STOPPED while last observed STARTED.
  if (desired === 'STOPPED' && observed === 'STARTED' && !alreadyBumped) {
    return command?.kind === 'start' || command?.kind === 'rolling'
      ? { ...stop('stopped-outside-tend'), desiredState: 'STARTED' }
      : stop('stopped-outside-tend');
  }
  // A stop + start made with kubectl between two observations: only the
  // result is seen. The generation moved by two or more while the processes
  // are as they were and the App is STARTED as before: desiredState went away
  // and came back. (Processes edited and edited back look the same: they roll too.)
  if (desired === 'STARTED' && lastSeen && lastSeen.desiredState === 'STARTED' && generation >= lastSeen.generation + 2
    && processesHash(app) === lastSeen.processesHash && !alreadyBumped) {
    return { ...stop('stop-and-start-seen-as-result'), desiredState: 'STARTED' };
  }
  switch (command?.kind) {
    case 'stop':
      return desired === 'STARTED' && !alreadyBumped ? stop('stop') : { ...keep, desiredState: 'STOPPED' };
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

/** Whether the decision changes the App (annotations missing count as a change: they are written once). */
export function revisionsChange(app: App, d: RevisionDecision): boolean {
  const a = app.metadata.annotations ?? {};
  return a[APP_REV] !== String(d.appRev) || a[LAST_STOP_APP_REV] !== String(d.lastStopRev) || app.spec.desiredState !== d.desiredState;
}
