// Forged requests against the repair queue, as an attacker with only the
// `temporal` CLI and write access to tend's namespace would send them, at a
// running `tend run` worker: workflow starts with commands in their input (the
// old and the new shape), with a key or address outside the configuration, a
// queue started with a configuration in its state, updates carrying commands
// or malformed, and signals with junk. Each one runs nothing (the MARKER file
// never appears, no command logs a run), cordons nothing, and fails or is
// rejected with the reason. And what a command runs with and prints never
// reaches the history a read-only Web UI viewer reads: it is in the entry's log
// file on the worker's host.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { TendProcess } from '../harness/cli.ts';
import { admin } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { add, entries, REPAIR_TASK_QUEUE, repairWorld, resetRepairQueue, rq, temporalCli, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';

interface HistoryEvent {
  workflowExecutionFailedEventAttributes?: { failure?: { message?: string; applicationFailureInfo?: { nonRetryable?: boolean } } };
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
  startChildWorkflowExecutionInitiatedEventAttributes?: unknown;
}

describe('repair queue: forged requests through Temporal (e2e)', function () {
  this.timeout(120_000);
  let world: RepairWorld;
  let tend: TendProcess;
  let marker: string;
  const touch = () => ['sh', '-c', `touch ${marker}`];

  before(async () => {
    await resetRepairQueue();
    world = repairWorld();
    marker = join(world.dir, 'MARKER');
    // `leaky`: a failing command with a password in its argv and in its output.
    const cfg = parse(readFileSync(world.config, 'utf8')) as { repair: { repair_procedures: { repair_operations: unknown[] }[] } };
    cfg.repair.repair_procedures[0]!.repair_operations.push({
      operation: 'leaky', health_check_command: ['sh', '-c', 'echo false'],
      repair_steps: [{ repair_command: ['sh', '-c', 'echo "ipmitool -P $0 -H $1 power cycle"; echo "$0 refused for $1" >&2; exit 3', 'hunter2pw'] }],
    });
    writeFileSync(world.config, stringify(cfg));
    tend = new TendProcess(['run', '--config', world.config]);
    await waitFor('worker started', () => tend.output.includes('worker started'), { timeoutMs: 60_000 });
  });
  after(async () => {
    await tend?.stop();
  });

  /** Nothing ran and nothing was cordoned. */
  const untouched = async (what: string) => {
    assert.equal(existsSync(marker), false, `${what}: MARKER was created`);
    const logs = readdirSync(world.dir).filter((f) => f.endsWith('.log') || f.endsWith('.times'));
    assert.deepEqual(logs, [], `${what}: a repair command ran`);
    const cordoned = (await admin().core.listNode()).items.filter((n) => n.spec?.unschedulable).map((n) => n.metadata!.name);
    assert.deepEqual(cordoned, [], `${what}: nodes cordoned`);
  };

  /** `temporal workflow start` as the attacker types it; then its history: it failed, non-retryably, before any activity or child. */
  const forgedStart = async (type: string, id: string, input: unknown): Promise<string> => {
    await temporalCli(['workflow', 'start', '--type', type, '--task-queue', REPAIR_TASK_QUEUE, '--workflow-id', id, '--input', JSON.stringify(input)]);
    const events = await waitFor(`${id} failed`, async () => {
      const { stdout } = await temporalCli(['workflow', 'show', '--workflow-id', id, '--output', 'json']);
      const list = (JSON.parse(stdout) as { events: HistoryEvent[] }).events;
      return list.some((e) => e.workflowExecutionFailedEventAttributes) && list;
    }, { timeoutMs: 30_000 });
    assert.deepEqual(events.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => e.activityTaskScheduledEventAttributes!.activityType?.name), [],
      `${id}: an activity was scheduled`);
    assert.equal(events.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).length, 0, `${id}: a child was started`);
    const failure = events.find((e) => e.workflowExecutionFailedEventAttributes)!.workflowExecutionFailedEventAttributes!.failure!;
    assert.equal(failure.applicationFailureInfo?.nonRetryable, true, `${id}: retryable failure: ${failure.message}`);
    return failure.message ?? '';
  };

  const update = (name: string, input?: unknown) => temporalCli([
    'workflow', 'update', 'execute', '--workflow-id', 'repair-queue', '--name', name, ...(input === undefined ? [] : ['--input', JSON.stringify(input)]),
  ]).catch((err: Error & { stderr?: string }) => {
    // The CLI prints the reason inside a quoted log field.
    throw new Error(`${err.message}\n${err.stderr ?? ''}`.replace(/\\"/g, '"'));
  });
  const signal = (id: string, name: string, input: unknown) => temporalCli([
    'workflow', 'signal', '--workflow-id', id, '--name', name, '--input', JSON.stringify(input),
  ]);

  it('a forged repairQueueWorkflow start: a state carrying a configuration, or another workflow id, is refused', async () => {
    const config = { repair_procedures: [{ machine_types: ['sim'], repair_operations: [{ operation: 'evil', repair_steps: [{ repair_command: touch(), watch_seconds: 1 }], health_check_command: touch() }] }] };
    const state = (extra: Record<string, unknown>) => ({
      entries: [{ index: '1', address: '192.0.2.201', nodename: '', machine_type: 'sim', operation: 'evil', status: 'queued', step: 0, step_status: 'waiting', drain_backoff_count: 0, drain_backoff_expire: '0001-01-01T00:00:00Z' }],
      nextIndex: 2, enabled: true, closing: {}, ...extra,
    });
    // No queue is running (the suite starts clean): the forged one takes the queue's own id.
    // A whole configuration nests past the state's depth limit, refused before its fields are read; a flat one by name.
    assert.match(await forgedStart('repairQueueWorkflow', 'repair-queue', state({ config })), /repairQueueWorkflow: refused input: refused unread: nested deeper than \d+ levels/);
    assert.match(await forgedStart('repairQueueWorkflow', 'repair-queue', state({ config: { repair_command: 'touch' } })), /repairQueueWorkflow: refused input: Unrecognized key: "config"/);
    assert.match(await forgedStart('repairQueueWorkflow', 'evil-queue', state({})), /the queue runs as workflow id repair-queue only \(got "evil-queue"\)/);
    await untouched('forged queue');
  });

  it('forged repairEntryWorkflow starts: commands in the input (old and new shape), a key not configured, a bad address, a hand start', async () => {
    // `queue`: any run id (the attacker can read the queue's); it does not make a hand start the queue's child.
    const keys = { index: '901', address: '192.0.2.90', machine_type: 'sim', operation: 'heal', enabled: true, queue: '0197a1b2-0000-7000-8000-000000000001' };
    assert.match(await forgedStart('repairEntryWorkflow', 'repair/901', { ...keys, health_check_command: touch() }),
      /repairEntryWorkflow: refused input: Unrecognized key: "health_check_command"/);
    // The input shape of earlier versions: the whole operation, argv and all.
    const old = {
      entry: { index: '902', address: '192.0.2.90', nodename: '', machine_type: 'sim', operation: 'heal', status: 'processing', step: 0, step_status: 'waiting', drain_backoff_count: 0, drain_backoff_expire: '0001-01-01T00:00:00Z' },
      operation: { operation: 'heal', repair_steps: [{ repair_command: touch(), command_timeout_seconds: 30, command_retries: 0, command_interval: 0, need_drain: false, watch_seconds: 1 }], health_check_command: touch(), command_timeout_seconds: 30, success_command_timeout: 30 },
      drain: { evict_retries: 0, evict_interval: 0, eviction_timeout_seconds: 600 }, timeScale: 1, enabled: true,
    };
    assert.match(await forgedStart('repairEntryWorkflow', 'repair/902', old), /repairEntryWorkflow: refused input: .*Unrecognized keys: "entry", "drain", "timeScale"/);
    assert.match(await forgedStart('repairEntryWorkflow', 'repair/903', { ...keys, index: '903', address: '192.0.2.90;touch MARKER' }),
      /address: address "192\.0\.2\.90;touch MARKER" is not an IP address or a DNS name/);
    assert.match(await forgedStart('repairEntryWorkflow', 'repair/904', { ...keys, index: '904', address: ':' }), /address ":" is not a valid IPv6 address/);
    assert.match(await forgedStart('repairEntryWorkflow', 'repair/905', { ...keys, index: '905', operation: 'no-such-op' }),
      /entries are started by the repair-queue workflow only \(this one has no parent\)/);
    assert.match(await forgedStart('repairEntryWorkflow', 'repair/906', { ...keys, index: '906', machine_type: 'no-such-type' }),
      /entries are started by the repair-queue workflow only/);
    // Well formed and configured, but not the queue's: it would skip the queue's limits.
    assert.match(await forgedStart('repairEntryWorkflow', 'repair/907', { ...keys, index: '907' }), /entries are started by the repair-queue workflow only/);
    assert.match(await forgedStart('repairEntryWorkflow', 'evil-entry', { ...keys, index: '908' }), /the workflow id must be repair\/908 for entry 908 \(got "evil-entry"\)/);
    // A forged "continued" run: where it left off, with a command slipped into its plan.
    const plan = { steps: [{ need_drain: false, watch_seconds: 1, command_timeout_seconds: 30, command_retries: 0, command_interval: 0, repair_command: touch() }], command_timeout_seconds: 30, eviction_timeout_seconds: 600, time_scale: 1 };
    const resume = { nodename: '', step: 0, step_status: 'waiting', drain_backoff_count: 0, drain_backoff_expire: '0001-01-01T00:00:00Z', drained: false, commandDone: false, cordoned: false, watchUntil: 0, backoffExpire: 0, plan };
    assert.match(await forgedStart('repairEntryWorkflow', 'repair/909', { ...keys, index: '909', resume }), /resume\.plan\.steps\[0\]: Unrecognized key: "repair_command"/);
    assert.match(await forgedStart('repairEntryWorkflow', 'repair/910', { ...keys, index: '910', resume: { ...resume, plan: { ...plan, steps: [{ ...plan.steps[0], repair_command: undefined }] } } }),
      /entries are started by the repair-queue workflow only/);
    await untouched('forged entries');
  });

  afterEach(async () => {
    // A failed test leaves the queue disabled; the next one needs it enabled.
    if (tend && !tend.exited) await rq(world, ['enable']);
  });

  it('forged add updates are rejected by the validator with the reason: commands, empty commands, no address, address ":", unknown types', async () => {
    // The queue exists (started by the CLI, with the queue disabled so nothing it holds runs).
    assert.equal((await rq(world, ['disable'])).code, 0);
    const ok = { operation: 'heal', machine_type: 'sim', address: '192.0.2.91' };
    const cases: [unknown, RegExp][] = [
      [{ requests: [{ ...ok, repair_command: touch() }] }, /add: requests\[0\]: Unrecognized key: "repair_command"/],
      [{ requests: [ok], health_check_command: touch() }, /add: Unrecognized key: "health_check_command"/],
      [{ requests: [{ ...ok, health_check_command: [] }] }, /Unrecognized key: "health_check_command"/],
      [{ requests: [] }, /add: requests: requests must hold at least one request/],
      [{ requests: [{ operation: 'heal', machine_type: 'sim' }] }, /add: requests\[0\]\.address: address must be a string/],
      [{ requests: [{ ...ok, address: ':' }] }, /add: requests\[0\]\.address: address ":" is not a valid IPv6 address/],
      [{ requests: [{ ...ok, address: '-rf' }] }, /not an IP address or a DNS name/],
      [{ requests: [{ ...ok, operation: ['sh'] }] }, /requests\[0\]\.operation: operation must be a string/],
      ['junk', /add needs \{"requests"/],
    ];
    const before = await entries(world);
    for (const [input, reason] of cases) {
      await assert.rejects(update('add', input), (err: Error & { stderr?: string }) => {
        // The CLI prints the reason inside a quoted log field.
        const text = err.message;
        assert.match(text, /retryable: false/, text);
        assert.match(text, reason, `${JSON.stringify(input)}: ${text}`);
        assert.doesNotMatch(text, /Cannot read properties/);
        return true;
      });
    }
    // A key outside the configuration: refused by the worker's own configuration, non-retryably.
    await assert.rejects(update('add', { requests: [{ ...ok, machine_type: 'no-such-type' }] }), /unknown machine type \\*"no-such-type\\*"/);
    await assert.rejects(update('enable', { command: touch() }), /enable takes no input/);
    await assert.rejects(update('delete', { index: '1', command: touch() }), /delete: Unrecognized key: "command"/);
    await assert.rejects(update('delete', { index: ':' }), /delete: index/);
    assert.deepEqual(await entries(world), before, 'the queue changed');
    await untouched('forged updates');
  });

  it('junk signals are ignored with the reason in the worker\'s log; the queue and the entry are unchanged', async () => {
    const e = await add(world, 'wait-heal', '192.0.2.92');
    await waitFor('processing', async () => (await queueEntry(e.index))?.step_status === 'watching');
    const before = await entries(world);
    await signal('repair-queue', 'entry-report', 'junk');
    await signal('repair-queue', 'entry-report', { index: e.index, fields: { address: '192.0.2.93', operation: 'evil' } });
    await signal('repair-queue', 'entry-report', { index: e.index, fields: { status: 'succeeded' }, command: touch() });
    // Well formed, but not tied to this queue (an entry of an earlier, reset queue; or a forgery): refused.
    await signal('repair-queue', 'entry-report', { index: e.index, queue: 'an-earlier-queue', fields: { status: 'succeeded' } });
    await signal(`repair/${e.index}`, 'set-enabled', { command: touch() });
    await signal(`repair/${e.index}`, 'reset-backoff', { command: touch() });
    await waitFor('the refusals logged', () =>
      tend.logs.includes('entry-report needs {index, queue, fields} or {index, queue, removed: true}') &&
      tend.logs.includes('belongs to an earlier repair queue (an-earlier-queue)') &&
      tend.logs.includes('Unrecognized keys: "address", "operation"') &&
      tend.logs.includes('set-enabled takes true or false') &&
      tend.logs.includes('reset-backoff takes no input'), { timeoutMs: 20_000 }).catch((err: Error) => {
      throw new Error(`${err.message}\n${tend.output.slice(-3000)}`);
    });
    assert.deepEqual(await entries(world), before, 'the queue changed');
    // The entry goes on as configured: heal the machine, it succeeds; nothing else ran.
    world.healthy('192.0.2.92');
    const done = await waitFor('finished', async () => {
      const x = await queueEntry(e.index);
      return x && x.status !== 'processing' && x;
    }, { timeoutMs: 60_000 });
    assert.equal(done.status, 'succeeded');
    assert.equal(existsSync(marker), false);
    assert.equal((await rq(world, ['delete-finished'])).code, 0);
  });

  it('a failing command: the entry\'s history has its exit code and where its output is, never its argv or output; the log file has both', async () => {
    const e = await add(world, 'leaky', '192.0.2.95');
    await waitFor('failed', async () => (await queueEntry(e.index))?.status === 'failed', { timeoutMs: 60_000 });
    const shown = (await temporalCli(['workflow', 'show', '--workflow-id', `repair/${e.index}`, '--output', 'json'])).stdout;
    // Payloads as a Web UI viewer reads them: decoded.
    const stdout = shown.replace(/"data": "([A-Za-z0-9+/=]*)"/g, (_, b64: string) => Buffer.from(b64, 'base64').toString('utf8'));
    for (const secret of ['hunter2pw', 'ipmitool', 'refused for']) assert.ok(!stdout.includes(secret), `${secret} in the entry's history`);
    assert.match(stdout, new RegExp(`repair_command failed: exit code 3; output: tend repair-queue logs ${e.index}`));
    const logs = await rq(world, ['logs', e.index]);
    assert.equal(logs.code, 0, logs.stderr);
    assert.match(logs.stdout, /ipmitool -P hunter2pw -H 192\.0\.2\.95 power cycle\n[\s\S]*hunter2pw refused for 192\.0\.2\.95/);
    assert.equal((await rq(world, ['delete-finished'])).code, 0);
  });

  it('an operator who removes an operation stops its queued entries: they fail naming the key, and run nothing', async () => {
    assert.equal((await rq(world, ['disable'])).code, 0);
    const e = await add(world, 'heal', '192.0.2.94');
    await tend.stop();
    // The same world, the operation gone from the worker's configuration.
    const cfg = parse(readFileSync(world.config, 'utf8')) as { repair: { repair_procedures: { repair_operations: { operation: string }[] }[] } };
    const proc = cfg.repair.repair_procedures[0]!;
    proc.repair_operations = proc.repair_operations.filter((o) => o.operation !== 'heal');
    const reduced = join(world.dir, 'reduced.yaml');
    writeFileSync(reduced, stringify(cfg));
    tend = new TendProcess(['run', '--config', reduced]);
    await waitFor('worker started', () => tend.output.includes('worker started'), { timeoutMs: 60_000 });
    assert.equal((await rq(world, ['enable'])).code, 0);
    const done = await waitFor('failed', async () => (await queueEntry(e.index))?.status === 'failed', { timeoutMs: 30_000 });
    assert.ok(done);
    await waitFor('the reason logged', () => tend.logs.includes('operation "heal" of machine type "sim" is not configured'), { timeoutMs: 10_000 })
      .catch((err: Error) => {
        throw new Error(`${err.message}\n${tend.output.slice(-3000)}`);
      });
    assert.equal(existsSync(join(world.dir, '192.0.2.94.log')), false, 'the removed operation ran');
    assert.equal((await rq(world, ['delete-finished'])).code, 0);
  });
});
