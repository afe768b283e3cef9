// What the watcher tells an App's workflow, decided from the App as the
// informer delivers it. Pure.
import type { App } from './types.ts';

export type WatchAction = { kind: 'changed'; generation: number } | { kind: 'none' };

/**
 * An App needs its workflow when its spec moved past what tend last
 * reconciled (status.observedGeneration), including while the watcher was
 * away: the relist after a restart shows it. Writes tend makes to annotations
 * and status do not move the generation, so they cost no signal.
 * `lastSignalled` is the generation this watcher already reported.
 */
export function decideWatch(app: App, lastSignalled: number | undefined): WatchAction {
  if (app.metadata.deletionTimestamp) return { kind: 'none' };
  const generation = app.metadata.generation ?? 0;
  if (app.status?.observedGeneration === generation) return { kind: 'none' };
  if (lastSignalled !== undefined && lastSignalled >= generation) return { kind: 'none' };
  return { kind: 'changed', generation };
}
