// The watcher's informers, counted and checked: each delivered object counts
// tend_watcher_events_total, each restart after a failed list or watch counts
// tend_watcher_informer_restarts_total, and /readyz waits for every
// informer's first list, which tend_watcher_informer_synced shows too.
import type { KubernetesObject } from '@kubernetes/client-node';
import { startInformer, type InformerOptions, type RunningInformer } from '../kube/informer.ts';
import { health, type Health } from '../http/health.ts';
import { watcherEvents, watcherInformerRestarts, watcherInformerSynced } from './registry.ts';

/** startInformer, counted and registered with /readyz (ready once its first list is delivered) until stopped. */
export function startWatchedInformer<T extends KubernetesObject>(
  capability: string, resource: string, opts: InformerOptions<T>, checks: Health = health,
): RunningInformer<T> {
  const labels = { capability, resource };
  const informer = startInformer<T>({
    ...opts,
    onRestart: (err) => {
      watcherInformerRestarts.inc(labels);
      opts.onRestart?.(err);
    },
    onUpsert: (obj) => {
      watcherEvents.inc({ ...labels, kind: 'upsert' });
      opts.onUpsert(obj);
    },
    onDelete: (obj) => {
      watcherEvents.inc({ ...labels, kind: 'delete' });
      opts.onDelete(obj);
    },
  });
  const check = checks.settable(`informer ${capability}/${resource}`, { alive: true, ready: false, reason: 'first list not done yet' });
  watcherInformerSynced.set(labels, 0);
  let stopped = false;
  void informer.synced.then(() => {
    check.set({ alive: true, ready: true });
    if (!stopped) watcherInformerSynced.set(labels, 1);
  });
  return {
    ...informer,
    stop: async () => {
      stopped = true;
      check.remove();
      watcherInformerSynced.remove(labels);
      await informer.stop();
    },
  };
}
