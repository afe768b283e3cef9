// The durable pause on the sandbox, as an operator drives it: `tend pause`,
// `tend pause status`, the `temporal workflow signal` line from docs/safety.md,
// `tend resume`; and a PauseState (what workers consult) in this process,
// reading tend-safety's memo, that never says "acting" for a paused capability
// once `tend pause` has returned, and sees each change. An impostor under the
// id is refused by every command (exit 1, naming it) and the reader fails closed.
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { runTend, TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { temporalCli } from '../harness/temporal.ts';
import { waitFor } from '../harness/wait.ts';
import { emptySafetyState, SAFETY_MEMO_KEY, SAFETY_WORKFLOW_ID } from '../../src/safety/messages.ts';
import { describeReader, PauseState, type PauseCheck } from '../../src/safety/pause.ts';
import { tendMetrics } from '../../src/metrics/registry.ts';

describe('tend pause (e2e)', function () {
  this.timeout(180_000);
  let worker: TendProcess;
  let connection: Connection;
  let client: Client;
  let reader: PauseState;
  const config = () => sandbox().config;

  before(async () => {
    connection = await Connection.connect({ address: sandbox().temporalAddress });
    client = new Client({ connection });
    // A pause left by an earlier run of this file: dropped (terminated), so this one starts from nothing paused.
    await client.workflow.getHandle(SAFETY_WORKFLOW_ID).terminate('tend pause e2e: fresh start').catch(() => undefined);
    worker = new TendProcess(['worker', '--config', config()]);
    await waitFor('the worker to start', () => worker.output.includes('worker started') || (worker.exited && Promise.reject(new Error(worker.output))),
      { timeoutMs: 120_000 });
    // The sandbox's configuration runs tend on task queue "tend" (src/sandbox/sandbox.ts).
    reader = new PauseState({ read: describeReader(connection.workflowService, 'default', { taskQueue: 'tend' }) });
    reader.start();
    await waitFor('the reader\'s first read: nothing paused', () => reader.check('taint').state === 'acting');
  });
  after(async () => {
    reader?.stop();
    await worker?.stop();
    await client?.workflow.getHandle(SAFETY_WORKFLOW_ID).terminate('tend pause e2e: done').catch(() => undefined);
    await connection?.close();
  });

  it('refuses an unknown capability and a missing reason before connecting (exit 2)', async () => {
    const bad = await runTend(['pause', 'taint', 'nodes', '--reason', 'x', '--config', config()]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /unknown capability "nodes" \(known: weeder, taint, apps, repair/);
    const noReason = await runTend(['pause', 'taint', '--config', config()]);
    assert.equal(noReason.code, 2, noReason.stderr);
    assert.match(noReason.stderr, /--reason TEXT is required/);
    assert.equal(reader.check('taint').state, 'acting');
  });

  it('tend pause taint: acknowledged with its revision; from then on no reader says taint may act; status shows it', async () => {
    const r = await runTend(['pause', 'taint', '--reason', 'incident 42', '--config', config()], { timeoutMs: 90_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /warning/);
    assert.match(r.stdout, /^paused: taint \(reason incident 42\), revision 1; every worker stops destructive actions of these capabilities from now on$/m);
    // The command has waited out the readers' freshness bound: a reader is paused, or (stale) unknown, never acting.
    assert.notEqual(reader.check('taint').state, 'acting', 'a reader says taint may act after `tend pause` returned');
    const c = await waitFor('the reader to see taint paused', () => {
      const x = reader.check('taint');
      return x.state === 'paused' ? x : undefined;
    }, { timeoutMs: 10_000, intervalMs: 50 });
    assert.equal(c.reason, 'incident 42');
    assert.match(c.by ?? '', /.+@.+/);
    assert.equal(reader.check('weeder').state, 'acting');
    assert.match(await tendMetrics(), /tend_paused\{capability="taint"\} 1/);
    assert.match(await tendMetrics(), /tend_paused\{capability="weeder"\} 0/);

    const table = await runTend(['pause', 'status', '--config', config()]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^taint\s+paused\s+\d{4}-\d\d-\d\dT\S+\s+\S+@\S+\s+incident 42$/m);
    assert.match(table.stdout, /^weeder\s+acting/m);
    assert.match(table.stdout, /revision 1/);
    const json = await runTend(['pause', 'status', '-o', 'json', '--config', config()]);
    assert.equal(json.code, 0, json.stderr);
    const st = JSON.parse(json.stdout) as { running: boolean; revision: number; capabilities: Record<string, { paused: boolean; reason?: string }> };
    assert.equal(st.running, true);
    assert.equal(st.revision, 1);
    assert.deepEqual(st.capabilities.taint, { ...st.capabilities.taint, paused: true, reason: 'incident 42' });
    assert.equal(st.capabilities.apps!.paused, false);
  });

  it('the temporal CLI lines from the docs pause and resume too', async () => {
    await temporalCli(['workflow', 'signal', '--workflow-id', 'tend-safety', '--name', 'pause',
      '--input', '{"capabilities":["repair"],"reason":"incident 43"}']);
    await waitFor('the reader to see repair paused', () => reader.check('repair').state === 'paused', { timeoutMs: 10_000, intervalMs: 50 });
    // A bad signal is ignored (the workflow logs it): nothing changes.
    await temporalCli(['workflow', 'signal', '--workflow-id', 'tend-safety', '--name', 'pause', '--input', '{"capabilities":["nodes"],"reason":"x"}']);
    const update = await temporalCli(['workflow', 'update', 'execute', '--workflow-id', 'tend-safety', '--name', 'resume',
      '--input', '{"capabilities":["repair"]}']);
    assert.match(update.stdout, /revision:3\b/, update.stdout);
    await waitFor('the reader to see repair acting', () => reader.check('repair').state === 'acting', { timeoutMs: 10_000, intervalMs: 50 });
    assert.equal(reader.check('taint').state, 'paused');
  });

  it('tend resume taint, then tend resume: the reader sees each change', async () => {
    const all = await runTend(['pause', '--reason', 'freeze', '--config', config()], { timeoutMs: 90_000 });
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /^paused: weeder, taint, apps, repair \(reason freeze\), revision 4;/m);
    // Every capability honours it: nothing to warn about.
    assert.doesNotMatch(all.stderr, /warning/);
    for (const c of ['weeder', 'taint', 'apps', 'repair'] as const) assert.notEqual(reader.check(c).state, 'acting', c);

    const one = await runTend(['resume', 'taint', '--config', config()], { timeoutMs: 90_000 });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /^resumed: taint, revision 5; workers act again within 1 s; still paused: weeder, apps, repair$/m);
    await waitFor('the reader to see taint acting', () => reader.check('taint').state === 'acting', { timeoutMs: 10_000, intervalMs: 50 });
    assert.equal(reader.check('weeder').state, 'paused');

    const rest = await runTend(['resume', '--config', config()], { timeoutMs: 90_000 });
    assert.equal(rest.code, 0, rest.stderr);
    assert.match(rest.stdout, /^resumed: weeder, taint, apps, repair, revision 6; workers act again within 1 s$/m);
    await waitFor('the reader to see everything acting', () => ['weeder', 'taint', 'apps', 'repair'].every((c) => reader.check(c as 'taint').state === 'acting'),
      { timeoutMs: 10_000, intervalMs: 50 });
    const status = await runTend(['pause', 'status', '--config', config()]);
    assert.doesNotMatch(status.stdout, /paused/);
    assert.match(status.stdout, /revision 6/);
  });

  it('an impostor under tend-safety: pause, resume and status refuse it (exit 1) naming it, send it nothing, and the reader fails closed', async () => {
    await client.workflow.getHandle(SAFETY_WORKFLOW_ID).terminate('tend pause e2e: an impostor takes the id').catch(() => undefined);
    // A type no worker runs, on a task queue no worker polls, its memo saying nothing is paused.
    const impostor = await client.workflow.start('notTheSafety', {
      workflowId: SAFETY_WORKFLOW_ID, taskQueue: 'impostor-queue', args: [], memo: { [SAFETY_MEMO_KEY]: emptySafetyState() },
    });
    try {
      const named = /workflow tend-safety is of type "notTheSafety", not safetyWorkflow: not tend's/;
      const unknown = await waitFor('the reader to fail closed on the impostor', () => {
        const c = reader.check('taint');
        return c.state === 'unknown' && named.test(c.reason) ? c : undefined;
      }, { timeoutMs: 10_000, intervalMs: 50 }) as Extract<PauseCheck, { state: 'unknown' }>;
      assert.match(unknown.reason, /destructive actions wait until it is gone/);
      for (const c of ['weeder', 'apps', 'repair'] as const) assert.equal(reader.check(c).state, 'unknown', c);

      const p = await runTend(['pause', 'taint', '--reason', 'incident 45', '--config', config()], { timeoutMs: 90_000 });
      assert.equal(p.code, 1, p.stderr);
      assert.match(p.stderr, new RegExp(`pause: refused, nothing sent: ${named.source}.*terminate it`));
      assert.doesNotMatch(p.stdout, /^paused:/m);
      const r = await runTend(['resume', '--config', config()], { timeoutMs: 90_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`resume: refused, nothing sent: ${named.source}`));
      const st = await runTend(['pause', 'status', '--config', config()]);
      assert.equal(st.code, 1, st.stderr);
      assert.match(st.stderr, new RegExp(`pause status: refused: ${named.source}`));
      const events = (await impostor.fetchHistory()).events ?? [];
      assert.deepEqual(events.filter((e) => e.workflowExecutionSignaledEventAttributes || e.workflowExecutionUpdateAdmittedEventAttributes), [],
        'the impostor was sent a change');
    } finally {
      await impostor.terminate('tend pause e2e: impostor done').catch(() => undefined);
    }
    // Gone, nothing runs under the id: nothing is paused, the reader acts again.
    await waitFor('the reader to act again', () => reader.check('taint').state === 'acting', { timeoutMs: 10_000, intervalMs: 50 });
  });
});
