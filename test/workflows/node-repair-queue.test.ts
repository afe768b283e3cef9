// The repair queue's request-node-repair update, on a real dev server with a stub assess activity
// (what the Node calls for, as the real one reads it from the cluster: test/e2e/node-repair-assess.test.ts):
// each answer the queue gives (enqueued, with the entry listed and its workflow found by TendNode;
// refused by each limiter; observed; paused and not-needed as assessed), two asks at once taking
// one last room, and asks that are not a Node's name refused by the validator without failing a
// workflow task.
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { NodeRepairAssessment, NodeRepairCase } from '../../src/activities/node-repair-queue.ts';
import type { Config } from '../../src/config/load.ts';
import { NODE_REPAIR_REFUSED, requestNodeRepairUpdate, type NodeRepairAnswer } from '../../src/noderepair/messages.ts';
import { disableUpdate, enableUpdate, listQuery, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId } from '../../src/repair/messages.ts';
import { TendNode } from '../../src/search-attributes.ts';
import { queueUpdate } from '../../src/starters/repair-commands.ts';
import { deepJson, failedWorkflowTasks, hugeJson, rawUpdate } from '../harness/raw-messages.ts';
import { replaysWithPatches } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';
import { gate, repairSuite } from './repair-stubs.ts';

/** What the stub assesses for `node` unless a test says otherwise: an entry of 10.0.1.N, every limit passed. */
function caseOf(node: string, more: Partial<NodeRepairCase> = {}): NodeRepairCase {
  return {
    node,
    request: { address: `10.0.1.${node.split('-').pop()}`, machineType: 'sim', operation: 'unreachable' },
    reason: 'Ready=Unknown for 20s',
    nodes: { selected: 10, healthy: 9 },
    limits: { maximumRepairQueueEntries: 5, waitSecondsToRepairRebooting: 0, minHealthy: '51%' },
    observe: false,
    ...more,
  };
}

