// The one place tend builds Kubernetes clients. Everything that talks to the
// API server gets its KubeConfig from here, so that the choice between a
// kubeconfig file and in-cluster credentials is made once.
import * as k8s from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Agent } from 'undici';
import { ConfigError } from '../errors.ts';
import { expandHome, kubeSettingName, KubeUnreachableError, statusOf } from './basics.ts';
import { preparedNodes, preparedPods, preparedRequests, type PreparedNodes, type PreparedPods, type PreparedRequests } from './prepared.ts';

export { expandHome, kubeSettingsFrom, KubeUnreachableError, statusOf } from './basics.ts';

export interface KubeOptions {
  /** Path to a kubeconfig file; `~` is expanded. In-cluster credentials when absent. */
  kubeconfig?: string;
  /** Context to use from the kubeconfig; its current context when absent. */
  context?: string;
}

/** A kubeconfig that cannot be used: a configuration error (exit 2) naming the setting, the file and why. */
export class KubeconfigError extends ConfigError {
  constructor(setting: string, message: string) {
    super(setting, [{ path: setting, message }]);
    this.message = `${setting}: ${message}`;
  }
}
const kubeconfigProblem = (setting: string, message: string) => new KubeconfigError(setting, message);

export function loadKubeConfig(opts: KubeOptions = {}): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (opts.kubeconfig) {
    const path = expandHome(opts.kubeconfig);
    try {
      kc.loadFromFile(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'file not found' : code === 'EACCES' ? 'permission denied'
        : code === 'EISDIR' ? 'is a folder, not a file' : `not a kubeconfig (${(err as Error).message.split('\n')[0]})`;
      throw kubeconfigProblem(kubeSettingName(opts, 'kubeconfig'), `${opts.kubeconfig}: ${why}`);
    }
  } else loadImplicit(kc, opts);
  if (opts.context) {
    if (!kc.getContextObject(opts.context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw kubeconfigProblem(kubeSettingName(opts, 'context'), `no context "${opts.context}" in ${opts.kubeconfig ?? 'the kubeconfig'}` +
        ` (${known.length ? `its contexts: ${known.join(', ')}` : 'it has no contexts'})`);
    }
    kc.setCurrentContext(opts.context);
  }
  if (opts.kubeconfig && !kc.getCurrentCluster()) {
    throw kubeconfigProblem(kubeSettingName(opts, 'kubeconfig'), `${opts.kubeconfig}: not a kubeconfig with a cluster (no current-context naming a cluster${opts.context ? ` for context "${opts.context}"` : ''})`);
  }
  reuseConnections(kc);
  return kc;
}

/** Where a Pod's ServiceAccount credentials are mounted (client-node's loadFromCluster reads them there). */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';
const SERVICE_ACCOUNT_CA = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';

/**
 * No kubeconfig given: in-cluster credentials when in a Pod, else $KUBECONFIG, else ~/.kube/config,
 * as kubectl. What is missing or broken is a configuration error naming where it looked, never the
 * client library's fallback to http://localhost:8080 or its stack.
 */
function loadImplicit(kc: k8s.KubeConfig, opts: KubeOptions): void {
  const setting = kubeSettingName(opts, 'kubeconfig');
  const why = (err: unknown) => {
    const code = (err as NodeJS.ErrnoException).code;
    const path = (err as NodeJS.ErrnoException).path;
    return code === 'ENOENT' ? `${path ?? 'a file'} not found` : code === 'EACCES' ? `${path ?? 'a file'}: permission denied` : (err as Error).message.split('\n')[0];
  };
  if (process.env.KUBERNETES_SERVICE_HOST) {
    const inCluster = 'not set, and the in-cluster credentials (KUBERNETES_SERVICE_HOST is set) cannot be used';
    if (!/^\d+$/.test(process.env.KUBERNETES_SERVICE_PORT ?? '')) {
      throw kubeconfigProblem(setting, `${inCluster}: KUBERNETES_SERVICE_PORT is ${process.env.KUBERNETES_SERVICE_PORT === undefined ? 'not set' : `"${process.env.KUBERNETES_SERVICE_PORT}", not a port`}`);
    }
    const missing = [SERVICE_ACCOUNT_TOKEN, SERVICE_ACCOUNT_CA].filter((f) => !existsSync(f));
    if (missing.length) throw kubeconfigProblem(setting, `${inCluster}: ${missing.join(' and ')} not found`);
    kc.loadFromCluster();
    return;
  }
  const env = process.env.KUBECONFIG;
  const files = env ? env.split(delimiter).filter(Boolean) : [join(homedir(), '.kube', 'config')];
  const from = env ? `KUBECONFIG=${env}` : '~/.kube/config';
  if (!files.some((f) => existsSync(f))) {
    throw kubeconfigProblem(setting, `not set, and ${from} ${files.length > 1 ? 'names no file that exists' : 'does not exist'}: give kubernetes.kubeconfig or --kubeconfig`);
  }
  try {
    kc.loadFromDefault();
  } catch (err) {
    throw kubeconfigProblem(setting, `not set, and ${from} cannot be read: ${why(err)}`);
  }
  if (!opts.context && !kc.getCurrentCluster()) throw kubeconfigProblem(setting, `not set, and ${from} has no current-context naming a cluster`);
}

type CreateDispatcher = (cluster: k8s.Cluster | null, agentOptions: object) => unknown;

/**
 * How long an idle connection to the API server is kept for the next call.
 * undici's default is 4 s, so a call after a quiet spell (the weeder's delete
 * when an outage ends) paid a new TCP and TLS handshake. The API server closes
 * idle connections after 90 s; closing them first, at 60 s, avoids reusing one
 * the server is closing.
 */
export const KEEP_ALIVE_MS = 60_000;

/**
 * client-node 2.0 builds a new undici Agent for every API call, so each call
 * opens a new TCP and TLS connection (a handshake of several milliseconds,
 * before a delete can even be sent). Keep the dispatcher while the TLS
 * settings stay the same, so that calls reuse kept-alive connections (for
 * KEEP_ALIVE_MS when idle); new settings (a rotated client certificate) get a
 * new one.
 */
function reuseConnections(kc: k8s.KubeConfig): void {
  const target = kc as unknown as { createDispatcher?: CreateDispatcher };
  const create = target.createDispatcher?.bind(kc);
  if (!create) return; // another client-node: leave it as it is
  let last: { key: string; dispatcher: unknown } | undefined;
  target.createDispatcher = (cluster, agentOptions) => {
    const settings = kc.createDispatcherOptions(cluster, agentOptions as Parameters<k8s.KubeConfig['createDispatcherOptions']>[1]);
    const key = createHash('sha256').update(JSON.stringify({ server: cluster?.server, settings })).digest('hex');
    if (last?.key !== key) {
      const previous = last?.dispatcher as { close?: () => Promise<void> } | undefined;
      // A direct connection: the same Agent client-node makes, with idle connections kept longer.
      const dispatcher = settings.type === 'agent'
        ? new Agent({ connect: settings.connect, keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS })
        : create(cluster, agentOptions);
      last = { key, dispatcher };
      // Requests already on the old one finish; it then closes.
      void previous?.close?.().catch(() => undefined);
    }
    return last.dispatcher;
  };
}

/** The API server URL a KubeConfig points at, for error messages. */
export function serverOf(kc: k8s.KubeConfig): string {
  return kc.getCurrentCluster()?.server ?? '(no cluster in kubeconfig)';
}

export interface KubeClients {
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  apps: k8s.AppsV1Api;
  coordination: k8s.CoordinationV1Api;
  discovery: k8s.DiscoveryV1Api;
  events: k8s.EventsV1Api;
  policy: k8s.PolicyV1Api;
  custom: k8s.CustomObjectsApi;
  objects: k8s.KubernetesObjectApi;
  /** Requests with the credentials resolved ahead (src/kube/prepared.ts): the weeder's pod delete is made on them. */
  requests: PreparedRequests;
  /** The pod calls of a zone outage's marking, on `requests`. */
  pods: PreparedPods;
  /** The Node reads of a zone outage's marking, on `requests`. */
  nodes: PreparedNodes;
}

export function kubeClients(kc: k8s.KubeConfig): KubeClients {
  const requests = preparedRequests(kc);
  return {
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
    discovery: kc.makeApiClient(k8s.DiscoveryV1Api),
    events: kc.makeApiClient(k8s.EventsV1Api),
    policy: kc.makeApiClient(k8s.PolicyV1Api),
    custom: kc.makeApiClient(k8s.CustomObjectsApi),
    objects: k8s.KubernetesObjectApi.makeApiClient(kc),
    requests,
    pods: preparedPods(requests),
    nodes: preparedNodes(requests),
  };
}


/**
 * A call that never reached the API server (refused, no route, name not found, TLS failure: undici's
 * "fetch failed" with the reason in its cause) as KubeUnreachableError naming the server and the
 * reason; undefined for any other error (an answer from the server).
 */
export function unreachableError(kc: k8s.KubeConfig, err: unknown): KubeUnreachableError | undefined {
  if (!(err instanceof TypeError) || !/fetch failed/.test(err.message)) return undefined;
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const reason = [cause?.code, cause?.message].filter(Boolean).join(': ') || err.message;
  return new KubeUnreachableError(`cannot reach the Kubernetes API at ${serverOf(kc)}: ${reason}\n` +
    '  Check kubernetes.kubeconfig (in-cluster credentials when it is absent). For the local sandbox run `tend sandbox up`.');
}

/**
 * Asks the API server for its version, which every authenticated identity may
 * read: proves the address, the TLS trust and the credentials in one call.
 */
export async function checkKubernetes(kc: k8s.KubeConfig): Promise<string> {
  const server = serverOf(kc);
  try {
    const v = await kc.makeApiClient(k8s.VersionApi).getCode();
    return v.gitVersion;
  } catch (err) {
    const code = statusOf(err);
    const reason = code === 401
      ? 'the credentials were rejected (401): check the token or client certificate in the kubeconfig'
      : ((err as Error)?.message ?? String(err)).split('\n')[0];
    throw new KubeUnreachableError(
      `cannot reach the Kubernetes API at ${server}: ${reason}\n` +
      '  Check kubernetes.kubeconfig (in-cluster credentials when it is absent). For the local sandbox run `tend sandbox up`.');
  }
}
