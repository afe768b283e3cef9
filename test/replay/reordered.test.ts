// The replay test has teeth: the recorded histories of the taint coordinator
// replay cleanly against the real code, and fail with a determinism violation
// (not any error) against a copy whose only change is two commands swapped.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { DeterminismViolationError } from '@temporalio/workflow';
import { reorderedDir, reorderedWorkflows } from './fixtures/reordered.ts';
import { bundle, loadHistories, workflowsPath, replay, type RecordedHistory } from './histories.ts';

describe('replay: a reordered workflow is caught', function () {
  let coordinator: RecordedHistory[];
  let entry: string | undefined;

  before(async () => {
    coordinator = (await loadHistories()).filter((h) => h.workflowType === 'taintReplacementsWorkflow');
  });
  after(async () => {
    if (entry) await rm(reorderedDir(entry), { recursive: true, force: true });
  });

  it('the coordinator\'s histories replay against the real code, and fail with DeterminismViolationError once its two reads are swapped', async () => {
    assert.ok(coordinator.length > 0, 'no recorded history of taintReplacementsWorkflow');
    const real = await replay(await bundle(workflowsPath), coordinator);
    assert.deepEqual(real.filter((r) => r.error).map((r) => `${r.workflowId}: ${r.error!.message}`), [], 'the real code replays them');

    entry = await reorderedWorkflows();
    const broken = await replay(await bundle(entry), coordinator);
    for (const [i, r] of broken.entries()) {
      assert.ok(r.error instanceof DeterminismViolationError,
        `${coordinator[i]!.name}: expected a DeterminismViolationError, got ${r.error ? `${r.error.name}: ${r.error.message}` : 'no error'}`);
      assert.match(r.error.message, /taintNodeCounts|taintSlotSettings|activity type/i, `${coordinator[i]!.name}: the violation names the swapped activity`);
    }
  });
});
