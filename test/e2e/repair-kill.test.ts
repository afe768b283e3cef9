// The worker killed (SIGKILL) during a drain, during a repair command and
// during a watch: a new worker finishes each entry correctly. A command
// outlives its killed worker (its output goes to a file: no SIGPIPE) and the
// retried attempt waits for it and takes its exit code instead of running it
// again (docs/repair-commands.md). What may run twice: a drain's evictions
// (idempotent), a health check, and a repair command whose worker's host is
// gone (the retry runs elsewhere). SIGTERM lets a running command finish; a
// delete kills its process group.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { add, nodeUnschedulable, release, repairWorld, resetRepairQueue, rq, stuckPod, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import type { KubeClients } from '../../src/kube/client.ts';

describe('repair queue survives a killed worker (e2e)', function () {
  this.timeout(180_000);
  let kube: KubeClients;
  let world: RepairWorld;
  let tend: TendProcess;
  let ns: string;

  const start = async () => {
    tend = new TendProcess(['run', '--config', world.config]);
    await waitFor('worker started', () => tend.output.includes('worker started'), { timeoutMs: 60_000 });
  };
  const log = (address: string) => {
    const f = join(world.dir, `${address}.log`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n') : [];
  };
  // Read in-process (test/harness/in-process-reads.ts): a CLI process per probe would slow the worker it waits for.
  const finished = (index: string) => waitFor(`entry ${index} finished`, async () => {
    const e = await queueEntry(index);
    return e && (e.status === 'succeeded' || e.status === 'failed') && e;
  }, { timeoutMs: 90_000 });

  before(async () => {
    kube = admin();
    await resetRepairQueue();
    world = repairWorld();
    // `chatty`: as `slow`, and it prints after the kill (to a dead reader's pipe, that line would kill it).
    const config = parse(readFileSync(world.config, 'utf8')) as { repair: { repair_procedures: { repair_operations: unknown[] }[] } };
    const logRun = (what: string) => `echo ${what} >> ${world.dir}/"$0".log`;
    config.repair.repair_procedures[0]!.repair_operations.push({
      operation: 'chatty', health_check_command: ['sh', '-c', `test -f ${world.dir}/"$0" && echo true || echo false`],
      repair_steps: [{ repair_command: ['sh', '-c', `echo starting; ${logRun('start')}; sleep 8; echo still here; ${logRun('slow')}; touch ${world.dir}/"$0"`], watch_seconds: 60 }],
    });
    writeFileSync(world.config, stringify(config));
    ns = await tempNamespace(kube, 'rq-kill');
    await start();
  });
  after(async () => {
    await tend?.stop();
    await release(kube, ns, 'stuck-k');
    await deleteNamespace(kube, ns);
  });

  it('during a drain', async () => {
    await stuckPod(kube, ns, 'stuck-k', 'sim-1');
    world.broken('10.88.0.1');
    const e = await add(world, 'drain', '10.88.0.1');
    await waitFor('draining', async () => (await queueEntry(e.index))?.step_status === 'draining' && nodeUnschedulable('sim-1'));
    await tend.stop('SIGKILL');
    await release(kube, ns, 'stuck-k');
    await start();
    const done = await finished(e.index);
    assert.equal(done.status, 'succeeded');
    assert.deepEqual(log('10.88.0.1'), ['heal']);
    assert.equal(await nodeUnschedulable('sim-1'), false);
  });

  it('during a repair command: the command lives on (no SIGPIPE), and the retry takes its end instead of running it again', async () => {
    const e = await add(world, 'chatty', '192.0.2.80');
    // `chatty` logs `start`, sleeps 8 s, prints, logs `slow`: kill while it sleeps (read from its log, at once: a CLI call may take seconds on a busy machine).
    await waitFor('the command started', () => log('192.0.2.80').includes('start'), { timeoutMs: 30_000 });
    await tend.stop('SIGKILL');
    assert.deepEqual(log('192.0.2.80'), ['start'], 'the worker was killed while the command ran');
    await start();
    const done = await finished(e.index);
    assert.equal(done.status, 'succeeded');
    const runs = log('192.0.2.80');
    assert.deepEqual(runs, ['start', 'slow'], `the killed worker's command ran to its end, once: ${runs.join(',')}`);
    assert.match(tend.logs, /the run a killed worker started for this step ended; its exit code is taken, the command is not run again/);
    const logs = await rq(world, ['logs', e.index]);
    assert.equal(logs.code, 0, logs.stderr);
    assert.match(logs.stdout, /--- stdout\nstarting\nstill here\n/);
  });

  /** The `long` command's runs: start (ns, index, step, attempt, its shell's pid) and end (ns) lines. */
  const times = (address: string) => {
    const f = join(world.dir, `${address}.times`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').map((l) => l.split(' ')) : [];
  };
  /** The process group of a live process (the command's shell runs in its run's group, led by the wrapper). */
  const groupOf = (pid: number) => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  };
  /** Whether any live process is in process group `pgid`. */
  const groupAlive = (pgid: number) => readdirSync('/proc').filter((d) => /^\d+$/.test(d)).some((d) => {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return rest[0] !== 'Z' && Number(rest[2]) === pgid;
    } catch {
      return false;
    }
  });

  it('kill -9 during a long command: the retried attempt waits for the killed run\'s process group and adopts its end', async () => {
    const e = await add(world, 'long', '192.0.2.82');
    await waitFor('the command started', () => times('192.0.2.82').length === 1, { timeoutMs: 30_000 });
    const [, , index, step, attempt, pid] = times('192.0.2.82')[0]!;
    assert.deepEqual([index, step, attempt], [e.index, '0', '1'], 'TEND_REPAIR_INDEX, _STEP, _ATTEMPT of the first run');
    const pgid = groupOf(Number(pid));
    await tend.stop('SIGKILL');
    assert.ok(groupAlive(pgid), 'the killed worker\'s command lives on (nothing could kill it)');
    await start();
    const done = await finished(e.index);
    assert.equal(done.status, 'succeeded');
    const lines = times('192.0.2.82');
    assert.deepEqual(lines.map((l) => l[0]), ['start', 'end'], `run once: ${JSON.stringify(lines)}`);
    // Waited for while it ran (when the retry came within its 20 s), then its end taken.
    assert.match(tend.logs, /the run a killed worker started for this step ended; its exit code is taken, the command is not run again/);
  });

  it('SIGTERM lets a running command finish (the shutdown grace time); a delete kills the command\'s whole group', async () => {
    const e = await add(world, 'long', '192.0.2.83');
    await waitFor('the command started', () => times('192.0.2.83').length === 1, { timeoutMs: 30_000 });
    const code = await tend.stop('SIGTERM', 40_000);
    assert.equal(code, 0, tend.output.slice(-2000));
    assert.deepEqual(times('192.0.2.83').map((l) => l[0]), ['start', 'end'], 'the command finished before the worker exited');
    await start();
    assert.equal((await finished(e.index)).status, 'succeeded');
    assert.equal(times('192.0.2.83').length, 2, 'not run again: its attempt completed');

    const d = await add(world, 'long', '192.0.2.84');
    await waitFor('the command started', () => times('192.0.2.84').length === 1, { timeoutMs: 30_000 });
    const pgid = groupOf(Number(times('192.0.2.84')[0]![5]));
    assert.ok(groupAlive(pgid));
    assert.equal((await rq(world, ['delete', d.index])).code, 0);
    await waitFor('the command\'s group killed', () => !groupAlive(pgid), { timeoutMs: 15_000 });
    assert.deepEqual(times('192.0.2.84').map((l) => l[0]), ['start'], 'killed before its end');
  });

  it('during a watch', async () => {
    const e = await add(world, 'wait-heal', '192.0.2.81');
    await waitFor('watching', async () => (await queueEntry(e.index))?.step_status === 'watching');
    await tend.stop('SIGKILL');
    world.healthy('192.0.2.81');
    await start();
    const done = await finished(e.index);
    assert.equal(done.status, 'succeeded');
    assert.equal(done.step_status, 'watching');
    assert.deepEqual(log('192.0.2.81'), ['wait'], 'the repair command is not run again after a watch resumes');
  });
});
