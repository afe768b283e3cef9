// repair.taskQueue on a real dev server with stub activities: an entry's
// commands (repair command, health checks, success command) go to the task
// queue the worker's configuration names (the repairCommandQueue local
// activity), everything else stays on tend's own; with no worker polling that
// queue the entry waits, and goes on once one polls.
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { repairEntryWorkflowId } from '../../src/repair/messages.ts';
import { taskQueue } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { repairSuite } from './repair-stubs.ts';
import { commandQueuePollers, noCommandWorkerWarning } from '../../src/starters/repair-commands.ts';
import type { Config } from '../../src/config/load.ts';

describe('repair workflows: the commands on repair.taskQueue (stub activities)', function () {
  this.timeout(180_000);
  const suite = repairSuite('repair');
  let cq: string;
  beforeEach(() => {
    cq = taskQueue('repair-commands');
  });

  /** The worker polling repair.taskQueue: the command activities only, no workflows. */
  const commandWorker = async <T>(fn: () => Promise<T>): Promise<T> => {
    const worker = await Worker.create({
      connection: suite.env.nativeConnection, namespace: suite.env.namespace ?? 'default', taskQueue: cq, activities: suite.world.commandActivities(),
    });
    return worker.runUntil(fn());
  };

  const queuesOf = (name: 'repairRunCommand' | 'repairWatchHealth' | 'repairLocate' | 'repairDrain' | 'repairUncordon' | 'repairInspect') =>
    new Set(suite.world.calls.filter((c) => c.name === name).map((c) => c.taskQueue));

  it('with repair.taskQueue set, the repair command, the health checks and the success command run on it; the Node, the drain and the uncordon on tend\'s queue', async () => {
    suite.world.commandQueue = cq;
    await suite.run((_client, q) => commandWorker(async () => {
      const e = await q.add('reboot', '10.0.0.1');
      const done = await q.until(e.index, 'succeeded');
      assert.equal(done.nodename, 'node-1');
    }));
    const commands = suite.world.calls.filter((c) => c.name === 'repairRunCommand');
    assert.deepEqual(commands.map((c) => c.input.kind).sort(), ['repair_command', 'success_command']);
    assert.deepEqual(queuesOf('repairRunCommand'), new Set([cq]));
    // The first health check (check-health: until 0) and the watch.
    assert.ok(suite.world.called('repairWatchHealth').length >= 2, `health checks: ${suite.world.called('repairWatchHealth').length}`);
    assert.deepEqual(queuesOf('repairWatchHealth'), new Set([cq]));
    assert.deepEqual(queuesOf('repairLocate'), new Set([suite.tq]));
    assert.deepEqual(queuesOf('repairDrain'), new Set([suite.tq]));
    assert.deepEqual(queuesOf('repairUncordon'), new Set([suite.tq]));
    // repairInspect runs the health check: never on tend's queue when the commands belong elsewhere.
    assert.equal(suite.world.called('repairInspect').length, 0);
    assert.equal(suite.world.cordons.size, 0);
  });

  it('with no worker polling repair.taskQueue the entry waits (processing, its health check pending there), and goes on once one polls', async () => {
    suite.world.commandQueue = cq;
    await suite.run(async (client, q) => {
      const e = await q.add('reboot', '10.0.0.2');
      const handle = client.workflow.getHandle(repairEntryWorkflowId(e.index));
      // Visible: the entry's workflow shows the pending command activity on the commands' task queue.
      await waitFor('the first health check pending on the commands\' task queue', async () =>
        (await handle.describe()).raw.pendingActivities?.some((a) => a.activityType?.name === 'repairWatchHealth'), { timeoutMs: 60_000 });
      assert.equal((await q.entry(e.index))?.status, 'processing');
      assert.equal(suite.world.called('repairWatchHealth').length, 0, 'a health check ran with no worker polling the commands\' queue');
      await commandWorker(() => q.until(e.index, 'succeeded'));
    });
    assert.deepEqual(queuesOf('repairWatchHealth'), new Set([cq]));
    assert.deepEqual(queuesOf('repairRunCommand'), new Set([cq]));
  });

  it('without repair.taskQueue every activity runs on tend\'s queue, as before (the health check within repairInspect)', async () => {
    await suite.run(async (_client, q) => {
      const e = await q.add('reboot', '10.0.0.3');
      await q.until(e.index, 'succeeded');
    });
    assert.equal(suite.world.called('repairInspect').length, 1);
    assert.equal(suite.world.called('repairLocate').length, 0);
    assert.deepEqual(queuesOf('repairRunCommand'), new Set([suite.tq]));
    assert.deepEqual(queuesOf('repairWatchHealth'), new Set([suite.tq]));
  });

  it('tend repair-queue sees whether a worker polls repair.taskQueue (DescribeTaskQueue), for its warning', async () => {
    const config = { temporal: { namespace: suite.env.namespace ?? 'default', taskQueue: suite.tq }, repair: { taskQueue: cq } } as Config;
    assert.deepEqual(await commandQueuePollers(suite.env.client, config), []);
    assert.match(noCommandWorkerWarning(config), new RegExp(`no worker polls the repair commands' task queue "${cq}" \\(repair\\.taskQueue\\)`));
    await commandWorker(() => waitFor('a poller on the commands\' task queue', async () => ((await commandQueuePollers(suite.env.client, config))?.length ?? 0) > 0, { timeoutMs: 30_000 }));
    // The stopped worker is still listed by the server, but not as live once its last poll is old.
    assert.equal((await commandQueuePollers(suite.env.client, config))?.length, 1);
    assert.deepEqual(await commandQueuePollers(suite.env.client, config, Date.now() + 120_000), []);
    assert.equal(await commandQueuePollers(suite.env.client, { ...config, repair: {} } as Config), undefined);
  });
});
