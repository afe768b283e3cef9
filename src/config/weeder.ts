// The weeder section: dependency-watchdog's weeder config, field for field
// (api/weeder/types.go), so an existing one can be pasted in. `namespaces` is
// tend's addition: the namespaces whose Services are watched (all when absent).
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { A_DAY } from './bounds.ts';
import { positiveGoDurationSchema } from './duration.ts';
import { dns1123LabelProblem, kubeNameSchema } from './kube-names.ts';
import { labelSelectorSchema } from './label-selector.ts';
import { modeSchema } from './mode.ts';

// Services are named by DNS-1123 labels (DNS-1035 before Kubernetes 1.34's
// relaxed validation); the wider rule is kept so newer clusters' names pass.
const serviceNameSchema = kubeNameSchema((name) => {
  const problem = dns1123LabelProblem(name);
  return problem && `not a valid Service name: ${problem}`;
});

export const dependantSelectorsSchema = z.strictObject({
  podSelectors: z.array(labelSelectorSchema).min(1, 'must list at least one pod selector'),
});

export const weederSchema = z.strictObject({
  /** act (default: the top-level mode) or observe: record the deletions, delete nothing. tend's addition. */
  mode: modeSchema.optional(),
  /** How long dependants are watched once their Service is ready again (a day at most). */
  watchDuration: positiveGoDurationSchema({ ...A_DAY, text: '24h' }).prefault('5m'),
  servicesAndDependantSelectors: z
    .record(serviceNameSchema, dependantSelectorsSchema)
    .refine((services) => Object.keys(services).length > 0, 'must name at least one Service'),
  namespaces: z
    .array(kubeNameSchema(dns1123LabelProblem))
    .min(1, 'must list at least one namespace, or be left out to watch all of them')
    .optional(),
});

export type DependantSelectors = z.output<typeof dependantSelectorsSchema>;
export type WeederConfig = z.output<typeof weederSchema>;

export function describeWeeder(weeder: WeederConfig): string {
  const services = Object.keys(weeder.servicesAndDependantSelectors);
  const namespaces = weeder.namespaces ? `namespaces ${weeder.namespaces.join(', ')}` : 'all namespaces';
  return `${services.length} Service(s) (${services.join(', ')}) in ${namespaces}, window ${weeder.watchDuration.text}`;
}

/** Where a pod's ServiceAccount namespace is mounted. */
export const SERVICE_ACCOUNT_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
export const DEFAULT_TEND_NAMESPACE = 'tend-system';

/**
 * tend's own namespace, where the weeder keeps its readiness record:
 * `kubernetes.namespace`, else the in-cluster ServiceAccount's namespace, else tend-system.
 */
export function tendNamespace(kubernetes: { namespace?: string }, saFile = SERVICE_ACCOUNT_NAMESPACE_FILE): string {
  if (kubernetes.namespace) return kubernetes.namespace;
  if (existsSync(saFile)) {
    const ns = readFileSync(saFile, 'utf8').trim();
    if (ns && !dns1123LabelProblem(ns)) return ns;
  }
  return DEFAULT_TEND_NAMESPACE;
}
