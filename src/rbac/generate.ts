// The Kubernetes rights tend's configuration needs, and no more: `tend rbac`
// prints them, the sandbox and the end-to-end tests apply them.
//
// deploy/kubernetes ships what every tend needs whatever it is configured for
// (its ServiceAccount, reading its own ConfigMap, listing Nodes for `tend
// doctor`). Each capability section adds its own rights here: in the
// namespaces the section names (Roles and RoleBindings), or cluster-wide (a
// ClusterRole and its binding) for what has no namespace, or when the section
// names no namespaces. An absent section gets nothing.
import { Document, isMap, isSeq } from 'yaml';
import type { Config } from '../config/load.ts';
import type { SectionName } from '../config/sections.ts';
import { CLUSTER_EVENTS_NAMESPACE } from '../kube/events.ts';

/** The section that needs a grant; 'weeder' and so on, as in the configuration file. */
export type Capability = SectionName;

export interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
  /** What tend does with it: printed as the rule's comment. */
  why: string;
}

export interface Grant {
  capability: Capability;
  /** Where the rules apply; undefined: cluster-wide. */
  namespace?: string;
  /** Object name suffix, `tend-<part>`: what the grant is for within its capability. */
  part: string;
  /** Why this grant has its scope: printed on the object. */
  scope: string;
  rules: Rule[];
}

export interface RbacOptions {
  /** tend's own namespace (its ServiceAccount, its ConfigMaps). */
  namespace?: string;
  /** tend's ServiceAccount, in `namespace`. */
  serviceAccount?: string;
  /** Prefix of every generated object's name. */
  name?: string;
}

export const DEFAULT_RBAC_OPTIONS: Required<RbacOptions> = { namespace: 'tend-system', serviceAccount: 'tend', name: 'tend' };

/** The ConfigMap in tend's namespace where the weeder records each Service's last readiness. */
export const WEEDER_READINESS_CONFIGMAP = 'tend-weeder-readiness';

/** The label on every generated object, so that `kubectl apply --prune -l` and the sandbox find them. */
export const GENERATED_LABEL = 'rbac.tend.dev/generated';
export const CAPABILITY_LABEL = 'rbac.tend.dev/capability';
/**
 * The tend (`--name`) an object was generated for: several tends in one cluster each prune only
 * their own (pruneSelector); `rbac.tend.dev/generated=true` alone would select them all.
 */
export const NAME_LABEL = 'rbac.tend.dev/name';

/** The label selector that finds the objects generated for the tend named `name`, and no other's (docs/rbac.md). */
export const pruneSelector = (name: string = DEFAULT_RBAC_OPTIONS.name) => `${GENERATED_LABEL}=true,${NAME_LABEL}=${name}`;

/** Generated objects of versions before NAME_LABEL: whose they are is only in their names (legacyOwner). */
export const LEGACY_SELECTOR = `${GENERATED_LABEL}=true,!${NAME_LABEL}`;

/** What follows `<name>-` in each generated object's name (Grant.part), longest first. */
export const GRANT_PARTS = [
  'taint-replacement-node-events', 'taint-replacement-nodes', 'taint-replacement', 'weeder-readiness', 'weeder', 'apps', 'node-repair', 'repair',
] as const;

/**
 * The `--name` a generated object without NAME_LABEL was made for, read from its name
 * (`<name>-<part>`), or undefined when its name could be more than one tend's (`tend-node-repair`:
 * tend's node-repair, or tend-node's repair) or none's: such an object is never pruned by a
 * tend, for it may be another's; docs/rbac.md says how to remove it.
 */
export function legacyOwner(objectName: string): string | undefined {
  const owners = GRANT_PARTS.filter((part) => objectName.endsWith(`-${part}`) && objectName.length > part.length + 1)
    .map((part) => objectName.slice(0, -(part.length + 1)));
  return owners.length === 1 ? owners[0] : undefined;
}

/** Namespaced Events: Events about Nodes, which have no namespace, are recorded in `default`. */
export const NODE_EVENTS_NAMESPACE = CLUSTER_EVENTS_NAMESPACE;

/**
 * Events are created, and a repeat of one is counted in its series (read, then patched), so that
 * they aggregate rather than flood (docs/events.md).
 */
const EVENT_VERBS = ['create', 'get', 'patch'];

const core = '';
const rule = (apiGroups: string[], resources: string[], verbs: string[], why: string, resourceNames?: string[]): Rule =>
  ({ apiGroups, resources, verbs, ...(resourceNames && { resourceNames }), why });

const scopes = (namespaces: string[] | undefined): (string | undefined)[] =>
  namespaces ? [...new Set(namespaces)].sort() : [undefined];

const scopeText = (section: string, namespaces: string[] | undefined, namespace: string | undefined): string =>
  namespace !== undefined
    ? `namespace ${namespace}: listed in ${section}.namespaces`
    : `cluster-wide: ${section} has no namespaces, so it acts in every namespace (list them in ${section}.namespaces to narrow this)`;

type Sections = Partial<Pick<Config, Capability>> & {
  /** `kubernetes.namespace`: tend's own namespace as the worker sees it, where the weeder keeps its record. */
  kubernetes?: { namespace?: string };
};

