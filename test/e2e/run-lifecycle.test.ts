// `tend run` starting and stopping: a stop that comes while the worker is still
// starting ends it cleanly (no "Cannot close connection while Workers hold a
// reference to it"), and a second SIGTERM during the shutdown grace time stops
// the process at once, after the log has said what it waited for.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { TendProcess } from '../harness/cli.ts';
import { waitFor } from '../harness/wait.ts';
import { add, repairWorld, resetRepairQueue, startRepairTend, type RepairWorld } from '../harness/repair.ts';
import { loadConfig } from '../../src/config/load.ts';
import { runWorker } from '../../src/workers/worker.ts';

describe('tend run: start-up and shutdown (e2e)', function () {
  this.timeout(180_000);

  it('a stop that comes while the worker starts ends it without an error', async () => {
    const world = repairWorld();
    const config = await loadConfig({ file: world.config });
    const stopped = new AbortController();
    stopped.abort();
    // The worker is created (bundled, connected) after the stop: it must run and shut down at once, then let go of its connection.
    await runWorker({ ...config, temporal: { ...config.temporal, taskQueue: `lifecycle-${randomUUID().slice(0, 8)}` } }, stopped.signal);
  });

  describe('a second SIGTERM', () => {
    let world: RepairWorld;
    let tend: TendProcess;
    after(async () => {
      await tend?.stop('SIGKILL');
      await resetRepairQueue();
    });

    it('stops at once while a repair command runs through the grace time, after saying what it waited for', async () => {
      ({ world, tend } = await startRepairTend());
      await add(world, 'long', '192.0.2.91');
      const times = join(world.dir, '192.0.2.91.times');
      await waitFor('the command started', () => existsSync(times) && readFileSync(times, 'utf8').includes('start'), { timeoutMs: 60_000 });
      tend.child.kill('SIGTERM');
      await waitFor('the log says what the worker waits for', () => /waiting up to \d+ s for 1 running command\(s\) to finish/.test(tend.logs), { timeoutMs: 15_000 });
      assert.match(tend.logs, /repairRunCommand for repair\/\d+ \(running \d+ s\)/, 'the command is named');
      assert.equal(tend.exited, false, 'the first SIGTERM waits for the command (it sleeps 20 s)');
      const sent = Date.now();
      const code = new Promise<number | null>((resolve) => tend.child.once('exit', (c) => resolve(c)));
      tend.child.kill('SIGTERM');
      const exit = await code;
      assert.equal(exit, 143, 'exit code 128 + SIGTERM');
      assert.ok(Date.now() - sent < 10_000, `stopped at once (${Date.now() - sent} ms)`);
      assert.ok(!readFileSync(times, 'utf8').includes('end'), 'it did not wait for the command');
      assert.match(tend.logs, /stopping at once \(a second signal\)/);
    });
  });
});
