// The repair queue's workflows on a real dev server with stub activities:
// every way an entry can end (an activity refusing, one running out of
// attempts, a cancellation at each await, its workflow ending without a
// report) frees its slot and lifts its cordon; a disable during a drain counts
// as a failed drain (CKE); a queue reset does not reuse indexes; a cancelled
// queue keeps its entries.
import assert from 'node:assert/strict';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId, entryReportSignal, repairLiftWorkflowId } from '../../src/repair/messages.ts';
import { REPAIR_LIFT_APART_PATCH, REPAIR_LIFT_UNTIL_DONE_PATCH } from '../../src/workflows/repair.ts';
import { replaysWithPatches } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { block, gate, plan, refuse, repairSuite, type Name } from './repair-stubs.ts';

describe('repair workflows (stub activities)', function () {
  this.timeout(180_000);
  const suite = repairSuite('repair');

  const { run } = suite;

  const entryFailure = async (client: Client, index: string) => {
    try {
      await client.workflow.getHandle(repairEntryWorkflowId(index)).result();
      return undefined;
    } catch (err) {
      assert.ok(err instanceof WorkflowFailedError, String(err));
      return err.cause?.message;
    }
  };

  it('an activity that refuses for good (a webhook\'s 403 on eviction) fails the entry with the reason, lifts its cordon, frees its slot', async () => {
    suite.world.ops.refused = {
      repairDrain: async (k) => {
        suite.world.cordon(k);
        refuse('eviction of ns/db-1 refused: 403: admission webhook "deny.example" denied the request');
      },
    };
    await run(async (client, q) => {
      const e1 = await q.add('refused', '10.0.0.1');
      const e2 = await q.add('fine', '10.0.0.2');
      await q.until(e1.index, 'failed');
      assert.equal(suite.world.cordons.has('node-1'), false, 'node-1 is still cordoned');
      assert.match((await entryFailure(client, e1.index)) ?? '', /403: admission webhook/);
      // max_concurrent_repairs 1: the next entry runs only once the slot is free.
      await q.until(e2.index, 'succeeded');
    });
  });

  it('an uncordon that fails past its attempts: the deleted entry ends at once, its slot freed; repair/<index>/lift tries again until the cordon is lifted, its reason in the details', async () => {
    let failing = true;
    suite.world.ops.stuck = {
      repairDrain: async (k) => {
        suite.world.cordon(k);
        await block(true);
        return { ok: true, evicted: 0, deleted: 0 };
      },
      repairUncordon: async (k) => {
        if (failing) throw new Error('the API server is unreachable');
        suite.world.cordons.delete(suite.world.nodeOf(String(k.address)));
        return 'changed';
      },
    };
    await run(async (client, q) => {
      const e1 = await q.add('stuck', '10.0.0.1');
      const e2 = await q.add('fine', '10.0.0.2');
      await waitFor('cordoned, draining', () => suite.world.cordons.has('node-1'));
      await q.delete(e1.index);
      // The entry gives its slot back first: it ends, and the next entry runs while the cordon is still on.
      await q.gone(e1.index);
      await q.until(e2.index, 'succeeded');
      const entry = client.workflow.getHandle(repairEntryWorkflowId(e1.index));
      assert.notEqual((await entry.describe()).status.name, 'RUNNING', 'the entry holds on while its cordon is tried');
      const lift = client.workflow.getHandle(repairLiftWorkflowId(e1.index));
      // Ten attempts of the entry's activity, then the lift's, a (time-scaled) minute apart: more than ten calls.
      await waitFor('the uncordon tried again past its attempts', () => suite.world.called('repairUncordon', e1.index).length > 10, { timeoutMs: 60_000 });
      const details = await waitFor('the reason in the lift\'s details', async () => {
        const d = (await lift.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
        return /lifting the cordon on node node-1 \(repair entry \d+\) failed \(.*the API server is unreachable.*\); tried again every \d+ s until it is lifted/.test(d) && d;
      });
      assert.ok(details);
      assert.equal((await lift.describe()).status.name, 'RUNNING');
      assert.ok(suite.world.cordons.has('node-1'));
      failing = false;
      await lift.result();
      assert.equal(suite.world.cordons.has('node-1'), false, 'the cordon is lifted');
      await replaysWithPatches(client, entry.workflowId, [REPAIR_LIFT_UNTIL_DONE_PATCH, REPAIR_LIFT_APART_PATCH]);
      await replaysWithPatches(client, lift.workflowId, []);
    });
  });

  it('a lift workflow cancelled ends with the cordon left on; a lift or an entry started by hand is refused', async () => {
    suite.world.ops.stuck = {
      repairDrain: async (k) => {
        suite.world.cordon(k);
        await block(true);
        return { ok: true, evicted: 0, deleted: 0 };
      },
      repairUncordon: async () => {
        throw new Error('403: uncordon forbidden');
      },
    };
    await run(async (client, q) => {
      const e1 = await q.add('stuck', '10.0.0.1');
      await waitFor('cordoned, draining', () => suite.world.cordons.has('node-1'));
      await q.delete(e1.index);
      await q.gone(e1.index);
      const lift = client.workflow.getHandle(repairLiftWorkflowId(e1.index));
      await waitFor('the lift running', async () => (await lift.describe().catch(() => undefined))?.status.name === 'RUNNING');
      await lift.cancel();
      await assert.rejects(lift.result());
      assert.equal(suite.world.cordons.get('node-1'), e1.index, 'the cordon stays when the lift is cancelled');
      const input = { index: '77', address: '10.0.0.7', machine_type: 'sim', operation: 'stuck', enabled: true, queue: 'q', lift: { nodename: 'node-7', time_scale: 0.01, reason: 'x' } };
      for (const workflowId of [repairLiftWorkflowId('77'), repairEntryWorkflowId('77')]) {
        const h = await client.workflow.start('repairEntryWorkflow', { taskQueue: suite.tq, workflowId, args: [input] });
        await assert.rejects(h.result(), (err: unknown) => err instanceof WorkflowFailedError && /refused/.test(err.cause?.message ?? ''));
      }
      assert.equal(suite.world.called('repairUncordon', '77').length, 0);
    });
  });

  it('an activity that fails every attempt gives up after ten: the entry fails, its cordon lifted, the next entry runs', async () => {
    suite.world.ops.flaky = {
      repairRunCommand: async () => {
        throw new Error('connection refused');
      },
    };
    await run(async (client, q) => {
      const e1 = await q.add('flaky', '10.0.0.1');
      const e2 = await q.add('fine', '10.0.0.2');
      await q.until(e1.index, 'failed', 90_000);
      assert.equal(suite.world.called('repairRunCommand', e1.index).length, 10);
      assert.equal(suite.world.cordons.has('node-1'), false, 'node-1 is still cordoned');
      assert.match((await entryFailure(client, e1.index)) ?? '', /repairRunCommand gave up: connection refused/);
      await q.until(e2.index, 'succeeded');
    });
  });

  // A delete (= a cancellation) at each await of an entry. `honour`: the activity ends cancelled; otherwise it
  // completes anyway (its work finished as the cancellation arrived), and the entry must still leave the queue.
  const stages: { stage: Name; cordoned: boolean }[] = [
    { stage: 'repairInspect', cordoned: false },
    { stage: 'repairDrain', cordoned: true },
    { stage: 'repairRunCommand', cordoned: true },
    { stage: 'repairWatchHealth', cordoned: true },
  ];
  for (const { stage, cordoned } of stages) {
    for (const honour of [true, false]) {
      it(`a delete during ${stage} (${honour ? 'cancelled' : 'completing anyway'}): the entry leaves the queue, no cordon left, the slot freed`, async () => {
        let blocked = false;
        suite.world.ops.held = {
          [stage]: async (k: Record<string, unknown>) => {
            if (stage === 'repairDrain') suite.world.cordon(k);
            // The success command is its own stage below: here only the repair command blocks.
            if (stage === 'repairRunCommand' && k.kind !== 'repair_command') return { ok: true, output: '', attempts: 1 };
            blocked = true;
            await block(honour);
            if (stage === 'repairInspect') return { nodename: 'node-1', healthy: false, plan: plan() };
            if (stage === 'repairDrain') return { ok: true, evicted: 1, deleted: 0 };
            if (stage === 'repairRunCommand') return { ok: true, output: '', attempts: 1 };
            return { healthy: false, checks: 1 };
          },
        };
        await run(async (client, q) => {
          const e1 = await q.add('held', '10.0.0.1');
          const e2 = await q.add('fine', '10.0.0.2');
          await waitFor(`${stage} running`, () => blocked);
          if (cordoned) assert.equal(suite.world.cordons.get('node-1'), e1.index);
          await q.delete(e1.index);
          await q.gone(e1.index);
          await q.until(e2.index, 'succeeded');
          assert.equal(suite.world.cordons.has('node-1'), false, 'node-1 is still cordoned');
          const d = await client.workflow.getHandle(repairEntryWorkflowId(e1.index)).describe();
          assert.notEqual(d.status.name, 'RUNNING');
        });
      });
    }
  }

  for (const honour of [true, false]) {
    it(`a delete during the success command, the last await before the final report (${honour ? 'cancelled' : 'completing anyway'}): the slot is freed`, async () => {
      let blocked = false;
      suite.world.ops.held = {
        repairRunCommand: async (k) => {
          if (k.kind !== 'success_command') return { ok: true, output: '', attempts: 1 };
          blocked = true;
          await block(honour);
          return { ok: true, output: '', attempts: 1 };
        },
      };
      await run(async (_client, q) => {
        const e1 = await q.add('held', '10.0.0.1');
        const e2 = await q.add('fine', '10.0.0.2');
        await waitFor('success command running', () => blocked);
        await q.delete(e1.index);
        await q.gone(e1.index);
        await q.until(e2.index, 'succeeded');
        assert.equal(suite.world.cordons.size, 0, `cordons left: ${[...suite.world.cordons.keys()].join(', ')}`);
      });
    });
  }

  it('a delete during a drain back-off, and during a wait for a disabled queue: the entry leaves, the slot is freed', async () => {
    suite.world.ops.blocked = {
      repairDrain: async () => ({ ok: false, reason: 'eviction refused for ns/db-1 (1 time(s): budget)' }),
    };
    suite.world.ops.nodrain = {};
    suite.world.plans.nodrain = plan({ steps: [{ need_drain: false, watch_seconds: 600, command_timeout_seconds: 30, command_retries: 0, command_interval: 0 }] });
    await run(async (_client, q) => {
      suite.world.maxConcurrent = 2;
      const e1 = await q.add('blocked', '10.0.0.1');
      await q.until(e1.index, 'processing', 30_000, (e) => e.drain_backoff_count >= 1 && e.step_status === 'waiting');
      await q.delete(e1.index);
      await q.gone(e1.index);
      // Disabled before its command: it waits; a delete ends the wait.
      suite.world.ops.nodrain.repairInspect = async () => {
        await q.disable();
        return { nodename: '', healthy: false, plan: suite.world.plans.nodrain! };
      };
      const e2 = await q.add('nodrain', '192.0.2.1');
      await waitFor('inspected', () => suite.world.called('repairInspect', e2.index).length > 0);
      await q.until(e2.index, 'processing');
      await q.delete(e2.index);
      await q.gone(e2.index);
      await q.enable();
      suite.world.maxConcurrent = 1;
      // Both slots free: two new entries run at once with max_concurrent_repairs 2... with 1, one after the other.
      const e3 = await q.add('fine', '10.0.0.3');
      await q.until(e3.index, 'succeeded');
      assert.equal(suite.world.called('repairRunCommand', e2.index).length, 0, 'a disabled queue ran a repair command');
    });
  });

  it('an entry whose workflow ends without reporting (terminated) fails, and its slot is freed', async () => {
    suite.world.ops.held = { repairWatchHealth: async () => ({ healthy: (await block(true), false), checks: 1 }) };
    await run(async (client, q) => {
      const e1 = await q.add('held', '10.0.0.1');
      const e2 = await q.add('fine', '10.0.0.2');
      await waitFor('watching', () => suite.world.called('repairWatchHealth', e1.index).length > 0);
      await client.workflow.getHandle(repairEntryWorkflowId(e1.index)).terminate('an operator ended it');
      await q.until(e1.index, 'failed');
      await q.until(e2.index, 'succeeded');
    });
  });

  it('CKE: a disable during a drain abandons it with the back-off counted; enable drains again after the back-off', async () => {
    let drains = 0;
    suite.world.ops.held = {
      repairDrain: async (k) => {
        suite.world.cordon(k);
        if (++drains === 1) await block(true);
        return { ok: true, evicted: 0, deleted: 0 };
      },
    };
    await run(async (_client, q) => {
      const e1 = await q.add('held', '10.0.0.1');
      await waitFor('draining', () => drains === 1);
      await q.disable();
      const waiting = await q.until(e1.index, 'processing', 30_000, (e) => e.step_status === 'waiting');
      assert.equal(waiting.drain_backoff_count, 1, 'the abandoned drain counts (CKE)');
      assert.notEqual(waiting.drain_backoff_expire, '0001-01-01T00:00:00Z');
      assert.equal(suite.world.cordons.has('node-1'), false, 'uncordoned');
      await q.enable();
      await q.until(e1.index, 'succeeded');
      assert.equal(drains, 2);
    });
  });

  it('a queue reset: the new queue\'s indexes continue past the old entries\', whose reports it refuses', async () => {
    const release = gate();
    suite.world.ops.held = { repairWatchHealth: async () => ({ healthy: (await block(true, release.wait), true), checks: 1 }) };
    await run(async (client, q) => {
      const e1 = await q.add('fine', '10.0.0.1');
      await q.until(e1.index, 'succeeded');
      const e2 = await q.add('held', '10.0.0.2');
      await waitFor('watching', () => suite.world.called('repairWatchHealth', e2.index).length > 0);
      await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).terminate('reset the repair queue');
      // The next command starts a new queue.
      const e3 = await q.add('fine', '10.0.0.3');
      assert.ok(Number(e3.index) > Number(e2.index), `index ${e3.index} reused after a reset (old entries up to ${e2.index})`);
      await q.until(e3.index, 'succeeded');
      // A report of the old chain (as the old entry 2 would send) changes nothing in the new queue.
      const before = await q.list();
      await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).signal(entryReportSignal, { index: e3.index, queue: 'an-earlier-queue', fields: { status: 'failed' } });
      release.open();
      await waitFor('the old entry finished', async () => (await client.workflow.getHandle(repairEntryWorkflowId(e2.index)).describe()).status.name === 'COMPLETED');
      const e4 = await q.add('fine', '10.0.0.4');
      await q.until(e4.index, 'succeeded');
      assert.deepEqual((await q.list()).filter((e) => e.index !== e4.index), before);
    });
  });

  it('a cancelled queue keeps its entries and goes on', async () => {
    suite.world.ops.held = { repairWatchHealth: async () => ({ healthy: (await block(true), false), checks: 1 }) };
    await run(async (client, q) => {
      const e1 = await q.add('held', '10.0.0.1');
      const e2 = await q.add('fine', '10.0.0.2');
      await waitFor('watching', () => suite.world.called('repairWatchHealth', e1.index).length > 0);
      const h = client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID);
      const first = (await h.describe()).runId;
      await h.cancel();
      await waitFor('the queue going on in a new run', async () => {
        const d = await h.describe();
        return d.status.name === 'RUNNING' && d.runId !== first;
      });
      const e3 = await q.add('fine', '10.0.0.3');
      const list = await q.list();
      assert.deepEqual(list.map((e) => e.index), [e1.index, e2.index, e3.index]);
      assert.equal(list[0]!.status, 'processing');
      // The running entry still reports to the queue, and its delete still frees the slot.
      await q.delete(e1.index);
      await q.until(e2.index, 'succeeded');
      await q.until(e3.index, 'succeeded');
    });
  });
});
