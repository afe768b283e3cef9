// Reading an App, and whether a worker's apps section lets it act on one:
// shared by the activities and by `tend app`, which loads nothing else of them.
import type { AppsConfig } from '../config/apps.ts';
import type { KubeClients } from '../kube/client.ts';
import { isNotFound } from '../kube/api.ts';
import { preview } from '../checks/preview.ts';
import { APP_GROUP, APP_PLURAL, APP_VERSION, parseAppKey, type App } from './types.ts';

/** The App's address for the custom objects API. */
export const appRef = (namespace: string, name: string) => ({ group: APP_GROUP, version: APP_VERSION, plural: APP_PLURAL, namespace, name });

/** The App, or undefined when there is none. */
export async function readApp(kube: KubeClients, namespace: string, name: string): Promise<App | undefined> {
  try {
    return (await kube.custom.getNamespacedCustomObject(appRef(namespace, name))) as App;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * Why an App may not be acted on by a worker configured with `apps`, or
 * undefined when it may: the apps section must be there, and the App's
 * namespace within its namespaces (all when absent).
 */
export function appScopeProblem(apps: AppsConfig | undefined, namespace: unknown, name: unknown): string | undefined {
  if (typeof namespace !== 'string' || typeof name !== 'string' || !parseAppKey(`${namespace}/${name}`)) {
    return `an App is named by namespace and name; got ${preview(namespace, 80)}/${preview(name, 80)}`;
  }
  if (!apps) return `App ${namespace}/${name}: this worker has no apps section, so it acts on no App`;
  if (apps.namespaces && !apps.namespaces.includes(namespace)) {
    return `App ${namespace}/${name}: namespace ${namespace} is outside apps.namespaces (${apps.namespaces.join(', ')})`;
  }
  return undefined;
}

