// `npm run fuzz:short`: the message fuzzer, short, through the real `npm run fuzz` entry point on the
// test sandbox (which it reuses, turning on kube-apiserver's audit log): 300
// generated messages to every handler and start input of every workflow type,
// beside each capability's normal operation. No invariant may be violated, and
// nothing of the run may be left running.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../test/harness/env.ts';
import { connectClient } from '../src/temporal/connection.ts';
import { sandbox } from '../test/harness/hooks.ts';
import { waitFor } from '../test/harness/wait.ts';
import type { FuzzReport } from './run.ts';

/** `npm run fuzz` as CI runs it: its exit code and output (exit 1, violations, is an answer too). */
async function run(args: string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [join(repoRoot, 'fuzz/run.ts'), ...args], { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 })
    .then((r) => ({ code: 0, ...r }), (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));
}

describe('message fuzzer (e2e): a short run', function () {
  this.timeout(15 * 60_000);

  it('300 messages to every handler of every workflow type: 0 violations, every capability still working, nothing left running', async () => {
    const report = join(await mkdtemp(join(tmpdir(), 'tend-fuzz-')), 'report.json');
    const r = await run(['--messages', '300', '--batch', '150', '--seed', '32', '--time-limit', '600', '--state-dir', sandbox().stateDir, '--report', report], 14 * 60_000);
    const json = JSON.parse(await readFile(report, 'utf8').catch(() => 'null')) as FuzzReport | null;
    assert.ok(json, `the run wrote its report\n${r.stderr.slice(-3000)}`);
    assert.equal(json.error, undefined, 'the run itself completed');
    assert.equal(json.seed, 32);
    assert.equal(json.sent, 300);
    assert.match(r.stdout, /TYPE\s+HANDLER\s+KIND\s+SENT\s+REFUSED\s+IGNORED\s+ACCEPTED\s+VIOLATIONS/);
    for (const type of ['repair-queue', 'repair/<index>', 'taint-replacements', 'taint/<node>', 'weeder', 'app', 'tend-safety', 'check']) {
      assert.ok(json.rows.some((row) => row.type === type && row.sent > 0), `messages sent to ${type}`);
    }
    assert.deepEqual(json.violations.map((v) => `${v.type} ${v.handler}: ${v.invariant}: ${v.detail}`), [], 'no invariant violated');
    assert.equal(r.code, 0, `exit 0 (no violation)\n${r.stdout.slice(-3000)}`);
    const client = await connectClient({ address: sandbox().temporalAddress, namespace: 'default', taskQueue: 'unused' });
    try {
      // Visibility follows a workflow's end by a moment: wait, bounded, for the list to agree.
      await waitFor('no workflow of the fuzzer left running', async () => {
        const left: string[] = [];
        for await (const wf of client.workflow.list({ query: 'ExecutionStatus="Running" AND (TaskQueue="tend-fuzz" OR TaskQueue="tend-fuzz-elsewhere")' })) left.push(wf.workflowId);
        assert.deepEqual(left, [], 'the fuzzer ends what it started');
        return true;
      }, { timeoutMs: 15_000 });
    } finally {
      await client.connection.close();
    }
  });
});
