// The Helm chart deploy/helm/tend, with helm built from its Go module (scripts/binaries.sh --helm):
// helm lint; helm template of the configuration, image, Temporal, probes and metrics values; bad
// values refused with the field named (values.schema.json, `required`); the chart's rights equal
// `tend rbac`'s for the same configuration, for each capability alone, all together, namespaced
// and cluster-wide, in observe mode (docs/helm.md, "Rights"); then a real helm install, upgrade
// (the ConfigMap and the Deployment change, the pods roll) and uninstall on the sandbox.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { ensureBinaries } from '../../src/sandbox/binaries.ts';
import { runTend } from '../harness/cli.ts';
import { repoRoot } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const chart = join(repoRoot, 'deploy/helm/tend');
const RELEASE_NS = 'tend-ops';

let helmBin = '';
let work = '';

interface Run { code: number | null; stdout: string; stderr: string }

/** A command to its end: its exit code (null when killed at the time limit) and output. */
async function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 300_000): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 64 << 20 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    // A command that could not start at all (ENOENT) is the test's error, not an answer.
    if (typeof e.code === 'string') throw err;
    return { code: typeof e.code === 'number' ? e.code : null, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** helm with its own cache, configuration and data folders, so that nothing of the user's is read or written. */
function helm(args: string[], timeoutMs?: number): Promise<Run> {
  const home = join(work, 'helm-home');
  return run(helmBin, args, { HELM_CACHE_HOME: join(home, 'cache'), HELM_CONFIG_HOME: join(home, 'config'), HELM_DATA_HOME: join(home, 'data') }, timeoutMs);
}

async function helmOk(args: string[]): Promise<string> {
  const r = await helm(args);
  assert.equal(r.code, 0, `helm ${args.join(' ')} failed:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

let valuesCount = 0;
function valuesFile(values: Obj): string {
  const file = join(work, `values-${valuesCount++}.yaml`);
  writeFileSync(file, stringify(values));
  return file;
}

const docs = (text: string): Obj[] => parseAllDocuments(text).map((d) => d.toJS()).filter((o) => o);

/** `helm template` of the chart with these values, as objects. */
async function template(values: Obj, opts: { release?: string; namespace?: string } = {}): Promise<Obj[]> {
  return docs(await helmOk(['template', opts.release ?? 'tend', chart, '-n', opts.namespace ?? RELEASE_NS, '-f', valuesFile(values)]));
}

/** `helm template` that must fail; returns what helm said. */
async function refused(values: Obj): Promise<string> {
  const r = await helm(['template', 'tend', chart, '-n', RELEASE_NS, '-f', valuesFile(values)]);
  assert.notEqual(r.code, 0, `helm template accepted ${JSON.stringify(values)}`);
  return r.stderr;
}

const find = (objects: Obj[], kind: string, name?: string): Obj =>
  objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));

// The capability sections of the demo configuration (valid by construction: the sandbox runs it),
// with the namespaces each test case gives.
const demo = parse(readFileSync(join(repoRoot, 'deploy/demo/config.yaml'), 'utf8')) as Obj;
const without = (o: Obj, ...keys: string[]): Obj => Object.fromEntries(Object.entries(o ?? {}).filter(([k]) => !keys.includes(k)));
const section = (name: 'weeder' | 'taintReplacement' | 'apps' | 'repair', namespaces?: string[]): Obj =>
  ({ ...without(demo[name], 'namespaces'), ...(namespaces && name !== 'repair' && { namespaces }) });
// nodeRepair needs the repair section, and an operation of its procedures: the demo's reboot.
const nodeRepair = {
  nodeSelector: { matchLabels: { 'node.kubernetes.io/instance-type': 'sim' } },
  unhealthyConditions: [{ type: 'Ready', status: 'Unknown', duration: '20s' }],
  machineTypeLabel: 'node.kubernetes.io/instance-type',
  operations: { default: 'reboot' },
  limits: { maximumRepairQueueEntries: 2, minHealthy: '60%' },
};

/**
 * The comparison: the same set of objects by kind, namespace and name; each Role's and
 * ClusterRole's rules the same set of rules (RBAC grants their union, so order is not a
 * difference), each rule's lists compared as sets; each binding's roleRef and subjects the same.
 * The rights tests also check that every label `tend rbac` puts on an object is on the chart's
 * (which adds its own); docs/helm.md, "Rights".
 */
const rule = (r: Obj) => JSON.stringify(Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, [...(v as string[])].sort()])));
const normal = (objects: Obj[]) => objects
  .map((o) => ({
    id: `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`,
    ...(o.rules && { rules: o.rules.map(rule).sort() }),
    ...(o.roleRef && { roleRef: o.roleRef, subjects: o.subjects }),
  }))
  .sort((a, b) => a.id.localeCompare(b.id));

describe('ship: the Helm chart deploy/helm/tend', function () {
  this.timeout(10 * 60_000);

  before(async function () {
    this.timeout(45 * 60_000); // the first run builds helm (several minutes on 2 cores)
    const started = Date.now();
    const built = await promisify(execFile)('bash', [join(repoRoot, 'scripts/binaries.sh'), '--helm'], { maxBuffer: 16 << 20, timeout: 45 * 60_000 });
    helmBin = built.stdout.trim().split('\n').at(-1)!;
    process.stderr.write(`      helm: ${helmBin} (${Math.round((Date.now() - started) / 1000)} s)\n`);
    work = mkdtempSync(join(sandbox().stateDir, 'chart-'));
    mkdirSync(join(work, 'helm-home'));
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('scripts/binaries.sh --helm builds a helm of the pinned version once: a second run prints the same path at once', async () => {
    const script = readFileSync(join(repoRoot, 'scripts/binaries.sh'), 'utf8');
    const version = /^HELM_VERSION=(v3\.\d+\.\d+)$/m.exec(script)?.[1];
    assert.ok(version, 'scripts/binaries.sh sets HELM_VERSION=v3.x.y');
    assert.ok(helmBin.endsWith(`/helm-${version}/helm`), helmBin);
    const again = await run('bash', [join(repoRoot, 'scripts/binaries.sh'), '--helm'], {}, 60_000);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout.trim().split('\n').at(-1), helmBin);
    assert.doesNotMatch(again.stderr, /building/);
    const v = await helmOk(['version', '--short']);
    assert.ok(v.startsWith(version), v);
  });

  it('helm lint passes on the chart as shipped and with every capability configured', async () => {
    await helmOk(['lint', '--strict', chart]);
    await helmOk(['lint', '--strict', chart, '-f', valuesFile({ config: { weeder: section('weeder'), taintReplacement: section('taintReplacement'), apps: {}, repair: section('repair'), nodeRepair } })]);
  });

  it('ships the App CRD of deploy/crds as it is', () => {
    assert.equal(readFileSync(join(chart, 'crds/apps.tend.dev.yaml'), 'utf8'), readFileSync(join(repoRoot, 'deploy/crds/apps.tend.dev.yaml'), 'utf8'));
  });

  it('renders the configuration into the ConfigMap labelled tend.dev/config that the Deployment mounts and tend validates', async () => {
    const config = { mode: 'observe', weeder: section('weeder', ['a', 'b']), taintReplacement: section('taintReplacement'), apps: {}, repair: section('repair'), nodeRepair };
    const objects = await template({ config, temporal: { taskQueue: 'tq', deployment: { name: 'tend', promote: 'newest' } }, metrics: { port: 9500 }, logLevel: 'debug' });
    const configMaps = objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.['tend.dev/config'] === 'true');
    assert.equal(configMaps.length, 1);
    const [cm] = configMaps;
    assert.equal(cm.metadata.namespace, RELEASE_NS);
    assert.equal(cm.metadata.labels['app.kubernetes.io/name'], 'tend');
    assert.equal(cm.metadata.labels['app.kubernetes.io/instance'], 'tend');
    const file = parse(cm.data['config.yaml']);
    assert.deepEqual(file, { ...config, temporal: { taskQueue: 'tq', deployment: { name: 'tend', promote: 'newest' } }, http: { address: '0.0.0.0:9500' } });
    const path = join(work, 'rendered.yaml');
    writeFileSync(path, cm.data['config.yaml']);
    const validated = await runTend(['config', 'validate', path]);
    assert.equal(validated.code, 0, validated.stderr + validated.stdout);

    const deployment = find(objects, 'Deployment', 'tend');
    const pod = deployment.spec.template.spec;
    assert.equal(pod.volumes.find((v: Obj) => v.name === 'config').configMap.name, cm.metadata.name);
    assert.deepEqual(find(objects, 'Role', 'tend-config').rules[0].resourceNames, [cm.metadata.name]);
    const [container] = pod.containers;
    assert.deepEqual(container.args, ['run', '--config', '/etc/tend/config.yaml']);
    assert.equal(container.ports[0].containerPort, 9500);
    const env = Object.fromEntries(container.env.map((e: Obj) => [e.name, e.value ?? e.valueFrom]));
    assert.equal(env.TEND_LOG_LEVEL, 'debug');
    assert.equal(env.TEMPORAL_ADDRESS, 'temporal-frontend.temporal.svc:7233');
    assert.equal(env.TEMPORAL_NAMESPACE, 'default');
    assert.match(deployment.spec.template.metadata.annotations['checksum/config'], /^[0-9a-f]{64}$/);
  });

  it('matches deploy/kubernetes/deployment.yaml: security contexts, probes on /healthz and /readyz, resources, replicas, the budget', async () => {
    const kustomize = parse(readFileSync(join(repoRoot, 'deploy/kubernetes/deployment.yaml'), 'utf8'));
    const ours = await template({});
    const deployment = find(ours, 'Deployment', 'tend');
    const [theirs] = kustomize.spec.template.spec.containers;
    const [container] = deployment.spec.template.spec.containers;
    for (const key of ['securityContext', 'startupProbe', 'livenessProbe', 'readinessProbe', 'resources', 'volumeMounts']) {
      assert.deepEqual(container[key], theirs[key], key);
    }
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.equal(container.livenessProbe.httpGet.path, '/healthz');
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    for (const key of ['securityContext', 'terminationGracePeriodSeconds', 'volumes']) {
      assert.deepEqual(deployment.spec.template.spec[key], kustomize.spec.template.spec[key], key);
    }
    assert.equal(deployment.spec.replicas, kustomize.spec.replicas);
    const pdb = find(ours, 'PodDisruptionBudget', 'tend');
    assert.equal(pdb.spec.maxUnavailable, 1);
    assert.deepEqual(pdb.spec.selector.matchLabels, deployment.spec.selector.matchLabels);
    assert.equal(find(await template({ replicaCount: 3, podDisruptionBudget: { enabled: false } }), 'PodDisruptionBudget'), undefined);
  });

  it('image: the tag defaults to the chart\'s appVersion, and a digest wins over the tag', async () => {
    const { appVersion } = parse(readFileSync(join(chart, 'Chart.yaml'), 'utf8'));
    const image = async (values: Obj) => find(await template(values), 'Deployment').spec.template.spec.containers[0].image;
    assert.equal(await image({ image: { repository: 'registry.example/tend' } }), `registry.example/tend:${appVersion}`);
    assert.equal(await image({ image: { repository: 'registry.example/tend', tag: '9.9.9' } }), 'registry.example/tend:9.9.9');
    const digest = `sha256:${'ab'.repeat(32)}`;
    assert.equal(await image({ image: { repository: 'registry.example/tend', tag: '9.9.9', digest } }), `registry.example/tend@${digest}`);
  });

  it('Temporal: address and namespace as TEMPORAL_* variables, mTLS files from a Secret, an API key from a Secret', async () => {
    const container = async (values: Obj) => find(await template(values), 'Deployment').spec.template.spec;
    const mtls = await container({ temporal: { address: 'ns.acct.tmprl.cloud:7233', namespace: 'ns.acct', tls: { secretName: 'temporal-client', caCert: true, serverName: 'frontend.example' } } });
    const env = Object.fromEntries(mtls.containers[0].env.map((e: Obj) => [e.name, e.value ?? e.valueFrom]));
    assert.equal(env.TEMPORAL_ADDRESS, 'ns.acct.tmprl.cloud:7233');
    assert.equal(env.TEMPORAL_NAMESPACE, 'ns.acct');
    assert.equal(env.TEMPORAL_TLS_CLIENT_CERT_PATH, '/var/run/secrets/tend/temporal-mtls/tls.crt');
    assert.equal(env.TEMPORAL_TLS_CLIENT_KEY_PATH, '/var/run/secrets/tend/temporal-mtls/tls.key');
    assert.equal(env.TEMPORAL_TLS_SERVER_CA_CERT_PATH, '/var/run/secrets/tend/temporal-mtls/ca.crt');
    assert.equal(env.TEMPORAL_TLS_SERVER_NAME, 'frontend.example');
    assert.equal(env.TEMPORAL_API_KEY, undefined);
    const volume = mtls.volumes.find((v: Obj) => v.name === 'temporal-mtls');
    assert.equal(volume.secret.secretName, 'temporal-client');
    assert.equal(volume.secret.defaultMode, 0o440);
    assert.deepEqual(volume.secret.items.map((i: Obj) => i.key), ['tls.crt', 'tls.key', 'ca.crt']);
    assert.ok(mtls.containers[0].volumeMounts.some((m: Obj) => m.name === 'temporal-mtls' && m.readOnly));
    assert.equal(mtls.securityContext.fsGroup, 1000);

    const key = await container({ temporal: { apiKey: { secretName: 'temporal-cloud' } } });
    const keyEnv = Object.fromEntries(key.containers[0].env.map((e: Obj) => [e.name, e.value ?? e.valueFrom]));
    assert.deepEqual(keyEnv.TEMPORAL_API_KEY, { secretKeyRef: { name: 'temporal-cloud', key: 'api-key' } });
    assert.equal(keyEnv.TEMPORAL_TLS_CLIENT_CERT_PATH, undefined);
    assert.equal(key.volumes.find((v: Obj) => v.name === 'temporal-mtls'), undefined);
    // The key never passes through the ConfigMap.
    assert.doesNotMatch(find(await template({ temporal: { apiKey: { secretName: 'temporal-cloud' } } }), 'ConfigMap').data['config.yaml'], /apiKey/);

    const tls = await container({ temporal: { tls: { enabled: true } } });
    assert.ok(tls.containers[0].env.some((e: Obj) => e.name === 'TEMPORAL_TLS' && e.value === 'true'));
  });

  it('metrics: a Service always; a ServiceMonitor and a PrometheusRule (tend\'s alerts, then the groups given) only when enabled', async () => {
    const plain = await template({});
    const service = find(plain, 'Service', 'tend-metrics');
    assert.equal(service.spec.ports[0].port, 9464);
    assert.equal(service.spec.ports[0].targetPort, 'http-metrics');
    assert.equal(find(plain, 'ServiceMonitor'), undefined);
    assert.equal(find(plain, 'PrometheusRule'), undefined);
    const groups = [{ name: 'tend', rules: [{ alert: 'TendDown', expr: 'absent(up{job="tend-metrics"})', for: '5m' }] }];
    const all = await template({ metrics: { port: 9500, serviceMonitor: { enabled: true, labels: { release: 'prom' } }, prometheusRule: { enabled: true, groups } } });
    const monitor = find(all, 'ServiceMonitor', 'tend');
    assert.equal(monitor.metadata.labels.release, 'prom');
    assert.deepEqual(monitor.spec.selector.matchLabels, { ...find(all, 'Deployment').spec.selector.matchLabels, 'app.kubernetes.io/component': 'metrics' });
    assert.ok(Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => find(all, 'Service').metadata.labels[k] === v));
    assert.equal(monitor.spec.endpoints[0].port, 'http-metrics');
    assert.equal(find(all, 'Service').spec.ports[0].port, 9500);
    // tend's own groups (files/prometheus-rules.yaml, test/ship/alert-rules.test.ts), then the values'.
    const shipped = find(await template({ metrics: { prometheusRule: { enabled: true } } }), 'PrometheusRule', 'tend').spec.groups;
    assert.deepEqual(shipped.map((g: Obj) => g.name), ['tend-worker', 'tend-safety', 'tend-taint', 'tend-repair', 'tend-weeder', 'tend-watcher']);
    assert.deepEqual(find(all, 'PrometheusRule', 'tend').spec.groups, [...shipped, ...groups]);
  });

  it('metrics: a rules file the chart ships (files/prometheus-rules.yaml) comes first in the PrometheusRule, before the values\' groups', async () => {
    const copy = join(work, 'chart-with-rules');
    cpSync(chart, copy, { recursive: true });
    const shipped = [{ name: 'tend-shipped', rules: [{ alert: 'TendNotReady', expr: 'up == 0' }] }];
    mkdirSync(join(copy, 'files'), { recursive: true });
    writeFileSync(join(copy, 'files/prometheus-rules.yaml'), stringify({ groups: shipped }));
    const own = [{ name: 'mine', rules: [{ record: 'x', expr: '1' }] }];
    const render = async (groups: Obj[]) => docs(await helmOk(['template', 'tend', copy, '-f', valuesFile({ metrics: { prometheusRule: { enabled: true, groups } } })]));
    assert.deepEqual(find(await render([]), 'PrometheusRule').spec.groups, shipped);
    assert.deepEqual(find(await render(own), 'PrometheusRule').spec.groups, [...shipped, ...own]);
  });

  it('bad values are refused, each naming the field: a required value missing, wrong types, an unknown key', async () => {
    const cases: { values: Obj; says: RegExp }[] = [
      { values: { temporal: { address: null } }, says: /temporal.*missing propert(y|ies) 'address'|temporal\.address/ },
      { values: { image: { repository: '' } }, says: /image\/repository|image\.repository/ },
      { values: { replicaCount: 'two' }, says: /replicaCount.*(integer|want)/ },
      { values: { metrics: { port: '9464' } }, says: /metrics\/port.*(integer|want)/ },
      { values: { temporal: { address: 'http://temporal:7233' } }, says: /temporal\/address/ },
      { values: { config: { mode: 'maybe' } }, says: /config\/mode/ },
      { values: { config: { apps: { namespaces: 'my-apps' } } }, says: /config\/apps\/namespaces.*(array|want)/ },
      { values: { config: { weder: {} } }, says: /weder/ },
      { values: { config: { weeder: { ...section('weeder'), fromFile: 'dep.yaml' } } }, says: /config\.weeder\.fromFile: the pod has no file/ },
      { values: { config: { weeder: { namespaces: ['a'] } } }, says: /config\/weeder.*missing property 'servicesAndDependantSelectors'/ },
      { values: { config: { nodeRepair: { ...nodeRepair, limits: {} } } }, says: /config\/nodeRepair\/limits.*missing property 'maximumRepairQueueEntries'/ },
      { values: { config: { nodeRepair: { ...nodeRepair, unhealthyConditions: [{ type: 'Ready', status: true, duration: '5m' }] } } }, says: /config\/nodeRepair\/unhealthyConditions\/0\/status/ },
      { values: { config: { nodeRepair: { ...nodeRepair, selector: {} } } }, says: /config\/nodeRepair.*selector/ },
      { values: { replicas: 3 }, says: /replicas/ },
      { values: { temporal: { tls: { caCert: true } } }, says: /temporal\.tls\.caCert: needs temporal\.tls\.secretName/ },
      { values: { serviceAccount: { create: false } }, says: /serviceAccount\.name: required when serviceAccount\.create is false/ },
      { values: { metrics: { prometheusRule: { alerts: { repairStuckFor: 'an hour' } } } }, says: /prometheusRule\/alerts\/repairStuckFor/ },
      { values: { metrics: { prometheusRule: { alerts: { stateStaleSeconds: '300' } } } }, says: /prometheusRule\/alerts\/stateStaleSeconds.*(number|want)/ },
      { values: { metrics: { prometheusRule: { alerts: { pausedFor: '4h' } } } }, says: /pausedFor/ },
    ];
    for (const { values, says } of cases) assert.match(await refused(values), says, JSON.stringify(values));
  });

  describe('rights: equal to `tend rbac` for the same configuration', () => {
    const both = ['ns-b', 'ns-a', 'ns-b'];
    const cases: { name: string; config: Obj; values?: Obj; release?: string; flags?: string[] }[] = [
      { name: 'no capability', config: {} },
      { name: 'weeder in listed namespaces', config: { weeder: section('weeder', both) } },
      { name: 'weeder cluster-wide', config: { weeder: section('weeder') } },
      { name: 'taintReplacement in listed namespaces', config: { taintReplacement: section('taintReplacement', both) } },
      { name: 'taintReplacement cluster-wide', config: { taintReplacement: section('taintReplacement') } },
      { name: 'apps in listed namespaces', config: { apps: { namespaces: both } } },
      { name: 'apps cluster-wide (an empty section)', config: { apps: {} } },
      { name: 'repair', config: { repair: section('repair') } },
      { name: 'nodeRepair, with the repair section it needs', config: { repair: section('repair'), nodeRepair } },
      {
        name: 'all four in listed namespaces, observe mode',
        config: { mode: 'observe', weeder: section('weeder', ['w']), taintReplacement: section('taintReplacement', ['t', 'w']), apps: { namespaces: ['a'] }, repair: section('repair') },
      },
      { name: 'all five cluster-wide, act mode', config: { mode: 'act', weeder: section('weeder'), taintReplacement: section('taintReplacement'), apps: {}, repair: section('repair'), nodeRepair } },
      {
        name: 'another release name, namespace and ServiceAccount',
        config: { weeder: section('weeder', ['w']), repair: section('repair') },
        values: { serviceAccount: { name: 'tend-sa' } },
        release: 'night-watch',
        flags: ['--name', 'night-watch-tend', '--namespace', 'ops', '--service-account', 'tend-sa'],
      },
    ];

    for (const c of cases) {
      it(c.name, async () => {
        const ns = c.flags ? c.flags[c.flags.indexOf('--namespace') + 1]! : RELEASE_NS;
        const rendered = await template({ config: c.config, ...c.values }, { release: c.release ?? 'tend', namespace: ns });
        const chartRights = rendered.filter((o) => o.metadata.labels?.['rbac.tend.dev/generated'] === 'true');
        // The chart's default mode is observe: the same configuration says so too.
        const config = { mode: 'observe', ...c.config };
        const file = join(work, `tend-${valuesCount++}.yaml`);
        writeFileSync(file, stringify(config));
        const out = await runTend(['rbac', '--config', file, ...(c.flags ?? ['--namespace', ns])]);
        assert.equal(out.code, 0, out.stderr);
        const tendRights = docs(out.stdout);
        assert.deepEqual(normal(chartRights), normal(tendRights));
        for (const t of tendRights) {
          const ours = chartRights.find((o) => o.kind === t.kind && o.metadata.name === t.metadata.name && o.metadata.namespace === t.metadata.namespace);
          for (const [k, v] of Object.entries(t.metadata.labels)) assert.equal(ours.metadata.labels[k], v, `${t.kind} ${t.metadata.name}: label ${k}`);
        }
        // The configuration tend reads is the one the rights were made for.
        assert.deepEqual(without(parse(find(rendered, 'ConfigMap').data['config.yaml']), 'temporal', 'http'), config);
      });
    }

    it('observe mode grants the same rights as act mode', async () => {
      const config = { weeder: section('weeder'), taintReplacement: section('taintReplacement'), apps: {}, repair: section('repair'), nodeRepair };
      const rights = async (mode: string) => normal((await template({ config: { mode, ...config } })).filter((o) => o.metadata.labels?.['rbac.tend.dev/generated'] === 'true'));
      assert.deepEqual(await rights('observe'), await rights('act'));
    });
  });

  describe('helm install, upgrade and uninstall on the sandbox', () => {
    const release = `tend-chart-${randomBytes(3).toString('hex')}`;
    const ns = release;
    const kubeconfig = () => sandbox().kubeconfig;
    let kubectlBin = '';
    const kubectl = async (args: string[]): Promise<Obj> => {
      const { stdout } = await promisify(execFile)(kubectlBin, ['--kubeconfig', kubeconfig(), ...args, '-o', 'json'], { maxBuffer: 16 << 20, timeout: 60_000 });
      return JSON.parse(stdout);
    };
    const exists = async (args: string[]): Promise<boolean> => {
      const r = await run(kubectlBin, ['--kubeconfig', kubeconfig(), 'get', ...args, '-o', 'name'], {}, 60_000);
      if (r.code !== 0 && !/NotFound|not found/.test(r.stderr)) throw new Error(r.stderr);
      return r.code === 0;
    };
    const values = (mode: string, logLevel: string) => ({
      image: { repository: 'registry.example/tend', tag: 'test' },
      config: { mode, weeder: section('weeder', [ns]), apps: { namespaces: [ns] }, taintReplacement: section('taintReplacement') },
      temporal: { address: sandbox().temporalAddress },
      logLevel,
    });
    /** The release's running pods, each with its pod-template-hash, once every one of `replicas` runs the Deployment's newest ReplicaSet. */
    const rolledOut = async (generation: number) => waitFor<{ name: string; hash: string }[]>(`the Deployment's generation ${generation} rolled out`, async () => {
      const d = await kubectl(['-n', ns, 'get', 'deployment', release]);
      const s = d.status ?? {};
      if (!(s.observedGeneration >= generation && s.updatedReplicas === d.spec.replicas && s.replicas === d.spec.replicas && s.readyReplicas === d.spec.replicas)) return false;
      const pods = (await kubectl(['-n', ns, 'get', 'pods', '-l', `app.kubernetes.io/instance=${release}`])).items
        .filter((p: Obj) => !p.metadata.deletionTimestamp);
      if (pods.length !== d.spec.replicas || !pods.every((p: Obj) => p.status.phase === 'Running')) return false;
      return pods.map((p: Obj) => ({ name: p.metadata.name as string, hash: p.metadata.labels['pod-template-hash'] as string }));
    }, { timeoutMs: 180_000, intervalMs: 1000 });

    before(async () => {
      kubectlBin = (await ensureBinaries()).kubectl;
    });
    after(async () => {
      await helm(['uninstall', release, '-n', ns, '--kubeconfig', kubeconfig(), '--ignore-not-found']);
      await run(kubectlBin, ['--kubeconfig', kubeconfig(), 'delete', 'namespace', ns, '--ignore-not-found', '--wait=false']);
    });

    let firstHashes: string[] = [];
    let firstConfig = '';

    it('installs: the labelled ConfigMap, the Deployment and its running pods, the rights, the budget, the metrics Service', async () => {
      const installed = await helmOk(['install', release, chart, '-n', ns, '--create-namespace', '--kubeconfig', kubeconfig(), '-f', valuesFile(values('observe', 'info'))]);
      // The notes say how to see tend's workflows in the Web UI.
      assert.match(installed, /NOTES:[\s\S]*port-forward svc\/temporal-web[\s\S]*TendCapability="weeder"/);
      assert.match(installed, /Mode: observe/);
      const cms = (await kubectl(['-n', ns, 'get', 'configmaps', '-l', 'tend.dev/config=true'])).items;
      assert.equal(cms.length, 1);
      assert.equal(cms[0].metadata.name, `${release}-config`);
      firstConfig = cms[0].data['config.yaml'];
      assert.equal(parse(firstConfig).mode, 'observe');
      const pods = await rolledOut(1);
      firstHashes = pods.map((p) => p.hash);
      assert.equal(pods.length, 2);
      for (const args of [
        ['-n', ns, 'serviceaccount', release], ['-n', ns, 'poddisruptionbudget', release], ['-n', ns, 'service', `${release}-metrics`],
        ['-n', ns, 'role', `${release}-config`], ['-n', ns, 'role', `${release}-weeder`], ['-n', ns, 'role', `${release}-apps`],
        ['-n', ns, 'rolebinding', `${release}-weeder-readiness`], ['clusterrole', release], ['clusterrole', `${release}-taint-replacement`],
        ['clusterrolebinding', `${release}-taint-replacement-nodes`], ['crd', 'apps.tend.dev'],
      ]) assert.ok(await exists(args), `${args.join(' ')} exists`);
      // The rights hold for the release's ServiceAccount, where the configuration says and not beyond.
      const can = async (...args: string[]) => (await run(kubectlBin, ['--kubeconfig', kubeconfig(), 'auth', 'can-i', ...args, '--as', `system:serviceaccount:${ns}:${release}`])).stdout.trim();
      assert.equal(await can('create', 'deployments.apps', '-n', ns), 'yes');
      assert.equal(await can('create', 'deployments.apps', '-n', 'default'), 'no');
      assert.equal(await can('create', 'pods', '--subresource=eviction', '-n', 'default'), 'yes');
      assert.equal(await can('patch', 'nodes'), 'no');
      // And they are what `tend rbac` prints for the installed configuration, found by its label.
      const printed = await runTend(['rbac', '--config-map', ns, '--kubeconfig', kubeconfig(), '--namespace', ns, '--service-account', release, '--name', release]);
      assert.equal(printed.code, 0, printed.stderr);
      const live = await kubectl(['get', 'roles,rolebindings,clusterroles,clusterrolebindings', '-A', '-l', `app.kubernetes.io/instance=${release},rbac.tend.dev/generated=true`]);
      assert.deepEqual(normal(live.items), normal(docs(printed.stdout)));
    });

    it('upgrades with a changed value: the ConfigMap and the Deployment change, and the pods roll', async () => {
      const before = await kubectl(['-n', ns, 'get', 'deployment', release]);
      await helmOk(['upgrade', release, chart, '-n', ns, '--kubeconfig', kubeconfig(), '-f', valuesFile(values('act', 'debug'))]);
      const cm = await kubectl(['-n', ns, 'get', 'configmap', `${release}-config`]);
      assert.notEqual(cm.data['config.yaml'], firstConfig);
      assert.equal(parse(cm.data['config.yaml']).mode, 'act');
      const after = await kubectl(['-n', ns, 'get', 'deployment', release]);
      assert.ok(after.metadata.generation > before.metadata.generation);
      assert.notEqual(after.spec.template.metadata.annotations['checksum/config'], before.spec.template.metadata.annotations['checksum/config']);
      assert.ok(after.spec.template.spec.containers[0].env.some((e: Obj) => e.name === 'TEND_LOG_LEVEL' && e.value === 'debug'));
      const pods = await rolledOut(after.metadata.generation);
      for (const p of pods) assert.ok(!firstHashes.includes(p.hash), `pod ${p.name} is of the new template`);
      const history = await helmOk(['history', release, '-n', ns, '--kubeconfig', kubeconfig(), '-o', 'json']);
      assert.deepEqual(JSON.parse(history).map((h: Obj) => h.revision), [1, 2]);
    });

    it('uninstalls: the release\'s objects, namespaced and cluster-wide, are gone', async () => {
      await helmOk(['uninstall', release, '-n', ns, '--kubeconfig', kubeconfig(), '--wait']);
      for (const args of [
        ['-n', ns, 'deployment', release], ['-n', ns, 'configmap', `${release}-config`], ['-n', ns, 'serviceaccount', release],
        ['-n', ns, 'role', `${release}-weeder`], ['-n', ns, 'poddisruptionbudget', release], ['clusterrole', release],
        ['clusterrole', `${release}-taint-replacement`], ['clusterrolebinding', `${release}-taint-replacement-nodes`],
      ]) assert.equal(await exists(args), false, `${args.join(' ')} is gone`);
      await waitFor('the release\'s pods gone', async () => (await kubectl(['-n', ns, 'get', 'pods', '-l', `app.kubernetes.io/instance=${release}`])).items.length === 0, { timeoutMs: 120_000, intervalMs: 1000 });
      // Helm leaves CRDs in place on uninstall: Apps elsewhere in the cluster keep their definition.
      assert.ok(await exists(['crd', 'apps.tend.dev']));
    });
  });
});
