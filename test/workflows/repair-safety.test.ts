// An entry's workflow under repair's two safety switches, with stub activities
// answering as the real ones do: observe mode (every write recorded, the entry
// goes on as if it had been done), and the pause (a held write is asked again,
// waiting in place for the resume; it never fails the entry, never counts a
// command run nor a back-off).
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { repairEntryWorkflowId } from '../../src/repair/messages.ts';
import type { RepairEntryResult } from '../../src/workflows/repair.ts';
import { plan, repairSuite } from './repair-stubs.ts';

describe('repair workflows under observe mode and the pause (stub activities)', function () {
  this.timeout(180_000);
  const suite = repairSuite('repair-safety');

  const { run } = suite;
  const result = (client: Client, index: string) => client.workflow.getHandle(repairEntryWorkflowId(index)).result() as Promise<RepairEntryResult>;

  it('observe mode: every write recorded, the entry advances as if each was done and succeeds; its result says what it would have done', async () => {
    suite.world.ops.observed = {
      repairDrain: async () => ({ ok: true, evicted: 0, deleted: 0, observed: { cordon: true, evict: 2, delete: 1 } }),
      repairRunCommand: async () => ({ ok: true, output: '', attempts: 0, observed: true }),
      repairUncordon: async () => 'observed',
    };
    await run(async (client, q) => {
      const e = await q.add('observed', '10.0.0.1');
      await q.until(e.index, 'succeeded');
      const r = await result(client, e.index);
      assert.deepEqual(r.observed, [
        'drain node node-1: cordon it, evict 2 pod(s), delete 1',
        'run the repair_command of step 0',
        'uncordon node node-1',
        'run the success_command',
      ]);
      assert.equal(suite.world.cordons.size, 0);
    });
  });

  it('a paused repair command is asked again, waiting in place, with the runs it had done: the entry neither fails nor counts it', async () => {
    suite.world.plans.held = plan({ steps: [{ need_drain: false, watch_seconds: 600, command_timeout_seconds: 30, command_retries: 3, command_interval: 0 }] });
    let n = 0;
    suite.world.ops.held = {
      repairRunCommand: async (k) => {
        if (k.kind !== 'repair_command') return { ok: true, output: '', attempts: 1 };
        n++;
        // First asked: one run failed, then the pause held the next; asked again (in place): still paused; then resumed.
        if (n === 1) return { ok: false, output: '', attempts: 1, runs: 1, paused: 'repair: paused by ops' };
        if (n === 2) return { ok: false, output: '', attempts: 1, runs: 1, paused: 'repair: paused by ops' };
        return { ok: true, output: 'done', attempts: 1 };
      },
    };
    await run(async (client, q) => {
      const e = await q.add('held', '10.0.0.1');
      const done = await q.until(e.index, 'succeeded');
      assert.equal(done.drain_backoff_count, 0);
      const calls = suite.world.called('repairRunCommand', e.index).filter((c) => c.input.kind === 'repair_command');
      assert.equal(calls.length, 3);
      // The first ask is the one act mode always sent; then the runs done go along and the worker waits in place.
      assert.equal(calls[0]!.input.after, undefined);
      assert.equal(calls[0]!.input.holdMs, undefined);
      assert.equal(calls[1]!.input.after, 1);
      assert.equal(calls[1]!.input.holdMs, 600_000);
      assert.equal(calls[2]!.input.after, 1);
      assert.ok(calls.every((c) => c.attempt === 1), 'a held command is never an activity retry');
      assert.equal((await result(client, e.index)).reason, undefined);
    });
  });

  it('a drain whose eviction timeout passed while paused: no back-off, the cordon kept, a new drain with a new timeout', async () => {
    let n = 0;
    suite.world.ops.drainheld = {
      repairDrain: async (k) => {
        suite.world.cordon(k);
        n++;
        if (n === 1) return { ok: false, held: true, reason: 'the eviction timeout passed while repair was paused, before evicting pod a/b' };
        return { ok: true, evicted: 1, deleted: 0 };
      },
    };
    await run(async (_client, q) => {
      const e = await q.add('drainheld', '10.0.0.1');
      const done = await q.until(e.index, 'succeeded');
      assert.equal(done.drain_backoff_count, 0, 'the pause, not the drain, used up the timeout');
      const drains = suite.world.called('repairDrain', e.index);
      assert.equal(drains.length, 2);
      assert.ok(Number(drains[1]!.input.deadline) > Number(drains[0]!.input.deadline), 'the second drain has a timeout of its own');
      // Neither drain was followed by an uncordon in between: the cordon was kept.
      const uncordons = suite.world.called('repairUncordon', e.index);
      assert.equal(uncordons.length, 1, 'only the final uncordon');
      assert.equal(suite.world.cordons.size, 0);
    });
  });

  it('a drain interrupted while paused keeps its cordon: the back-off counts, the uncordon waits for the resume', async () => {
    let drains = 0;
    let uncordons = 0;
    suite.world.ops.kept = {
      repairDrain: async (k) => {
        suite.world.cordon(k);
        drains++;
        if (drains === 1) return { ok: false, cordonKept: true, reason: 'eviction timeout: 1 pod(s) still on the node, e.g. a/b' };
        return { ok: true, evicted: 1, deleted: 0 };
      },
      repairUncordon: async (k) => {
        uncordons++;
        // The first two asks meet the pause; the third is after the resume.
        if (uncordons <= 2) return 'paused';
        const node = suite.world.nodeOf(String(k.address));
        const was = suite.world.cordons.get(node) === String(k.index);
        suite.world.cordons.delete(node);
        return was ? 'changed' : 'unchanged';
      },
    };
    await run(async (_client, q) => {
      const e = await q.add('kept', '10.0.0.1');
      const backedOff = await q.until(e.index, 'processing', 60_000, (x) => x.drain_backoff_count === 1);
      assert.equal(backedOff.drain_backoff_count, 1);
      await q.until(e.index, 'succeeded', 120_000);
      const calls = suite.world.called('repairUncordon', e.index);
      assert.equal(calls[0]!.input.holdMs, undefined);
      assert.equal(calls[1]!.input.holdMs, 600_000);
      assert.equal(suite.world.cordons.size, 0);
    });
  });
});
