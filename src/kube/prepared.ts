// Requests to the API server prepared ahead, so that sending one costs only the
// request itself: the weeder's armed watch sends a pod DELETE the moment its
// upstream is ready (every microsecond between the watch event and the request
// leaving is reaction time), and a zone outage's first marks are thousands of
// pods/status patches and a LIST of each tainted node's pods, on the same two
// cores as the API server that must write them.
//
// client-node's generated deleteNamespacedPod, on every call, decodes the
// kubeconfig's certificates, asks for the authorization header, finds the
// dispatcher, runs its middleware chain and serializes the body through its
// ObjectSerializer, each step behind its own promise, and deserializes the
// answer (a whole Pod, through its type map) after; bench/weeder-probe.ts
// measures what that costs. In a zone outage's marking that was most of the
// worker's own CPU (npm run bench -- taint-storm --profile DIR).
// Here the headers and the dispatcher come from client-node itself
// (applySecurityAuthentication, the same as every other call), resolved by
// prepare() off the hot path and kept for AUTH_TTL_MS; a 401 (a token
// rotated meanwhile) resolves them afresh and sends once more.
//
// A connection ready for it. Over HTTP/1.1 (one request at a time per
// connection) every watch holds a connection of the same pool for as long as
// it runs: the armed watch's own watches start right after its lists and take
// the connections those lists left idle, and a DELETE that finds no idle
// connection opens one (TCP and TLS handshakes before the request can leave:
// milliseconds, many more on a loaded machine). Where the API server speaks
// HTTP/2 to undici, every call shares one connection and this costs nothing.
// prepare() therefore
// also makes sure the pool has an idle connection to the API server (a GET
// /version, which every authenticated identity may read, when it has none);
// the armed watch calls it when it starts and at every heartbeat, and idle
// connections are kept 60 s (KEEP_ALIVE_MS in client.ts). The answer is
// read as client-node reads it: 2xx a deletion, 404 or 409 (the UID
// precondition failed: another pod under that name) gone, anything else
// thrown as client-node's ApiException (the body as text, as it has it), so
// statusOf and errorMessage read it.
import * as k8s from '@kubernetes/client-node';
import { request, type Dispatcher } from 'undici';
import { checkRef, deleteIfSameUid, type DeleteOutcome, type ObjectRef } from './writes.ts';

/** How long resolved credentials are used before prepare() resolves them again. */
export const AUTH_TTL_MS = 60_000;

interface Auth { at: number; server: string; headers: Record<string, string>; dispatcher: Dispatcher | undefined }

/** An answer: its status and its body as text. */
interface Answer { status: number; body: string }

/** Requests with the kubeconfig's credentials, resolved ahead and kept for AUTH_TTL_MS. */
export interface PreparedRequests {
  /**
   * Resolves the headers and dispatcher now (when older than AUTH_TTL_MS), so
   * that the next request needs no await before it is sent, and opens an idle
   * connection to the API server when the pool has none: true when it opened one.
   */
  prepare(): Promise<boolean>;
  /**
   * Sends the request (a body as JSON, of `type`); a 401 resolves the
   * credentials afresh and sends once more. `read: false` leaves a 2xx answer's
   * body unread (drained, not decoded). Any status but 2xx is thrown as
   * client-node throws it (ApiException, the body as text), so that statusOf,
   * isNotFound and errorMessage read it as any other call's error.
   */
  send(method: string, path: string, opts?: { body?: unknown; type?: string; read?: boolean }): Promise<string>;
}

export function preparedRequests(kc: k8s.KubeConfig): PreparedRequests {
  let auth: Auth | undefined;
  let resolving: Promise<Auth> | undefined;
  const resolve = (): Promise<Auth> => {
    resolving ??= (async () => {
      try {
        const server = kc.getCurrentCluster()?.server;
        if (!server) throw new Error('No currently active cluster');
        const ctx = new k8s.RequestContext(server, k8s.HttpMethod.GET);
        await kc.applySecurityAuthentication(ctx);
        const headers: Record<string, string> = { ...ctx.getHeaders(), accept: 'application/json' };
        auth = { at: Date.now(), server: server.replace(/\/+$/, ''), headers, dispatcher: ctx.getDispatcher() as Dispatcher | undefined };
        return auth;
      } finally {
        resolving = undefined;
      }
    })();
    return resolving;
  };
  const fresh = () => (auth && Date.now() - auth.at < AUTH_TTL_MS ? auth : undefined);

  const once = async (a: Auth, method: string, path: string, text: string | undefined, type: string, read: boolean): Promise<Answer> => {
    const res = await request(a.server + path, {
      method: method as Dispatcher.HttpMethod,
      headers: text === undefined ? a.headers : { ...a.headers, 'content-type': type },
      ...(text !== undefined ? { body: text } : {}),
      ...(a.dispatcher ? { dispatcher: a.dispatcher } : {}),
    });
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    if (ok && !read) {
      await res.body.dump();
      return { status: res.statusCode, body: '' };
    }
    return { status: res.statusCode, body: await res.body.text() };
  };

  let warming: Promise<boolean> | undefined;
  /** An idle connection in the pool the requests will use, opened by a GET /version when there is none. */
  const warm = (a: Auth): Promise<boolean> => {
    warming ??= (async () => {
      try {
        // An undici Agent reports per origin; another dispatcher (a proxy's) is left as it is.
        const stats = (a.dispatcher as { stats?: Record<string, { free?: number }> } | undefined)?.stats;
        if (!stats || (stats[new URL(a.server).origin]?.free ?? 0) > 0) return false;
        await once(a, 'GET', '/version', undefined, '', true);
        return true;
      } finally {
        warming = undefined;
      }
    })();
    return warming;
  };

  return {
    async prepare() {
      return warm(fresh() ?? await resolve());
    },
    async send(method, path, opts = {}) {
      const text = opts.body === undefined ? undefined : JSON.stringify(opts.body);
      const type = opts.type ?? 'application/json';
      const read = opts.read ?? true;
      let answer = await once(fresh() ?? await resolve(), method, path, text, type, read);
      if (answer.status === 401) answer = await once(await resolve(), method, path, text, type, read);
      if (answer.status >= 200 && answer.status < 300) return answer.body;
      // As client-node throws it: the body as text (errorMessage reads the Status's message from it).
      throw new k8s.ApiException<string>(answer.status, answer.status === 401 ? 'Unauthorized' : 'Unknown API Status Code!', answer.body, {});
    },
  };
}

