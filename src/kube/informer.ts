// An informer that keeps itself alive: the one watch mechanism in tend.
//
// client-node's ListWatch reconnects on its own after a watch times out or
// expires (410), but when a list or watch request fails outright it only
// reports the error and stops. A kubelet that silently stops watching is worse
// than one that crashes, so restart it after a short delay, for as long as the
// owner has not stopped it.
import * as k8s from '@kubernetes/client-node';
import type { KubernetesObject, ListPromise } from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { errorMessage } from './api.ts';

const MAX_RETRY_MS = 30_000;

export interface InformerOptions<T extends KubernetesObject> {
  kc: k8s.KubeConfig;
  /** Collection path, e.g. /api/v1/pods. */
  path: string;
  /** Lists the collection, with the same selectors. */
  list: ListPromise<T>;
  labelSelector?: string;
  fieldSelector?: string;
  log: Logger;
  onUpsert(obj: T): void;
  onDelete(obj: T): void;
  /** First delay before restarting after an error; it doubles while errors go on, up to 30 s. */
  retryMs?: number;
}

export interface RunningInformer<T extends KubernetesObject> {
  cache: k8s.ObjectCache<T>;
  /** Resolves once the first list has been delivered to the handlers. */
  synced: Promise<void>;
  stop(): Promise<void>;
}

/**
 * A Watch that opens nothing once stopped. ListWatch checks whether it was
 * stopped only before it lists; a list or reconnect back-off in progress when
 * it is stopped goes on to open a watch, which would hold a connection (and
 * the process) open.
 */
class StoppableWatch extends k8s.Watch {
  stopped = false;

  override async watch(...args: Parameters<k8s.Watch['watch']>): Promise<AbortController> {
    if (this.stopped) return new AbortController();
    return super.watch(...args);
  }
}

export function startInformer<T extends KubernetesObject>(opts: InformerOptions<T>): RunningInformer<T> {
  const firstRetryMs = opts.retryMs ?? 1000;
  let retryMs = firstRetryMs;
  let lastFailure = 0;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let markSynced!: () => void;
  const synced = new Promise<void>((resolve) => (markSynced = resolve));

  // ListWatch hands a listed page to the handlers synchronously after the list
  // promise settles; setImmediate runs after that, so "synced" means the
  // handlers have seen every listed object.
  const list: ListPromise<T> = async () => {
    const result = await opts.list();
    setImmediate(markSynced);
    return result;
  };
  const watch = new StoppableWatch(opts.kc);
  const informer = new k8s.ListWatch<T>(opts.path, watch, list, false, opts.labelSelector, opts.fieldSelector);
  informer.on('add', (obj) => opts.onUpsert(obj));
  informer.on('update', (obj) => opts.onUpsert(obj));
  informer.on('delete', (obj) => opts.onDelete(obj));
  const restartLater = (err: unknown) => {
    if (stopped) return;
    // A failure long after the last one starts the back-off over: the watch
    // was healthy in between.
    const now = Date.now();
    if (now - lastFailure > 2 * MAX_RETRY_MS) retryMs = firstRetryMs;
    lastFailure = now;
    opts.log.warn({ path: opts.path, err: errorMessage(err) }, `watch failed; restarting in ${retryMs} ms`);
    clearTimeout(retry);
    retry = setTimeout(run, retryMs);
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
  };
  const run = () => {
    if (!stopped) informer.start().catch(restartLater);
  };
  informer.on('error', restartLater);
  run();

  return {
    cache: informer,
    synced,
    async stop() {
      stopped = true;
      watch.stopped = true;
      clearTimeout(retry);
      await informer.stop();
    },
  };
}
