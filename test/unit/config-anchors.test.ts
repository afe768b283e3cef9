// The anchors' own files: a section's `fromFile`, and a file given to tend as it is: the error says which section of tend's file its
// content goes under, before the unknown fields. The example files are written from each
// anchor's documented format.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/config/errors.ts';
import { loadConfig, parseConfig } from '../../src/config/load.ts';
import { IGNORED_DURATION } from '../../src/taint/match.ts';

const firstProblem = (text: string): string => {
  try {
    parseConfig(text, 'theirs.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems[0]!.message;
  }
  return assert.fail('accepted');
};

describe('config: an anchor\'s own file gets a hint', () => {
  it("dependency-watchdog's weeder config file: under weeder:", () => {
    const text = 'watchDuration: 2m0s\nservicesAndDependantSelectors:\n  etcd-main-client:\n    podSelectors:\n      - matchLabels: { role: apiserver }\n';
    assert.match(firstProblem(text), /dependency-watchdog's weeder configuration .*under a `weeder:` section/);
    // And it is accepted there, as it is.
    const indented = text.split('\n').map((l) => (l ? `  ${l}` : l)).join('\n');
    assert.equal(parseConfig(`weeder:\n${indented}`, 'ours.yaml').weeder?.watchDuration.text, '2m0s');
  });

  it("CKE's cluster.yaml: its repair section under repair:", () => {
    const text = 'name: prod\nnodes:\n  - address: 10.0.0.1\n    user: cke\nservice_subnet: 10.68.0.0/16\nrepair:\n  repair_procedures: []\n';
    assert.match(firstProblem(text), /CKE's cluster\.yaml: .*`repair` section goes, as it is, under tend's own `repair:` section/);
  });

  it('a FoundationDBCluster manifest: its replacements under taintReplacement:', () => {
    const text = 'apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata: { name: db }\nspec:\n  automationOptions:\n    replacements: { enabled: true }\n';
    assert.match(firstProblem(text), /FoundationDBCluster manifest: .*spec\.automationOptions\.replacements goes under a `taintReplacement:` section/);
  });

  it("tend's own file with a typo gets no such hint", () => {
    assert.match(firstProblem('temporal: { adress: x }\n'), /unknown field; did you mean address/);
  });
});

describe('config: fromFile reads a section from its users\' own file', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tend-fromfile-'));
    // dependency-watchdog's weeder config file, whole.
    await writeFile(join(dir, 'dep.yaml'), 'watchDuration: 2m0s\nservicesAndDependantSelectors:\n  etcd-main-client:\n    podSelectors:\n' +
      '      - matchExpressions:\n          - key: role\n            operator: In\n            values: [apiserver]\n');
    // A FoundationDBCluster manifest: its spec.automationOptions.replacements.
    await writeFile(join(dir, 'fdb.yaml'), 'apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata:\n  name: sample\nspec:\n' +
      '  version: 7.1.26\n  automationOptions:\n    replacements:\n      enabled: true\n      maxConcurrentReplacements: 0\n' +
      '      taintReplacementOptions:\n        - key: example.org/maintenance\n          durationInSeconds: 3600\n' +
      '        - key: node.kubernetes.io/unreachable\n          durationInSeconds: 9223372036854775807\n');
    // CKE's cluster.yaml: its repair section.
    await mkdir(join(dir, 'cke'));
    await writeFile(join(dir, 'cke', 'cluster.yaml'), 'name: prod\nnodes:\n  - address: 10.0.0.1\n    user: cke\nrepair:\n  repair_procedures:\n' +
      '    - machine_types: [qemu]\n      repair_operations:\n        - operation: unreachable\n          repair_steps:\n' +
      '            - repair_command: [reboot]\n          health_check_command: [check]\n  max_concurrent_repairs: 2\n');
  });
  const load = async (text: string) => {
    const file = join(dir, `tend-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(file, text);
    return loadConfig({ file });
  };
  const refused = async (text: string) => {
    try {
      await load(text);
    } catch (err) {
      assert.ok(err instanceof ConfigError, String(err));
      return err.problems.map((p) => `${p.path}: ${p.message}${p.line ? ` (line ${p.line})` : ''}`);
    }
    return assert.fail('accepted');
  };

  it('the three forms, relative to the configuration file, merged with the section\'s own fields', async () => {
    const c = await load('weeder:\n  fromFile: dep.yaml\n  namespaces: [kube-system]\n' +
      'taintReplacement:\n  fromFile: fdb.yaml\n  podSelector: { matchLabels: { app: fdb } }\nrepair: { fromFile: cke/cluster.yaml }\n');
    assert.equal(c.weeder?.watchDuration.text, '2m0s');
    assert.deepEqual(Object.keys(c.weeder!.servicesAndDependantSelectors), ['etcd-main-client']);
    assert.deepEqual(c.weeder?.namespaces, ['kube-system']);
    assert.equal(c.taintReplacement?.maxConcurrentReplacements, 0);
    assert.equal(c.taintReplacement?.taintReplacementOptions[1]!.durationInSeconds, IGNORED_DURATION);
    assert.deepEqual(c.taintReplacement?.podSelector, { matchLabels: { app: 'fdb' } });
    assert.equal(c.repair?.max_concurrent_repairs, 2);
    assert.equal(c.repair?.repair_procedures[0]!.repair_operations[0]!.repair_steps[0]!.watch_seconds, 0);
  });

  it('a problem in the included part names that file and its line', async () => {
    await writeFile(join(dir, 'bad-dep.yaml'), 'watchDuration: soon\nservicesAndDependantSelectors: {}\n');
    const p = await refused('weeder: { fromFile: bad-dep.yaml }\n');
    assert.ok(p.some((x) => /^weeder\.watchDuration: must be a Go duration.*\(in bad-dep\.yaml, line 1\)$/.test(x)), p.join('\n'));
    assert.ok(p.some((x) => /^weeder\.servicesAndDependantSelectors: must name at least one Service \(in bad-dep\.yaml, line 2\)$/.test(x)), p.join('\n'));
  });

  it('refuses a missing file, a file without the part, a field given twice, a section without fromFile, and a ConfigMap', async () => {
    assert.match((await refused('repair: { fromFile: nothere.yaml }\n'))[0]!, /^repair\.fromFile: nothere\.yaml: file not found \(looked for .*nothere\.yaml\) \(line 1\)$/);
    assert.match((await refused('taintReplacement: { fromFile: dep.yaml, podSelector: { matchLabels: { a: b } } }\n'))[0]!,
      /^taintReplacement\.fromFile: dep\.yaml has no spec\.automationOptions\.replacements \(a mapping\): is it a FoundationDBCluster manifest\?/);
    assert.match((await refused('weeder:\n  fromFile: dep.yaml\n  watchDuration: 1m\n'))[0]!, /^weeder\.watchDuration: given both here and in dep\.yaml: keep one \(line 3\)$/);
    assert.match((await refused('apps: { fromFile: dep.yaml }\n'))[0]!, /^apps\.fromFile: apps has no fromFile/);
    assert.throws(() => parseConfig('weeder: { fromFile: dep.yaml }\n', 'configmap tend/cfg:config.yaml'), /weeder\.fromFile: needs a configuration file to be relative to/);
  });
});
