// The fault run itself, tiny: one round per capability on the test sandbox
// (which it reuses, turning on kube-apiserver's audit log), through the real
// `npm run faults` entry point. It must drive every round to its end, inject
// its fault, and produce the table and the JSON report; an invariant it finds
// violated makes it exit 1, which this test accepts (the checkers themselves
// are proved on planted violations in test/unit/faults-invariants.test.ts).
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectClient } from '../../src/temporal/connection.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';
import { runScript } from '../harness/script.ts';
import type { RoundRecord } from '../../faults/report.ts';
import { CAPABILITIES, FAULT_KINDS } from '../../faults/report.ts';

const run = (args: string[], timeoutMs: number) => runScript('faults/run.ts', args, timeoutMs);

describe('fault run (e2e): one round per capability', function () {
  this.timeout(30 * 60_000);

  it('drives every capability\'s round with a fault and reports the table and every round', async () => {
    const report = join(await mkdtemp(join(tmpdir(), 'tend-faults-')), 'report.json');
    const r = await run(['--rounds', '1', '--seed', '16', '--state-dir', sandbox().stateDir, '--report', report], 28 * 60_000);
    assert.ok(r.code === 0 || r.code === 1, `exit ${r.code} (0: no violation, 1: violations; anything else is the run failing)\n${r.stderr.slice(-3000)}`);
    assert.match(r.stderr, /seed 16 \(repeat with --seed 16\)/);
    assert.match(r.stdout, /CAPABILITY\s+ROUNDS\s+FAULTS INJECTED\s+VIOLATIONS/);
    for (const c of CAPABILITIES) assert.match(r.stdout, new RegExp(`^${c}\\s+1\\s+`, 'm'), `a row for ${c}`);
    const json = JSON.parse(await readFile(report, 'utf8')) as { seed: number; records: RoundRecord[] };
    assert.equal(json.seed, 16);
    assert.deepEqual(json.records.map((x) => x.capability), [...CAPABILITIES]);
    for (const rec of json.records) {
      assert.equal(rec.error, undefined, `${rec.capability}: the round ran to its end`);
      assert.ok(rec.fault && FAULT_KINDS.includes(rec.fault.kind), `${rec.capability}: a fault was planned and recorded`);
      assert.ok(rec.notes.length > 0, `${rec.capability}: the round says what tend did`);
    }
    const violations = json.records.reduce((n, x) => n + x.violations.length, 0);
    assert.equal(r.code, violations ? 1 : 0, 'the exit code says whether an invariant was violated');
    if (violations) assert.match(r.stdout, /VIOLATIONS\n- /);
    else assert.match(r.stdout, /no violations/);
    // Nothing of the run is left running for whatever uses this Temporal next
    // (a coordinator left on the run's task queue would never be served again).
    const client = await connectClient({ address: sandbox().temporalAddress, namespace: 'default', taskQueue: 'unused' });
    try {
      // Visibility follows a workflow's end by a moment: wait, bounded, for the list to agree.
      const query = 'TendCapability IS NOT NULL AND ExecutionStatus="Running" AND TaskQueue STARTS_WITH "tend-faults-"';
      await waitFor('no workflow of the fault run left running', async () => {
        const left: string[] = [];
        for await (const wf of client.workflow.list({ query })) left.push(`${wf.workflowId} (${wf.taskQueue})`);
        assert.deepEqual(left, [], 'the fault run ends the workflows it started');
        return true;
      }, { timeoutMs: 10_000 });
    } finally {
      await client.connection.close();
    }
  });
});
