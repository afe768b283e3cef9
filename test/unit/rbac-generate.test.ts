// `tend rbac`'s generator: which sections give which rights, where.
import assert from 'node:assert/strict';
import { parseAllDocuments } from 'yaml';
import { parseConfig } from '../../src/config/load.ts';
import { GRANT_PARTS, grantsFor, legacyOwner, pruneSelector, rbacObjects, rbacYaml, type Grant } from '../../src/rbac/generate.ts';

const config = (text: string) => parseConfig(text, 'test');

/** One line per rule: `scope capability group/resource[names] verbs`. */
function table(grants: Grant[]): string[] {
  return grants.flatMap((g) => g.rules.map((r) =>
    `${g.namespace ?? '*'} ${g.capability} ${r.apiGroups.join(',') || 'core'}/${r.resources.join(',')}` +
    `${r.resourceNames ? `[${r.resourceNames.join(',')}]` : ''} ${r.verbs.join(',')}`));
}

const weeder = 'weeder: { servicesAndDependantSelectors: { etcd: { podSelectors: [ { matchLabels: { role: api } } ] } } }';
const repair = 'repair: { repair_procedures: [ { machine_types: [sim], repair_operations: [ { operation: reboot, repair_steps: [ { repair_command: ["true"], watch_seconds: 30 } ], health_check_command: ["true"] } ] } ] }';
const taint = 'taintReplacement: { podSelector: { matchLabels: { app: db } }, taintReplacementOptions: [ { key: x.org/m, durationInSeconds: 1 } ] }';

