// repair.taskQueue: the setting, `--capabilities`, which worker polls which
// task queue, and the main worker refusing to run commands that belong on the
// commands' task queue.
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { parseConfig, type Config } from '../../src/config/load.ts';
import { ConfigError } from '../../src/config/errors.ts';
import { parseCapabilities, workerActivities } from '../../src/activities/index.ts';
import { createRepairActivities } from '../../src/activities/repair.ts';
import { UsageError } from '../../src/starters/cli-support.ts';
import { workerPlan } from '../../src/workers/worker.ts';

const section = (more = '') => `
temporal: { taskQueue: tend }
repair:
  repair_procedures:
    - machine_types: [sim]
      repair_operations:
        - operation: reboot
          repair_steps:
            - repair_command: [reboot-machine]
              watch_seconds: 60
          health_check_command: [check-machine]
${more}`;

const key = { index: '1', address: '10.0.0.1', machine_type: 'sim', operation: 'reboot' };

async function refusal(p: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApplicationFailure, String(err));
    return err;
  }
  assert.fail('not refused');
}

describe('repair: the commands\' task queue (repair.taskQueue)', () => {
  it('is optional, and a name without spaces', () => {
    assert.equal(parseConfig(section(), 'a.yaml').repair!.taskQueue, undefined);
    assert.equal(parseConfig(section('  taskQueue: tend-repair-commands'), 'a.yaml').repair!.taskQueue, 'tend-repair-commands');
    assert.throws(() => parseConfig(section('  taskQueue: ""'), 'a.yaml'), (e: unknown) => e instanceof ConfigError && /repair\.taskQueue: must name a task queue/.test(e.message));
    assert.throws(() => parseConfig(section('  taskQueue: "a b"'), 'a.yaml'), (e: unknown) => e instanceof ConfigError && /repair\.taskQueue: .*without spaces/.test(e.message));
    assert.throws(() => parseConfig(section('  taskQueue: 7'), 'a.yaml'), (e: unknown) => e instanceof ConfigError && /repair\.taskQueue/.test(e.message));
  });

  it('--capabilities: a comma list of known capabilities; an unknown one is named', () => {
    assert.deepEqual(parseCapabilities('repair'), ['repair']);
    assert.deepEqual(parseCapabilities('weeder, repair,weeder'), ['weeder', 'repair']);
    assert.deepEqual(parseCapabilities('repair,ipmi'), { problem: 'unknown capability "ipmi" (known: weeder, taint, apps, repair)' });
    assert.match((parseCapabilities('') as { problem: string }).problem, /name at least one capability/);
  });

  it('which task queue a worker polls: the commands\' queue only for --capabilities repair with repair.taskQueue set', () => {
    const plain = parseConfig(section(), 'a.yaml');
    const split = parseConfig(section('  taskQueue: tend-repair'), 'a.yaml');
    assert.deepEqual(workerPlan(plain), { kind: 'main', taskQueue: 'tend' });
    assert.deepEqual(workerPlan(split), { kind: 'main', taskQueue: 'tend' });
    assert.deepEqual(workerPlan(split, { capabilities: ['repair'] }), { kind: 'repair-commands', taskQueue: 'tend-repair' });
    // Without repair.taskQueue, --capabilities repair is a worker of tend's queue with the repair activities only.
    assert.deepEqual(workerPlan(plain, { capabilities: ['repair'] }), { kind: 'main', taskQueue: 'tend', capabilities: ['repair'] });
    assert.deepEqual(workerPlan(split, { capabilities: ['weeder'] }), { kind: 'main', taskQueue: 'tend', capabilities: ['weeder'] });
    assert.throws(() => workerPlan(split, { capabilities: ['repair', 'weeder'] }), (e: unknown) => e instanceof UsageError && /run the other capabilities \(weeder\) in a worker of their own/.test(e.message));
    const same = parseConfig(section('  taskQueue: tend'), 'a.yaml');
    assert.throws(() => workerPlan(same), (e: unknown) => e instanceof ConfigError && /repair\.taskQueue: must differ from temporal\.taskQueue/.test(e.message));
    const none = { ...plain, repair: undefined } as Config;
    assert.throws(() => workerPlan(none, { capabilities: ['repair'] }), (e: unknown) => e instanceof UsageError && /no repair section/.test(e.message));
  });

  it('the command worker registers the command activities only; --capabilities leaves out the others\'', () => {
    const split = parseConfig(section('  taskQueue: tend-repair'), 'a.yaml');
    assert.deepEqual(Object.keys(workerActivities({ config: split }, { repairCommandsOnly: true })).sort(), ['repairRunCommand', 'repairWatchHealth']);
    const kube = {} as never;
    const names = Object.keys(workerActivities({ kube, config: split }, { capabilities: ['repair'] }));
    assert.ok(names.includes('repairDrain') && names.includes('repairLocate') && names.includes('repairRunCommand'), names.join(', '));
    assert.ok(names.includes('clusterFacts'), 'the cluster checks `tend doctor` uses are always there');
    assert.ok(!names.some((n) => /weeder|taint|app/i.test(n)), names.join(', '));
  });

  it('the main worker refuses to run a command when repair.taskQueue sends the commands elsewhere, and says where they go', async () => {
    const split = parseConfig(section('  taskQueue: tend-repair'), 'a.yaml');
    const main = createRepairActivities({} as never, split.repair, 'main');
    assert.deepEqual(await main.repairCommandQueue(), { taskQueue: 'tend-repair' });
    for (const run of [
      () => main.repairRunCommand({ ...key, step: 0, kind: 'repair_command' }),
      () => main.repairWatchHealth({ ...key, step: 0, until: 0 }),
      () => main.repairInspect(key),
    ]) {
      const e = await refusal(run());
      assert.equal(e.type, 'RepairNotConfigured');
      assert.equal(e.nonRetryable, true);
      assert.match(e.message, /repair commands run on task queue "tend-repair" \(repair\.taskQueue\)/);
    }
    assert.deepEqual(await createRepairActivities({} as never, parseConfig(section(), 'a.yaml').repair).repairCommandQueue(), {});
    // The command worker has no Kubernetes connection: a Kubernetes activity scheduled on its queue refuses.
    const commands = createRepairActivities(undefined, split.repair, 'commands');
    const e = await refusal(commands.repairLocate(key));
    assert.match(e.message, /no Kubernetes connection/);
  });
});
