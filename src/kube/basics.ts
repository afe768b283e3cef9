// What a command needs of Kubernetes before it talks to a cluster, without
// loading the client library: paths, error classes, a status code's reading.
// src/kube/client.ts re-exports all of it.
import { homedir } from 'node:os';
import { KubeUnreachableError } from '../errors.ts';

/** The API server could not be reached (its class on the ground floor, src/errors.ts, with the other shared errors). */
export { KubeUnreachableError };

/** `~` and `~/...` as the user's home, as kubectl reads them. */
export function expandHome(path: string): string {
  return path === '~' || path.startsWith('~/') ? homedir() + path.slice(1) : path;
}

/** The HTTP status of an error thrown by the generated client, if it has one. */
export function statusOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The flags a kubernetes section's kubeconfig or context came from, where not the configuration file. */
const kubeSettingOrigins = new WeakMap<object, { kubeconfig?: string; context?: string }>();

/** Records that `kubernetes` (a kubernetes section, or KubeOptions) holds values given by these flags. */
export function kubeSettingsFrom<T extends object>(kubernetes: T, flags: { kubeconfig?: string; context?: string }): T {
  kubeSettingOrigins.set(kubernetes, flags);
  return kubernetes;
}

/** What an error about a kubeconfig or context names: the flag it came from, else the configuration's setting. */
export function kubeSettingName(kubernetes: object, key: 'kubeconfig' | 'context'): string {
  return kubeSettingOrigins.get(kubernetes)?.[key] ?? `kubernetes.${key}`;
}
