// --kubeconfig and --context choose the cluster for everything a command does, as kubectl's do,
// over the configuration's kubernetes section.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { configFrom } from '../../src/starters/cli-support.ts';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
const tend = (args: string[]) => promisify(execFile)(process.execPath, [cli, ...args], { encoding: 'utf8' })
  .then(() => ({ code: 0, stderr: '' }), (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }));

describe('CLI: --kubeconfig and --context choose the cluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tend-cluster-flags-'));
  const kubeconfig = join(dir, 'kc');
  writeFileSync(kubeconfig, stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'a',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'a', context: { cluster: 'c', user: 'u' } }, { name: 'b', context: { cluster: 'c', user: 'u' } }],
  }));
  const config = join(dir, 'tend.yaml');
  writeFileSync(config, stringify({ kubernetes: { kubeconfig: join(dir, 'from-the-file'), context: 'from-the-file' }, apps: { namespaces: ['demo'] } }));

  it('they replace the configuration\'s kubernetes.kubeconfig and context', async () => {
    const c = await configFrom({ config, kubeconfig, context: 'b' });
    assert.deepEqual(c.kubernetes, { kubeconfig, context: 'b' });
    const untouched = await configFrom({ config });
    assert.equal(untouched.kubernetes.kubeconfig, join(dir, 'from-the-file'));
  });

  it('a command uses them: a missing --kubeconfig file and an unknown --context are named (exit 2)', async () => {
    const missing = await tend(['app', 'status', 'demo/x', '--config', config, '--kubeconfig', join(dir, 'nope')]);
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, new RegExp(`kubernetes\\.kubeconfig: ${join(dir, 'nope')}: file not found`));
    const context = await tend(['app', 'status', 'demo/x', '--config', config, '--kubeconfig', kubeconfig, '--context', 'prod']);
    assert.equal(context.code, 2, context.stderr);
    assert.match(context.stderr, /kubernetes\.context: no context "prod" in .*kc \(its contexts: a, b\)/);
  });
});
