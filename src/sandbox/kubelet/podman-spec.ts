// What the podman runtime makes of a pod, as pure functions: which pods it
// runs for real, each container's environment and mounts, the volumes' files,
// the `podman run` arguments, the readiness probe's URL, and how podman's
// report of a container reads as a container state. The I/O is podman-pod.ts.
//
// A pod runs for real when every one of its containers' images starts with one
// of the configured prefixes (`--run-images`): a pod half run and half played
// would report a state no one could read. Containers share the host's network
// (the pod's ports are the host's), so the pod reaches kube-apiserver and
// Temporal on the loopback addresses the sandbox serves them at.
import type { V1Container, V1EnvVar, V1EnvFromSource, V1Pod, V1Probe, V1Volume, V1VolumeProjection } from '@kubernetes/client-node';
import type { Termination } from './lifecycle.ts';

/** Where a pod's ServiceAccount credentials are mounted, as the kubelet mounts them. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Label on every container the runtime starts: the pod's uid, so that leftovers can be found and removed. */
export const POD_UID_LABEL = 'sim.tend.dev/pod-uid';
/** Label on every container the runtime starts: the kubelet's pods folder, which tells one sandbox's containers from another's. */
export const KUBELET_LABEL = 'sim.tend.dev/kubelet';
/** Label on every container the runtime starts: the simulated node that runs it. */
export const NODE_LABEL = 'sim.tend.dev/node-name';

/** Whether a pod runs for real: it has containers, and every one's image is under a prefix. */
export function runsForReal(pod: V1Pod, prefixes: readonly string[]): boolean {
  if (prefixes.length === 0) return false;
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.length > 0 && all.every((c) => prefixes.some((p) => (c.image ?? '').startsWith(p)));
}

/** The data of the ConfigMaps and Secrets a pod refers to, by name; Secret values already decoded. */
export interface PodSources {
  configMaps: ReadonlyMap<string, Readonly<Record<string, string>>>;
  secrets: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** The pod's ServiceAccount token (TokenRequest), when a volume asks for one. */
  token?: string;
  /** The cluster's CA certificate (PEM), for a projected kube-root-ca.crt when no ConfigMap holds it. */
  caCert?: string;
}

/** The ConfigMaps and Secrets a pod's volumes and environment name (what podman-pod.ts reads before starting it). */
export function sourcesNeeded(pod: V1Pod): { configMaps: string[]; secrets: string[]; token: boolean } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  let token = false;
  const projection = (p: V1VolumeProjection) => {
    if (p.configMap?.name) configMaps.add(p.configMap.name);
    if (p.secret?.name) secrets.add(p.secret.name);
    if (p.serviceAccountToken) token = true;
  };
  for (const v of pod.spec?.volumes ?? []) {
    if (v.configMap?.name) configMaps.add(v.configMap.name);
    if (v.secret?.secretName) secrets.add(v.secret.secretName);
    for (const p of v.projected?.sources ?? []) projection(p);
  }
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const e of c.env ?? []) {
      if (e.valueFrom?.configMapKeyRef?.name) configMaps.add(e.valueFrom.configMapKeyRef.name);
      if (e.valueFrom?.secretKeyRef?.name) secrets.add(e.valueFrom.secretKeyRef.name);
    }
    for (const f of c.envFrom ?? []) {
      if (f.configMapRef?.name) configMaps.add(f.configMapRef.name);
      if (f.secretRef?.name) secrets.add(f.secretRef.name);
    }
  }
  return { configMaps: [...configMaps].sort(), secrets: [...secrets].sort(), token };
}

/** The addresses a container is given besides its own environment: the API server's, and the node's. */
export interface PodPlace {
  apiserverHost: string;
  apiserverPort: number;
  nodeName: string;
  hostIP: string;
}

/** A container's environment, or what keeps it from starting (the kubelet's CreateContainerConfigError). */
export type EnvResult = { env: [string, string][] } | { error: string };