/** Every grant the configuration's sections need, in a stable order. */
export function grantsFor(config: Sections, opts: RbacOptions = {}): Grant[] {
  const o = { ...DEFAULT_RBAC_OPTIONS, ...opts };
  const grants: Grant[] = [];

  if (config.weeder) {
    const ns = config.weeder.namespaces;
    const own = config.kubernetes?.namespace ?? o.namespace;
    grants.push({
      capability: 'weeder', namespace: own, part: 'weeder-readiness',
      scope: `namespace ${own}: tend's own; the readiness record is one ConfigMap there`,
      rules: [
        rule([core], ['configmaps'], ['create'],
          `the watcher creates ConfigMap ${WEEDER_READINESS_CONFIGMAP} the first time (create cannot be limited to a name)`),
        rule([core], ['configmaps'], ['get', 'update', 'patch'],
          'the watcher reads and records the last readiness of each configured Service there', [WEEDER_READINESS_CONFIGMAP]),
      ],
    });
    for (const namespace of scopes(ns)) {
      grants.push({
        capability: 'weeder', namespace, part: 'weeder', scope: scopeText('weeder', ns, namespace),
        rules: [
          rule(['discovery.k8s.io'], ['endpointslices'], ['list', 'watch'],
            "the watcher and the weeding activity follow the configured Services' readiness through their EndpointSlices"),
          rule([core], ['services'], ['get'], 'the watcher checks that a Service whose slices it sees still exists (read only: no Service is ever written)'),
          rule([core], ['pods'], ['list', 'watch'], 'the weeding activity watches the dependants its pod selectors name'),
          rule([core], ['pods'], ['delete'], 'it deletes dependants stuck in CrashLoopBackOff (UID precondition)'),
          rule(['events.k8s.io'], ['events'], EVENT_VERBS, 'an Event (WeededPod, WeederSkippedPod) on the pod\'s controller or the pod'),
        ],
      });
    }
  }

  if (config.taintReplacement) {
    const ns = config.taintReplacement.namespaces;
    grants.push({
      capability: 'taintReplacement', part: 'taint-replacement-nodes',
      scope: 'cluster-wide: Nodes have no namespace',
      rules: [rule([core], ['nodes'], ['list', 'watch'], 'the watcher follows the taints of every Node')],
    });
    for (const namespace of scopes(ns)) {
      grants.push({
        capability: 'taintReplacement', namespace, part: 'taint-replacement', scope: scopeText('taintReplacement', ns, namespace),
        rules: [
          rule([core], ['pods'], ['get', 'list', 'watch'], 'the watcher and the activities find the managed pods (podSelector) on tainted Nodes'),
          rule([core], ['pods/status'], ['patch'], 'conditions NodeTaintDetected and NodeTaintReplacing on managed pods'),
          rule([core], ['pods/eviction'], ['create'], 'replacement through the Eviction API, so PodDisruptionBudgets hold'),
          rule(['apps'], ['replicasets', 'statefulsets'], ['get'], "a replacement ends early when the pod's controller is gone"),
          rule(['events.k8s.io'], ['events'], EVENT_VERBS,
            'Events on the managed pods: marked, eviction asked, evicted, refused by a budget; in observe mode, WouldEvict'),
        ],
      });
    }
    // Listed namespaces: the Node's Events need their own grant where they are recorded (cluster-wide, the ClusterRole has it).
    if (ns?.length) {
      grants.push({
        capability: 'taintReplacement', namespace: NODE_EVENTS_NAMESPACE, part: 'taint-replacement-node-events',
        scope: `namespace ${NODE_EVENTS_NAMESPACE}: Nodes have no namespace, and their Events are recorded there`,
        rules: [rule(['events.k8s.io'], ['events'], EVENT_VERBS, 'Events on a tainted Node: its replacements started, and done')],
      });
    }
  }

  if (config.apps) {
    const ns = config.apps.namespaces;
    for (const namespace of scopes(ns)) {
      grants.push({
        capability: 'apps', namespace, part: 'apps', scope: scopeText('apps', ns, namespace),
        rules: [
          rule(['tend.dev'], ['apps'], ['get', 'list', 'watch'], "the watcher's App informer, the activities' and `tend app`'s reads of an App"),
          rule(['tend.dev'], ['apps'], ['patch'], 'the entity workflow moves the revision annotations and spec.desiredState'),
          rule(['tend.dev'], ['apps/status'], ['patch'], 'observedGeneration, actualState, the Ready condition, instances'),
          rule(['apps'], ['deployments'], ['list', 'create', 'update', 'delete'],
            'one Deployment per process, named by revision: listed by label, created, replaced, deleted (UID precondition)'),
          rule(['events.k8s.io'], ['events'], EVENT_VERBS, 'an Event on the App when its revisions move'),
        ],
      });
    }
  }

  if (config.repair) {
    grants.push({
      capability: 'repair', part: 'repair', scope: 'cluster-wide: Nodes have no namespace, and a drain empties a Node of pods in every namespace',
      rules: [
        rule([core], ['nodes'], ['get', 'list'], 'machine types and addresses of the Nodes to repair'),
        rule([core], ['nodes'], ['patch'], 'cordon and uncordon a Node under repair (resourceVersion precondition)'),
        rule([core], ['pods'], ['list'], 'the pods on a Node being drained'),
        rule([core], ['pods/eviction'], ['create'], 'drain: evict pods, so PodDisruptionBudgets hold'),
        rule([core], ['pods'], ['delete'], 'drain: delete pods a budget refuses in unprotected namespaces, and unprotected Job pods (UID precondition)'),
        rule([core], ['namespaces'], ['list'], 'which namespaces protected_namespaces selects'),
        rule(['events.k8s.io'], ['events'], EVENT_VERBS,
          `Events on a Node under repair, one per step (in ${NODE_EVENTS_NAMESPACE}), and in observe mode on each pod a drain would evict or delete (in its namespace)`),
      ],
    });
  }
  if (config.nodeRepair) {
    grants.push({
      capability: 'nodeRepair', part: 'node-repair', scope: 'cluster-wide: Nodes have no namespace',
      rules: [
        rule([core], ['nodes'], ['get', 'list', 'watch'], "the watcher follows the selected Nodes' conditions; a countdown and the repair queue read its Node, and count the healthy ones"),
        rule(['events.k8s.io'], ['events'], EVENT_VERBS, `an Event on the Node when the repair queue answers its countdown: queued, refused, or in observe mode WouldEnqueue (in ${NODE_EVENTS_NAMESPACE})`),
      ],
    });
  }
  return grants;
}

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels: Record<string, string> };
  [k: string]: unknown;
}

