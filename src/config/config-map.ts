// `--config-map NAMESPACE[/NAME][:KEY]`: tend's configuration read from a ConfigMap key. kustomize
// names the ConfigMap it generates with a hash suffix (tend-config-5f8h2k9c7b), which changes with
// every change of the file; deploy/kubernetes labels it tend.dev/config=true, so that an operator
// can name it as they wrote it (tend-system/tend-config) or by its namespace alone
// (tend-system): a name not found is looked for among the labelled ConfigMaps whose name starts
// with NAME-, and no name means the one labelled ConfigMap of the namespace. Exactly one is used,
// and said; several are refused by name (docs/rbac.md).
import { statusOf } from '../kube/basics.ts';
import type { KubeOptions } from '../kube/client.ts';
import { log } from '../log.ts';
import { ConfigError, KubeUnreachableError } from '../errors.ts';
import { dns1123LabelProblem, dns1123SubdomainProblem } from './kube-names.ts';

/** The label that marks tend's configuration ConfigMap (deploy/kubernetes/kustomization.yaml). */
export const CONFIG_LABEL = 'tend.dev/config';
export const CONFIG_LABEL_SELECTOR = `${CONFIG_LABEL}=true`;
/** The key read when --config-map names none: the one deploy/kubernetes writes. */
export const DEFAULT_CONFIG_KEY = 'config.yaml';

export interface ConfigMapRef {
  namespace: string;
  /** Absent: the ConfigMap labelled tend.dev/config=true in the namespace. */
  name?: string;
  key: string;
}

const configMapKey = /^[-._a-zA-Z0-9]+$/;

/** Reads `namespace[/name][:key]`, the forms `--config-map` takes. */
export function parseConfigMapRef(ref: string): ConfigMapRef {
  const match = /^([^/:]+)(?:\/([^/:]+))?(?::(.+))?$/.exec(ref);
  const problem = (message: string) => new ConfigError(`configmap ${ref}`, [{ path: '', message }]);
  if (!match) throw problem('must be namespace/name:key, namespace/name or namespace, like tend-system/tend-config:config.yaml');
  const [, namespace, name, key = DEFAULT_CONFIG_KEY] = match as unknown as [string, string, string | undefined, string | undefined];
  const namespaceProblem = dns1123LabelProblem(namespace);
  if (namespaceProblem) throw problem(`namespace ${namespaceProblem}`);
  const nameProblem = name === undefined ? undefined : dns1123SubdomainProblem(name);
  if (nameProblem) throw problem(`name ${nameProblem}`);
  if (key.length > 253 || !configMapKey.test(key)) {
    throw problem('key must be at most 253 letters, digits, "-", "_" and "."');
  }
  return { namespace, ...(name !== undefined && { name }), key };
}

/** What the labelled ConfigMaps of the namespace give for a name not found (or none given). */
export type ConfigMapChoice = { use: string } | { problem: string };

/** The most names a refusal lists. */
const NAMES_SHOWN = 10;

/**
 * Among the names of the namespace's ConfigMaps labelled tend.dev/config=true: those that start
 * with `name-` (kustomize's NAME-HASH), or all of them when no name was given. One: that one;
 * none or several: what to say.
 */
export function chooseConfigMap(namespace: string, name: string | undefined, labelled: readonly string[]): ConfigMapChoice {
  const found = (name === undefined ? [...labelled] : labelled.filter((n) => n.startsWith(`${name}-`))).sort();
  if (found.length === 1) return { use: found[0]! };
  if (found.length === 0) {
    return {
      problem: name === undefined
        ? `no ConfigMap in namespace ${namespace} is labelled ${CONFIG_LABEL_SELECTOR}: name it, --config-map ${namespace}/NAME:KEY`
        : `ConfigMap ${namespace}/${name} not found, nor one labelled ${CONFIG_LABEL_SELECTOR} whose name starts with ${name}-`,
    };
  }
  const names = found.slice(0, NAMES_SHOWN).join(', ') + (found.length > NAMES_SHOWN ? ` and ${found.length - NAMES_SHOWN} more` : '');
  return {
    problem: (name === undefined
      ? `${found.length} ConfigMaps in namespace ${namespace} are labelled ${CONFIG_LABEL_SELECTOR}: ${names}`
      : `ConfigMap ${namespace}/${name} not found, and ${found.length} labelled ${CONFIG_LABEL_SELECTOR} start with ${name}-: ${names}`) +
      `; name the one to read: --config-map ${namespace}/NAME:KEY`,
  };
}