/**
 * The environment the kubelet gives a container: KUBERNETES_SERVICE_HOST/PORT
 * (here the sandbox's kube-apiserver, reachable from the host network), then
 * envFrom in order, then env in order (a later name wins, as in Kubernetes).
 */
export function containerEnv(pod: V1Pod, c: V1Container, sources: PodSources, place: PodPlace): EnvResult {
  const env = new Map<string, string>([
    ['HOSTNAME', pod.metadata?.name ?? ''],
    ['KUBERNETES_SERVICE_HOST', place.apiserverHost],
    ['KUBERNETES_SERVICE_PORT', String(place.apiserverPort)],
    ['KUBERNETES_SERVICE_PORT_HTTPS', String(place.apiserverPort)],
    ['KUBERNETES_PORT', `tcp://${place.apiserverHost}:${place.apiserverPort}`],
  ]);
  for (const from of c.envFrom ?? []) {
    const found = envFromData(from, sources);
    if ('error' in found) return found;
    for (const [k, v] of Object.entries(found.data)) env.set(`${from.prefix ?? ''}${k}`, v);
  }
  for (const e of c.env ?? []) {
    const value = envValue(pod, e, sources, place);
    if (typeof value === 'object') return value;
    if (value !== undefined) env.set(e.name, value);
  }
  return { env: [...env] };
}

function envFromData(from: V1EnvFromSource, sources: PodSources): { data: Readonly<Record<string, string>> } | { error: string } {
  const ref = from.configMapRef ?? from.secretRef;
  const kind = from.configMapRef ? 'configmap' : 'secret';
  const data = from.configMapRef ? sources.configMaps.get(ref?.name ?? '') : sources.secrets.get(ref?.name ?? '');
  if (data) return { data };
  if (ref?.optional) return { data: {} };
  return { error: `${kind} "${ref?.name ?? ''}" not found` };
}

/** One env entry's value; undefined: optional and absent; an error object: the container cannot start. */
function envValue(pod: V1Pod, e: V1EnvVar, sources: PodSources, place: PodPlace): string | undefined | { error: string } {
  if (e.value !== undefined) return e.value;
  const from = e.valueFrom;
  if (!from) return '';
  const keyRef = from.configMapKeyRef ?? from.secretKeyRef;
  if (keyRef) {
    const kind = from.configMapKeyRef ? 'configmap' : 'secret';
    const data = from.configMapKeyRef ? sources.configMaps.get(keyRef.name ?? '') : sources.secrets.get(keyRef.name ?? '');
    const value = data?.[keyRef.key];
    if (value !== undefined) return value;
    if (keyRef.optional) return undefined;
    return { error: data ? `couldn't find key ${keyRef.key} in ${kind} ${pod.metadata?.namespace}/${keyRef.name}` : `${kind} "${keyRef.name}" not found` };
  }
  if (from.fieldRef) {
    const value = fieldValue(pod, from.fieldRef.fieldPath, place);
    return value ?? { error: `unsupported fieldRef ${from.fieldRef.fieldPath}` };
  }
  return { error: `env ${e.name}: only value, configMapKeyRef, secretKeyRef and fieldRef are supported` };
}

/** The downward API's fields that make sense here. */
export function fieldValue(pod: V1Pod, path: string, place: PodPlace): string | undefined {
  switch (path) {
    case 'metadata.name': return pod.metadata?.name ?? '';
    case 'metadata.namespace': return pod.metadata?.namespace ?? '';
    case 'metadata.uid': return pod.metadata?.uid ?? '';
    case 'spec.nodeName': return place.nodeName;
    case 'spec.serviceAccountName': return pod.spec?.serviceAccountName ?? 'default';
    case 'status.hostIP':
    case 'status.podIP': return place.hostIP;
  }
  const label = /^metadata\.labels\['(.+)'\]$/.exec(path);
  if (label) return pod.metadata?.labels?.[label[1]] ?? '';
  const annotation = /^metadata\.annotations\['(.+)'\]$/.exec(path);
  if (annotation) return pod.metadata?.annotations?.[annotation[1]] ?? '';
  return undefined;
}

