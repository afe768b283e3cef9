// The repair queue's state machine (src/repair/queue.ts), table-driven: each
// transition's next state and the operations the workflow must carry out.
import assert from 'node:assert/strict';
import { ckeListJson, goTime, ZERO_TIME, type RepairQueueEntry, type RepairStatus } from '../../src/repair/entry.ts';
import {
  addEntries, applyReport, cancelFailed, decideQueue, emptyQueue, entryEnded, findDeleting, listEntries, liveIndexes, mayStart, removeEntries, resetBackoff,
  running, setEnabled, started, startFailed, type QueueState,
} from '../../src/repair/queue.ts';
import { waitingFor } from '../../src/starters/repair-commands.ts';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const CHAIN = 'run-1';

const entry = (index: string, address: string, status: RepairStatus, more: Partial<RepairQueueEntry> = {}): RepairQueueEntry => ({
  index, address, nodename: '', machine_type: 'sim', operation: 'heal', status, step: 0, step_status: 'waiting',
  last_transition_time: '2029-12-31T00:00:00.000Z', drain_backoff_count: 0, drain_backoff_expire: ZERO_TIME, ...more,
});
const queue = (entries: RepairQueueEntry[], more: Partial<QueueState> = {}): QueueState => ({ entries, nextIndex: entries.length + 1, enabled: true, closing: {}, ...more });
const statuses = (s: QueueState) => s.entries.map((e) => `${e.index}:${e.status}`);

