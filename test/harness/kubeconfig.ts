// A kubeconfig file for tests of how tend reads one: one cluster at `server`, a token user, and
// contexts (the first is current) all naming them.
import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';

export function writeKubeconfig(path: string, server: string, opts: { contexts?: string[]; cluster?: Record<string, unknown> } = {}): string {
  const contexts = opts.contexts ?? ['a'];
  writeFileSync(path, stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': contexts[0],
    clusters: [{ name: 'c', cluster: { server, ...opts.cluster } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: contexts.map((name) => ({ name, context: { cluster: 'c', user: 'u' } })),
  }));
  return path;
}