/** A file of a volume, relative to the volume's folder. */
export interface VolumeFile {
  path: string;
  content: string;
}

/** A volume as the runtime lays it out: files to write (ConfigMap, Secret, projected) or an empty folder (emptyDir). */
export type VolumeLayout = { name: string; files: VolumeFile[] } | { error: string };

/** The volumes of a pod the runtime supports, each with its files; the first volume it cannot lay out is the pod's error. */
export function volumeLayouts(pod: V1Pod, sources: PodSources, place: PodPlace): VolumeLayout[] {
  return (pod.spec?.volumes ?? []).map((v) => volumeLayout(pod, v, sources, place));
}

function volumeLayout(pod: V1Pod, v: V1Volume, sources: PodSources, place: PodPlace): VolumeLayout {
  if (v.emptyDir) return { name: v.name, files: [] };
  if (v.configMap) {
    return keyedFiles(v.name, 'configmap', v.configMap.name ?? '', sources.configMaps.get(v.configMap.name ?? ''), v.configMap.items, v.configMap.optional);
  }
  if (v.secret) {
    return keyedFiles(v.name, 'secret', v.secret.secretName ?? '', sources.secrets.get(v.secret.secretName ?? ''), v.secret.items, v.secret.optional);
  }
  if (v.projected) {
    const files: VolumeFile[] = [];
    for (const p of v.projected.sources ?? []) {
      if (p.serviceAccountToken) {
        if (sources.token === undefined) return { error: `volume ${v.name}: no ServiceAccount token` };
        files.push({ path: p.serviceAccountToken.path, content: sources.token });
        continue;
      }
      if (p.configMap) {
        let data = sources.configMaps.get(p.configMap.name ?? '');
        // kube-root-ca.crt is published by the controller manager a moment after a namespace is made.
        if (!data && p.configMap.name === 'kube-root-ca.crt' && sources.caCert !== undefined) data = { 'ca.crt': sources.caCert };
        const part = keyedFiles(v.name, 'configmap', p.configMap.name ?? '', data, p.configMap.items, p.configMap.optional);
        if ('error' in part) return part;
        files.push(...part.files);
        continue;
      }
      if (p.secret) {
        const part = keyedFiles(v.name, 'secret', p.secret.name ?? '', sources.secrets.get(p.secret.name ?? ''), p.secret.items, p.secret.optional);
        if ('error' in part) return part;
        files.push(...part.files);
        continue;
      }
      if (p.downwardAPI) {
        for (const item of p.downwardAPI.items ?? []) {
          const value = item.fieldRef ? fieldValue(pod, item.fieldRef.fieldPath, place) : undefined;
          if (value === undefined) return { error: `volume ${v.name}: unsupported downward API item ${item.path}` };
          files.push({ path: item.path, content: value });
        }
        continue;
      }
      return { error: `volume ${v.name}: unsupported projected source` };
    }
    return { name: v.name, files };
  }
  return { error: `volume ${v.name}: only configMap, secret, emptyDir and projected volumes are supported` };
}

function keyedFiles(
  volume: string, kind: string, name: string, data: Readonly<Record<string, string>> | undefined,
  items: { key: string; path: string }[] | undefined, optional: boolean | undefined,
): VolumeLayout {
  if (!data) return optional ? { name: volume, files: [] } : { error: `volume ${volume}: ${kind} "${name}" not found` };
  if (!items || items.length === 0) return { name: volume, files: Object.entries(data).map(([key, content]) => ({ path: key, content })) };
  const files: VolumeFile[] = [];
  for (const item of items) {
    const content = data[item.key];
    if (content === undefined) {
      if (optional) continue;
      return { error: `volume ${volume}: ${kind} "${name}" has no key ${item.key}` };
    }
    files.push({ path: item.path, content });
  }
  return { name: volume, files };
}

