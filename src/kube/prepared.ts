// A pod DELETE with a UID precondition, prepared ahead so that sending it
// costs only the request itself: the weeder's armed watch sends one the moment
// its upstream is ready, and every microsecond between the watch event and
// the request leaving is reaction time.
//
// client-node's generated deleteNamespacedPod, on every call, decodes the
// kubeconfig's certificates, asks for the authorization header, finds the
// dispatcher, runs its middleware chain and serializes the body through its
// ObjectSerializer, each step behind its own promise, and deserializes the
// answer (a whole Pod) after; bench/weeder-probe.ts measures what that costs.
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

export interface PreparedPodDelete {
  /**
   * Resolves the headers and dispatcher now (when older than AUTH_TTL_MS), so
   * that the next delete needs no await before it is sent, and opens an idle
   * connection to the API server when the pool has none: true when it opened one.
   */
  prepare(): Promise<boolean>;
  /** Deletes the pod only while it is the one with `pod.uid`: the same outcomes as deletePodIfSameUid. */
  delete(pod: ObjectRef): Promise<DeleteOutcome>;
}

interface Auth { at: number; server: string; headers: Record<string, string>; dispatcher: Dispatcher | undefined }

export function preparedPodDelete(kc: k8s.KubeConfig): PreparedPodDelete {
  let auth: Auth | undefined;
  let resolving: Promise<Auth> | undefined;
  const resolve = (): Promise<Auth> => {
    resolving ??= (async () => {
      try {
        const server = kc.getCurrentCluster()?.server;
        if (!server) throw new Error('No currently active cluster');
        const ctx = new k8s.RequestContext(server, k8s.HttpMethod.DELETE);
        await kc.applySecurityAuthentication(ctx);
        const headers: Record<string, string> = { ...ctx.getHeaders(), 'content-type': 'application/json', accept: 'application/json' };
        auth = { at: Date.now(), server: server.replace(/\/+$/, ''), headers, dispatcher: ctx.getDispatcher() as Dispatcher | undefined };
        return auth;
      } finally {
        resolving = undefined;
      }
    })();
    return resolving;
  };
  const fresh = () => (auth && Date.now() - auth.at < AUTH_TTL_MS ? auth : undefined);

  const send = async (a: Auth, pod: ObjectRef, body: object): Promise<{ status: number; body: string }> => {
    const path = `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}`;
    const res = await request(a.server + path, {
      method: 'DELETE', headers: a.headers, body: JSON.stringify(body),
      ...(a.dispatcher ? { dispatcher: a.dispatcher } : {}),
    });
    return { status: res.statusCode, body: await res.body.text() };
  };

  let warming: Promise<boolean> | undefined;
  /** An idle connection in the pool the delete will use, opened by a GET /version when there is none. */
  const warm = (a: Auth): Promise<boolean> => {
    warming ??= (async () => {
      try {
        // An undici Agent reports per origin; another dispatcher (a proxy's) is left as it is.
        const stats = (a.dispatcher as { stats?: Record<string, { free?: number }> } | undefined)?.stats;
        if (!stats || (stats[new URL(a.server).origin]?.free ?? 0) > 0) return false;
        // The delete's own headers (credentials among them), less its body's type.
        const headers = Object.fromEntries(Object.entries(a.headers).filter(([k]) => k.toLowerCase() !== 'content-type'));
        const res = await request(`${a.server}/version`, {
          method: 'GET', headers,
          ...(a.dispatcher ? { dispatcher: a.dispatcher } : {}),
        });
        await res.body.text();
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
    async delete(pod) {
      checkRef('preparedPodDelete', pod);
      // The body (the UID precondition) and the outcomes are deleteIfSameUid's, as for every delete.
      return deleteIfSameUid(async (body) => {
        let answer = await send(fresh() ?? await resolve(), pod, body);
        if (answer.status === 401) answer = await send(await resolve(), pod, body);
        if (answer.status >= 200 && answer.status < 300) return;
        // As client-node throws it: the body as text (errorMessage reads the Status's message from it).
        throw new k8s.ApiException<string>(answer.status, answer.status === 401 ? 'Unauthorized' : 'Unknown API Status Code!', answer.body, {});
      }, pod.uid);
    },
  };
}