/** The text of the ConfigMap key `source.configMap` names, read with `source`'s credentials. */
export async function readConfigMap(source: { configMap: string } & KubeOptions): Promise<string> {
  const ref = parseConfigMapRef(source.configMap);
  const origin = `configmap ${source.configMap}`;
  const refused = (message: string) => new ConfigError(origin, [{ path: '', message }]);
  // The client library is loaded only to read a ConfigMap: a file needs none of it.
  const { kubeClients, loadKubeConfig, serverOf } = await import('../kube/client.ts');
  const { kc, core } = kubeClients(loadKubeConfig(source));
  const unreachable = (what: string, err: unknown) => {
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, a TLS error) is its cause.
    const cause = (err as { cause?: { message?: string } })?.cause?.message;
    const reason = ((err as Error)?.message ?? String(err)).split('\n')[0] + (cause ? ` (${cause})` : '');
    return new KubeUnreachableError(`cannot ${what} from ${serverOf(kc)}: ${reason}`);
  };
  const { namespace, key } = ref;
  const read = async (name: string) => {
    try {
      return await core.readNamespacedConfigMap({ namespace, name });
    } catch (err) {
      const status = statusOf(err);
      if (status === 404 && ref.name !== undefined && name === ref.name) return undefined;
      if (status === 404) throw refused(`ConfigMap ${namespace}/${name} not found`);
      if (status === 401 || status === 403) {
        throw refused(`not allowed to read ConfigMap ${namespace}/${name} (${status}): the credentials need get on configmaps in ${namespace}`);
      }
      throw unreachable(`read ConfigMap ${namespace}/${name}`, err);
    }
  };
  let configMap = ref.name === undefined ? undefined : await read(ref.name);
  if (!configMap) {
    let labelled: string[];
    try {
      const list = await core.listNamespacedConfigMap({ namespace, labelSelector: CONFIG_LABEL_SELECTOR });
      labelled = list.items.flatMap((c) => (c.metadata?.name ? [c.metadata.name] : []));
    } catch (err) {
      const status = statusOf(err);
      const notFound = ref.name === undefined ? '' : `ConfigMap ${namespace}/${ref.name} not found, and `;
      if (status === 401 || status === 403) {
        throw refused(`${notFound}not allowed to list the ConfigMaps labelled ${CONFIG_LABEL_SELECTOR} in ${namespace} (${status}): ` +
          `the credentials need list on configmaps in ${namespace}, or name the ConfigMap as it is (kubectl get configmaps -n ${namespace})`);
      }
      throw unreachable(`list the ConfigMaps labelled ${CONFIG_LABEL_SELECTOR} in ${namespace}`, err);
    }
    const choice = chooseConfigMap(namespace, ref.name, labelled);
    if ('problem' in choice) throw refused(choice.problem);
    log.info({ configMap: `${namespace}/${choice.use}`, label: CONFIG_LABEL_SELECTOR },
      `reading the configuration from ConfigMap ${namespace}/${choice.use}, labelled ${CONFIG_LABEL_SELECTOR}` +
      (ref.name === undefined ? '' : ` (${namespace}/${ref.name} was not found)`));
    configMap = await read(choice.use);
  }
  const text = configMap!.data?.[key];
  if (text === undefined) {
    const keys = Object.keys(configMap!.data ?? {});
    const has = keys.length > 0 ? `its keys are ${keys.join(', ')}` : 'it has no data';
    throw refused(`ConfigMap ${namespace}/${configMap!.metadata?.name} has no key ${key}: ${has}`);
  }
  return text;
}
