// Every recorded history (real runs, recorded by `npm run record:histories`)
// replays against the workflow code as it is now, offline: a change that
// alters the commands a workflow issued for that history (without patched())
// fails here instead of failing the open runs after a deploy.
import assert from 'node:assert/strict';
import type { ReplayResult, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { bundle, loadHistories, workflowsPath, replay, type RecordedHistory } from './histories.ts';
import { historyFromJSON } from './history-json.ts';
import { patchesOf, splitAfterFirstLocalActivity } from './split.ts';
import { PATCHES_BEFORE_LOCAL_ACTIVITY_PATCH } from '../../src/workflows/patches.ts';

describe('replay: recorded histories against the current workflow code', function () {
  let histories: RecordedHistory[];
  let results: ReplayResult[];
  let workflowTypes: string[];
  let code: WorkflowBundleWithSourceMap;

  before(async function () {
    histories = await loadHistories();
    workflowTypes = Object.keys(await import(workflowsPath) as Record<string, unknown>).sort();
    code = await bundle(workflowsPath);
    results = await replay(code, histories);
  });

  it('has a history of every workflow type the worker hosts, and of an open run of each long-lived one', () => {
    assert.ok(workflowTypes.length >= 7, `the worker's workflows: ${workflowTypes.join(', ')}`);
    const recorded = new Set(histories.map((h) => h.workflowType));
    assert.deepEqual(workflowTypes.filter((t) => !recorded.has(t)), [], 'workflow types without a recorded history');
    // Long-lived: all but the one-shot check. Their open, continued runs are what an upgrade must carry on.
    for (const type of workflowTypes.filter((t) => t !== 'checkWorkflow')) {
      const open = histories.filter((h) => h.workflowType === type && h.status === 'RUNNING');
      assert.ok(open.length > 0, `no open run of ${type} is recorded`);
      assert.ok(open.some((h) => h.continued), `no open run of ${type} that continued as new is recorded`);
    }
  });

  it('replays every recorded history without a determinism violation or a failure', () => {
    assert.ok(histories.length > 0, 'no recorded histories under test/replay/histories');
    const failed = histories.map((h, i) => ({ h, r: results[i]! })).filter(({ r }) => r.error !== undefined)
      .map(({ h, r }) => `${h.name} (${h.workflowId}): ${r.error!.name}: ${r.error!.message}`);
    assert.deepEqual(failed, []);
    for (const [i, h] of histories.entries()) assert.equal(results[i]!.workflowId, h.workflowId);
  });

  it('replays the histories that ask for their patches first also when a local activity\'s answer and the code after it fall in two workflow tasks', async () => {
    const marked = histories.filter((h) => patchesOf(h.json).includes(PATCHES_BEFORE_LOCAL_ACTIVITY_PATCH));
    const split = marked.flatMap((h) => {
      const json = splitAfterFirstLocalActivity(h.json);
      return json ? [{ ...h, name: `${h.name} (split)`, history: historyFromJSON(json), json }] : [];
    });
    // The two workflows whose code asks for a patch right after a local activity's answer.
    assert.deepEqual([...new Set(split.map((h) => h.workflowType))].sort(), ['appWorkflow', 'weederWorkflow'], 'split histories of both recorded');
    const splitResults = await replay(code, split);
    assert.deepEqual(split.map((h, i) => ({ h, r: splitResults[i]! })).filter(({ r }) => r.error !== undefined)
      .map(({ h, r }) => `${h.name}: ${r.error!.message.slice(0, 300)}`), []);
  });
});
