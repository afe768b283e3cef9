// Activity summaries (src/workflows/summary.ts and the capabilities' builders): one line of
// printable text under Temporal's 400-byte limit, whatever names they are built from.
import assert from 'node:assert/strict';
import { said, SUMMARY_MAX, summaryLine } from '../../src/workflows/summary.ts';
import { evictSummary, writeSummary } from '../../src/taint/summaries.ts';
import { cancelledDetails, drainSummary, entryDetails, queueDetails } from '../../src/repair/summaries.ts';
import { initialState } from '../../src/repair/entry-machine.ts';
import { weedSummary } from '../../src/weeder/summaries.ts';

describe('activity summaries', () => {
  it('stay one line of printable ASCII, at most SUMMARY_MAX characters, under 400 bytes', () => {
    for (const text of ['evict pod ns/a', 'x'.repeat(5000), 'é\n'.repeat(300), `svc ${'\u{1F600}'.repeat(400)}`]) {
      const line = summaryLine(text);
      assert.ok(line.length <= SUMMARY_MAX, `${line.length} characters`);
      assert.ok(Buffer.byteLength(JSON.stringify(line)) < 400);
      assert.match(line, /^[\x20-\x7e]*$/);
    }
    assert.equal(summaryLine('evict pod ns/a'), 'evict pod ns/a');
    assert.ok(summaryLine('x'.repeat(5000)).endsWith('...'));
    assert.deepEqual(said('cordon node sim-1'), { summary: 'cordon node sim-1' });
  });

  it('name what the activity does and to what', () => {
    assert.equal(evictSummary({ node: 'worker-2', namespace: 'ns', name: 'db-0' }), 'evict pod ns/db-0 from node worker-2');
    assert.equal(drainSummary({ index: '3', address: '10.0.0.5', operation: 'reboot' }, 'worker-2'), 'cordon node worker-2 and drain it (repair entry 3, reboot)');
    const pod = (name: string) => ({ uid: name, namespace: 'ns', name, detected: null, replacing: null });
    assert.equal(writeSummary('n1', [pod('a'), pod('b'), pod('c')]), 'clear the taint conditions of pods ns/a, ns/b and 1 more (node n1)');
    assert.equal(writeSummary('n1', [{ ...pod('a'), detected: { since: 0, message: 'm' } }]), 'mark NodeTaintDetected on pod ns/a (node n1)');
    assert.equal(weedSummary({ namespace: 'ns', service: 'db' }, [{ name: 'api-1', uid: 'u', containers: [] }], true),
      'delete crash-looping dependant api-1 of Service ns/db, once the weeder may delete');
  });

  it('Current Details: a repair entry and the queue say what they are about and where they stand, a line per paragraph', () => {
    const base = initialState({ index: '3', address: '10.0.0.5', machine_type: 'qemu', operation: 'reboot', enabled: true, queue: 'q' });
    const s = { ...base, cordoned: true, entry: { ...base.entry, nodename: 'worker-2', step_status: 'draining' as const } };
    assert.equal(entryDetails(s), 'Repair entry 3: reboot on qemu 10.0.0.5, node worker-2; step 0, draining, cordoned by tend.');
    assert.equal(entryDetails({ ...s, held: 'repair is paused' }),
      'Repair entry 3: reboot on qemu 10.0.0.5, node worker-2; step 0, draining, cordoned by tend.\n\npaused: repair is paused; goes on within a second of tend resume repair');
    assert.match(cancelledDetails({ ...s, cordoned: false }), /^Repair entry 3 cancelled .* at step 0, draining: node worker-2 is not cordoned by tend; the entry has left the queue\.$/);
    assert.match(cancelledDetails(s), /the cordon on node worker-2 is still on: repair\/3\/lift lifts it/);
    const entries = [{ ...s.entry, status: 'processing' as const }, { ...base.entry, index: '4', status: 'queued' as const }];
    assert.equal(queueDetails({ entries, enabled: true, closing: {} }, 2),
      'Repair queue enabled (max_concurrent_repairs 2); 2 entries.\n\nProcessing (1): 3 reboot on 10.0.0.5 (step 0 draining).\n\nQueued (1): 4 reboot on 10.0.0.5.');
    assert.match(queueDetails({ entries: [], enabled: false, closing: { 5: '10.0.0.6' } }, undefined), /^Repair queue DISABLED.*; 0 entries\.\n\nDeleted, their workflows cleaning up: 1\.$/);
  });
});
