// The one watch mechanism in tend: an informer that keeps itself alive, may
// watch several namespaces as one, relists periodically, and merges what the
// watches and the lists deliver by resourceVersion.
//
//   const pods = startInformer<V1Pod>({
//     kc, log,
//     path: '/api/v1/pods',                 // the cluster-wide collection path
//     namespaces: ['a', 'b'],               // optional: one list+watch per namespace; absent = cluster-wide
//     list: (namespace) => namespace        // called with each namespace, or undefined when cluster-wide
//       ? core.listNamespacedPod({ namespace, labelSelector })
//       : core.listPodForAllNamespaces({ labelSelector }),
//     labelSelector, fieldSelector,         // passed to the watches (give the same to `list`)
//     resyncMs: 30_000,                     // optional: relist this often
//     onUpsert: (pod) => ..., onDelete: (pod) => ...,
//     onResync: (all) => ...,               // optional: after each periodic relist, every current object
//   });
//   await pods.synced;                      // every namespace listed and delivered once
//   pods.list(namespace?) / pods.get(name, namespace?) (also as pods.cache)
//   await pods.stop();
//
// Delivery. One cache for all namespaces, keyed by namespace/name, and one set
// of handlers. An object reaches onUpsert only when it is new or newer than the
// cached one (see olderVersion in api.ts: kube-apiserver's resourceVersions
// are compared as numbers; ones that cannot be compared count as newer), so a
// watch event and a list that both carry a version deliver it once, and an
// older version never replaces a newer one. A delete is delivered unless the
// cache holds a newer object of that name (a list that saw it recreated).
// The cache is updated before a handler runs, so handlers may read it.
//
// Resync. Every resyncMs each namespace is listed afresh and merged
// (mergeRelist): listed objects new or newer than the cache go to onUpsert;
// cached objects missing from the list go to onDelete, unless the cache's copy
// is newer than the list (the watch delivered it after the list was taken); a
// listed object whose deletion the watch has delivered meanwhile is not
// brought back. This repairs a watch that stalls without an error, or a
// handler that missed an event, within one period.
//
// Urgency. Several informers in one process may get the same change at once
// (the weeder's watcher and its armed watch both watch a Service's slices):
// the first socket read runs its handlers, and the promises they start, before
// the next socket is read. An informer started with `urgent` counts as such
// while it runs; meanwhile every other informer's watch events go to its
// handlers from a setImmediate (in order; the cache is updated at once), so an
// urgent one's event read in the same turn of the event loop goes first. A
// list's deliveries first run the events still waiting, so order is kept and
// `synced` still means delivered.
//
// Errors. client-node's ListWatch reconnects on its own after a watch times
// out or expires (410), but when a list or watch request fails outright it
// only reports the error and stops. A watch that silently stops is worse than
// a crash, so each namespace's list+watch restarts after a delay that doubles
// while errors go on (retryMs, up to 30 s), for as long as the owner has not
// stopped it. A failed resync is logged and tried again next period.
import * as k8s from '@kubernetes/client-node';
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { errorMessage, olderVersion } from './api.ts';

const MAX_RETRY_MS = 30_000;

/** Urgent informers running in this process (see Urgency in the header). */
let urgentRunning = 0;

/**
 * How one informer hands its watch events to its handlers (see Urgency in the header): at once
 * when it is urgent or no urgent informer runs, else from a setImmediate, in order. `flush` runs
 * what waits (a list's deliveries call it first); `stop` drops it. Exported for its unit test.
 */
export function eventDelivery(urgent: boolean, deliver: (fn: () => void) => void) {
  if (urgent) urgentRunning++;
  let stopped = false;
  let waiting: (() => void)[] = [];
  let timer: NodeJS.Immediate | undefined;
  const flush = () => {
    if (timer) clearImmediate(timer);
    timer = undefined;
    const now = waiting;
    waiting = [];
    for (const fn of now) if (!stopped) deliver(fn);
  };
  return {
    event(fn: () => void) {
      if (urgent || urgentRunning === 0) {
        if (waiting.length > 0) flush();
        deliver(fn);
        return;
      }
      waiting.push(fn);
      timer ??= setImmediate(flush);
    },
    flush,
    stop() {
      if (!stopped && urgent) urgentRunning--;
      stopped = true;
      if (timer) clearImmediate(timer);
      waiting = [];
    },
  };
}