/** A file path inside a volume: relative, without `..`, as the API server also requires. */
export function safeRelativePath(path: string): boolean {
  return path !== '' && !path.startsWith('/') && !path.split('/').includes('..');
}

/** A bind mount: a host folder (or file) onto a container path. */
export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
}

/** The container's mounts, given each volume's host folder; a mount of a volume without a folder is an error. */
export function containerMounts(c: V1Container, volumeDirs: ReadonlyMap<string, string>): Mount[] | { error: string } {
  const mounts: Mount[] = [];
  for (const m of c.volumeMounts ?? []) {
    const dir = volumeDirs.get(m.name);
    if (dir === undefined) return { error: `volumeMount ${m.name}: no such volume` };
    if (m.subPath && !safeRelativePath(m.subPath)) return { error: `volumeMount ${m.name}: bad subPath` };
    mounts.push({ source: m.subPath ? `${dir}/${m.subPath}` : dir, target: m.mountPath, readOnly: m.readOnly === true });
  }
  return mounts;
}

/** The user a container runs as: the container's securityContext, else the pod's; undefined: the image's. */
export function runAsOf(pod: V1Pod, c: V1Container): string | undefined {
  const user = c.securityContext?.runAsUser ?? pod.spec?.securityContext?.runAsUser;
  const group = c.securityContext?.runAsGroup ?? pod.spec?.securityContext?.runAsGroup;
  if (user === undefined) return undefined;
  return group === undefined ? String(user) : `${user}:${group}`;
}

/** `podman run`'s arguments for a container; the environment is passed as a file (`envFile`), so that no secret shows in `ps`. */
export function runArgs(o: {
  pod: V1Pod; container: V1Container; name: string; nodeName: string; mounts: Mount[]; envFile: string; envArgs?: string[]; stopSeconds: number;
}): string[] {
  const { pod, container: c } = o;
  const args = [
    'run', '--detach', '--name', o.name, '--pull', 'never', '--network', 'host',
    '--label', `${POD_UID_LABEL}=${pod.metadata?.uid ?? ''}`, '--label', `${NODE_LABEL}=${o.nodeName}`,
    '--env-file', o.envFile, ...(o.envArgs ?? []), '--stop-timeout', String(o.stopSeconds),
  ];
  const user = runAsOf(pod, c);
  if (user !== undefined) args.push('--user', user);
  // Only what the securityContext asks: podman's own tmpfs on /tmp and /run would hide the pod's volumes' absence.
  if (c.securityContext?.readOnlyRootFilesystem) args.push('--read-only', '--read-only-tmpfs=false');
  if (c.workingDir) args.push('--workdir', c.workingDir);
  for (const m of o.mounts) args.push('--volume', `${m.source}:${m.target}:${m.readOnly ? 'ro' : 'rw'}`);
  if (c.command && c.command.length > 0) args.push('--entrypoint', JSON.stringify(c.command));
  args.push(c.image ?? '');
  args.push(...(c.args ?? []));
  return args;
}

/**
 * A container's environment for podman: an env file (NAME=value a line), so
 * that no secret shows in `ps`; a value with a line break cannot be written
 * there and goes as an `--env` argument instead. A name with `=` or a line
 * break is refused.
 */
export function envParts(env: readonly [string, string][]): { file: string; args: string[] } | { error: string } {
  const bad = env.find(([k]) => k === '' || /[\n\r=]/.test(k));
  if (bad) return { error: `env name ${JSON.stringify(bad[0])} cannot be passed to podman` };
  const multiLine = (v: string) => /[\n\r]/.test(v);
  return {
    file: env.filter(([, v]) => !multiLine(v)).map(([k, v]) => `${k}=${v}\n`).join(''),
    args: env.filter(([, v]) => multiLine(v)).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
  };
}