/** A grant's comment, kept with its objects when printed. */
interface Annotated {
  object: KubeObject;
  comment: string;
  whys?: string[];
}

function objectsOf(grants: Grant[], opts: RbacOptions): Annotated[] {
  const o = { ...DEFAULT_RBAC_OPTIONS, ...opts };
  const out: Annotated[] = [];
  for (const g of grants) {
    const name = `${o.name}-${g.part}`;
    const labels = {
      'app.kubernetes.io/name': 'tend', 'app.kubernetes.io/part-of': 'tend',
      [GENERATED_LABEL]: 'true', [NAME_LABEL]: o.name, [CAPABILITY_LABEL]: g.capability,
    };
    const cluster = g.namespace === undefined;
    const metadata = cluster ? { name, labels } : { name, namespace: g.namespace!, labels };
    const kind = cluster ? 'ClusterRole' : 'Role';
    out.push({
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata,
        rules: g.rules.map(({ why: _why, ...r }) => r),
      },
      comment: `${kind} ${name} (${g.capability}), ${g.scope}.`,
      whys: g.rules.map((r) => r.why),
    });
    out.push({
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: `${kind}Binding`, metadata,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
        subjects: [{ kind: 'ServiceAccount', name: o.serviceAccount, namespace: o.namespace }],
      },
      comment: `${kind}Binding ${name}: grants ${kind} ${name} to ServiceAccount ${o.namespace}/${o.serviceAccount}.`,
    });
  }
  return out;
}

/** The Roles, ClusterRoles and their bindings that the configuration needs. */
export function rbacObjects(config: Sections, opts: RbacOptions = {}): KubeObject[] {
  return objectsOf(grantsFor(config, opts), opts).map((a) => a.object);
}

/** The same as YAML documents, each object and rule with a comment saying what it is for. */
export function rbacYaml(config: Sections, opts: RbacOptions = {}, source?: string): string {
  const o = { ...DEFAULT_RBAC_OPTIONS, ...opts };
  const present = (['weeder', 'taintReplacement', 'apps', 'repair', 'nodeRepair'] as const).filter((c) => config[c]);
  const header = [
    ` Generated by \`tend rbac\`${source ? ` from ${source}` : ''}: the rights tend's configured capabilities need,`,
    ` for ServiceAccount ${o.namespace}/${o.serviceAccount}. Apply it beside deploy/kubernetes (which holds what every`,
    ' tend needs); generate it again whenever the configuration changes. Prune what it no longer',
    ` needs with this tend's selector, -l ${pruneSelector(o.name)} (docs/rbac.md).`,
    present.length
      ? ` Capabilities configured: ${present.join(', ')}. Absent capabilities get no rights.`
      : ' No capability is configured: nothing beyond deploy/kubernetes is needed.',
  ];
  const docs = objectsOf(grantsFor(config, opts), opts).map(({ object, comment, whys }, i) => {
    const doc = new Document(object);
    if (i === 0) doc.commentBefore = header.join('\n');
    if (doc.contents) doc.contents.commentBefore = ` ${comment}`;
    whys?.forEach((why, j) => {
      const node = doc.getIn(['rules', j], true);
      if (!isMap(node)) return;
      node.commentBefore = ` ${why}`;
      // apiGroups: [""] and so on, as RBAC rules are usually written.
      for (const item of node.items) if (isSeq(item.value)) item.value.flow = true;
    });
    return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
  });
  if (docs.length === 0) return `#${header.join('\n#')}\n`;
  return docs.join('---\n');
}
