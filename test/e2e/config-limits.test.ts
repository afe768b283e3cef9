// The configuration's limits on a ConfigMap read from the API server, as the Deployment reads
// it: a key with no settings is refused, naming the ConfigMap, and tend exits 2 (the file's
// limits: test/unit/config-size.test.ts).
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/config/errors.ts';
import { loadConfig } from '../../src/config/load.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import { runTend } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';

describe('configuration limits on a ConfigMap', () => {
  let kube: KubeClients;
  let ns: string;

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'config-limits');
  });
  after(async () => deleteNamespace(kube, ns));

  for (const [name, text] of [['empty', ''], ['comments', '# to be filled in\n'], ['dashes', '---\n']] as const) {
    it(`refuses a key with no settings (${name}), naming the ConfigMap; tend worker exits 2`, async () => {
      await kube.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `tend-${name}` }, data: { 'config.yaml': text } } });
      const ref = `${ns}/tend-${name}:config.yaml`;
      await assert.rejects(loadConfig({ configMap: ref, kubeconfig: sandbox().kubeconfig }), (err: Error) => {
        assert.ok(err instanceof ConfigError, err.stack);
        assert.match(err.message, new RegExp(`^config configmap ${ref}: holds no settings`));
        return true;
      });
      const r = await runTend(['worker', '--config-map', ref, '--kubeconfig', sandbox().kubeconfig]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /holds no settings/);
      assert.doesNotMatch(r.stderr, /worker started/);
    });
  }
});
