// The guard on the entry's Node with repair.taskQueue, end to end: tend run and two command
// workers, each a "host" of its own (its own state folder, so neither sees the other's per-host
// record). The worker running an entry's repair command is stopped (SIGSTOP: cut off, as Temporal
// sees it); the command's attempt times out and is retried on the other worker while the command
// still runs. The retry waits for the guard instead of running the command again; once the first
// worker is back, it leaves the exit code in the guard and the retry takes it. The command runs
// once. A command worker given a kubeconfig it cannot use does not start; one given no Kubernetes
// connection at all starts, and says it guards per host only.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { TendProcess } from '../harness/cli.ts';
import { admin } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { add, repairWorld, resetRepairQueue, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import { GUARD_ANNOTATION, parseGuard } from '../../src/repair/guard.ts';

const COMMAND_QUEUE = 'tend-repair-commands-guard-e2e';
const NODE = 'sim-3';
const ADDRESS = '10.88.0.3';

interface Config { kubernetes?: unknown; repair: { taskQueue: string; state_dir: string; repair_procedures: { repair_operations: unknown[] }[] } }

describe('the guard on the entry\'s Node holds between two repair command workers (e2e, repair.taskQueue)', function () {
  this.timeout(300_000);
  let world: RepairWorld;
  let main: TendProcess;
  const workers: Record<string, TendProcess> = {};
  const stopped = new Set<TendProcess>();

  /** The runs of the `race` command: `start <worker>` and `end <worker>` lines. */
  const runs = () => {
    const f = join(world.dir, `${ADDRESS}.runs`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n') : [];
  };
  const starts = () => runs().filter((l) => l.startsWith('start '));
  const config = () => parse(readFileSync(world.config, 'utf8')) as Config;
  /** A copy of the configuration as another host has it: its own state folder (and whatever `change` does). */
  const hostConfig = (name: string, change: (c: Config) => void = () => undefined) => {
    const c = config();
    c.repair.state_dir = join(world.dir, `state-${name}`);
    change(c);
    const file = join(world.dir, `${name}.yaml`);
    writeFileSync(file, stringify(c));
    return file;
  };
  const startWorker = async (name: string, file: string, env: NodeJS.ProcessEnv = {}) => {
    const p = new TendProcess(['worker', '--config', file, '--capabilities', 'repair'], { TEND_E2E_ROLE: name, ...env });
    await waitFor(`command worker ${name} started`, () => {
      if (p.exited) throw new Error(`command worker ${name} exited: ${p.output}`);
      return p.output.includes('worker started');
    }, { timeoutMs: 60_000 });
    return p;
  };
  const guardOnNode = async () => parseGuard((await admin().core.readNode({ name: NODE })).metadata?.annotations?.[GUARD_ANNOTATION]);

  before(async () => {
    await resetRepairQueue();
    world = repairWorld({ taskQueue: COMMAND_QUEUE });
    // A command that runs 15 s and says which worker ran it (TEND_E2E_ROLE is each worker's own environment).
    const c = config();
    const mark = (what: string) => `echo ${what} "$TEND_E2E_ROLE" >> ${world.dir}/"$0".runs`;
    c.repair.repair_procedures[0]!.repair_operations.push({
      operation: 'race',
      repair_steps: [{ repair_command: ['sh', '-c', `${mark('start')}; sleep 15; ${mark('end')}; touch ${world.dir}/"$0"`], watch_seconds: 60, command_timeout_seconds: 120 }],
      health_check_command: ['sh', '-c', `test -f ${world.dir}/"$0" && echo true || echo false`],
    });
    writeFileSync(world.config, stringify(c));
    main = new TendProcess(['run', '--config', world.config], { TEND_E2E_ROLE: 'main' });
    // Bundling the workflow code at start-up takes a while on a busy machine.
    await waitFor('tend run started', () => {
      if (main.exited) throw new Error(`tend run exited: ${main.output}`);
      return main.output.includes('worker started');
    }, { timeoutMs: 180_000 });
    for (const name of ['a', 'b']) workers[name] = await startWorker(name, hostConfig(name));
  });
  after(async () => {
    for (const p of stopped) p.child.kill('SIGCONT');
    for (const p of Object.values(workers)) await p.stop();
    await main?.stop();
    await resetRepairQueue();
  });

  it('each command worker given a Kubernetes connection says it guards on the entry\'s Node', () => {
    for (const [name, p] of Object.entries(workers)) {
      const started = p.output.split('\n').find((l) => l.includes('worker started'))!;
      assert.match(started, new RegExp(`"taskQueue":"${COMMAND_QUEUE}"`), name);
      assert.match(started, /"kubernetes":"v[0-9.]+/, name);
      assert.match(started, /"guard":"the entry's Node \(tend\.dev\/repair-run\)"/, name);
    }
  });

  it('a command attempt retried on the other worker while it still runs waits for the guard and takes its exit code: the command runs once', async () => {
    world.broken(ADDRESS);
    const e = await add(world, 'race', ADDRESS);
    const first = await waitFor('the repair command started on a command worker', () => starts()[0], { timeoutMs: 90_000, intervalMs: 100 });
    const holderName = first.split(' ')[1]!;
    const holder = workers[holderName]!;
    const other = Object.entries(workers).find(([n]) => n !== holderName)![1];
    // Cut off: it heartbeats no more, so Temporal retries the attempt on the other worker; its command runs on.
    holder.child.kill('SIGSTOP');
    stopped.add(holder);
    await waitFor('the retry on the other worker waits for the guard (or runs the command again)', () =>
      // Temporal may first hand the retries to the stopped worker's polls already waiting there, each timing out in turn.
      starts().length > 1 || other.logs.includes('the entry\'s guard is held; waiting for it'), { timeoutMs: 120_000 });
    assert.deepEqual(starts(), [first], 'the retry ran the command while the first run still went on');
    assert.match(other.logs, /an earlier attempt started this command/);
    const held = await guardOnNode();
    assert.deepEqual({ entry: held?.entry, holder: held?.holder.pid, released: held?.until === 0 }, { entry: e.index, holder: holder.child.pid, released: false });
    await waitFor('the first run ended', () => runs().includes(`end ${holderName}`), { timeoutMs: 60_000 });
    holder.child.kill('SIGCONT');
    stopped.delete(holder);
    const done = await waitFor(`entry ${e.index} finished`, async () => {
      const x = await queueEntry(e.index);
      return x && (x.status === 'succeeded' || x.status === 'failed') && x;
    }, { timeoutMs: 120_000 });
    assert.deepEqual(starts(), [first], 'the command ran more than once');
    assert.equal(done.status, 'succeeded', JSON.stringify(done));
    assert.match(other.logs, /the run this attempt was cut off from ended on another worker; its exit code is taken/);
    const released = await guardOnNode();
    assert.deepEqual({ entry: released?.entry, until: released?.until, exitCode: released?.exitCode }, { entry: e.index, until: 0, exitCode: 0 });
  });

  it('a command worker given a kubeconfig it cannot use does not start: a configuration error (exit 2) naming it', async () => {
    const broken = hostConfig('broken', (c) => {
      c.kubernetes = { kubeconfig: join(world.dir, 'missing.kubeconfig') };
      c.repair.taskQueue = `${COMMAND_QUEUE}-broken`;
    });
    const p = new TendProcess(['worker', '--config', broken, '--capabilities', 'repair']);
    const code = await waitFor('the command worker exits', () => p.exited && p.child.exitCode, { timeoutMs: 60_000 });
    assert.equal(code, 2, p.output);
    assert.match(p.logs, /kubeconfig: \S*missing\.kubeconfig: file not found/);
    assert.doesNotMatch(p.output, /worker started/);
  });

  it('a command worker given no Kubernetes connection starts, and says it guards per host only', async () => {
    const none = hostConfig('none', (c) => {
      delete c.kubernetes;
      // A queue of its own: it takes no command of the entries above.
      c.repair.taskQueue = `${COMMAND_QUEUE}-none`;
    });
    const home = mkdtempSync(join(tmpdir(), 'tend-home-'));
    const p = await startWorker('none', none, { HOME: home, KUBECONFIG: undefined, KUBERNETES_SERVICE_HOST: undefined });
    try {
      const started = p.output.split('\n').find((l) => l.includes('worker started'))!;
      assert.match(started, /"guard":"per host only \(no Kubernetes connection\)"/);
      assert.doesNotMatch(started, /"kubernetes"/);
      assert.match(p.logs, /no Kubernetes connection is configured .*no command is guarded on its entry's Node: two command workers on different hosts can run one entry's command at once/);
    } finally {
      await p.stop();
    }
  });
});