describe('repair queue: state machine', () => {
  it('add: numbers the requests from nextIndex, queued, in order; the state given is not changed', () => {
    const s0 = queue([entry('1', 'a', 'succeeded')], { nextIndex: 7 });
    const r = addEntries(s0, [{ operation: 'heal', machine_type: 'sim', address: 'b' }, { operation: 'heal', machine_type: 'sim', address: 'c', serial: 'SN1' }], NOW);
    assert.deepEqual(r.value!.map((e) => [e.index, e.address, e.status, e.serial]), [['7', 'b', 'queued', undefined], ['8', 'c', 'queued', 'SN1']]);
    assert.equal(r.state.nextIndex, 9);
    assert.equal(s0.entries.length, 1);
    assert.deepEqual(r.ops, []);
  });

  describe('remove', () => {
    const cases: { name: string; s: QueueState; remove: string[]; entries: string[]; closing: Record<string, string>; cancels: string[] }[] = [
      { name: 'queued and finished ones go at once', s: queue([entry('1', 'a', 'queued'), entry('2', 'b', 'failed')]), remove: ['1', '2'], entries: [], closing: {}, cancels: [] },
      { name: 'a processing one is cancelled and holds its slot and address until its end', s: queue([entry('1', 'a', 'processing')]), remove: ['1'], entries: [], closing: { 1: 'a' }, cancels: ['1'] },
      { name: 'unknown indexes are skipped', s: queue([entry('1', 'a', 'queued')]), remove: ['9'], entries: ['1:queued'], closing: {}, cancels: [] },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const r = removeEntries(c.s, c.remove);
        assert.deepEqual(statuses(r.state), c.entries);
        assert.deepEqual(r.state.closing, c.closing);
        assert.deepEqual(r.ops.filter((o) => o.op === 'cancel').map((o) => (o as { index: string }).index), c.cancels);
      });
    }
    it('a cancel that finds no workflow frees the slot', () => {
      assert.deepEqual(cancelFailed(queue([], { closing: { 1: 'a' } }), '1', 'not found').state.closing, {});
    });
  });

  describe('reports', () => {
    const processing = queue([entry('1', 'a', 'processing'), entry('2', 'b', 'queued'), entry('3', 'c', 'succeeded')]);
    const cases: { name: string; s: QueueState; r: Parameters<typeof applyReport>[1]; ignored?: RegExp; entries?: string[]; closing?: Record<string, string> }[] = [
      { name: 'progress of a processing entry', s: processing, r: { index: '1', queue: CHAIN, fields: { step_status: 'draining' } }, entries: ['1:processing', '2:queued', '3:succeeded'] },
      { name: 'its end', s: processing, r: { index: '1', queue: CHAIN, fields: { status: 'failed' } }, entries: ['1:failed', '2:queued', '3:succeeded'] },
      { name: 'from an earlier queue (a reset): refused', s: processing, r: { index: '1', queue: 'run-0', fields: { status: 'succeeded' } }, ignored: /belongs to an earlier repair queue/ },
      { name: 'a queued entry does not report', s: processing, r: { index: '2', queue: CHAIN, fields: { status: 'succeeded' } }, ignored: /entry 2 is not processing/ },
      { name: 'a finished entry does not change', s: processing, r: { index: '3', queue: CHAIN, fields: { status: 'failed' } }, ignored: /entry 3 is not processing/ },
      { name: 'never back to queued', s: processing, r: { index: '1', queue: CHAIN, fields: { status: 'queued' } }, ignored: /cannot put it back in the queue/ },
      { name: 'removed: a cancelled processing entry leaves', s: processing, r: { index: '1', queue: CHAIN, removed: true }, entries: ['2:queued', '3:succeeded'] },
      { name: 'removed: a closing entry frees its slot', s: queue([], { closing: { 5: 'e' } }), r: { index: '5', queue: CHAIN, removed: true }, entries: [], closing: {} },
      { name: 'a closing entry that ended on its own (its final report won the race) frees its slot', s: queue([], { closing: { 5: 'e' } }), r: { index: '5', queue: CHAIN, fields: { status: 'succeeded' } }, entries: [], closing: {} },
      { name: 'a closing entry\'s progress changes nothing', s: queue([], { closing: { 5: 'e' } }), r: { index: '5', queue: CHAIN, fields: { step_status: 'watching' } }, entries: [], closing: { 5: 'e' } },
      { name: 'removed for an entry neither processing nor closing: refused', s: processing, r: { index: '2', queue: CHAIN, removed: true }, ignored: /not processing or being deleted/ },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const r = applyReport(c.s, c.r, CHAIN);
        if (c.ignored) {
          assert.match(r.ignored ?? '', c.ignored);
          assert.equal(r.state, c.s);
          return;
        }
        assert.equal(r.ignored, undefined);
        if (c.entries) assert.deepEqual(statuses(r.state), c.entries);
        if (c.closing) assert.deepEqual(r.state.closing, c.closing);
      });
    }
  });

  describe('reports as display only (endsOnly): a slot is freed by the workflow\'s end, never by a message', () => {
    const processing = queue([entry('1', 'a', 'processing'), entry('2', 'b', 'queued')]);
    const cases: { name: string; s: QueueState; r: Parameters<typeof applyReport>[1]; ignored?: RegExp; entries?: string[]; closing?: Record<string, string>; claimed?: boolean; reported?: Record<string, string> }[] = [
      { name: 'progress is shown', s: processing, r: { index: '1', queue: CHAIN, fields: { step_status: 'draining' } }, entries: ['1:processing', '2:queued'] },
      { name: 'succeeded: kept for its end, the entry still processing (its slot held)', s: processing, r: { index: '1', queue: CHAIN, fields: { status: 'succeeded' } }, entries: ['1:processing', '2:queued'], claimed: true, reported: { 1: 'succeeded' } },
      { name: 'removed: changes nothing but a look', s: processing, r: { index: '1', queue: CHAIN, removed: true }, entries: ['1:processing', '2:queued'], claimed: true },
      { name: 'a closing entry\'s removed keeps its slot', s: queue([], { closing: { 5: 'e' } }), r: { index: '5', queue: CHAIN, removed: true }, closing: { 5: 'e' }, claimed: true },
      { name: 'a closing entry\'s final report keeps its slot', s: queue([], { closing: { 5: 'e' } }), r: { index: '5', queue: CHAIN, fields: { status: 'failed' } }, closing: { 5: 'e' }, claimed: true },
      { name: 'another chain: refused', s: processing, r: { index: '1', queue: 'run-0', removed: true }, ignored: /earlier repair queue/ },
      { name: 'a queued entry: refused', s: processing, r: { index: '2', queue: CHAIN, fields: { status: 'succeeded' } }, ignored: /entry 2 is not processing/ },
      { name: 'an unknown index: refused', s: processing, r: { index: '9', queue: CHAIN, removed: true }, ignored: /entry 9 is not processing or being deleted/ },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const before = JSON.stringify(c.s);
        const r = applyReport(c.s, c.r, CHAIN, true);
        assert.equal(JSON.stringify(c.s), before, 'the state given is not changed');
        if (c.ignored) {
          assert.match(r.ignored ?? '', c.ignored);
          assert.equal(r.state, c.s);
          return;
        }
        assert.equal(r.ignored, undefined);
        assert.equal(running(r.state), running(c.s), 'a slot freed by a report');
        assert.equal(r.claimed ?? false, c.claimed ?? false);
        if (c.entries) assert.deepEqual(statuses(r.state), c.entries);
        if (c.closing) assert.deepEqual(r.state.closing, c.closing);
        assert.deepEqual(r.state.reported ?? {}, c.reported ?? {});
      });
    }
    it('the end takes the workflow\'s result over a report, else the report, else fails', () => {
      const reported = applyReport(queue([entry('1', 'a', 'processing')]), { index: '1', queue: CHAIN, fields: { status: 'failed' } }, CHAIN, true).state;
      assert.deepEqual(statuses(entryEnded(reported, '1', 'completed', NOW, 'succeeded').state), ['1:succeeded']);
      const ended = entryEnded(reported, '1', 'gone', NOW);
      assert.deepEqual(statuses(ended.state), ['1:failed']);
      assert.deepEqual(ended.state.reported, {});
      assert.deepEqual(ended.ops, []);
    });
  });

  describe('an entry workflow\'s end (its result, or a signal finding it gone)', () => {
    it('a processing entry that never reported its end fails, with a log line', () => {
      const r = entryEnded(queue([entry('1', 'a', 'processing')]), '1', 'its workflow ended: terminated', NOW);
      assert.deepEqual(statuses(r.state), ['1:failed']);
      assert.equal(r.state.entries[0]!.last_transition_time, new Date(NOW).toISOString());
      assert.equal(r.ops[0]?.op, 'log');
    });
    it('a finished entry is unchanged', () => {
      const s = queue([entry('1', 'a', 'succeeded')]);
      assert.equal(entryEnded(s, '1', 'completed', NOW).state, s);
    });
    it('a closing entry frees its slot', () => {
      assert.deepEqual(entryEnded(queue([], { closing: { 1: 'a' } }), '1', 'cancelled', NOW).state.closing, {});
    });
    it('a processing entry whose workflow was cancelled (temporal workflow cancel) leaves the queue, its slot freed', () => {
      const r = entryEnded(queue([entry('1', 'a', 'processing'), entry('2', 'b', 'queued')], { reported: { 1: 'failed' } }), '1', 'its workflow ended: cancelled', NOW, 'cancelled');
      assert.deepEqual(statuses(r.state), ['2:queued']);
      assert.equal(running(r.state), 0);
      assert.deepEqual(r.state.reported, {});
      assert.equal(r.ops[0]?.op, 'log');
    });
  });

  describe('decideQueue: failing unconfigured entries and starting', () => {
    const cases: { name: string; s: QueueState; max: number; problems?: Record<string, string>; entries: string[]; starts: string[] }[] = [
      { name: 'starts the oldest up to the limit', s: queue([entry('1', 'a', 'queued'), entry('2', 'b', 'queued')]), max: 1, entries: ['1:processing', '2:queued'], starts: ['1'] },
      { name: 'an entry whose key is gone fails before it starts; the next one starts instead', s: queue([entry('1', 'a', 'queued'), entry('2', 'b', 'queued')]), max: 1, problems: { 1: 'not configured' }, entries: ['1:failed', '2:processing'], starts: ['2'] },
      { name: 'closing entries hold their slots', s: queue([entry('2', 'b', 'queued')], { closing: { 1: 'a' } }), max: 1, entries: ['2:queued'], starts: [] },
      { name: 'disabled: none', s: queue([entry('1', 'a', 'queued')], { enabled: false }), max: 3, entries: ['1:queued'], starts: [] },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const r = decideQueue(c.s, { max_concurrent_repairs: c.max, problems: c.problems ?? {} }, NOW);
        assert.deepEqual(statuses(r.state), c.entries);
        assert.deepEqual(r.ops.filter((o) => o.op === 'start').map((o) => (o as { index: string }).index), c.starts);
      });
    }
    it('a start that fails fails its entry (nothing ran)', () => {
      const r = startFailed(queue([entry('1', 'a', 'processing')]), '1', 'already started', NOW);
      assert.deepEqual(statuses(r.state), ['1:failed']);
    });
    it('deleted while its start was in flight: cancelled once started', () => {
      assert.deepEqual(started(queue([], { closing: { 1: 'a' } }), '1').ops, [{ op: 'cancel', index: '1' }]);
      assert.deepEqual(started(queue([entry('1', 'a', 'processing')]), '1').ops, []);
    });
  });

  describe("CKE's `deleted`: a processing entry deleted stays listed, deleted: true, until its workflow has cleaned up", () => {
    const deleted = () => removeEntries(queue([entry('1', 'a', 'processing', { step_status: 'draining' }), entry('2', 'b', 'queued')]), ['1']).state;
    const listed = (s: QueueState) => listEntries(s).map((e) => `${e.index}:${e.status}:${e.deleted}`);
    it('listed with deleted: true, as it was when deleted; the others with deleted: false, in index order', () => {
      const s = deleted();
      assert.deepEqual(listed(s), ['1:processing:true', '2:queued:false']);
      assert.equal(listEntries(s)[0]!.step_status, 'draining');
      assert.equal(findDeleting(s, '1')?.index, '1');
      assert.equal(findDeleting(s, '2'), undefined);
      assert.equal(running(s), 1, 'its slot counted once');
    });
    const ends: [string, (s: QueueState) => QueueState][] = [
      ['its removed report', (s) => applyReport(s, { index: '1', queue: CHAIN, removed: true }, CHAIN).state],
      ['its own final report', (s) => applyReport(s, { index: '1', queue: CHAIN, fields: { status: 'failed' } }, CHAIN).state],
      ['its workflow\'s end', (s) => entryEnded(s, '1', 'cancelled', NOW).state],
      ['a cancel that finds it gone', (s) => cancelFailed(s, '1', 'not found').state],
      ['a failed start', (s) => startFailed(s, '1', 'already started', NOW).state],
    ];
    for (const [name, end] of ends) {
      it(`leaves the list on ${name}`, () => {
        const s = end(deleted());
        assert.deepEqual(listed(s), ['2:queued:false']);
        assert.deepEqual(s.closing, {});
      });
    }
    it('a state carried over by an older run (no `deleting`) lists its entries, deleted: false', () => {
      assert.deepEqual(listed(queue([entry('3', 'c', 'failed')], { closing: { 1: 'a' } })), ['3:failed:false']);
    });
  });

  describe("ckecli's list output", () => {
    it('null for an empty queue (a nil slice), as Go encodes it', () => {
      assert.equal(ckeListJson([]), 'null');
    });
    it("CKE's fields in CKE's order, 4-space indent, omitempty on serial and drain_backoff_count, Go's times", () => {
      const text = ckeListJson([
        { ...entry('1', '10.0.0.1', 'processing'), deleted: true, last_transition_time: '2030-01-01T00:00:05.000Z' },
        entry('2', '10.0.0.2', 'queued', { serial: 'SN2', drain_backoff_count: 2, drain_backoff_expire: '2030-01-01T00:10:00.250Z' }),
      ]);
      const parsed = JSON.parse(text) as Record<string, unknown>[];
      assert.deepEqual(Object.keys(parsed[0]!), ['index', 'address', 'nodename', 'machine_type', 'operation', 'status', 'step', 'step_status', 'deleted', 'last_transition_time', 'drain_backoff_expire']);
      assert.deepEqual(Object.keys(parsed[1]!), ['index', 'address', 'nodename', 'serial', 'machine_type', 'operation', 'status', 'step', 'step_status', 'deleted', 'last_transition_time', 'drain_backoff_count', 'drain_backoff_expire']);
      assert.equal(parsed[0]!.deleted, true);
      assert.equal(parsed[1]!.deleted, false);
      assert.equal(parsed[0]!.last_transition_time, '2030-01-01T00:00:05Z');
      assert.equal(parsed[1]!.drain_backoff_expire, '2030-01-01T00:10:00.25Z');
      assert.equal(parsed[0]!.drain_backoff_expire, '0001-01-01T00:00:00Z');
      assert.match(text, /^\[\n {4}\{\n {8}"index": "1",/);
    });
    it('times as Go writes a time.Time', () => {
      assert.equal(goTime(undefined), ZERO_TIME);
      assert.equal(goTime('2030-01-01T00:00:00.000Z'), '2030-01-01T00:00:00Z');
      assert.equal(goTime('2030-01-01T00:00:00.120Z'), '2030-01-01T00:00:00.12Z');
      assert.equal(goTime('2030-01-01T00:00:00Z'), '2030-01-01T00:00:00Z');
    });
  });

  it('wait names what it waits for: the count, each index with its status', () => {
    assert.equal(waitingFor([entry('1', 'a', 'failed'), entry('2', 'b', 'processing', { step_status: 'watching' }), { ...entry('3', 'c', 'processing'), deleted: true }]),
      '3 entries (1 failed, 2 processing/watching, 3 deleted, cleaning up)');
    assert.equal(waitingFor([entry('4', 'd', 'queued')]), '1 entry (4 queued)');
  });

  it('enable/disable: running entries are told, only on a change', () => {
    const s = queue([entry('1', 'a', 'processing'), entry('2', 'b', 'queued')]);
    assert.deepEqual(setEnabled(s, false).ops, [{ op: 'signal-enabled', index: '1', enabled: false }]);
    assert.deepEqual(setEnabled(s, true).ops, []);
  });

  it('reset-backoff: every entry cleared, running ones told, the count of those that had one', () => {
    const s = queue([entry('1', 'a', 'processing', { drain_backoff_count: 2, drain_backoff_expire: '2030-01-01T00:01:00.000Z' }), entry('2', 'b', 'queued')]);
    const r = resetBackoff(s);
    assert.equal(r.value, 1);
    assert.deepEqual(r.state.entries.map((e) => [e.drain_backoff_count, e.drain_backoff_expire]), [[0, ZERO_TIME], [0, ZERO_TIME]]);
    assert.deepEqual(r.ops, [{ op: 'signal-reset-backoff', index: '1' }]);
  });

  it('slots, live workflows, and whether a start may be possible', () => {
    const s = queue([entry('1', 'a', 'processing'), entry('2', 'b', 'queued')], { closing: { 9: 'z' } });
    assert.equal(running(s), 2);
    assert.deepEqual(liveIndexes(s), ['1', '9']);
    assert.equal(mayStart(s, 2), false);
    assert.equal(mayStart(s, 3), true);
    assert.equal(mayStart(s, undefined), true);
    assert.equal(mayStart(emptyQueue(), undefined), false);
  });
});
