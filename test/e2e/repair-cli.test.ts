// The repair-queue CLI's habits on the sandbox: bad input refused before connecting, a queue
// nobody serves refused at once naming the task queue, options after "--".
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { runTend } from '../harness/cli.ts';
import { repairWorld, resetRepairQueue, temporalCli, type RepairWorld } from '../harness/repair.ts';
import { waitFor } from '../harness/wait.ts';

// A namespace of this file's own, where the repair queue (one per namespace) was never started.
const NAMESPACE = `tend-repair-cli-${Date.now().toString(36)}`;

describe('repair-queue CLI habits (e2e)', function () {
  this.timeout(120_000);
  let world: RepairWorld;
  let unreachable: string;

  before(async () => {
    await resetRepairQueue();
    world = repairWorld();
    const config = parse(readFileSync(world.config, 'utf8')) as { temporal: Record<string, unknown> };
    // A task queue no worker polls.
    config.temporal.taskQueue = 'tend-repair-cli-nobody';
    config.temporal.namespace = NAMESPACE;
    writeFileSync(world.config, stringify(config));
    await temporalCli(['operator', 'namespace', 'create', '--namespace', NAMESPACE]).catch((err: Error) => {
      if (!/already/i.test(err.message)) throw err;
    });
    await waitFor(`namespace ${NAMESPACE} usable`, async () =>
      temporalCli(['workflow', 'list', '--namespace', NAMESPACE, '--limit', '1']).then(() => true, () => false), { timeoutMs: 30_000 });
    config.temporal.address = '127.0.0.1:1';
    unreachable = join(world.dir, 'unreachable.yaml');
    writeFileSync(unreachable, stringify(config));
  });

  it('add refuses at once when no worker polls the task queue, naming it (no hang)', async () => {
    const r = await runTend(['repair-queue', 'add', '--config', world.config, 'heal', 'sim', '192.0.2.31'], { timeoutMs: 60_000 });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /no worker has polled task queue "tend-repair-cli-nobody" \(temporal\.taskQueue\).*start `tend run` or `tend worker`/);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'a stack trace');
  });

  it('list: null (as ckecli) and wait: empty, for a queue never started; for a closed one with no worker, an error naming the task queue', async () => {
    const r = await runTend(['repair-queue', 'list', '--config', world.config], { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'null');
    const w = await runTend(['repair-queue', 'wait', '--config', world.config], { timeoutMs: 60_000 });
    assert.equal(w.code, 0, w.stderr);
    assert.equal(w.stdout.trim(), 'repair queue is empty');
    // A queue that ran and ended: only a worker can answer for it (it replays the queue).
    await temporalCli(['workflow', 'start', '--namespace', NAMESPACE, '--type', 'repairQueueWorkflow', '--workflow-id', 'repair-queue',
      '--task-queue', 'tend-repair-cli-nobody', '--input', '{"entries":[],"nextIndex":1,"enabled":true,"closing":{}}']);
    await temporalCli(['workflow', 'terminate', '--namespace', NAMESPACE, '--workflow-id', 'repair-queue', '--reason', 'test']);
    const closed = await runTend(['repair-queue', 'list', '--config', world.config], { timeoutMs: 60_000 });
    assert.equal(closed.code, 1, closed.stderr);
    assert.match(closed.stderr, /no worker has polled task queue "tend-repair-cli-nobody"/);
    assert.doesNotMatch(closed.stderr, /ServiceError|\n\s+at /);
  });

  it('takes --config after "--" (add OP TYPE -- ADDRESS --config F) as the option', async () => {
    const r = await runTend(['repair-queue', 'add', 'heal', 'sim', '--', '192.0.2.32', '--config', world.config], { timeoutMs: 60_000 });
    // This configuration's task queue in the answer: the option was read.
    assert.match(r.stderr, /"tend-repair-cli-nobody"/, r.stderr);
    const extra = await runTend(['repair-queue', 'add', 'heal', 'sim', '192.0.2.33', 'serial', 'more', '--config', world.config], { timeoutMs: 60_000 });
    assert.equal(extra.code, 2);
    assert.match(extra.stderr, /add: unexpected argument "more" \(usage: add <OPERATION> <MACHINE_TYPE> <ADDRESS> \[SERIAL\]\)/);
  });

  it("wait's options as ckecli's: a negative timeout or a zero interval is exit 2 before connecting", async () => {
    for (const [option, value, message] of [['--timeout-seconds', '-3', /--timeout-seconds must be a whole number of seconds, 0 or more \(got "-3"\)/], ['--interval-seconds', '0', /--interval-seconds must be a whole number from 1 to 86400 \(got "0"\)/]] as const) {
      const r = await runTend(['repair-queue', 'wait', '--config', unreachable, option, value], { timeoutMs: 60_000 });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
    }
  });

  it('a bad operation is exit 2 before connecting: Temporal unreachable does not hide it', async () => {
    const r = await runTend(['repair-queue', 'add', '--config', unreachable, 'nosuch', 'sim', '192.0.2.34'], { timeoutMs: 60_000 });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /add: unknown operation "nosuch" for machine type sim/);
    assert.doesNotMatch(r.stderr, /cannot reach Temporal/);
  });
});
