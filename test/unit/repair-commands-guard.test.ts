// Whether the repair command worker (repair.taskQueue) guards its commands on the entry's Node
// (src/workers/worker.ts commandsGuard): with a Kubernetes connection given anywhere the main worker
// reads one from, yes; with none at all, per host only, with the reason it says at start-up.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandsGuard } from '../../src/workers/worker.ts';

describe('repair command worker: guarded on the Node, or per host only', () => {
  const emptyHome = mkdtempSync(join(tmpdir(), 'tend-home-'));
  const kubeHome = mkdtempSync(join(tmpdir(), 'tend-home-'));
  mkdirSync(join(kubeHome, '.kube'));
  writeFileSync(join(kubeHome, '.kube', 'config'), '');

  const rows: { given: string; opts?: { kubeconfig?: string; context?: string }; env?: NodeJS.ProcessEnv; home?: string; node: boolean }[] = [
    { given: 'kubernetes.kubeconfig', opts: { kubeconfig: '/etc/tend/kubeconfig' }, node: true },
    { given: 'kubernetes.context', opts: { context: 'prod' }, node: true },
    { given: 'in-cluster credentials', env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, node: true },
    { given: '$KUBECONFIG', env: { KUBECONFIG: '/home/ops/.kube/prod' }, node: true },
    { given: '~/.kube/config', home: kubeHome, node: true },
    { given: 'nothing at all', node: false },
  ];
  for (const r of rows) {
    it(`${r.given}: ${r.node ? 'guarded on the entry\'s Node' : 'per host only, saying why'}`, () => {
      const got = commandsGuard(r.opts ?? {}, r.env ?? {}, r.home ?? emptyHome);
      if (r.node) assert.equal(got, 'node');
      else assert.deepEqual(got, { perHostOnly: 'no Kubernetes connection is configured (kubernetes.kubeconfig, --kubeconfig, in-cluster credentials, $KUBECONFIG or ~/.kube/config)' });
    });
  }
});