/** A readiness probe as a URL on the host network; undefined: the probe is not an HTTP GET (the container is ready once it runs). */
export function probeUrl(probe: V1Probe | undefined, c: V1Container): string | undefined {
  const get = probe?.httpGet;
  if (!get) return undefined;
  let port: number | undefined;
  if (typeof get.port === 'number') port = get.port;
  else if (/^\d+$/.test(get.port)) port = Number(get.port);
  else port = c.ports?.find((p) => p.name === get.port)?.containerPort;
  if (port === undefined) return undefined;
  const scheme = (get.scheme ?? 'HTTP').toLowerCase();
  const path = get.path ? (get.path.startsWith('/') ? get.path : `/${get.path}`) : '/';
  return `${scheme}://${get.host || '127.0.0.1'}:${port}${path}`;
}

/** The probe's success: 200 to 399, as the kubelet's HTTP prober. */
export function probeSucceeded(status: number): boolean {
  return status >= 200 && status < 400;
}

/** A container's readiness as its probe results have made it: results in a row decide, as the kubelet's prober counts them. */
export interface ProbeTally {
  ready: boolean;
  /** Results in a row that agree (successes when positive, failures when negative). */
  streak: number;
}

/** The tally after one more result: ready after successThreshold successes in a row (default 1), unready after failureThreshold failures (default 3). */
export function probeTally(t: ProbeTally, ok: boolean, probe: Pick<V1Probe, 'successThreshold' | 'failureThreshold'> | undefined): ProbeTally {
  const streak = ok ? Math.max(0, t.streak) + 1 : Math.min(0, t.streak) - 1;
  if (ok && streak >= (probe?.successThreshold ?? 1)) return { ready: true, streak };
  if (!ok && -streak >= (probe?.failureThreshold ?? 3)) return { ready: false, streak };
  return { ready: t.ready, streak };
}

/** What `podman inspect` says of a container's state (the fields read). */
export interface InspectedState {
  Status: string;
  Running: boolean;
  ExitCode: number;
  OOMKilled?: boolean;
  StartedAt?: string;
  FinishedAt?: string;
  Error?: string;
}

/** How a container ended, from podman's report; undefined while it runs. `containerID` is already prefixed. */
export function endOfInspected(s: InspectedState, containerID: string): Termination | undefined {
  if (s.Running) return undefined;
  const t: Termination = {
    exitCode: s.ExitCode,
    reason: s.OOMKilled ? 'OOMKilled' : s.ExitCode === 0 ? 'Completed' : 'Error',
    containerID,
  };
  if (s.Error) t.message = s.Error;
  const startedAt = timeOf(s.StartedAt);
  if (startedAt !== undefined) t.startedAt = startedAt;
  const finishedAt = timeOf(s.FinishedAt);
  if (finishedAt !== undefined) t.finishedAt = finishedAt;
  return t;
}

/** podman's times: RFC 3339 with nanoseconds and a zone; its zero time (never) is undefined. */
export function timeOf(value: string | undefined): number | undefined {
  if (!value || value.startsWith('0001-')) return undefined;
  const ms = Date.parse(value.replace(/(\.\d{3})\d+/, '$1').replace(/ [A-Z]+$/, ''));
  return Number.isNaN(ms) ? undefined : ms;
}

/** Whether a container that ended with `exitCode` is started again under the pod's restart policy. */
export function restarts(policy: string | undefined, exitCode: number): boolean {
  if (policy === 'Never') return false;
  if (policy === 'OnFailure') return exitCode !== 0;
  return true;
}

/** A container's name in podman: the kubelet's k8s_<container>_<pod>_<namespace>_<uid>_<attempt>. */
export function containerName(pod: V1Pod, c: V1Container, attempt: number): string {
  return `k8s_${c.name}_${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}_${pod.metadata?.uid ?? ''}_${attempt}`;
}
