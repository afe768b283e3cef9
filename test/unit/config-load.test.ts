import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, type ConfigProblem } from '../../src/config/errors.ts';
import { describeConfig, loadConfig, parseConfig, parseConfigMapRef } from '../../src/config/load.ts';
import { configError } from '../harness/config-error.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/config/${name}`, import.meta.url));


async function configErrorAsync(promise: Promise<unknown>): Promise<ConfigError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  return assert.fail('expected a ConfigError');
}

const show = (problems: readonly ConfigProblem[]) => problems.map((p) => `${p.path}: ${p.message}`).join('\n');

/** Asserts the problems are exactly these, each by its path and a fragment of its message. */
function assertProblems(problems: readonly ConfigProblem[], expected: [path: string, fragment: string][]) {
  for (const [path, fragment] of expected) {
    const found = problems.some((p) => p.path === path && p.message.includes(fragment));
    assert.ok(found, `expected "${path}: …${fragment}…" among:\n${show(problems)}`);
  }
  assert.equal(problems.length, expected.length, `expected ${expected.length} problem(s), got:\n${show(problems)}`);
}

const selector = (expression: string) =>
  `weeder: { servicesAndDependantSelectors: { etcd: { podSelectors: [ { matchExpressions: [ ${expression} ] } ] } } }`;
const expressionPath = 'weeder.servicesAndDependantSelectors.etcd.podSelectors[0].matchExpressions[0]';
/** A valid weeder section with `fields` added. */
const weederWith = (fields: string) =>
  `weeder: { ${fields}, servicesAndDependantSelectors: { etcd: { podSelectors: [ { matchLabels: { app: x } } ] } } }`;

