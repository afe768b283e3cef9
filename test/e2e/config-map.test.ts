// Configuration read from a ConfigMap key, as the Deployment in deploy/ does,
// with tend's own ServiceAccount: its Role allows exactly `get` on tend-config.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/config/errors.ts';
import { loadConfig } from '../../src/config/load.ts';
import { KubeUnreachableError } from '../../src/kube/client.ts';
import { admin } from '../harness/kube.ts';
import { sandbox } from '../harness/hooks.ts';
import { runTend } from '../harness/cli.ts';
import type { KubeClients } from '../../src/kube/client.ts';

describe('configuration from a ConfigMap', () => {
  let kube: KubeClients;
  const ns = 'tend-system';

  const put = async (name: string, data: Record<string, string>) => {
    await kube.core.deleteNamespacedConfigMap({ namespace: ns, name }).catch(() => undefined);
    await kube.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name }, data } });
  };

  before(async () => {
    kube = admin();
  });
  after(async () => {
    for (const name of ['tend-config', 'not-for-tend']) await kube.core.deleteNamespacedConfigMap({ namespace: ns, name }).catch(() => undefined);
  });

  it('reads and validates the key with tend\'s own credentials', async () => {
    await put('tend-config', { 'config.yaml': 'temporal: { taskQueue: remedies }\n', other: 'x' });
    const config = await loadConfig({ configMap: `${ns}/tend-config:config.yaml`, kubeconfig: sandbox().tendKubeconfig });
    assert.equal(config.temporal.taskQueue, 'remedies');
  });

  it('names the ConfigMap and the path of each problem; the CLI exits 2', async () => {
    await put('tend-config', { 'config.yaml': 'temporal: { taskQueu: x }\n' });
    const ref = `${ns}/tend-config:config.yaml`;
    await assert.rejects(loadConfig({ configMap: ref, kubeconfig: sandbox().tendKubeconfig }), (err: Error) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.origin, `configmap ${ref}`);
      assert.deepEqual(err.problems.map((p) => p.path), ['temporal.taskQueu']);
      return true;
    });
    const r = await runTend(['worker', '--config-map', ref, '--kubeconfig', sandbox().tendKubeconfig]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /temporal\.taskQueu/);
    assert.doesNotMatch(r.stderr, /worker started/);
  });

  it('says which key is missing and which exist', async () => {
    await put('tend-config', { 'config.yaml': '', other: 'x' });
    await assert.rejects(
      loadConfig({ configMap: `${ns}/tend-config:tend.yaml`, kubeconfig: sandbox().tendKubeconfig }),
      /has no key tend\.yaml: its keys are config\.yaml, other/);
  });

  it('says when the ConfigMap does not exist', async () => {
    await assert.rejects(
      loadConfig({ configMap: `${ns}/tend-config-missing:config.yaml`, kubeconfig: sandbox().kubeconfig }),
      /ConfigMap tend-system\/tend-config-missing not found/);
  });

  it('is refused, by the real RBAC, any ConfigMap but its own', async () => {
    await put('not-for-tend', { 'config.yaml': '' });
    await assert.rejects(
      loadConfig({ configMap: `${ns}/not-for-tend:config.yaml`, kubeconfig: sandbox().tendKubeconfig }),
      /not allowed to read ConfigMap tend-system\/not-for-tend \(403\)/);
  });

  it('says when the API server cannot be reached', async () => {
    const text = (await readFile(sandbox().tendKubeconfig, 'utf8')).replace(sandbox().apiserver, 'https://127.0.0.1:1');
    const file = join(await mkdtemp(join(tmpdir(), 'tend-kc-')), 'kubeconfig');
    await writeFile(file, text);
    await assert.rejects(loadConfig({ configMap: `${ns}/tend-config:config.yaml`, kubeconfig: file }), (err: Error) => {
      assert.ok(err instanceof KubeUnreachableError, err.stack);
      assert.match(err.message, /cannot read ConfigMap tend-system\/tend-config from https:\/\/127\.0\.0\.1:1/);
      return true;
    });
  });
});
