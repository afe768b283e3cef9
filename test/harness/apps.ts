// Helpers for the App revisions end-to-end tests: App objects, their
// workloads and pods, a tend configuration with the apps section, and the
// real `temporal` CLI.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { stringify as toYaml } from 'yaml';
import type { KubeClients } from '../../src/kube/client.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { APP_GROUP, APP_PLURAL, APP_VERSION, LABEL_APP, LABEL_WORKLOAD, type App, type AppProcess } from '../../src/apps/types.ts';
import { grantConfiguredRights, isReady } from './kube.ts';
import { sandbox } from './hooks.ts';

export const APPS_TASK_QUEUE = 'tend-apps';

const ref = (namespace: string) => ({ group: APP_GROUP, version: APP_VERSION, plural: APP_PLURAL, namespace });

export function webProcess(instances: number, type = 'web'): AppProcess {
  return {
    type, instances,
    template: { metadata: { labels: { role: type } }, spec: { containers: [{ name: type, image: 'registry.example/hello:1' }] } },
  };
}

export function appObject(namespace: string, name: string, processes: AppProcess[] = [webProcess(2)], desiredState = 'STARTED'): object {
  return { apiVersion: `${APP_GROUP}/${APP_VERSION}`, kind: 'App', metadata: { name, namespace }, spec: { desiredState, processes } };
}

export async function createApp(kube: KubeClients, body: object): Promise<App> {
  const namespace = (body as { metadata: { namespace: string } }).metadata.namespace;
  return (await kube.custom.createNamespacedCustomObject({ ...ref(namespace), body })) as App;
}

export async function getApp(kube: KubeClients, namespace: string, name: string): Promise<App> {
  return (await kube.custom.getNamespacedCustomObject({ ...ref(namespace), name })) as App;
}

export async function patchAppSpec(kube: KubeClients, namespace: string, name: string, spec: object): Promise<App> {
  return (await kube.custom.patchNamespacedCustomObject({ ...ref(namespace), name, body: { spec } }, mergePatch)) as App;
}

export async function deleteApp(kube: KubeClients, namespace: string, name: string): Promise<void> {
  await kube.custom.deleteNamespacedCustomObject({ ...ref(namespace), name });
}

export async function workloadsOf(kube: KubeClients, namespace: string, app: string): Promise<k8s.V1Deployment[]> {
  return (await kube.apps.listNamespacedDeployment({ namespace, labelSelector: `${LABEL_APP}=${app}` })).items;
}

/** The pods of one workload that are Ready and not being deleted. */
export async function readyPodsOf(kube: KubeClients, namespace: string, workload: string): Promise<k8s.V1Pod[]> {
  const pods = (await kube.core.listNamespacedPod({ namespace, labelSelector: `${LABEL_WORKLOAD}=${workload}` })).items;
  return pods.filter((p) => isReady(p) && !p.metadata?.deletionTimestamp);
}

export async function allPodUids(kube: KubeClients, namespace: string, app: string): Promise<Set<string>> {
  const pods = (await kube.core.listNamespacedPod({ namespace, labelSelector: `${LABEL_APP}=${app}` })).items;
  return new Set(pods.map((p) => p.metadata!.uid!));
}

export function settled(app: App): boolean {
  return app.status?.observedGeneration === app.metadata.generation
    && app.status?.actualState === app.spec.desiredState
    && app.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

/** A tend configuration for these tests: tend's own ServiceAccount, our task queue, the apps section. */
export async function writeAppsConfig(dir: string, namespaces: string[]): Promise<string> {
  const file = join(dir, 'tend-apps.yaml');
  await writeFile(file, toYaml({
    temporal: { address: sandbox().temporalAddress, namespace: 'default', taskQueue: APPS_TASK_QUEUE },
    kubernetes: { kubeconfig: sandbox().tendKubeconfig },
    apps: { namespaces },
  }));
  await grantConfiguredRights(file);
  return file;
}

export { temporalCli } from './temporal.ts';

