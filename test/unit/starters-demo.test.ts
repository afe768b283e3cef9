// What `tend run` prints on the sandbox: its export line puts the sandbox's own temporal and
// kubectl on PATH, so the lines after it work as printed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quickStartHelp } from '../../src/starters/demo.ts';

describe('quick start: the lines tend run prints on the sandbox', () => {
  it('the export line makes the printed temporal and kubectl commands the sandbox\'s own', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tend-qs-'));
    const bins = { temporal: join(dir, 'temporal-v1', 'temporal'), kubectl: join(dir, 'kubectl-v1', 'kubectl') };
    for (const b of Object.values(bins)) {
      mkdirSync(join(b, '..'), { recursive: true });
      writeFileSync(b, '#!/bin/sh\necho ok\n');
      chmodSync(b, 0o755);
    }
    const help = quickStartHelp({ webUi: 'http://127.0.0.1:8233', kubeconfig: '/k', config: '/c', temporalAddress: '127.0.0.1:7233' }, bins);
    const exportLine = help.split('\n').find((l) => l.trim().startsWith('export '))!.trim();
    assert.match(help, /^ {2}temporal workflow list /m);
    assert.match(help, /^ {2}kubectl get nodes,pods -A /m);
    // A PATH without either, as on a fresh machine.
    const found = execFileSync('sh', ['-c', `${exportLine}; command -v temporal; command -v kubectl; echo "$TEMPORAL_ADDRESS"`],
      { env: { PATH: '/usr/bin:/bin' }, encoding: 'utf8' }).trim().split('\n');
    assert.deepEqual(found, [bins.temporal, bins.kubectl, '127.0.0.1:7233']);
  });
});