/** Lists the collection (in `namespace`, or cluster-wide when undefined), with the same selectors as the watch. */
export type InformerList<T extends KubernetesObject> = (namespace?: string) => Promise<KubernetesListObject<T>>;

export interface InformerOptions<T extends KubernetesObject> {
  kc: k8s.KubeConfig;
  /**
   * Collection path, e.g. /api/v1/pods. With `namespaces`, the cluster-wide
   * path (/api/v1/pods, /apis/discovery.k8s.io/v1/endpointslices): each
   * namespace watches its own namespaced path.
   */
  path: string;
  /** Lists the collection, with the same selectors; called with the namespace when `namespaces` is given. */
  list: InformerList<T>;
  /**
   * The part of an object that the handlers and the cache's readers use, all that is kept of it:
   * applied to every listed and watched object before anything holds it (the informer's cache,
   * client-node's ListWatch, the handlers), so that the rest is garbage at once. It must keep
   * metadata's name, namespace and resourceVersion. Absent: objects are kept whole. On a large
   * cluster a pod is kilobytes (its managedFields most of all), and a watcher may need a few fields.
   */
  keep?: (obj: T) => T;
  /** Watch these namespaces only (one list+watch each, one cache); absent: cluster-wide. */
  namespaces?: readonly string[];
  labelSelector?: string;
  fieldSelector?: string;
  log: Logger;
  onUpsert(obj: T): void;
  onDelete(obj: T): void;
  /** Relist this often and merge (see the header); absent: no periodic relist. */
  resyncMs?: number;
  /** After each periodic relist has been merged and delivered: every current object. */
  onResync?(all: T[]): void;
  /** After a failed list or watch, when the informer restarts (after its back-off). */
  onRestart?(err: unknown): void;
  /** First delay before restarting after an error; it doubles while errors go on, up to 30 s. */
  retryMs?: number;
  /**
   * Its watch events are waited for by something that must act at once (the
   * weeder's armed watch): while such an informer runs in this process, the
   * others deliver their watch events one turn of the event loop later
   * (setImmediate, in order), so that an urgent informer whose event arrived
   * in the same turn is not kept waiting behind their handlers. See the header.
   */
  urgent?: boolean;
}

/** Reads the informer's current objects. */
export interface InformerCache<T extends KubernetesObject> {
  /** Every object, or those of one namespace. */
  list(namespace?: string): T[];
  /** One object by name (and namespace, for namespaced kinds). */
  get(name: string, namespace?: string): T | undefined;
}

export interface RunningInformer<T extends KubernetesObject> extends InformerCache<T> {
  /** The same reads, for callers written against client-node's ObjectCache. */
  cache: InformerCache<T>;
  /** Resolves once every namespace's first list has been delivered to the handlers. */
  synced: Promise<void>;
  /** Lists every namespace now and merges (what a periodic resync does); resolves when delivered. */
  resync(): Promise<void>;
  stop(): Promise<void>;
}

type Meta = { namespace?: string; name?: string; resourceVersion?: string };
interface Versioned { metadata?: Meta }

const keyOf = (o: Versioned) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
const sameVersion = (a: Meta | undefined, b: Meta | undefined) =>
  a?.resourceVersion !== undefined && a.resourceVersion === b?.resourceVersion;

/**
 * Merges a fresh list into objects the watch delivered, object by object, the
 * newer resourceVersion winning: adds what the watch missed and never rolls
 * back what it saw. Objects missing from the list are kept (see mergeRelist
 * for a merge that also deletes).
 */
export function mergeNewest<T extends Versioned>(cached: readonly T[], listed: readonly T[]): T[] {
  const merged = new Map(cached.map((o) => [keyOf(o), o]));
  for (const o of listed) {
    const have = merged.get(keyOf(o));
    if (!have || olderVersion(have.metadata, o.metadata)) merged.set(keyOf(o), o);
  }
  return [...merged.values()];
}

