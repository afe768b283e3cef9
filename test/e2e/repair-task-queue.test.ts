// repair.taskQueue end to end with two workers: `tend run` in the "cluster"
// (no commands run there) and `tend worker --capabilities repair` on the
// "management host", whose commands write a marker file saying where they
// ran. With the command worker stopped, an entry waits (its health check
// pending on the commands' task queue) and goes on when it starts again. The
// guard between two command workers: test/e2e/repair-guard-commands.test.ts.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { runTend, TendProcess } from '../harness/cli.ts';
import { waitFor } from '../harness/wait.ts';
import { add, repairWorld, resetRepairQueue, temporalCli, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import { repairEntryWorkflowId } from '../../src/repair/messages.ts';

const COMMAND_QUEUE = 'tend-repair-commands-e2e';

describe('repair commands on a task queue of their own (e2e, two workers)', function () {
  this.timeout(300_000);
  let world: RepairWorld;
  let main: TendProcess;
  let commands: TendProcess | undefined;

  /** Where each command of `marker` ran: one line per run, `repair <role>` or `health <role>`. */
  const marks = (address: string) => {
    const f = join(world.dir, `${address}.where`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n') : [];
  };
  const startCommands = async () => {
    commands = new TendProcess(['worker', '--config', world.config, '--capabilities', 'repair'], { TEND_E2E_ROLE: 'commands' });
    await waitFor('the command worker started', () => {
      if (commands!.exited) throw new Error(`the command worker exited: ${commands!.output}`);
      return commands!.output.includes('worker started');
    }, { timeoutMs: 60_000 });
  };
  const finished = (index: string) => waitFor(`entry ${index} finished`, async () => {
    const e = await queueEntry(index);
    return e && (e.status === 'succeeded' || e.status === 'failed') && e;
  }, { timeoutMs: 90_000 });

  before(async () => {
    await resetRepairQueue();
    world = repairWorld({ taskQueue: COMMAND_QUEUE });
    // An operation whose commands record which worker ran them (TEND_E2E_ROLE is each worker's own environment).
    const config = parse(readFileSync(world.config, 'utf8')) as { repair: { repair_procedures: { repair_operations: unknown[] }[] } };
    const where = (what: string) => `echo ${what} "$TEND_E2E_ROLE" >> ${world.dir}/"$0".where`;
    config.repair.repair_procedures[0]!.repair_operations.push({
      operation: 'marker',
      repair_steps: [{ repair_command: ['sh', '-c', `${where('repair')}; touch ${world.dir}/"$0"`], watch_seconds: 60 }],
      health_check_command: ['sh', '-c', `${where('health')}; test -f ${world.dir}/"$0" && echo true || echo false`],
    });
    writeFileSync(world.config, stringify(config));
    main = new TendProcess(['run', '--config', world.config], { TEND_E2E_ROLE: 'main' });
    // Bundling the workflow code at start-up takes a while on a busy machine.
    await waitFor('tend run started', () => {
      if (main.exited) throw new Error(`tend run exited: ${main.output}`);
      return main.output.includes('worker started');
    }, { timeoutMs: 180_000 });
    await startCommands();
  });
  after(async () => {
    await commands?.stop();
    await main?.stop();
  });

  it('the command worker polls only the commands\' task queue, guards on the entry\'s Node through the configuration\'s Kubernetes connection, and is ready on its HTTP port', async () => {
    const started = commands!.output.split('\n').find((l) => l.includes('worker started'))!;
    assert.match(started, new RegExp(`"taskQueue":"${COMMAND_QUEUE}"`));
    assert.match(started, /repair commands only/);
    assert.match(started, /"guard":"the entry's Node \(tend\.dev\/repair-run\)"/);
    const serving = commands!.output.split('\n').find((l) => l.includes('serving /metrics'))!;
    const port = Number(/"port":(\d+)/.exec(serving)?.[1]);
    assert.ok(port > 0, serving);
    await waitFor('the command worker\'s /readyz answers 200', async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, { timeoutMs: 30_000 });
  });

  it('an entry runs its health checks and repair command on the command worker, none on tend run', async () => {
    const e = await add(world, 'marker', '192.0.2.91');
    const done = await finished(e.index);
    assert.equal(done.status, 'succeeded');
    const lines = marks('192.0.2.91');
    assert.ok(lines.includes('repair commands'), lines.join(', '));
    assert.deepEqual(lines.filter((l) => !l.endsWith(' commands')), [], `commands ran elsewhere: ${lines.join(', ')}`);
  });

  it('tend doctor names the command worker; with a repair.taskQueue no worker polls it fails, naming it', async () => {
    const ok = await runTend(['doctor', '--config', world.config, '--timeout', '60'], { timeoutMs: 120_000 });
    assert.equal(ok.code, 0, ok.stderr);
    const report = JSON.parse(ok.stdout) as { repairCommandWorkers?: string[] };
    assert.equal(report.repairCommandWorkers?.length, 1, ok.stdout);
    const config = parse(readFileSync(world.config, 'utf8')) as { repair: { taskQueue: string } };
    config.repair.taskQueue = 'tend-repair-commands-nobody';
    const lonely = join(world.dir, 'nobody.yaml');
    writeFileSync(lonely, stringify(config));
    const r = await runTend(['doctor', '--config', lonely, '--timeout', '60'], { timeoutMs: 120_000 });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /no worker has polled repair\.taskQueue "tend-repair-commands-nobody".*tend worker --capabilities repair/s);
  });

  it('with the command worker stopped the entry waits (visible), and goes on when it starts again', async () => {
    await commands!.stop();
    commands = undefined;
    const e = await add(world, 'marker', '192.0.2.92');
    const id = repairEntryWorkflowId(e.index);
    await waitFor('the first health check pending on the commands\' task queue', async () => {
      const { stdout } = await temporalCli(['workflow', 'describe', '--workflow-id', id, '--output', 'json']);
      return /"repairWatchHealth"/.test(stdout);
    }, { timeoutMs: 60_000 });
    assert.equal((await queueEntry(e.index))?.status, 'processing');
    assert.deepEqual(marks('192.0.2.92'), [], 'a command ran with no command worker');
    await startCommands();
    const done = await finished(e.index);
    assert.equal(done.status, 'succeeded');
    const lines = marks('192.0.2.92');
    assert.ok(lines.includes('repair commands'), lines.join(', '));
    assert.deepEqual(lines.filter((l) => !l.endsWith(' commands')), [], `commands ran elsewhere: ${lines.join(', ')}`);
  });
});
