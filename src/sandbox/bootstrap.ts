// Cluster set-up the sandbox does through the API: applying the project's own
// manifests (so tests run under exactly the RBAC that ships) and minting a
// token for tend's ServiceAccount.
import * as k8s from '@kubernetes/client-node';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { kubeClients, loadKubeConfig, type KubeClients } from '../kube/client.ts';
import { log } from '../log.ts';
import { HEARTBEAT_ANNOTATION, HEARTBEAT_STOPPED, heartbeatStopped } from './kubelet/annotations.ts';

export async function readManifests(dir: string): Promise<k8s.KubernetesObject[]> {
  const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml').sort();
  const objects: k8s.KubernetesObject[] = [];
  for (const f of files) {
    for (const doc of parseAllDocuments(await readFile(join(dir, f), 'utf8'))) {
      if (doc.errors.length) throw new Error(`${join(dir, f)}: ${doc.errors[0]!.message}`);
      const obj = doc.toJS() as k8s.KubernetesObject | null;
      if (obj?.kind) objects.push(obj);
    }
  }
  // Namespaces first, so that namespaced objects have a home.
  return objects.sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'));
}

/** Server-side applies every object in `dir` that `keep` accepts; returns how many. */
export async function applyManifests(
  kubeconfig: string, dir: string, keep: (o: k8s.KubernetesObject) => boolean = () => true,
): Promise<number> {
  return applyObjects(kubeconfig, (await readManifests(dir)).filter(keep));
}

/** Server-side applies these objects, in order; returns how many. */
export async function applyObjects(kubeconfig: string, objects: k8s.KubernetesObject[]): Promise<number> {
  const kube = kubeClients(loadKubeConfig({ kubeconfig }));
  for (const obj of objects) {
    if (obj.kind === 'CustomResourceDefinition') await applyCrd(kube, obj);
    else await kube.objects.patch(obj, undefined, undefined, FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply);
  }
  return objects.length;
}

const rbacKinds = [
  { kind: 'ClusterRoleBinding', plural: 'clusterrolebindings' },
  { kind: 'ClusterRole', plural: 'clusterroles' },
  { kind: 'RoleBinding', plural: 'rolebindings' },
  { kind: 'Role', plural: 'roles' },
];
const key = (o: k8s.KubernetesObject) => `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;

/**
 * The rights `tend rbac --name NAME` generates for this configuration, applied; objects generated
 * for the same NAME (label `selector` and rbac.tend.dev/name=NAME) that it no longer asks for are
 * deleted, so a capability or namespace removed from the configuration loses its rights, while
 * another tend's in the same cluster (another NAME) are left alone. An object of a version before
 * that label is deleted only when its name says it is NAME's and no other's (legacyOwner).
 * Returns what was applied and what was removed.
 */
export async function applyRights(
  kubeconfig: string, objects: k8s.KubernetesObject[], selector: string, name?: string,
): Promise<{ applied: number; removed: string[] }> {
  const { DEFAULT_RBAC_OPTIONS, legacyOwner, NAME_LABEL } = await import('../rbac/generate.ts');
  const owner = name ?? DEFAULT_RBAC_OPTIONS.name;
  const applied = await applyObjects(kubeconfig, objects);
  const kube = kubeClients(loadKubeConfig({ kubeconfig }));
  const wanted = new Set(objects.map(key));
  const removed: string[] = [];
  for (const { kind, plural } of rbacKinds) {
    const res = { group: 'rbac.authorization.k8s.io', version: 'v1', plural };
    const list = await kube.custom.listClusterCustomObject({ ...res, labelSelector: selector }) as { items: k8s.KubernetesObject[] };
    for (const item of list.items) {
      const o = { ...item, kind };
      if (wanted.has(key(o))) continue;
      const labelled = o.metadata?.labels?.[NAME_LABEL];
      if (labelled === undefined ? legacyOwner(o.metadata?.name ?? '') !== owner : labelled !== owner) continue;
      const { name, namespace } = o.metadata as { name: string; namespace?: string };
      await (namespace
        ? kube.custom.deleteNamespacedCustomObject({ ...res, namespace, name })
        : kube.custom.deleteClusterCustomObject({ ...res, name })).catch((err: unknown) => {
        if ((err as { code?: number }).code !== 404) throw err;
      });
      removed.push(key(o));
    }
  }
  return { applied, removed };
}

const FIELD_MANAGER = 'tend-sandbox';
const crdResource = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' };

/**
 * A CRD goes through the custom objects API as plain JSON: the typed
 * serializer of KubernetesObjectApi drops schema keywords it does not model
 * (enum, x-kubernetes-*), which would install a CRD that validates less.
 * Returns once the API server serves the new kind.
 */
async function applyCrd(kube: KubeClients, crd: k8s.KubernetesObject) {
  const name = crd.metadata!.name!;
  await kube.custom.patchClusterCustomObject(
    { ...crdResource, name, body: crd, fieldManager: FIELD_MANAGER, force: true },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const got = await kube.custom.getClusterCustomObject({ ...crdResource, name }) as { status?: { conditions?: k8s.V1CustomResourceDefinitionCondition[] } };
    if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
    if (Date.now() > deadline) throw new Error(`CustomResourceDefinition ${name} not established within 30s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function serviceAccountToken(kubeconfig: string, namespace: string, name: string): Promise<string> {
  const { core } = kubeClients(loadKubeConfig({ kubeconfig }));
  const res = await core.createNamespacedServiceAccountToken({
    namespace, name, body: { spec: { audiences: [], expirationSeconds: 7 * 24 * 3600 } },
  });
  if (!res.status?.token) throw new Error(`no token returned for ServiceAccount ${namespace}/${name}`);
  return res.status.token;
}