describe('repair queue: request-node-repair (stub assess activity)', function () {
  this.timeout(180_000);
  const suite = repairSuite('node-repair-queue');
  /** Per Node: what the stub answers (a function may block); absent: caseOf(node). */
  let assessed: Map<string, (node: string) => Promise<NodeRepairAssessment>>;
  let asked: string[];

  beforeEach(() => {
    assessed = new Map();
    asked = [];
  });

  const activities = () => ({
    ...suite.world.activities(),
    nodeRepairAssess: async (input: { node: string }): Promise<NodeRepairAssessment> => {
      asked.push(input.node);
      const f = assessed.get(input.node);
      return f ? f(input.node) : caseOf(input.node);
    },
  });
  const run = <T>(fn: (client: Client) => Promise<T>) => suite.run((client) => fn(client), activities());
  /** The ask as a countdown sends it: through the queue's update, the queue started when it is not running. */
  const ask = (client: Client, node: string): Promise<NodeRepairAnswer> =>
    queueUpdate(client, { temporal: { taskQueue: suite.tq } } as Config, requestNodeRepairUpdate, { node });
  const list = (client: Client) => queueUpdateList(client);

  it('enqueued: the entry is listed with its address, operation and Node, and its workflow carries TendNode', async () => {
    await run(async (client) => {
      // Disabled until the entry is seen queued: once it runs, its workflow reports the Node it finds by the address.
      await queueUpdate(client, { temporal: { taskQueue: suite.tq } } as Config, disableUpdate);
      const answer = await ask(client, 'worker-7');
      assert.equal(answer.decision, 'enqueued', JSON.stringify(answer));
      assert.ok(answer.decision === 'enqueued');
      assert.equal(answer.address, '10.0.1.7');
      assert.equal(answer.operation, 'unreachable');
      assert.match(answer.sentence, new RegExp(`repair entry ${answer.index} queued for Node worker-7: 10\\.0\\.1\\.7 \\(unreachable, Ready=Unknown for 20s\\)`));
      const entries = await list(client);
      assert.deepEqual(entries.map((e) => [e.index, e.address, e.machine_type, e.operation, e.nodename, e.status]), [[answer.index, '10.0.1.7', 'sim', 'unreachable', 'worker-7', 'queued']]);
      await queueUpdate(client, { temporal: { taskQueue: suite.tq } } as Config, enableUpdate);
      const attrs = await waitFor('the entry\'s workflow with TendNode', async () => {
        const d = await client.workflow.getHandle(repairEntryWorkflowId(answer.index)).describe();
        return d.typedSearchAttributes.get(TendNode);
      });
      assert.equal(attrs, 'worker-7');
      assert.deepEqual(asked, ['worker-7']);
    });
  });

  it('refused recent-entry: a second ask for the same machine while its entry is listed', async () => {
    await run(async (client) => {
      const first = await ask(client, 'worker-3');
      assert.equal(first.decision, 'enqueued');
      const second = await ask(client, 'worker-3');
      assert.equal(second.decision, 'refused');
      assert.ok(second.decision === 'refused');
      assert.equal(second.reason, 'recent-entry');
      assert.match(second.sentence, /already has an entry for 10\.0\.1\.3/);
      assert.equal((await list(client)).length, 1);
    });
  });

  it('refused cluster-limit: the queue\'s entries (any status) reach maximumRepairQueueEntries', async () => {
    const limits = { maximumRepairQueueEntries: 2, waitSecondsToRepairRebooting: 0, minHealthy: '51%' };
    for (const n of ['worker-1', 'worker-2', 'worker-4']) assessed.set(n, async (node) => caseOf(node, { limits }));
    await run(async (client) => {
      assert.equal((await ask(client, 'worker-1')).decision, 'enqueued');
      assert.equal((await ask(client, 'worker-2')).decision, 'enqueued');
      const third = await ask(client, 'worker-4');
      assert.ok(third.decision === 'refused', JSON.stringify(third));
      assert.equal(third.reason, 'cluster-limit');
      assert.match(third.sentence, /has 2 entries and 0 new reports: maximumRepairQueueEntries 2 allows no more/);
      assert.deepEqual((await list(client)).map((e) => e.address), ['10.0.1.1', '10.0.1.2']);
    });
  });

  it('refused storm: fewer of the selected Nodes healthy than minHealthy, and nothing queued', async () => {
    assessed.set('worker-5', async (node) => caseOf(node, { nodes: { selected: 10, healthy: 5 } }));
    await run(async (client) => {
      const answer = await ask(client, 'worker-5');
      assert.ok(answer.decision === 'refused', JSON.stringify(answer));
      assert.equal(answer.reason, 'storm');
      assert.match(answer.sentence, /5 of the 10 Nodes nodeSelector selects are healthy, fewer than minHealthy 51% \(6\)/);
      assert.deepEqual(await list(client), []);
    });
  });

  it('refused rebooting: a Node in a planned reboot is not repaired before its wait, and the answer says when', async () => {
    const since = Date.now() - 10_000;
    assessed.set('worker-6', async (node) => caseOf(node, { rebootingSince: since, limits: { maximumRepairQueueEntries: 5, waitSecondsToRepairRebooting: 600, minHealthy: '51%' } }));
    await run(async (client) => {
      const answer = await ask(client, 'worker-6');
      assert.ok(answer.decision === 'refused', JSON.stringify(answer));
      assert.equal(answer.reason, 'rebooting');
      assert.equal(answer.retryAt, since + 600_000);
      assert.match(answer.sentence, new RegExp(`not repaired before ${new Date(since + 600_000).toISOString().replace(/\./g, '\\.')}`));
      assert.deepEqual(await list(client), []);
    });
  });

  it('a Node in a planned reboot whose wait has passed is queued', async () => {
    assessed.set('worker-8', async (node) => caseOf(node, { rebootingSince: Date.now() - 20_000, limits: { maximumRepairQueueEntries: 5, waitSecondsToRepairRebooting: 10, minHealthy: '51%' } }));
    await run(async (client) => {
      assert.equal((await ask(client, 'worker-8')).decision, 'enqueued');
    });
  });

  it('observed: observe mode answers what it would queue and adds nothing', async () => {
    assessed.set('worker-9', async (node) => caseOf(node, { observe: true }));
    await run(async (client) => {
      const answer = await ask(client, 'worker-9');
      assert.deepEqual(answer, { decision: 'observed', address: '10.0.1.9', operation: 'unreachable', sentence: 'would enqueue repair of 10.0.1.9 (unreachable, Ready=Unknown for 20s)' });
      assert.deepEqual(await list(client), []);
    });
  });

  it('observe mode still applies the limiters: a refused ask is answered refused, not observed', async () => {
    assessed.set('worker-9', async (node) => caseOf(node, { observe: true, nodes: { selected: 4, healthy: 1 } }));
    await run(async (client) => {
      const answer = await ask(client, 'worker-9');
      assert.ok(answer.decision === 'refused', JSON.stringify(answer));
      assert.equal(answer.reason, 'storm');
    });
  });

  it('paused and not-needed, as assessed, are the answers as they are, and queue nothing', async () => {
    const paused: NodeRepairAnswer = { decision: 'refused', reason: 'paused', sentence: 'no repair entry is queued while repair is paused: repair: paused by ops' };
    const healthy: NodeRepairAnswer = { decision: 'not-needed', sentence: 'Node worker-11 meets no unhealthy condition of nodeRepair: it is healthy again' };
    assessed.set('worker-10', async () => ({ answer: paused as Extract<NodeRepairAnswer, { decision: 'refused' }> }));
    assessed.set('worker-11', async () => ({ answer: healthy as Extract<NodeRepairAnswer, { decision: 'not-needed' }> }));
    await run(async (client) => {
      assert.deepEqual(await ask(client, 'worker-10'), paused);
      assert.deepEqual(await ask(client, 'worker-11'), healthy);
      assert.deepEqual(await list(client), []);
    });
  });

  it('two asks at once for different Nodes with room for one: exactly one is queued, the other refused cluster-limit', async () => {
    const limits = { maximumRepairQueueEntries: 1, waitSecondsToRepairRebooting: 0, minHealthy: '51%' };
    const both = gate();
    let arrived = 0;
    const assess = async (node: string) => {
      // Both handlers are past their ask before either decides: they interleave at the activity.
      if (++arrived === 2) both.open();
      await both.wait;
      return caseOf(node, { limits });
    };
    assessed.set('worker-21', assess);
    assessed.set('worker-22', assess);
    await run(async (client) => {
      // The queue running first, so that both asks reach the same run.
      await queueUpdateList(client, true);
      const answers = await Promise.all([ask(client, 'worker-21'), ask(client, 'worker-22')]);
      assert.equal(arrived, 2);
      assert.deepEqual(answers.map((a) => a.decision).sort(), ['enqueued', 'refused'], JSON.stringify(answers));
      const refusal = answers.find((a) => a.decision === 'refused');
      assert.ok(refusal?.decision === 'refused');
      assert.equal(refusal.reason, 'cluster-limit');
      const entries = await list(client);
      assert.equal(entries.length, 1);
      const enqueued = answers.find((a) => a.decision === 'enqueued');
      assert.ok(enqueued?.decision === 'enqueued');
      assert.equal(entries[0]!.address, enqueued.address);
      // The interleaved asks replay as they ran.
      await replaysWithPatches(client, REPAIR_QUEUE_WORKFLOW_ID, []);
    });
  });

  it('an assess that fails fails the ask with the reason, and the queue goes on', async () => {
    assessed.set('worker-12', async () => {
      throw ApplicationFailure.nonRetryable('node repair: refused: the API server said no', NODE_REPAIR_REFUSED);
    });
    await run(async (client) => {
      await assert.rejects(ask(client, 'worker-12'), /request-node-repair: could not read Node worker-12 and the selected Nodes: .*the API server said no/);
      assert.equal((await ask(client, 'worker-13')).decision, 'enqueued');
      assert.deepEqual(await failedWorkflowTasks(client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID)), []);
    });
  });

  it('an ask that is not {node: NAME} is refused by the validator, never assessed, and fails no workflow task', async () => {
    await run(async (client) => {
      await queueUpdateList(client, true);
      const bad: [string, RegExp][] = [
        ['{"node":"Worker_1"}', /node must be a Node's name: a DNS subdomain/],
        [`{"node":"${'a'.repeat(254)}"}`, /node must be a Node's name: a DNS subdomain of at most 253/],
        ['{"node":"worker-1","address":"10.0.0.1"}', /address/],
        ['{"node":7}', /node must be a Node's name/],
        ['{}', /node/],
        ['"worker-1"', /request-node-repair needs \{"node": "NODE"\}/],
        ['null', /request-node-repair/],
        [deepJson(5000), /request-node-repair/],
        [hugeJson(), /request-node-repair/],
        [`{"node":"${'a'.repeat(600_000)}"}`, /request-node-repair/],
      ];
      for (const [json, why] of bad) {
        const r = await rawUpdate(client, REPAIR_QUEUE_WORKFLOW_ID, requestNodeRepairUpdate.name, json);
        assert.equal(r.accepted, false, `accepted: ${json.slice(0, 80)}`);
        assert.match(r.message ?? '', why, json.slice(0, 80));
        assert.ok((r.message ?? '').length < 2000, `a refusal of ${(r.message ?? '').length} characters`);
      }
      // Two arguments: the validator refuses them too.
      await assert.rejects(client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).executeUpdate(requestNodeRepairUpdate.name, { args: [{ node: 'worker-1' }, { node: 'worker-2' }] }),
        (err: Error) => /request-node-repair takes one input/.test(String((err.cause as Error | undefined)?.message)));
      assert.deepEqual(asked, []);
      assert.deepEqual(await failedWorkflowTasks(client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID)), []);
      // The queue still answers.
      assert.equal((await ask(client, 'worker-1')).decision, 'enqueued');
    });
  });

  /** The queue's entries (`start`: first start the queue, as any CLI call would). */
  async function queueUpdateList(client: Client, start = false) {
    if (start) await queueUpdate(client, { temporal: { taskQueue: suite.tq } } as Config, enableUpdate);
    return client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(listQuery);
  }
});