/**
 * A cache merged by resourceVersion: what each watch event or list does to it,
 * and what the handlers must be told. Pure (no I/O), so the rules are tested
 * on their own.
 */
export class VersionedStore<T extends Versioned> {
  private readonly objects = new Map<string, T>();
  /** Deletions seen while a list of the scope was in flight: key -> resourceVersion of the deletion. */
  private readonly tombstones = new Map<string, string | undefined>();
  /** Lists in flight per scope ('' = cluster-wide). */
  private readonly listing = new Map<string, number>();

  get(name: string, namespace?: string): T | undefined {
    return this.objects.get(`${namespace ?? ''}/${name}`);
  }

  list(namespace?: string): T[] {
    const all = [...this.objects.values()];
    return namespace === undefined || namespace === '' ? all : all.filter((o) => o.metadata?.namespace === namespace);
  }

  /** A watch event added or changed `obj`: whether the handlers are told (new or newer than the cache). */
  upsert(obj: T): boolean {
    const key = keyOf(obj);
    const have = this.objects.get(key);
    if (have && (sameVersion(have.metadata, obj.metadata) || olderVersion(obj.metadata, have.metadata))) return false;
    if (!have && this.tombstones.has(key) && !olderVersion({ resourceVersion: this.tombstones.get(key) }, obj.metadata)) return false;
    this.tombstones.delete(key);
    this.objects.set(key, obj);
    return true;
  }

  /** A watch event deleted `obj`: the cached object to tell the handlers about, if any. */
  remove(obj: T): T | undefined {
    const key = keyOf(obj);
    const have = this.objects.get(key);
    if (!have || olderVersion(obj.metadata, have.metadata)) return undefined; // gone already, or recreated since
    this.objects.delete(key);
    if (this.listingCovers(obj.metadata?.namespace)) this.tombstones.set(key, obj.metadata?.resourceVersion);
    return obj;
  }

  /** A list of `scope` (a namespace, or undefined for everything) is being taken. */
  listStarted(scope: string | undefined): void {
    this.listing.set(scope ?? '', (this.listing.get(scope ?? '') ?? 0) + 1);
  }

  /** The list failed: nothing to merge. */
  listFailed(scope: string | undefined): void {
    this.listDone(scope ?? '');
  }

  /**
   * Merges a list of `scope` taken at `listVersion` (the list's
   * metadata.resourceVersion): returns what to deliver, in order.
   */
  relisted(scope: string | undefined, items: readonly T[], listVersion: string | undefined): { upserts: T[]; deletes: T[] } {
    const s = scope ?? '';
    const listMeta = { resourceVersion: listVersion };
    const listedKeys = new Set(items.map(keyOf));
    const deletes: T[] = [];
    for (const [key, have] of this.objects) {
      if (s !== '' && have.metadata?.namespace !== s) continue;
      if (listedKeys.has(key)) continue;
      if (olderVersion(listMeta, have.metadata)) continue; // delivered by the watch after the list was taken
      this.objects.delete(key);
      deletes.push(have);
    }
    const upserts = items.filter((o) => this.upsert(o));
    for (const [key, version] of this.tombstones) {
      if (s !== '' && !key.startsWith(`${s}/`)) continue;
      if (!olderVersion(listMeta, { resourceVersion: version })) this.tombstones.delete(key); // the list already knows
    }
    this.listDone(s);
    return { upserts, deletes };
  }

  private listDone(s: string): void {
    const n = (this.listing.get(s) ?? 1) - 1;
    if (n > 0) {
      this.listing.set(s, n);
      return;
    }
    this.listing.delete(s);
    // No list covering these deletions in flight: a later one is taken after them.
    for (const key of [...this.tombstones.keys()]) {
      if (!this.listingCovers(key.slice(0, key.indexOf('/')))) this.tombstones.delete(key);
    }
  }

  /** Whether a list that covers objects of `namespace` is in flight. */
  private listingCovers(namespace: string | undefined): boolean {
    return (this.listing.get('') ?? 0) > 0 || (namespace !== undefined && namespace !== '' && (this.listing.get(namespace) ?? 0) > 0);
  }
}

/**
 * The mergeRelist rules on plain arrays: what a relist of `listed` (taken at
 * `listVersion`) does to `cached`. For tests and one-off merges.
 */