/** The stopped Nodes already reported by this process: start-up polls the count every 250 ms. */
const reportedStopped = new Set<string>();

/**
 * The simulated Nodes accounted for at start-up: those Ready, and those whose heartbeats were
 * left stopped (`tend sandbox node stop`, the annotation sim.tend.dev/heartbeat=stopped). A stopped
 * Node is not Ready, and never will be until it is started again: waiting for it would fail the
 * start-up of the whole sandbox, so it is counted, and said once.
 */
export async function readyNodeCount(kubeconfig: string): Promise<number> {
  const { core } = kubeClients(loadKubeConfig({ kubeconfig }));
  const nodes = await core.listNode({ labelSelector: 'sim.tend.dev/node=true' });
  let count = 0;
  for (const n of nodes.items) {
    const name = n.metadata?.name ?? '';
    if (heartbeatStopped(n.metadata)) {
      count++;
      if (!reportedStopped.has(name)) {
        reportedStopped.add(name);
        log.warn({ node: name }, `node ${name} is stopped (${HEARTBEAT_ANNOTATION}=${HEARTBEAT_STOPPED}): not waited for; ` +
          `tend sandbox node start ${name} brings it back`);
      }
    } else if (n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) {
      count++;
    }
  }
  return count;
}

/**
 * Grants tend's ServiceAccount the rights `tend rbac` generates for one more
 * configuration file (a test's, a benchmark's), as an operator would apply
 * them with an administrator's kubeconfig. The objects are named
 * `<name>-*` and labelled `rbac.tend.dev/name=<name>`, apart from the
 * sandbox's own generated rights (`tend`), so a `tend sandbox up` (which
 * prunes what its tend.yaml no longer needs) leaves them alone. A configuration that does
 * not validate gets nothing (tend refuses it anyway); a Role in a namespace
 * that does not exist is left out, as `kubectl apply` would fail on it.
 */
export async function grantRightsFor(kubeconfig: string, configFile: string, name: string): Promise<number> {
  const { ConfigError } = await import('../config/errors.ts');
  const { parseConfig } = await import('../config/load.ts');
  const { rbacObjects } = await import('../rbac/generate.ts');
  let config;
  try {
    config = parseConfig(await readFile(configFile, 'utf8'), configFile, { file: configFile });
  } catch (err) {
    if (err instanceof ConfigError) return 0;
    throw err;
  }
  const kube = kubeClients(loadKubeConfig({ kubeconfig }));
  const exists = new Map<string, Promise<boolean>>();
  const present = (ns: string) => exists.get(ns) ?? exists.set(ns, kube.core.readNamespace({ name: ns }).then(() => true, () => false)).get(ns)!;
  const objects: k8s.KubernetesObject[] = [];
  for (const o of rbacObjects(config, { name })) {
    if (o.metadata.namespace && !(await present(o.metadata.namespace))) continue;
    objects.push(o);
  }
  return applyObjects(kubeconfig, objects);
}
