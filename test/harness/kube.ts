// Kubernetes helpers for end-to-end tests: an administrator's clients for the
// test sandbox, throwaway namespaces, and small object builders.
import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { kubeClients, loadKubeConfig, type KubeClients } from '../../src/kube/client.ts';
import { grantRightsFor } from '../../src/sandbox/bootstrap.ts';
import { sandbox } from './hooks.ts';

export function admin(): KubeClients {
  return kubeClients(loadKubeConfig({ kubeconfig: sandbox().kubeconfig }));
}

/** Creates a namespace with a unique name, deleted after the calling suite. */
export async function tempNamespace(kube: KubeClients, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await kube.core.createNamespace({ body: { metadata: { name, labels: { 'test.tend.dev/e2e': 'true' } } } });
  return name;
}

export async function deleteNamespace(kube: KubeClients, name: string) {
  await kube.core.deleteNamespace({ name }).catch(() => undefined);
}

export interface DeploymentSpec {
  namespace: string;
  name: string;
  replicas: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function deployment(s: DeploymentSpec): k8s.V1Deployment {
  const labels = { app: s.name, ...s.labels };
  return {
    metadata: { name: s.name, namespace: s.namespace, labels },
    spec: {
      replicas: s.replicas,
      selector: { matchLabels: { app: s.name } },
      template: {
        metadata: { labels, annotations: s.annotations },
        spec: { containers: [{ name: s.name, image: `registry.example/${s.name}:1`, ports: [{ containerPort: 8080 }] }] },
      },
    },
  };
}

export function service(namespace: string, name: string, selector: Record<string, string>): k8s.V1Service {
  return {
    metadata: { name, namespace },
    spec: { selector, ports: [{ port: 80, targetPort: 8080 }] },
  };
}

export async function podsOf(kube: KubeClients, namespace: string, selector: string): Promise<k8s.V1Pod[]> {
  return (await kube.core.listNamespacedPod({ namespace, labelSelector: selector })).items;
}

export function isReady(pod: k8s.V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * Grants tend's ServiceAccount the rights `tend rbac` generates for this
 * configuration file (the same generator): the tend processes of a test then
 * run under exactly the rights that configuration ships with. Named and
 * labelled `tend-test`, apart from the sandbox's own (see grantRightsFor).
 */
export async function grantConfiguredRights(configFile: string, kubeconfig = sandbox().kubeconfig): Promise<void> {
  await grantRightsFor(kubeconfig, configFile, 'tend-test');
}