describe('config', () => {
  describe('valid files', () => {
    it('loads the example with every section (test/fixtures/config/design-example.yaml)', async () => {
      const config = await loadConfig({ file: fixture('design-example.yaml') });
      assert.deepEqual(config.temporal, { address: 'localhost:7233', namespace: 'default', taskQueue: 'tend' });
      assert.deepEqual(config.kubernetes, { kubeconfig: '~/.kube/config' });
      assert.deepEqual(config.weeder, {
        watchDuration: { text: '2m0s', ms: 120_000 },
        servicesAndDependantSelectors: {
          'etcd-main-client': {
            podSelectors: [{ matchExpressions: [{ key: 'role', operator: 'In', values: ['apiserver'] }] }],
          },
        },
      });
      assert.deepEqual(config.taintReplacement?.taintReplacementOptions, [
        { key: 'example.org/maintenance', durationInSeconds: 7200 }, { key: '*', durationInSeconds: 3600 },
      ]);
      assert.equal(config.taintReplacement?.maxConcurrentReplacements, 1);
      assert.deepEqual(config.repair?.repair_procedures[0]?.machine_types, ['qemu']);
      assert.equal(config.repair?.repair_procedures[0]?.repair_operations[0]?.repair_steps[0]?.command_timeout_seconds, 30, 'CKE default');
      assert.equal(config.apps, undefined, 'an absent section is off');
    });

    it("loads dependency-watchdog's own weeder example verbatim", async () => {
      const config = await loadConfig({ file: fixture('weeder-seed.yaml') });
      const services = config.weeder!.servicesAndDependantSelectors;
      assert.deepEqual(Object.keys(services), ['etcd-main-client', 'kube-apiserver']);
      assert.deepEqual(services['kube-apiserver']!.podSelectors[0]!.matchExpressions![1], {
        key: 'role', operator: 'NotIn', values: ['main', 'apiserver'],
      });
    });

    const defaults = { temporal: { address: 'localhost:7233', namespace: 'default', taskQueue: 'tend' }, kubernetes: {}, http: { address: '0.0.0.0:9464' } };
    for (const [name, text] of [
      ['an empty file', ''],
      ['a file of comments', '# nothing here\n'],
      ['empty sections', 'temporal: {}\nkubernetes: {}\n'],
    ]) {
      it(`applies every default to ${name} given as text (the environment alone)`, () => {
        assert.deepEqual(parseConfig(text!, 'test.yaml'), defaults);
      });
    }

    it('refuses a comments-only file on disk: text with no settings means every default only without a file (config-size.test.ts)', async () => {
      const err = await configErrorAsync(loadConfig({ file: fixture('comments-only.yaml') }));
      assert.match(err.message, /holds no settings/);
    });

    it('defaults watchDuration to 5m', () => {
      const config = parseConfig(selector('{ key: role, operator: Exists }'), 'test.yaml');
      assert.deepEqual(config.weeder!.watchDuration, { text: '5m', ms: 300_000 });
    });

    for (const address of ['localhost:7233', '10.0.0.1:7233', '[::1]:7233', 'my-ns.a1b2c.tmprl.cloud:7233', 'temporal:1', 'temporal:65535']) {
      it(`accepts temporal.address ${address}`, () => {
        assert.equal(parseConfig(`temporal: { address: "${address}" }`, 'test.yaml').temporal.address, address);
      });
    }

    it('accepts TLS with system roots, or with files for mTLS', () => {
      assert.equal(parseConfig('temporal: { tls: true }', 't').temporal.tls, true);
      const tls = { serverName: 'temporal', serverRootCACertPath: '/ca.pem', clientCertPath: '/tls.crt', clientKeyPath: '/tls.key' };
      assert.deepEqual(parseConfig(`temporal: { tls: ${JSON.stringify(tls)} }`, 't').temporal.tls, tls);
    });

    it('reads the API key from the environment variable apiKeyEnv names', () => {
      process.env.TEND_TEST_API_KEY = 'secret-key';
      try {
        const { temporal } = parseConfig('temporal: { apiKeyEnv: TEND_TEST_API_KEY }', 't');
        assert.equal(temporal.apiKey, 'secret-key');
        assert.equal(temporal.apiKeyEnv, 'TEND_TEST_API_KEY');
      } finally {
        delete process.env.TEND_TEST_API_KEY;
      }
    });
  });

  describe('refused files', () => {
    const cases: { name: string; yaml: string; problems: [string, string][] }[] = [
      // Malformed YAML: the whole document, placed by line and column.
      { name: 'an unclosed flow sequence', yaml: 'temporal:\n  address: [localhost\n', problems: [['', 'invalid YAML at line 3, column 1']] },
      { name: 'a duplicate key', yaml: 'temporal: {}\ntemporal: {}\n', problems: [['', 'invalid YAML at line 2, column 1: Map keys must be unique']] },
      { name: 'two documents', yaml: 'temporal: {}\n---\nkubernetes: {}\n', problems: [['', 'holds more than one YAML document']] },
      { name: 'a list at the top', yaml: '- temporal\n', problems: [['', 'must be a mapping']] },
      // Unknown fields, at the root and nested, each named by its own path.
      { name: 'a misspelt section', yaml: 'tempral: {}\n', problems: [['tempral', 'unknown field; did you mean temporal?']] },
      { name: 'an unknown section', yaml: 'frobnicator: {}\n', problems: [['frobnicator', 'unknown field; expected one of mode, temporal, kubernetes']] },
      {
        name: 'unknown fields in temporal',
        yaml: 'temporal: { adress: x, colour: blue }\n',
        problems: [['temporal.adress', 'did you mean address?'], ['temporal.colour', 'expected one of address, namespace, taskQueue, tls, apiKey, apiKeyEnv']],
      },
      { name: 'an unknown field in tls', yaml: 'temporal: { tls: { serverNme: x } }\n', problems: [['temporal.tls.serverNme', 'did you mean serverName?']] },
      {
        name: 'a misspelt operator field',
        yaml: selector('{ key: role, operater: In, values: [a] }'),
        problems: [[`${expressionPath}.operater`, 'did you mean operator?'], [`${expressionPath}.operator`, 'required: one of In, NotIn, Exists, DoesNotExist']],
      },
      // Wrong types.
      { name: 'a number for a string', yaml: 'temporal: { namespace: 5 }\n', problems: [['temporal.namespace', 'must be a string; quote it to make it one (got 5)']] },
      { name: 'a string for a section', yaml: 'kubernetes: in-cluster\n', problems: [['kubernetes', 'must be a mapping (got "in-cluster")']] },
      { name: 'an empty section', yaml: 'weeder:\n', problems: [['weeder', 'must be a mapping (got null)']] },
      { name: 'a string for tls', yaml: 'temporal: { tls: "yes" }\n', problems: [['temporal.tls', 'must be true, false, or a mapping of serverName']] },
      {
        name: 'a mapping for podSelectors',
        yaml: 'weeder: { servicesAndDependantSelectors: { etcd: { podSelectors: { app: x } } } }\n',
        problems: [['weeder.servicesAndDependantSelectors.etcd.podSelectors', 'must be a list']],
      },
      // temporal
      { name: 'an address without a port', yaml: 'temporal: { address: localhost }\n', problems: [['temporal.address', 'must be host:port without a scheme, like localhost:7233 or my-namespace.a1b2c.tmprl.cloud:7233 (got "localhost")']] },
      { name: 'an address with a scheme', yaml: 'temporal: { address: "http://localhost:7233" }\n', problems: [['temporal.address', 'must be host:port without a scheme']] },
      { name: 'port 0', yaml: 'temporal: { address: "localhost:0" }\n', problems: [['temporal.address', 'port must be from 1 to 65535 (got "localhost:0")']] },
      { name: 'port 65536', yaml: 'temporal: { address: "localhost:65536" }\n', problems: [['temporal.address', 'port must be from 1 to 65535']] },
      { name: 'an empty task queue', yaml: 'temporal: { taskQueue: "" }\n', problems: [['temporal.taskQueue', 'must not be empty']] },
      { name: 'half an mTLS pair', yaml: 'temporal: { tls: { clientCertPath: /tls.crt } }\n', problems: [['temporal.tls.clientKeyPath', 'required when clientCertPath is set']] },
      { name: 'apiKey and apiKeyEnv', yaml: 'temporal: { apiKey: k, apiKeyEnv: KEY }\n', problems: [['temporal.apiKeyEnv', 'set apiKey or apiKeyEnv, not both']] },
      { name: 'an unset apiKeyEnv', yaml: 'temporal: { apiKeyEnv: TEND_TEST_UNSET_KEY }\n', problems: [['temporal.apiKeyEnv', 'names environment variable TEND_TEST_UNSET_KEY, which is not set']] },
      { name: 'a bad apiKeyEnv', yaml: 'temporal: { apiKeyEnv: "1-KEY" }\n', problems: [['temporal.apiKeyEnv', 'must be an environment variable name']] },
      // weeder
      { name: 'a duration without a unit', yaml: 'weeder: { watchDuration: "5" }\n' , problems: [['weeder.watchDuration', 'must be a Go duration, like 2m0s, 300ms or 1h30m (got "5")'], ['weeder.servicesAndDependantSelectors', 'required']] },
      { name: 'a duration in words', yaml: weederWith('watchDuration: 5 minutes'), problems: [['weeder.watchDuration', 'must be a Go duration, like 2m0s, 300ms or 1h30m (got "5 minutes")']] },
      { name: 'a duration in days', yaml: weederWith('watchDuration: 1d'), problems: [['weeder.watchDuration', 'must be a Go duration']] },
      { name: 'a zero duration', yaml: weederWith('watchDuration: 0s'), problems: [['weeder.watchDuration', 'must be longer than zero (got "0s")']] },
      { name: 'a negative duration', yaml: weederWith('watchDuration: -1m'), problems: [['weeder.watchDuration', 'must be longer than zero']] },
      { name: 'a number for a duration', yaml: weederWith('watchDuration: 300'), problems: [['weeder.watchDuration', 'must be a Go duration string, like 2m0s, 300ms or 1h30m (got 300)']] },
      { name: 'no services', yaml: 'weeder: { servicesAndDependantSelectors: {} }\n', problems: [['weeder.servicesAndDependantSelectors', 'must name at least one Service']] },
      {
        name: 'a bad Service name',
        yaml: 'weeder: { servicesAndDependantSelectors: { Etcd_Main: { podSelectors: [ { matchLabels: { a: b } } ] } } }\n',
        problems: [['weeder.servicesAndDependantSelectors.Etcd_Main', 'not a valid Service name: must be a DNS-1123 label']],
      },
      { name: 'empty podSelectors', yaml: 'weeder: { servicesAndDependantSelectors: { etcd: { podSelectors: [] } } }\n', problems: [['weeder.servicesAndDependantSelectors.etcd.podSelectors', 'must list at least one pod selector']] },
      { name: 'missing podSelectors', yaml: 'weeder: { servicesAndDependantSelectors: { etcd: {} } }\n', problems: [['weeder.servicesAndDependantSelectors.etcd.podSelectors', 'required']] },
      {
        name: 'an empty selector',
        yaml: 'weeder: { servicesAndDependantSelectors: { etcd: { podSelectors: [ {}, { matchLabels: {}, matchExpressions: [] } ] } } }\n',
        problems: [
          ['weeder.servicesAndDependantSelectors.etcd.podSelectors[0]', 'must set matchLabels or matchExpressions: an empty selector would select every pod'],
          ['weeder.servicesAndDependantSelectors.etcd.podSelectors[1]', 'must set matchLabels or matchExpressions'],
        ],
      },
      { name: 'an unknown operator', yaml: selector('{ key: role, operator: Inn, values: [a] }'), problems: [[`${expressionPath}.operator`, 'must be one of In, NotIn, Exists, DoesNotExist (got "Inn")']] },
      { name: 'In without values', yaml: selector('{ key: role, operator: In }'), problems: [[`${expressionPath}.values`, 'must list at least one value for operator In']] },
      { name: 'NotIn with no values', yaml: selector('{ key: role, operator: NotIn, values: [] }'), problems: [[`${expressionPath}.values`, 'must list at least one value for operator NotIn']] },
      { name: 'Exists with values', yaml: selector('{ key: role, operator: Exists, values: [a] }'), problems: [[`${expressionPath}.values`, 'must be absent for operator Exists (got ["a"])']] },
      { name: 'DoesNotExist with values', yaml: selector('{ key: role, operator: DoesNotExist, values: [a, b] }'), problems: [[`${expressionPath}.values`, 'must be absent for operator DoesNotExist']] },
      { name: 'a bad label key', yaml: selector('{ key: "-role", operator: Exists }'), problems: [[`${expressionPath}.key`, 'must be a label key: its name must be letters, digits']] },
      { name: 'a bad label value', yaml: selector('{ key: role, operator: In, values: [ok, "not ok"] }'), problems: [[`${expressionPath}.values[1]`, 'must be a label value: empty, or letters, digits, "-", "_" and ".", starting and ending with a letter or digit (got "not ok")']] },
      {
        name: 'a number as a label value',
        yaml: 'weeder: { servicesAndDependantSelectors: { etcd: { podSelectors: [ { matchLabels: { app.kubernetes.io/version: 1.5 } } ] } } }\n',
        problems: [['weeder.servicesAndDependantSelectors.etcd.podSelectors[0].matchLabels["app.kubernetes.io/version"]', 'must be a string; quote it to make it one (got 1.5)']],
      },
      { name: 'no namespaces', yaml: weederWith('namespaces: []'), problems: [['weeder.namespaces', 'must list at least one namespace, or be left out']] },
      { name: 'a bad namespace', yaml: weederWith('namespaces: [Kube_System]'), problems: [['weeder.namespaces[0]', 'must be a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit (got "Kube_System")']] },
    ];

    for (const { name, yaml, problems } of cases) {
      it(`refuses ${name}`, () => {
        assertProblems(configError(() => parseConfig(yaml, 'test.yaml')).problems, problems);
      });
    }

    it('lists every problem, in document order, with its line', () => {
      const yaml = [
        'temporal:',
        '  address: localhost',
        'weeder:',
        '  watchDuration: soon',
        '  servicesAndDependantSelectors:',
        '    etcd:',
        '      podSelectors:',
        '        - matchExpressions:',
        '            - { key: role, operator: In, values: [a] }',
        '            - { key: role, operator: Inn }',
        '  extra: true',
      ].join('\n');
      const err = configError(() => parseConfig(yaml, '/etc/tend/config.yaml'));
      assert.equal(err.origin, '/etc/tend/config.yaml');
      assert.equal(
        err.message,
        [
          'config /etc/tend/config.yaml: 4 problems:',
          '  - temporal.address: must be host:port without a scheme, like localhost:7233 or my-namespace.a1b2c.tmprl.cloud:7233 (got "localhost") (line 2)',
          '  - weeder.watchDuration: must be a Go duration, like 2m0s, 300ms or 1h30m (got "soon") (line 4)',
          '  - weeder.servicesAndDependantSelectors.etcd.podSelectors[0].matchExpressions[1].operator: must be one of In, NotIn, Exists, DoesNotExist (got "Inn") (line 10)',
          '  - weeder.extra: unknown field; expected one of mode, watchDuration, servicesAndDependantSelectors, namespaces (line 11)',
        ].join('\n'),
      );
      assert.deepEqual(err.problems.map((p) => p.line), [2, 4, 10, 11]);
    });

    it('says what is wrong with malformed YAML in one line', () => {
      const err = configError(() => parseConfig('temporal:\n  address: localhost:7233\n   namespace: x\n', 'bad.yaml'));
      assert.equal(err.message, 'config bad.yaml: invalid YAML at line 2, column 12: Nested mappings are not allowed in compact mappings');
      assert.deepEqual(err.problems, [{ path: '', line: 2, message: 'invalid YAML at line 2, column 12: Nested mappings are not allowed in compact mappings' }]);
    });

    it('never echoes an API key back', () => {
      const err = configError(() => parseConfig('temporal: { apiKey: 123456789 }', 't'));
      assertProblems(err.problems, [['temporal.apiKey', 'must be a string']]);
      assert.doesNotMatch(err.message, /123456789/);
    });
  });

  describe('nodeRepair across sections', () => {
    const repair = 'repair: { repair_procedures: [ { machine_types: [qemu], repair_operations: [ { operation: unreachable, repair_steps: [ { repair_command: [sh, -c, "true"] } ], health_check_command: [sh, -c, "true"] } ] } ] }';
    const nodeRepair = (extra = '') => `nodeRepair: { nodeSelector: { matchLabels: { role: worker } }, machineTypeLabel: example.org/machine-type, limits: { maximumRepairQueueEntries: 3 }${extra} }`;

    it('accepts a section whose operations are repair procedures\' operations, and describes it', () => {
      const config = parseConfig(`${repair}\n${nodeRepair(', unhealthyConditions: [ { type: Ready, status: Unknown, duration: 20s } ]')}`, 't');
      assert.deepEqual(config.nodeRepair?.operations, { 'Ready/Unknown': 'unreachable' });
      assert.match(describeConfig(config), /\nnodeRepair: Nodes unhealthy when Ready=Unknown for 20s; entries of InternalIP and machine type label example\.org\/machine-type \(Ready\/Unknown -> unreachable\); at most 3 queue entries, minHealthy 51%$/);
    });

    it('refuses nodeRepair without repair, and an operation no procedure has, naming where', () => {
      assertProblems(configError(() => parseConfig(nodeRepair(), 't')).problems, [['nodeRepair', 'needs the repair section']]);
      assertProblems(configError(() => parseConfig(`${repair}\n${nodeRepair(', operations: { default: reboot }')}`, 't')).problems, [
        ['nodeRepair.operations.default', 'operation reboot is no repair procedure\'s operation (repair has unreachable)'],
      ]);
    });
  });

  describe('loadConfig', () => {
    it('names a missing file, and where a relative one was looked for', async () => {
      let err = await configErrorAsync(loadConfig({ file: '/nonexistent/tend.yaml' }));
      assert.equal(err.message, 'config /nonexistent/tend.yaml: file not found');
      err = await configErrorAsync(loadConfig({ file: 'nonexistent-tend.yaml' }));
      assert.equal(err.message, `config nonexistent-tend.yaml: file not found (looked for ${join(process.cwd(), 'nonexistent-tend.yaml')})`);
    });

    it('refuses a directory', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'tend-config-'));
      const err = await configErrorAsync(loadConfig({ file: dir }));
      assert.equal(err.message, `config ${dir}: is a directory, not a file`);
    });

    it('names the file in validation errors', async () => {
      const file = join(await mkdtemp(join(tmpdir(), 'tend-config-')), 'config.yaml');
      await writeFile(file, 'temporal: { address: nowhere }\n');
      const err = await configErrorAsync(loadConfig({ file }));
      assert.equal(err.origin, file);
      assert.match(err.message, new RegExp(`^config ${file}: 1 problem:\n  - temporal.address: must be host:port`));
    });
  });

  describe('parseConfigMapRef', () => {
    it('reads namespace/name:key', () => {
      assert.deepEqual(parseConfigMapRef('tend-system/tend:config.yaml'), { namespace: 'tend-system', name: 'tend', key: 'config.yaml' });
      assert.deepEqual(parseConfigMapRef('default/tend.config:tend_config-1.yaml'), { namespace: 'default', name: 'tend.config', key: 'tend_config-1.yaml' });
    });

    it('without a key: config.yaml; without a name: none (the labelled one, src/config/config-map.ts)', () => {
      assert.deepEqual(parseConfigMapRef('tend-system/tend-config'), { namespace: 'tend-system', name: 'tend-config', key: 'config.yaml' });
      assert.deepEqual(parseConfigMapRef('tend-system'), { namespace: 'tend-system', key: 'config.yaml' });
      assert.deepEqual(parseConfigMapRef('tend-system:tend.yaml'), { namespace: 'tend-system', key: 'tend.yaml' });
    });

    for (const [ref, fragment] of [
      ['', 'must be namespace/name:key'],
      ['tend-system/', 'must be namespace/name:key'],
      ['/tend:config.yaml', 'must be namespace/name:key'],
      ['tend-system/tend:', 'must be namespace/name:key'],
      ['a/b/c:config.yaml', 'must be namespace/name:key'],
      ['Tend/tend:config.yaml', 'namespace must be a DNS-1123 label'],
      ['tend/Tend:config.yaml', 'name must be a DNS-1123 subdomain'],
      ['tend/tend:config yaml', 'key must be'],
    ] as const) {
      it(`refuses ${ref}`, () => {
        const err = configError(() => parseConfigMapRef(ref));
        assert.equal(err.origin, `configmap ${ref}`);
        assert.ok(err.message.startsWith(`config configmap ${ref}: `), err.message);
        assert.ok(err.message.includes(fragment), err.message);
      });
    }
  });

  describe('describeConfig', () => {
    it('summarises every section, and says which are off', async () => {
      const config = await loadConfig({ file: fixture('design-example.yaml') });
      assert.equal(
        describeConfig(config),
        [
          'temporal: localhost:7233, namespace default, task queue tend, no TLS, no API key',
          'kubernetes: kubeconfig ~/.kube/config',
          'weeder: 1 Service(s) (etcd-main-client) in all namespaces, window 2m0s',
          'apps: off',
          'repair: 1 machine type(s) (qemu), operations unreachable, at most 1 at once',
          'taintReplacement: taints example.org/maintenance after 7200s, * after 3600s; replace 1800s later, at most 1 at once, none while more than 50% nodes are tainted',
          'nodeRepair: off',
        ].join('\n'),
      );
      assert.match(describeConfig(parseConfig('', 't')), /\nweeder: off\napps: off\nrepair: off\ntaintReplacement: off\nnodeRepair: off$/);
    });

    it('never prints an API key', () => {
      const summary = describeConfig(parseConfig('temporal: { apiKey: secret-key, tls: true }', 't'));
      assert.match(summary, /TLS with system roots, API key$/m);
      assert.doesNotMatch(summary, /secret-key/);
    });
  });
});
