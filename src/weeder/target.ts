// Which Service a weeder workflow may act on, decided from the worker's own
// configuration. A workflow names its Service (namespace and name) and
// nothing else: the dependants' selectors and the window's length are looked
// up here, when an activity runs. Anything that reaches the worker through
// Temporal is untrusted (docs/security.md, "Every message"). Pure.
import { preview } from '../checks/preview.ts';
import type { LabelSelector } from '../config/label-selector.ts';
import { dns1123LabelProblem } from '../config/kube-names.ts';
import type { WeederConfig } from '../config/weeder.ts';

export interface WeederTarget {
  namespace: string;
  service: string;
  podSelectors: LabelSelector[];
  watchDuration: { text: string; ms: number };
}

/**
 * The configured target for `namespace`/`service`, or why there is none: a
 * refusal's text names what was asked and what the configuration allows.
 */
export function resolveWeederTarget(
  config: WeederConfig | undefined, namespace: unknown, service: unknown,
): { target: WeederTarget } | { refused: string } {
  const asked = `${preview(namespace, 80)}/${preview(service, 80)}`;
  if (typeof namespace !== 'string' || typeof service !== 'string') {
    return { refused: `a weeder workflow names its Service by namespace and service (strings); got ${asked}` };
  }
  const nsProblem = dns1123LabelProblem(namespace);
  if (nsProblem) return { refused: `namespace ${preview(namespace, 80)} is not a namespace name: ${nsProblem}` };
  // A Service name is a DNS label; anything else is shown cut short, quoted (it is untrusted).
  const key = `${namespace}/${dns1123LabelProblem(service) === undefined ? service : preview(service, 80)}`;
  if (!config) return { refused: `Service ${key} is not configured: this worker has no weeder section` };
  const selectors = Object.hasOwn(config.servicesAndDependantSelectors, service)
    ? config.servicesAndDependantSelectors[service]
    : undefined;
  if (!selectors) {
    return {
      refused: `Service ${key} is not configured: the worker's weeder.servicesAndDependantSelectors lists only ` +
        `${Object.keys(config.servicesAndDependantSelectors).sort().join(', ')}`,
    };
  }
  if (config.namespaces && !config.namespaces.includes(namespace)) {
    return {
      refused: `Service ${key} is not configured: namespace ${namespace} is outside the worker's weeder.namespaces ` +
        `(${config.namespaces.join(', ')})`,
    };
  }
  return { target: { namespace, service, podSelectors: selectors.podSelectors, watchDuration: config.watchDuration } };
}