export function mergeRelist<T extends Versioned>(cached: readonly T[], listed: readonly T[], listVersion: string | undefined): { objects: T[]; upserts: T[]; deletes: T[] } {
  const store = new VersionedStore<T>();
  for (const o of cached) store.upsert(o);
  store.listStarted(undefined);
  const { upserts, deletes } = store.relisted(undefined, listed, listVersion);
  return { objects: store.list(), upserts, deletes };
}

/**
 * The namespaced form of a cluster-wide collection path:
 * /api/v1/pods -> /api/v1/namespaces/<ns>/pods.
 */
export function namespacedPath(path: string, namespace: string): string {
  const m = /^(\/api\/v1|\/apis\/[^/]+\/[^/]+)\/([^/]+)$/.exec(path);
  if (!m) {
    throw new Error(`informer path ${JSON.stringify(path)}: with namespaces, give the cluster-wide collection path ` +
      '(e.g. /api/v1/pods or /apis/discovery.k8s.io/v1/endpointslices)');
  }
  return `${m[1]}/namespaces/${namespace}/${m[2]}`;
}

/**
 * A Watch that opens nothing once stopped. ListWatch checks whether it was
 * stopped only before it lists; a list or reconnect back-off in progress when
 * it is stopped goes on to open a watch, which would hold a connection (and
 * the process) open.
 */
class StoppableWatch extends k8s.Watch {
  stopped = false;
  private readonly onEvent: (phase: string, obj: unknown) => void;
  private readonly keep: ((obj: never) => unknown) | undefined;

  constructor(kc: k8s.KubeConfig, onEvent: (phase: string, obj: unknown) => void, keep?: (obj: never) => unknown) {
    super(kc);
    this.onEvent = onEvent;
    this.keep = keep;
  }

  override async watch(...args: Parameters<k8s.Watch['watch']>): Promise<AbortController> {
    if (this.stopped) return new AbortController();
    const [path, params, callback, done] = args;
    // Every event goes to the informer's store as well as to ListWatch: a
    // deletion of an object only a resync had seen is one ListWatch's own
    // cache would not report.
    return super.watch(path, params, (phase: string, obj: unknown, watchObj?: unknown) => {
      // Only objects are trimmed: an ERROR's Status (410 Gone starts a new list) and a BOOKMARK go as they came.
      const kept = this.keep && OBJECT_PHASES.has(phase) && obj && typeof obj === 'object' ? this.keep(obj as never) : obj;
      callback(phase, kept, watchObj);
      this.onEvent(phase, kept);
    }, done);
  }
}

const OBJECT_PHASES = new Set(['ADDED', 'MODIFIED', 'DELETED']);