describe('rbac: rights generated from the configuration', () => {
  const cases: { name: string; yaml: string; rules: string[] }[] = [
    { name: 'no capability: nothing', yaml: 'temporal: { address: "localhost:7233" }', rules: [] },
    {
      name: 'apps with namespaces: Deployments and Apps only there',
      yaml: 'apps: { namespaces: [b, a, a] }',
      rules: ['a', 'b'].flatMap((ns) => [
        `${ns} apps tend.dev/apps get,list,watch`,
        `${ns} apps tend.dev/apps patch`,
        `${ns} apps tend.dev/apps/status patch`,
        `${ns} apps apps/deployments list,create,update,delete`,
        `${ns} apps events.k8s.io/events create,get,patch`,
      ]),
    },
    {
      name: 'apps without namespaces: cluster-wide',
      yaml: 'apps: {}',
      rules: [
        '* apps tend.dev/apps get,list,watch', '* apps tend.dev/apps patch', '* apps tend.dev/apps/status patch',
        '* apps apps/deployments list,create,update,delete', '* apps events.k8s.io/events create,get,patch',
      ],
    },
    {
      name: 'weeder with namespaces: its readiness ConfigMap in tend-system by name, pods and slices in its namespaces',
      yaml: `${weeder.slice(0, -1)}, namespaces: [cp] }`,
      rules: [
        'tend-system weeder core/configmaps create',
        'tend-system weeder core/configmaps[tend-weeder-readiness] get,update,patch',
        'cp weeder discovery.k8s.io/endpointslices list,watch',
        'cp weeder core/services get',
        'cp weeder core/pods list,watch',
        'cp weeder core/pods delete',
        'cp weeder events.k8s.io/events create,get,patch',
      ],
    },
    {
      name: 'taint with namespaces: Nodes cluster-wide, pods only in its namespaces, the Nodes\' Events in default',
      yaml: `${taint.slice(0, -1)}, namespaces: [db] }`,
      rules: [
        '* taintReplacement core/nodes list,watch',
        'db taintReplacement core/pods get,list,watch',
        'db taintReplacement core/pods/status patch',
        'db taintReplacement core/pods/eviction create',
        'db taintReplacement apps/replicasets,statefulsets get',
        'db taintReplacement events.k8s.io/events create,get,patch',
        'default taintReplacement events.k8s.io/events create,get,patch',
      ],
    },
    {
      name: 'taint without namespaces: pods and the Nodes\' Events cluster-wide, no Role of its own for the Node Events',
      yaml: taint,
      rules: [
        '* taintReplacement core/nodes list,watch',
        '* taintReplacement core/pods get,list,watch',
        '* taintReplacement core/pods/status patch',
        '* taintReplacement core/pods/eviction create',
        '* taintReplacement apps/replicasets,statefulsets get',
        '* taintReplacement events.k8s.io/events create,get,patch',
      ],
    },
    {
      name: 'repair: cluster-wide (Nodes, a drain in every namespace, Events on Nodes and on the pods observe mode would drain)',
      yaml: repair,
      rules: [
        '* repair core/nodes get,list', '* repair core/nodes patch', '* repair core/pods list', '* repair core/pods/eviction create',
        '* repair core/pods delete', '* repair core/namespaces list', '* repair events.k8s.io/events create,get,patch',
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => assert.deepEqual(table(grantsFor(config(c.yaml))), c.rules));
  }

  it('never grants Services anything but get, nor any verb on Secrets, nor any wildcard', () => {
    const all = grantsFor(config(`${weeder}\n${taint}\napps: {}\n${repair}`));
    for (const r of all.flatMap((g) => g.rules)) {
      if (r.resources.includes('services')) assert.deepEqual(r.verbs, ['get']);
      assert.ok(!r.resources.includes('secrets'), 'secrets');
      assert.ok(![...r.verbs, ...r.resources, ...r.apiGroups].includes('*'), JSON.stringify(r));
    }
  });

  it('objects: a Role and a RoleBinding per namespace, a ClusterRole and binding for cluster-wide grants, bound to the ServiceAccount given', () => {
    const objects = rbacObjects(config('apps: { namespaces: [a] }\n' + taint), { namespace: 'ops', serviceAccount: 'remedy' });
    assert.deepEqual(objects.map((o) => `${o.kind} ${o.metadata.namespace ?? '-'} ${o.metadata.name}`), [
      'ClusterRole - tend-taint-replacement-nodes', 'ClusterRoleBinding - tend-taint-replacement-nodes',
      'ClusterRole - tend-taint-replacement', 'ClusterRoleBinding - tend-taint-replacement',
      'Role a tend-apps', 'RoleBinding a tend-apps',
    ]);
    const binding = objects[5] as unknown as { roleRef: { kind: string; name: string }; subjects: unknown[] };
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tend-apps' });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'remedy', namespace: 'ops' }]);
    for (const o of objects) assert.equal(o.metadata.labels['rbac.tend.dev/generated'], 'true');
  });

  it('YAML: the same objects, with comments saying why and where cluster-wide rights come from', () => {
    const c = config('apps: {}\n' + weeder.slice(0, -1) + ', namespaces: [cp] }');
    const text = rbacYaml(c, {}, 'my.yaml');
    const docs = parseAllDocuments(text).map((d) => d.toJS() as object);
    assert.deepEqual(docs, rbacObjects(c));
    assert.match(text, /^# Generated by `tend rbac` from my\.yaml/);
    assert.match(text, /# ClusterRole tend-apps \(apps\), cluster-wide: apps has no namespaces/);
    assert.match(text, /# Role tend-weeder \(weeder\), namespace cp: listed in weeder\.namespaces/);
    assert.match(text, /# one Deployment per process/);
  });

  it('YAML with no capability: a comment only, no objects', () => {
    const text = rbacYaml(config(''));
    assert.match(text, /No capability is configured/);
    assert.deepEqual(parseAllDocuments(text).filter((d) => d.contents), []);
  });

  it('labels every object with the tend it was generated for, and prunes by that name', () => {
    const c = config(`apps: { namespaces: [a] }\n${weeder}\n${repair}\n${taint}`);
    for (const name of ['tend', 'night-watch']) {
      for (const o of rbacObjects(c, { name })) {
        assert.equal(o.metadata.labels['rbac.tend.dev/name'], name, `${o.kind} ${o.metadata.name}`);
        assert.ok(o.metadata.name.startsWith(`${name}-`));
      }
    }
    assert.equal(pruneSelector('night-watch'), 'rbac.tend.dev/generated=true,rbac.tend.dev/name=night-watch');
    assert.equal(pruneSelector(), 'rbac.tend.dev/generated=true,rbac.tend.dev/name=tend');
  });

  it('knows every part a grant is named with, for objects generated before the name label', () => {
    const nodeRepair = 'nodeRepair: { nodeSelector: { matchLabels: { role: worker } }, machineTypeLabel: example.org/machine-type, limits: { maximumRepairQueueEntries: 3 }, operations: { default: reboot } }';
    const all = config(`weeder: { namespaces: [w], servicesAndDependantSelectors: { etcd: { podSelectors: [ { matchLabels: { role: api } } ] } } }\n` +
      `${repair}\n${nodeRepair}\napps: {}\ntaintReplacement: { namespaces: [t], podSelector: { matchLabels: { app: db } }, taintReplacementOptions: [ { key: x.org/m, durationInSeconds: 1 } ] }`);
    assert.deepEqual(new Set(grantsFor(all).map((g) => g.part)), new Set(GRANT_PARTS));
  });

  // An object of an older version has no name label: it is the tend's whose name its own name
  // carries, and no tend's when two could have made it.
  for (const { object, owner } of [
    { object: 'tend-apps', owner: 'tend' },
    { object: 'night-watch-weeder-readiness', owner: 'night-watch' },
    { object: 'tend-test-taint-replacement-nodes', owner: 'tend-test' },
    { object: 'tend-weeder', owner: 'tend' },
    { object: 'tend-node-repair', owner: undefined },
    { object: 'tend-stale-grant', owner: undefined },
    { object: 'apps', owner: undefined },
  ]) {
    it(`an unlabelled ${object} is ${owner ?? 'no tend'}'s`, () => {
      assert.equal(legacyOwner(object), owner);
    });
  }
});