const podPath = (namespace: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;

export interface PreparedPodDelete {
  /** As PreparedRequests.prepare: the credentials resolved, a connection ready. */
  prepare(): Promise<boolean>;
  /** Deletes the pod only while it is the one with `pod.uid`: the same outcomes as deletePodIfSameUid. */
  delete(pod: ObjectRef): Promise<DeleteOutcome>;
}

/** The pod delete on `requests` (a KubeClients' own: one set of credentials and connections for all its prepared calls). */
export function preparedPodDelete(requests: PreparedRequests): PreparedPodDelete {
  return {
    prepare: () => requests.prepare(),
    async delete(pod) {
      checkRef('preparedPodDelete', pod);
      // The body (the UID precondition) and the outcomes are deleteIfSameUid's, as for every delete.
      return deleteIfSameUid(async (body) => {
        await requests.send('DELETE', podPath(pod.namespace, pod.name), { body });
      }, pod.uid);
    },
  };
}

/** The Node reads of a zone outage's marking and of the taint watch, without client-node's decoding of whole Nodes. */
export interface PreparedNodes {
  /**
   * A Node's taints, by a LIST of that one name (tend's rights on Nodes are list and watch, the
   * watcher's informer): undefined when no Node has that name, [] when it has none.
   */
  taints(name: string): Promise<k8s.V1Taint[] | undefined>;
  /** A LIST of Nodes, with the query's selectors, limit and continue token. */
  list(query: ListQuery): Promise<ListPage<k8s.V1Node>>;
}

export function preparedNodes(requests: PreparedRequests): PreparedNodes {
  return {
    list: (query) => listPage(requests, '/api/v1/nodes', query),
    async taints(name) {
      const page = await listPage<k8s.V1Node>(requests, '/api/v1/nodes', { fieldSelector: `metadata.name=${name}` });
      const node = page.items.find((n) => n.metadata?.name === name);
      return node ? (node.spec?.taints ?? []) : undefined;
    },
  };
}

/** A page of a LIST as the API server sends it: plain JSON (times are strings, as in any object read raw). */
export interface ListPage<T> { items: T[]; metadata?: { _continue?: string; resourceVersion?: string } }
export type PodPage = ListPage<k8s.V1Pod>;

/** A LIST's query: its selectors, page size and continue token (client-node's name for it). */
export interface ListQuery { labelSelector?: string; fieldSelector?: string; limit?: number; _continue?: string }

/** The pod reads and writes of a zone outage's marking, without client-node's per-call work. */
export interface PreparedPods {
  /** A strategic merge patch of the pod's status (the answer, the whole pod, is not read). */
  patchStatus(namespace: string, name: string, body: object): Promise<void>;
  /** A LIST of pods (of a namespace, or of all when none is given), with the query's selectors, limit and continue token. */
  list(query: ListQuery & { namespace?: string }): Promise<PodPage>;
}

/** A pod LIST's query, as PreparedPods.list takes it, without the continue token. */
export type PodQuery = Omit<Parameters<PreparedPods['list']>[0], '_continue'>;

/**
 * Every page of one LIST, in order, following its continue tokens; `send` makes each request
 * (a caller's retry policy around it, or none).
 */
export async function* listPages<Q extends ListQuery, T>(
  list: (query: Q) => Promise<ListPage<T>>, query: Omit<Q, '_continue'>,
  send: (request: () => Promise<ListPage<T>>) => Promise<ListPage<T>> = (request) => request(),
): AsyncGenerator<ListPage<T>> {
  let next: string | undefined;
  do {
    const page = await send(() => list({ ...query, ...(next ? { _continue: next } : {}) } as Q));
    yield page;
    next = page.metadata?._continue || undefined;
  } while (next);
}

/** One page of a LIST at `base`, read as plain JSON, its continue token under client-node's name for it. */
async function listPage<T>(requests: PreparedRequests, base: string, query: ListQuery): Promise<ListPage<T>> {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries({ labelSelector: query.labelSelector, fieldSelector: query.fieldSelector, limit: query.limit, continue: query._continue })) {
    if (v !== undefined && v !== '') params.set(k, String(v));
  }
  const q = params.toString();
  const page = JSON.parse(await requests.send('GET', q ? `${base}?${q}` : base)) as { items?: T[]; metadata?: { continue?: string; resourceVersion?: string } };
  const { continue: next, resourceVersion } = page.metadata ?? {};
  return { items: page.items ?? [], metadata: { ...(next ? { _continue: next } : {}), ...(resourceVersion ? { resourceVersion } : {}) } };
}

export function preparedPods(requests: PreparedRequests): PreparedPods {
  return {
    async patchStatus(namespace, name, body) {
      await requests.send('PATCH', `${podPath(namespace, name)}/status`, { body, type: k8s.PatchStrategy.StrategicMergePatch, read: false });
    },
    list: ({ namespace, ...query }) =>
      listPage(requests, namespace === undefined ? '/api/v1/pods' : `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`, query),
  };
}
