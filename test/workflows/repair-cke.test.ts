// CKE parity of an entry's workflow, on a real dev server with stub
// activities: CKE's drain back-off (300 s + a random share of 300 s x count,
// drawn deterministically: the run replays), a step without watch_seconds
// (one health check, then the next step at once), a failed last step showing
// the step after it `waiting`, a failed repair command showing its step
// `watching`, a command without a timeout, and `deleted: true` on an entry
// whose workflow is still cleaning up.
import assert from 'node:assert/strict';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { repairEntryWorkflowId } from '../../src/repair/messages.ts';
import { REPAIR_CKE_BACKOFF_PATCH, REPAIR_CKE_FAILED_STEP_PATCH } from '../../src/workflows/repair.ts';
import { replaysWithPatches } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { block, gate, plan, repairSuite, SCALE } from './repair-stubs.ts';

const step = (more: Record<string, unknown> = {}) => ({ need_drain: false, watch_seconds: 0, command_timeout_seconds: 30, command_retries: 0, command_interval: 0, ...more });
const ms = (t: string) => Date.parse(t);

describe('repair workflows: CKE parity (stub activities)', function () {
  this.timeout(180_000);
  const suite = repairSuite('repair-cke');

  const { run } = suite;

  /** The entry's history replays against the workflow code as it is, and recorded these patch markers. */
  const replaysWith = (client: Client, index: string, patches: string[]) => replaysWithPatches(client, repairEntryWorkflowId(index), patches);

  it("CKE's drain back-off: 300 s + a random share of 300 s x count (scaled), drawn deterministically: the run replays", async () => {
    let drains = 0;
    const second = gate();
    suite.world.ops.blocked = {
      repairDrain: async () => {
        drains++;
        if (drains === 2) await second.wait;
        if (drains <= 2) return { ok: false, reason: 'eviction refused for ns/db-1 (1 time(s): budget)' };
        return { ok: true, evicted: 1, deleted: 0 };
      },
    };
    await run(async (client, q) => {
      const e = await q.add('blocked', '10.0.0.1');
      const first = await q.until(e.index, 'processing', 30_000, (x) => x.drain_backoff_count === 1 && x.step_status === 'waiting');
      const wait1 = ms(first.drain_backoff_expire) - ms(first.last_transition_time!);
      // count 1: [300, 600) s; the old linear back-off waited 60 s.
      assert.ok(wait1 >= 300 * SCALE * 1000 && wait1 < 600 * SCALE * 1000, `first back-off ${wait1} ms, want [${300 * SCALE * 1000}, ${600 * SCALE * 1000})`);
      await waitFor('the second drain', () => drains === 2);
      second.open();
      const again = await q.until(e.index, 'processing', 30_000, (x) => x.drain_backoff_count === 2 && x.step_status === 'waiting');
      const wait2 = ms(again.drain_backoff_expire) - ms(again.last_transition_time!);
      // count 2: [300, 900) s.
      assert.ok(wait2 >= 300 * SCALE * 1000 && wait2 < 900 * SCALE * 1000, `second back-off ${wait2} ms, want [${300 * SCALE * 1000}, ${900 * SCALE * 1000})`);
      await q.until(e.index, 'succeeded', 60_000);
      assert.equal(drains, 3);
      await client.workflow.getHandle(repairEntryWorkflowId(e.index)).result();
      await replaysWith(client, e.index, [REPAIR_CKE_BACKOFF_PATCH]);
    });
  });

  it('a step without watch_seconds (0) checks the health once after its command, then goes to the next step at once', async () => {
    suite.world.plans.nowatch = plan({ steps: [step(), step()] });
    let commands = 0;
    suite.world.ops.nowatch = {
      repairRunCommand: async (k) => {
        if (k.kind === 'repair_command') commands++;
        return { ok: true, output: '', attempts: 1 };
      },
      // Healthy once the second step's command has run.
      repairWatchHealth: async () => ({ healthy: commands >= 2, checks: 1 }),
    };
    await run(async (_client, q) => {
      const e = await q.add('nowatch', '192.0.2.1');
      const done = await q.until(e.index, 'succeeded');
      assert.equal(done.step, 1);
      assert.equal(done.step_status, 'watching');
      const watches = suite.world.called('repairWatchHealth', e.index);
      assert.equal(watches.length, 2, `one health check after each step's command: ${JSON.stringify(suite.world.calls.map((c) => [c.name, c.input.step, c.input.until, c.attempt]))}`);
      assert.equal(suite.world.called('repairRunCommand', e.index).filter((c) => c.input.kind === 'repair_command').length, 2);
    });
  });

  it('CKE: a failed last step ends showing the step after it, waiting; a failed repair command shows its step watching', async () => {
    suite.world.plans.never = plan({ steps: [step(), step()] });
    suite.world.ops.never = { repairWatchHealth: async () => ({ healthy: false, checks: 1 }) };
    suite.world.plans.broken = plan({ steps: [step()] });
    suite.world.ops.broken = { repairRunCommand: async () => ({ ok: false, output: '', error: 'repair-machine 192.0.2.3: exit status 3', attempts: 1 }) };
    suite.world.maxConcurrent = 2;
    await run(async (client, q) => {
      const never = await q.add('never', '192.0.2.2');
      const broken = await q.add('broken', '192.0.2.3');
      const n = await q.until(never.index, 'failed');
      assert.deepEqual([n.step, n.step_status], [2, 'waiting'], 'CKE moves past the last step before failing the entry');
      assert.equal(suite.world.called('repairRunCommand', never.index).length, 2);
      assert.equal(suite.world.called('repairWatchHealth', never.index).length, 2);
      const b = await q.until(broken.index, 'failed');
      assert.deepEqual([b.step, b.step_status], [0, 'watching'], 'CKE marks the step watching before it runs the command');
      for (const e of [never, broken]) await replaysWith(client, e.index, [REPAIR_CKE_FAILED_STEP_PATCH]);
    });
  });

  it('command_timeout_seconds 0 is no timeout: the command activity is bounded by its heartbeats only', async () => {
    suite.world.plans.forever = plan({ steps: [step({ command_timeout_seconds: 0 })], command_timeout_seconds: 0, success_command_timeout: 0 });
    const bounds: Record<string, number | undefined> = {};
    suite.world.ops.forever = {
      repairRunCommand: async (k) => {
        bounds[String(k.kind)] = Context.current().info.startToCloseTimeoutMs;
        return { ok: true, output: '', attempts: 1 };
      },
      repairWatchHealth: async (k) => {
        bounds.health = Context.current().info.startToCloseTimeoutMs;
        return { healthy: k.until !== 0, checks: 1 };
      },
    };
    await run(async (_client, q) => {
      const e = await q.add('forever', '192.0.2.4');
      await q.until(e.index, 'succeeded');
      const day = 24 * 3600 * 1000;
      for (const kind of ['repair_command', 'success_command', 'health']) {
        assert.ok((bounds[kind] ?? 0) > day, `${kind}: start-to-close ${bounds[kind]} ms; a command without a timeout must not be cut short`);
      }
    });
  });

  it("CKE's `deleted`: a processing entry deleted is listed deleted: true until its workflow has lifted its cordon; deleting it again changes nothing", async () => {
    const lifting = gate();
    let uncordoning = false;
    suite.world.ops.held = {
      repairWatchHealth: async (k) => {
        if (k.until !== 0) await block(true);
        return { healthy: false, checks: 1 };
      },
    };
    // The uncordon is keyed by index and address only: held here until the test lets it go.
    const activities = suite.world.activities();
    const uncordon = activities.repairUncordon;
    activities.repairUncordon = async (k) => {
      uncordoning = true;
      await lifting.wait;
      return uncordon(k);
    };
    await run(async (_client, q) => {
      const e = await q.add('held', '10.0.0.5');
      await q.until(e.index, 'processing', 30_000, (x) => x.step_status === 'watching');
      const removed = await q.delete(e.index);
      assert.equal(removed.deleted, true);
      await waitFor('uncordoning', () => uncordoning);
      const listed = (await q.list()).find((x) => x.index === e.index);
      assert.ok(listed, 'the deleted entry left the list before its workflow cleaned up');
      assert.equal(listed.deleted, true);
      assert.equal(listed.status, 'processing');
      assert.equal((await q.delete(e.index)).deleted, true, 'a second delete is accepted (CKE: nothing to do)');
      lifting.open();
      await q.gone(e.index);
      assert.equal(suite.world.cordons.has('node-5'), false);
    }, activities);
  });
});
