// deploy/components/temporal-credentials against deploy/kubernetes and the configuration (src/config/load.ts).
// The kustomize component deploy/components/temporal-credentials, checked by structure: it patches
// the Deployment and container deploy/kubernetes ships, gives the API key under the variable its
// configuration names, and mounts the mTLS files read-only where its configuration reads them.
// (`kubectl kustomize` renders it the same way; docs/deploy.md shows the overlay.)
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { parseConfig } from '../../src/config/load.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const component = join(root, 'deploy/components/temporal-credentials');

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function docs(file: string): Obj[] {
  const all = parseAllDocuments(readFileSync(file, 'utf8'));
  for (const d of all) assert.deepEqual(d.errors.map(String), [], `${file}: YAML errors`);
  return all.map((d) => d.toJS() as Obj).filter(Boolean);
}
const one = (file: string) => {
  const all = docs(file);
  assert.equal(all.length, 1, `${file} holds one document`);
  return all[0]!;
};

describe('secrets: deploy/components/temporal-credentials', () => {
  const kustomization = one(join(component, 'kustomization.yaml'));
  const base = docs(join(root, 'deploy/kubernetes/deployment.yaml')).find((o) => o.kind === 'Deployment')!;
  const patches = (kustomization.patches ?? []) as { path: string; target: Obj }[];
  const patch = one(join(component, patches[0]?.path ?? 'missing'));
  const container = (patch.spec.template.spec.containers as Obj[])[0]!;
  const volume = (patch.spec.template.spec.volumes as Obj[])[0]!;
  const mount = (container.volumeMounts as Obj[])[0]!;
  const env = (container.env as Obj[])[0]!;

  it('every YAML file in it parses', () => {
    const files = readdirSync(component).filter((f) => f.endsWith('.yaml'));
    assert.ok(files.length >= 4, files.join(', '));
    for (const f of files) docs(join(component, f));
  });

  it('is a kustomize Component whose one patch targets the Deployment deploy/kubernetes ships', () => {
    assert.equal(kustomization.apiVersion, 'kustomize.config.k8s.io/v1alpha1');
    assert.equal(kustomization.kind, 'Component');
    assert.equal(patches.length, 1);
    const { target } = patches[0]!;
    assert.deepEqual(target, { group: 'apps', version: 'v1', kind: 'Deployment', name: base.metadata.name, namespace: base.metadata.namespace });
    assert.equal(patch.kind, 'Deployment');
    assert.equal(patch.metadata.name, base.metadata.name);
    assert.equal(patch.metadata.namespace, base.metadata.namespace);
  });

  it('patches the base container by name, adding a volume and mount the base does not have', () => {
    const baseSpec = base.spec.template.spec as Obj;
    const names = (baseSpec.containers as Obj[]).map((c) => c.name);
    assert.deepEqual((patch.spec.template.spec.containers as Obj[]).map((c) => c.name), ['tend']);
    assert.ok(names.includes(container.name), `base containers: ${names.join(', ')}`);
    assert.ok(!(baseSpec.volumes as Obj[]).some((v) => v.name === volume.name), 'volume name already in the base');
    assert.equal(mount.name, volume.name);
    const baseMounts = (baseSpec.containers as Obj[])[0]!.volumeMounts as Obj[];
    for (const m of baseMounts) {
      assert.ok(!mount.mountPath.startsWith(`${m.mountPath}/`) && m.mountPath !== mount.mountPath, `${mount.mountPath} inside ${m.mountPath}`);
    }
  });

  it('mounts the mTLS files read-only, readable by tend\'s group only, and gives the key as an env var from the same Secret', () => {
    assert.equal(mount.readOnly, true);
    assert.equal(volume.secret.defaultMode, 0o440);
    assert.equal(patch.spec.template.spec.securityContext.fsGroup, base.spec.template.spec.securityContext.runAsGroup);
    assert.equal(env.valueFrom.secretKeyRef.name, volume.secret.secretName);
    assert.deepEqual((volume.secret.items as Obj[]).map((i) => i.key).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
    assert.ok(!(volume.secret.items as Obj[]).some((i) => i.key === env.valueFrom.secretKeyRef.key), 'the API key is not a file');
  });

  it('its API key configuration names the variable the patch sets', () => {
    const prior = process.env[env.name];
    process.env[env.name] = 'k-from-the-secret';
    try {
      const config = parseConfig(readFileSync(join(component, 'config-api-key.yaml'), 'utf8'), 'config-api-key.yaml');
      assert.equal(config.temporal.apiKeyEnv, env.name);
      assert.equal(config.temporal.apiKey, 'k-from-the-secret');
    } finally {
      if (prior === undefined) delete process.env[env.name];
      else process.env[env.name] = prior;
    }
  });

  it('its mTLS configuration reads the files the patch mounts', () => {
    const config = parseConfig(readFileSync(join(component, 'config-mtls.yaml'), 'utf8'), 'config-mtls.yaml');
    const tls = config.temporal.tls as Obj;
    const mounted = (volume.secret.items as Obj[]).map((i) => posix.join(mount.mountPath, i.path));
    for (const key of ['clientCertPath', 'clientKeyPath', 'serverRootCACertPath']) {
      assert.ok(mounted.includes(tls[key]), `${key} ${tls[key]} not among ${mounted.join(', ')}`);
    }
  });

  it('is optional: deploy/kubernetes does not include it', () => {
    const base = one(join(root, 'deploy/kubernetes/kustomization.yaml'));
    assert.ok(!JSON.stringify(base.components ?? []).includes('temporal-credentials'));
    assert.ok(existsSync(join(root, 'docs/deploy.md')), 'docs/deploy.md documents it');
  });
});
