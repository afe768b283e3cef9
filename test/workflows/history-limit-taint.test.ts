// Taint's long-lived workflows against a dev server with a small history
// limit (dynamic config): `taint/<node>` with an eviction a
// PodDisruptionBudget blocks for ever, and the `taint-replacements`
// coordinator, both busy, continue as new before the server's hard limit
// (which terminates a workflow), carrying their work with them.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { TaintStubs } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';
import type { SlotsStatus } from '../../src/taint/messages.ts';

const SUGGEST = 40;
const ERROR = 150;

describe('taint workflows under a small history limit', function () {
  this.timeout(300_000);
  let env: TestWorkflowEnvironment;

  before(async () => {
    env = await startWorkflowEnv({ historyLimit: { suggest: SUGGEST, error: ERROR } });
  });
  after(async () => {
    await env?.teardown();
  });

  it('taint/<node> under a blocked eviction and the coordinator continue as new in time, keeping the slot and the eviction', async () => {
    const stubs = new TaintStubs();
    const node = 'held-node';
    stubs.taint(node, [{ uid: 'p', namespace: 'ns', name: 'db-0' }]);
    stubs.evictions.set('p', Array(10_000).fill('blocked'));
    // The coordinator checks its grant's holder every second: busy histories on both sides.
    stubs.slotSettings.grantCheckSeconds = 1;
    const queue = taskQueue('taint-history');
    await withWorker(env, queue, stubs.activities(), async (client) => {
      const slots = await client.workflow.start('taintReplacementsWorkflow', { taskQueue: queue, workflowId: 'taint-replacements', args: [{}] });
      const h = await client.workflow.start('taintNodeWorkflow', { taskQueue: queue, workflowId: `taint/${node}`, args: [{ node }] });
      await waitFor('the eviction blocked', async () => (await h.query<{ state: string }[]>('status')).some((r) => r.state === 'Blocked'), { timeoutMs: 30_000 });
      const nodeRuns = new Set<string>();
      const slotRuns = new Set<string>();
      // A pod appearing on the node over and over (the watcher signals each): the node's history grows fast.
      let stop = false;
      const noise = (async () => {
        while (!stop) {
          await h.signal('podsChanged').catch(() => undefined);
          await slots.signal('nodeCounts').catch(() => undefined);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      try {
        // The pod noise is acted on: each podsChanged has the node's pods listed again.
        await waitFor('three runs of each, every one continued as new (none terminated), and the pods listed again', async () => {
          const [n, s] = await Promise.all([h.describe(), slots.describe()]);
          assert.equal(n.status.name, 'RUNNING', `taint/${node} is ${n.status.name}`);
          assert.equal(s.status.name, 'RUNNING', `taint-replacements is ${s.status.name}`);
          nodeRuns.add(n.runId);
          slotRuns.add(s.runId);
          return nodeRuns.size >= 3 && slotRuns.size >= 3 && stubs.callsOf('listTaintPods').length > 3;
        }, { timeoutMs: 240_000, intervalMs: 500 });
      } finally {
        stop = true;
        await noise;
      }
      // Every run that ended, ended by continuing as new, below the hard limit.
      for await (const wf of client.workflow.list({ query: `WorkflowId="taint/${node}" OR WorkflowId="taint-replacements"` })) {
        assert.ok(wf.status.name === 'RUNNING' || wf.status.name === 'CONTINUED_AS_NEW', `${wf.workflowId} ${wf.runId}: ${wf.status.name}`);
        assert.ok((wf.historyLength ?? 0) < ERROR, `${wf.workflowId} ${wf.runId}: ${wf.historyLength} events`);
      }
      const s = await slots.query<SlotsStatus>('status');
      assert.deepEqual(s.inFlight.map((g) => g.uid), ['p'], 'the slot carried over by both');
      assert.equal(s.granted, 1, 'granted once');
      const rows = await h.query<{ state: string; attempts: number }[]>('status');
      assert.ok(rows.some((r) => r.state === 'Blocked' || r.state === 'Evicting'), JSON.stringify(rows));
      assert.equal(stubs.evicted('p'), 0);
      await h.cancel();
      await assert.rejects(h.result());
      await slots.terminate('test over');
    });
  });
});