export function startInformer<T extends KubernetesObject>(opts: InformerOptions<T>): RunningInformer<T> {
  if (opts.namespaces !== undefined) {
    if (opts.namespaces.length === 0) throw new Error(`informer ${opts.path}: namespaces is empty; omit it to watch every namespace`);
    const bad = opts.namespaces.find((n) => typeof n !== 'string' || n === '');
    if (bad !== undefined) throw new Error(`informer ${opts.path}: namespaces holds ${JSON.stringify(bad)}, not a namespace name`);
  }
  if (opts.resyncMs !== undefined && !(Number.isFinite(opts.resyncMs) && opts.resyncMs > 0)) {
    throw new Error(`informer ${opts.path}: resyncMs must be a positive number of milliseconds, not ${opts.resyncMs}`);
  }
  const scopes: (string | undefined)[] = opts.namespaces ? [...new Set(opts.namespaces)] : [undefined];
  const store = new VersionedStore<T>();
  let stopped = false;

  const deliver = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      opts.log.warn({ path: opts.path, err: errorMessage(err) }, 'informer handler failed');
    }
  };
  // Watch events wait for the next turn while an urgent informer runs (see Urgency).
  const events = eventDelivery(opts.urgent === true, deliver);
  const upsert = (obj: T) => {
    if (!stopped && store.upsert(obj)) events.event(() => opts.onUpsert(obj));
  };
  const remove = (obj: T) => {
    const gone = stopped ? undefined : store.remove(obj);
    if (gone) events.event(() => opts.onDelete(gone));
  };
  /** Lists one scope and merges it into the store, delivering the differences. */
  const relist = async (scope: string | undefined): Promise<KubernetesListObject<T>> => {
    store.listStarted(scope);
    let result: KubernetesListObject<T>;
    try {
      result = await opts.list(scope);
    } catch (err) {
      store.listFailed(scope);
      throw err;
    }
    let items = result.items ?? [];
    if (opts.keep) {
      items = items.map(opts.keep);
      result = { ...result, items };
    }
    if (scope !== undefined && items.some((o) => o.metadata?.namespace !== scope)) {
      // A list that ignores its namespace argument: keep the informer to what it watches.
      opts.log.warn({ path: opts.path, namespace: scope }, 'the list for one namespace returned objects of others; they are ignored (list must honour its namespace argument)');
      items = items.filter((o) => o.metadata?.namespace === scope);
      result = { ...result, items };
    }
    const { upserts, deletes } = store.relisted(scope, items, result.metadata?.resourceVersion);
    events.flush();
    if (!stopped) {
      for (const o of deletes) deliver(() => opts.onDelete(o));
      for (const o of upserts) deliver(() => opts.onUpsert(o));
    }
    return result;
  };

  const watches = scopes.map((scope) => {
    const path = scope === undefined ? opts.path : namespacedPath(opts.path, scope);
    const firstRetryMs = opts.retryMs ?? 1000;
    let retryMs = firstRetryMs;
    let lastFailure = 0;
    let retry: NodeJS.Timeout | undefined;
    let markSynced!: () => void;
    const synced = new Promise<void>((resolve) => (markSynced = resolve));
    // ListWatch's own list (at start and after a 410) is merged here.
    const list = async () => {
      const result = await relist(scope);
      markSynced();
      return result;
    };
    // ListWatch runs the list, watch and reconnect loop; what the handlers
    // see comes from the list (merged in `list`) and the watch events
    // themselves, through the store, not from ListWatch's own cache.
    const watch = new StoppableWatch(opts.kc, (phase, obj) => {
      if (phase === 'ADDED' || phase === 'MODIFIED') upsert(obj as T);
      else if (phase === 'DELETED') remove(obj as T);
    }, opts.keep as ((obj: never) => unknown) | undefined);
    const informer = new k8s.ListWatch<T>(path, watch, list, false, opts.labelSelector, opts.fieldSelector);
    const restartLater = (err: unknown) => {
      if (stopped) return;
      // A failure long after the last one starts the back-off over: the watch
      // was healthy in between.
      const now = Date.now();
      if (now - lastFailure > 2 * MAX_RETRY_MS) retryMs = firstRetryMs;
      lastFailure = now;
      opts.log.warn({ path, err: errorMessage(err) }, `watch failed; restarting in ${retryMs} ms`);
      opts.onRestart?.(err);
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
      synced,
      async stop() {
        watch.stopped = true;
        clearTimeout(retry);
        await informer.stop();
      },
    };
  });

  let resyncing: Promise<void> | undefined;
  const resync = () => {
    resyncing ??= (async () => {
      try {
        const results = await Promise.allSettled(scopes.map((scope) => relist(scope)));
        for (const [i, r] of results.entries()) {
          if (r.status === 'rejected') opts.log.warn({ path: opts.path, namespace: scopes[i], err: errorMessage(r.reason) }, 'resync failed; trying again next period');
        }
        if (!stopped && opts.onResync) deliver(() => opts.onResync!(store.list()));
      } finally {
        resyncing = undefined;
      }
    })();
    return resyncing;
  };
  const timer = opts.resyncMs === undefined ? undefined : setInterval(() => void resync(), opts.resyncMs);

  const cache: InformerCache<T> = {
    list: (namespace) => store.list(namespace),
    get: (name, namespace) => store.get(name, namespace),
  };
  return {
    ...cache,
    cache,
    synced: Promise.all(watches.map((w) => w.synced)).then(() => undefined),
    resync,
    async stop() {
      stopped = true;
      events.stop();
      clearInterval(timer);
      await Promise.all(watches.map((w) => w.stop()));
    },
  };
}
