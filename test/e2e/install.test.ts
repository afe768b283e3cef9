// `kubectl apply -k deploy/kubernetes` with the sandbox's own kubectl: the App CRD is included, the
// configuration is a hash-suffixed ConfigMap the Deployment (and the Role) name, a change to it
// changes the name (so the pod rolls), and the components render and apply.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { ensureBinaries } from '../../src/sandbox/binaries.ts';
import { applyManifests } from '../../src/sandbox/bootstrap.ts';
import { parseConfig } from '../../src/config/load.ts';
import { repoRoot } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

async function kubectl(args: string[]): Promise<string> {
  const bin = (await ensureBinaries()).kubectl;
  const { stdout } = await promisify(execFile)(bin, ['--kubeconfig', sandbox().kubeconfig, ...args], { timeout: 120_000, maxBuffer: 16 << 20 });
  return stdout;
}
const kustomize = async (dir: string): Promise<Obj[]> =>
  parseAllDocuments(await kubectl(['kustomize', dir])).map((d) => d.toJS()).filter((o) => o);

describe('install: kubectl apply -k deploy/kubernetes', function () {
  this.timeout(5 * 60_000);
  /** A copy of deploy/ in the state folder, so overlays and edits never touch the repository. */
  let copy = '';
  let base = '';
  before(() => {
    copy = mkdtempSync(join(sandbox().stateDir, 'install-'));
    cpSync(join(repoRoot, 'deploy'), join(copy, 'deploy'), { recursive: true });
    base = join(copy, 'deploy/kubernetes');
  });

  it('includes the App CRD and a hash-suffixed tend-config that the Deployment and the Role name', async () => {
    const objects = await kustomize(base);
    const crd = objects.find((o) => o.kind === 'CustomResourceDefinition');
    assert.equal(crd?.metadata.name, 'apps.tend.dev');
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('tend-config-'));
    assert.ok(configMap, objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', '));
    const deployment = objects.find((o) => o.kind === 'Deployment');
    const volume = deployment.spec.template.spec.volumes.find((v: Obj) => v.name === 'config');
    assert.equal(volume.configMap.name, configMap.metadata.name);
    const role = objects.find((o) => o.kind === 'Role' && o.metadata.name === 'tend-config');
    assert.deepEqual(role.rules[0].resourceNames, [configMap.metadata.name]);
    // The Temporal address comes from tend-temporal, and the file with it is a valid configuration.
    const temporal = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('tend-temporal-'));
    assert.deepEqual(deployment.spec.template.spec.containers[0].envFrom, [{ configMapRef: { name: temporal.metadata.name } }]);
    const saved = { ...process.env };
    Object.assign(process.env, temporal.data);
    try {
      const config = parseConfig(configMap.data['config.yaml'], 'tend-config');
      assert.equal(config.temporal.address, temporal.data.TEMPORAL_ADDRESS);
      assert.equal(config.temporal.namespace, temporal.data.TEMPORAL_NAMESPACE);
    } finally {
      for (const k of Object.keys(temporal.data)) if (saved[k] === undefined) delete process.env[k];
    }
  });

  it('a configuration change changes the ConfigMap name the Deployment uses, so the pod rolls', async () => {
    const name = async () => (await kustomize(base)).find((o) => o.kind === 'Deployment')
      .spec.template.spec.volumes.find((v: Obj) => v.name === 'config').configMap.name as string;
    const before = await name();
    appendFileSync(join(base, 'config.yaml'), '# changed\n');
    assert.notEqual(await name(), before);
  });

  it('the Temporal Cloud and mTLS components render: the key and the certificate paths as TEMPORAL_* variables', async () => {
    const dir = join(copy, 'ov');
    cpSync(join(copy, 'deploy'), join(dir, 'deploy'), { recursive: true });
    writeFileSync(join(dir, 'kustomization.yaml'), [
      'resources: [deploy/kubernetes]',
      'components: [deploy/components/temporal-cloud, deploy/components/temporal-mtls]',
      'configMapGenerator:',
      '  - { name: tend-temporal, namespace: tend-system, behavior: merge, literals: [TEMPORAL_ADDRESS=ns.acct.tmprl.cloud:7233] }',
      '',
    ].join('\n'));
    const objects = await kustomize(dir);
    const container = objects.find((o) => o.kind === 'Deployment').spec.template.spec.containers[0];
    const env = Object.fromEntries(container.env.map((e: Obj) => [e.name, e.value ?? e.valueFrom]));
    assert.deepEqual(env.TEMPORAL_API_KEY, { secretKeyRef: { name: 'tend-temporal-cloud', key: 'api-key' } });
    assert.equal(env.TEMPORAL_TLS_CLIENT_CERT_PATH, '/var/run/secrets/tend/temporal-mtls/tls.crt');
    assert.ok(container.volumeMounts.some((m: Obj) => m.mountPath === '/var/run/secrets/tend/temporal-mtls' && m.readOnly));
    const temporal = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('tend-temporal-'));
    assert.equal(temporal.data.TEMPORAL_ADDRESS, 'ns.acct.tmprl.cloud:7233');
  });

  it('applies to the sandbox: the CRD is established and the Deployment names the generated ConfigMap', async () => {
    await kubectl(['apply', '--server-side', '--force-conflicts', '-k', join(repoRoot, 'deploy/kubernetes')]);
    try {
      await appliedToSandbox();
    } finally {
      // The sandbox is shared with the tests that follow: its own objects back as it applies
      // them (the Role tend-config names the plain ConfigMap again), and nothing of the install left.
      await kubectl(['-n', 'tend-system', 'delete', 'deployment', 'tend', '--wait=false', '--ignore-not-found']);
      for (const cm of (await kubectl(['-n', 'tend-system', 'get', 'configmaps', '-o', 'name'])).split('\n')) {
        if (/^configmap\/tend-(config|temporal)-[a-z0-9]+$/.test(cm)) await kubectl(['-n', 'tend-system', 'delete', cm, '--wait=false']);
      }
      await applyManifests(sandbox().kubeconfig, join(repoRoot, 'deploy/kubernetes'), (o) => o.kind !== 'Deployment' && o.kind !== 'ConfigMap');
    }
    const role = JSON.parse(await kubectl(['-n', 'tend-system', 'get', 'role', 'tend-config', '-o', 'json']));
    assert.deepEqual(role.rules[0].resourceNames, ['tend-config'], 'the sandbox\'s own Role is back');
  });

  async function appliedToSandbox(): Promise<void> {
    const crd = JSON.parse(await kubectl(['get', 'crd', 'apps.tend.dev', '-o', 'json']));
    assert.ok(crd.status.conditions.some((c: Obj) => c.type === 'Established' && c.status === 'True'));
    const deployment = JSON.parse(await kubectl(['-n', 'tend-system', 'get', 'deployment', 'tend', '-o', 'json']));
    const name = deployment.spec.template.spec.volumes.find((v: Obj) => v.name === 'config').configMap.name;
    assert.match(name, /^tend-config-[a-z0-9]+$/);
    const configMap = JSON.parse(await kubectl(['-n', 'tend-system', 'get', 'configmap', name, '-o', 'json']));
    assert.ok(configMap.data['config.yaml'].includes('taskQueue: tend'));
  }
});
