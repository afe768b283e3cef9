// A stopping worker: a command runs on through the shutdown grace time, and a
// watch stops at once, failed as retryable WorkerShutdown, so the next worker
// takes it at once (src/workers/shutdown.ts). Real dev server, real Worker.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { startWorkflowEnv, taskQueue } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { describeRunning, logAwaited, runningActivities, stopAtShutdown } from '../../src/workers/shutdown.ts';

const workflowsPath = fileURLToPath(new URL('../fixtures/shutdown-workflows.ts', import.meta.url));

describe('worker shutdown (workflow env)', function () {
  this.timeout(120_000);
  let env: TestWorkflowEnvironment;
  let bundle: Awaited<ReturnType<typeof bundleWorkflowCode>>;

  before(async () => {
    env = await startWorkflowEnv();
    bundle = await bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('WARN') });
  });
  after(async () => {
    await env?.teardown();
  });

  it('a watch stops at once as retryable WorkerShutdown; a command runs on through the grace time', async () => {
    const queue = taskQueue('shutdown');
    const shutdown = new AbortController();
    let commandDone = false;
    let finishCommand: () => void = () => undefined;
    const activities = {
      async repairRunCommand(): Promise<string> {
        await new Promise<void>((resolve) => {
          finishCommand = resolve;
        });
        commandDone = true;
        return 'command finished';
      },
      async watchForever(): Promise<string> {
        // A watch that ignores the shutdown itself: the interceptor must end it.
        const ctx = Context.current();
        await new Promise<void>((resolve) => ctx.cancellationSignal.addEventListener('abort', () => resolve()));
        return 'cancelled';
      },
    };
    const worker = await Worker.create({
      connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: queue,
      workflowBundle: bundle, activities, shutdownGraceTime: '60s',
      interceptors: { activity: [stopAtShutdown(shutdown.signal)] },
    });
    const running = worker.run();
    const command = await env.client.workflow.start('commandWorkflow', { taskQueue: queue, workflowId: `cmd-${queue}` });
    const watch = await env.client.workflow.start('watchWorkflow', { taskQueue: queue, workflowId: `watch-${queue}` });
    await waitFor('both activities run', () => runningActivities().length === 2, { timeoutMs: 30_000 });
    assert.deepEqual(runningActivities().map((r) => r.type), ['repairRunCommand', 'watchForever'], 'the command is listed first');
    assert.match(describeRunning(runningActivities()[0]!), /^repairRunCommand for cmd-shutdown-\w+ \(running \d+ s\)$/);

    const began = Date.now();
    shutdown.abort();
    worker.shutdown();
    const logged = logAwaited(running, 60);
    // The watch's attempt ends at once, failed as WorkerShutdown (retryable), while the command still runs.
    await waitFor('the watch attempt ended', () => runningActivities().length === 1, { timeoutMs: 10_000 });
    assert.ok(Date.now() - began < 10_000, 'the watch did not wait for the grace time');
    const history = await watch.fetchHistory();
    const failed = history.events?.find((e) => e.activityTaskFailedEventAttributes)?.activityTaskFailedEventAttributes;
    assert.ok(failed === undefined, 'a retryable failure is not recorded as the activity\'s end');
    assert.equal(commandDone, false, 'the command is still running');
    assert.equal(worker.getState() === 'STOPPED', false, 'the worker waits for the command');
    finishCommand();
    await running;
    await logged;
    assert.equal(commandDone, true);
    // Its result reached the server before the worker stopped (the workflow ends on the next worker).
    const completed = (await command.fetchHistory()).events?.find((e) => e.activityTaskCompletedEventAttributes);
    assert.ok(completed, 'the command\'s attempt completed');
    await command.terminate('test over');
    // The watch's workflow is still running: its activity waits for the next worker (retryable).
    const desc = await watch.describe();
    assert.equal(desc.status.name, 'RUNNING');
    const pending = (await env.client.workflowService.describeWorkflowExecution({ namespace: env.namespace ?? 'default', execution: { workflowId: watch.workflowId } })).pendingActivities?.[0];
    assert.equal(pending?.lastFailure?.applicationFailureInfo?.type, 'WorkerShutdown', `the watch failed as WorkerShutdown: ${JSON.stringify(pending?.lastFailure?.message)}`);
    await watch.terminate('test over');
  });

  it('without a shutdown, a watch runs until its own cancellation', async () => {
    const queue = taskQueue('no-shutdown');
    const shutdown = new AbortController();
    const activities = {
      async repairRunCommand(): Promise<string> { return 'unused'; },
      async watchForever(): Promise<string> {
        const ctx = Context.current();
        await new Promise<void>((resolve) => setTimeout(resolve, 1500));
        return ctx.cancellationSignal.aborted ? 'cancelled' : 'watched';
      },
    };
    const worker = await Worker.create({
      connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: queue,
      workflowBundle: bundle, activities, interceptors: { activity: [stopAtShutdown(shutdown.signal)] },
    });
    const result = await worker.runUntil(env.client.workflow.execute('watchWorkflow', { taskQueue: queue, workflowId: `watch-${queue}` }));
    assert.equal(result, 'watched');
  });
});
