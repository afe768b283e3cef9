// The message fuzzer, short, through the real `npm run fuzz` entry point on the
// test sandbox (which it reuses, turning on kube-apiserver's audit log): 300
// generated messages to every handler and start input of every workflow type,
// beside each capability's normal operation. No invariant may be violated, and
// nothing of the run may be left running. Bounded: the run stops sending at its
// time limit (on a loaded machine it then says how many it sent, and those must
// show no violation) and ends within its own bound, which this test outlasts.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectClient } from '../../src/temporal/connection.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';
import { runScript } from '../harness/script.ts';
import type { FuzzReport } from '../../fuzz/run.ts';

const MESSAGES = 300;
/** Sending stops here; the run ends within 10 more minutes (fuzz/run.ts TAIL_MS) or stops itself. */
const TIME_LIMIT_S = 240;
const RUN_BOUND_MS = (TIME_LIMIT_S + 10 * 60) * 1000;

const run = (args: string[], timeoutMs: number) => runScript('fuzz/run.ts', args, timeoutMs);

describe('message fuzzer (e2e): a short run', function () {
  // The run's own bound, a minute for node to start it and one for the checks below.
  this.timeout(RUN_BOUND_MS + 2 * 60_000);

  it(`${MESSAGES} messages to every handler of every workflow type (fewer past ${TIME_LIMIT_S} s): 0 violations, every capability still working, nothing left running`, async () => {
    const report = join(await mkdtemp(join(tmpdir(), 'tend-fuzz-')), 'report.json');
    const r = await run(['--messages', String(MESSAGES), '--batch', '150', '--seed', '32', '--time-limit', String(TIME_LIMIT_S),
      '--state-dir', sandbox().stateDir, '--report', report], RUN_BOUND_MS + 60_000);
    const json = JSON.parse(await readFile(report, 'utf8').catch(() => 'null')) as FuzzReport | null;
    assert.ok(json, `the run wrote its report (exit ${r.code})\n${r.stderr.slice(-3000)}`);
    assert.equal(json.error, undefined, 'the run itself completed');
    assert.equal(json.seed, 32);
    assert.equal(json.total, MESSAGES);
    assert.equal(json.rows.reduce((n, row) => n + row.sent, 0), json.sent, 'the table counts every message sent');
    assert.match(r.stdout, /TYPE\s+HANDLER\s+KIND\s+SENT\s+REFUSED\s+IGNORED\s+ACCEPTED\s+VIOLATIONS/);
    console.log(`      ${json.sent} of ${MESSAGES} messages sent in ${json.batches} batch(es); the run took ${json.seconds} s`);
    if (json.timeLimited) {
      // A loaded machine: what was sent is checked all the same, and the run says how much it was.
      assert.ok(json.sent > 0 && json.sent < MESSAGES, `sent ${json.sent}`);
      assert.match(r.stdout, new RegExp(`time limit: ${json.sent} of ${MESSAGES} message\\(s\\) sent in ${TIME_LIMIT_S} s`));
    } else {
      assert.equal(json.sent, MESSAGES);
      for (const type of ['repair-queue', 'repair/<index>', 'taint-replacements', 'taint/<node>', 'weeder', 'app', 'tend-safety', 'check']) {
        assert.ok(json.rows.some((row) => row.type === type && row.sent > 0), `messages sent to ${type}`);
      }
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
