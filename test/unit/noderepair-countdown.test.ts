// src/noderepair/countdown.ts (a Node's countdown as a pure machine) and readingOf
// (src/activities/node-repair.ts: what a countdown reads of its Node, by the section).
import assert from 'node:assert/strict';
import { listAnswer, readingOf } from '../../src/activities/node-repair.ts';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';
import { parseNodeRepair, type NodeRepairConfig } from '../../src/config/node-repair.ts';
import { ASK_AGAIN_MS, Countdown, REREAD_MS, type CountdownReading } from '../../src/noderepair/countdown.ts';
import type { NodeRepairAnswer } from '../../src/noderepair/messages.ts';

const T0 = Date.parse('2026-11-27T10:00:00Z');
const unhealthy = (expiresAt: number): CountdownReading => ({ state: 'unhealthy', reason: 'Ready=Unknown for 5m', since: expiresAt - 300_000, expiresAt });
const enqueued: NodeRepairAnswer = { decision: 'enqueued', index: '4', address: '10.0.0.4', operation: 'unreachable', sentence: 'queued' };

describe('nodeRepair: a countdown', () => {
  it('counts down to the condition\'s end, re-reading at least every REREAD_MS, then asks', () => {
    const c = new Countdown('w-1');
    const end = T0 + 2 * REREAD_MS;
    assert.deepEqual(c.next(unhealthy(end), T0), { kind: 'wait', until: T0 + REREAD_MS });
    assert.equal(c.status().phase, 'counting');
    assert.equal(c.status().until, end, 'the status says when the ask comes');
    assert.deepEqual(c.next(unhealthy(end), end - 1000), { kind: 'wait', until: end });
    assert.deepEqual(c.next(unhealthy(end), end), { kind: 'ask' });
    assert.equal(c.status().phase, 'asking');
  });

  it('ends when the Node recovers, is gone, deselected or the section is off, saying why', () => {
    for (const [state, why] of [['healthy', /meets no unhealthy condition/], ['gone', /is gone/], ['unselected', /no longer selects/], ['off', /not configured/]] as const) {
      const c = new Countdown('w-1');
      c.next(unhealthy(T0 + 60_000), T0);
      const step = c.next({ state }, T0 + 1000);
      assert.equal(step.kind, 'end');
      assert.match((step as { why: string }).why, why);
      assert.equal(c.status().phase, 'recovered');
    }
  });

  it('once queued, never asks again; follows the Node until it recovers and says which entry it was', () => {
    const c = new Countdown('w-1');
    c.next(unhealthy(T0), T0);
    c.answered(enqueued, T0);
    assert.deepEqual(c.next(unhealthy(T0), T0 + 10 * REREAD_MS), { kind: 'wait', until: T0 + 11 * REREAD_MS });
    assert.equal(c.status().phase, 'queued');
    const end = c.next({ state: 'healthy' }, T0 + 11 * REREAD_MS);
    assert.match((end as { why: string }).why, /after repair entry 4 was queued/);
    assert.match(c.details(), /repair entry 4 queued \(unreachable of 10\.0\.0\.4\)/);
  });

  it('after a refusal, asks again ASK_AGAIN_MS later, or at the planned reboot\'s end when the queue says when', () => {
    const c = new Countdown('w-1');
    c.next(unhealthy(T0), T0);
    c.answered({ decision: 'refused', reason: 'storm', sentence: 'too few healthy' }, T0);
    assert.deepEqual(c.next(unhealthy(T0), T0 + 1), { kind: 'wait', until: T0 + ASK_AGAIN_MS });
    assert.equal(c.status().phase, 'waiting');
    assert.deepEqual(c.next(unhealthy(T0), T0 + ASK_AGAIN_MS), { kind: 'ask' });
    c.answered({ decision: 'refused', reason: 'rebooting', sentence: 'in a planned reboot', retryAt: T0 + 10 * 60_000 }, T0 + ASK_AGAIN_MS);
    assert.deepEqual(c.next(unhealthy(T0), T0 + ASK_AGAIN_MS + 1), { kind: 'wait', until: T0 + ASK_AGAIN_MS + 1 + REREAD_MS });
    assert.equal(c.status().until, T0 + 10 * 60_000);
    assert.equal(c.status().refusals, 2);
    // A retryAt already past (a clock apart) waits the usual interval, never asks in a loop.
    c.answered({ decision: 'refused', reason: 'rebooting', sentence: 'x', retryAt: T0 }, T0 + 20 * 60_000);
    assert.equal(c.next(unhealthy(T0), T0 + 20 * 60_000 + 1).kind, 'wait');
  });

  it('observe mode: recorded once, then waits for the Node like a queued one', () => {
    const c = new Countdown('w-1');
    c.next(unhealthy(T0), T0);
    c.answered({ decision: 'observed', address: '10.0.0.4', operation: 'unreachable', sentence: 'would enqueue repair of 10.0.0.4 (unreachable, Ready=Unknown for 5m)' }, T0);
    assert.equal(c.next(unhealthy(T0), T0 + 1).kind, 'wait');
    assert.equal(c.status().phase, 'observed');
  });

  it('a carried entry is confirmed by one ask before it is followed; one the queue does not hold is dropped', () => {
    const carried = { queued: { index: '9', address: '10.0.0.9', operation: 'reboot' }, refusals: 0 };
    // Confirmed: the queue answers with the same entry (or the machine's recent one).
    const a = new Countdown('w-1', carried, true);
    assert.deepEqual(a.next(unhealthy(T0), T0), { kind: 'ask' });
    a.answered({ ...enqueued, index: '9', address: '10.0.0.9' }, T0);
    assert.equal(a.next(unhealthy(T0), T0 + 1).kind, 'wait');
    assert.equal(a.status().phase, 'queued');
    const b = new Countdown('w-1', carried, true);
    b.next(unhealthy(T0), T0);
    b.answered({ decision: 'refused', reason: 'recent-entry', sentence: 'the queue has an entry for 10.0.0.9' }, T0);
    assert.deepEqual(b.carried().queued, carried.queued, 'a recent entry for the machine: followed');
    // Forged: the queue holds no such entry and is full: dropped, asked again as any refusal.
    const c = new Countdown('w-1', carried, true);
    c.next(unhealthy(T0), T0);
    c.answered({ decision: 'refused', reason: 'cluster-limit', sentence: 'full' }, T0);
    assert.equal(c.carried().queued, undefined);
    assert.deepEqual(c.next(unhealthy(T0), T0 + 1), { kind: 'wait', until: T0 + ASK_AGAIN_MS });
    // Runs recorded before the patch follow a carried entry at once.
    assert.equal(new Countdown('w-1', carried).next(unhealthy(T0), T0).kind, 'wait');
  });

  it('carries what it learnt across continue-as-new', () => {
    const c = new Countdown('w-1');
    c.next(unhealthy(T0), T0);
    c.answered({ decision: 'refused', reason: 'cluster-limit', sentence: 'full' }, T0);
    const next = new Countdown('w-1', c.carried());
    assert.deepEqual(next.next(unhealthy(T0), T0 + 1), { kind: 'wait', until: T0 + ASK_AGAIN_MS });
    assert.equal(next.status().refusals, 1);
    c.answered(enqueued, T0 + ASK_AGAIN_MS);
    assert.deepEqual(new Countdown('w-1', c.carried()).carried(), { queued: { index: '4', address: '10.0.0.4', operation: 'unreachable' }, refusals: 1, askAt: T0 + ASK_AGAIN_MS });
  });
});

describe('nodeRepair: what a countdown reads of its Node', () => {
  const config = (() => {
    const r = parseNodeRepair({
      nodeSelector: { matchLabels: { role: 'worker' } }, machineTypeLabel: 'example.org/type',
      unhealthyConditions: [{ type: 'Ready', status: 'Unknown', duration: '5m' }], limits: { maximumRepairQueueEntries: 2 },
    });
    assert.ok('config' in r);
    return r.config as NodeRepairConfig;
  })();
  const node = (labels: Record<string, string>, ready: string, at: string) => ({
    metadata: { name: 'w-1', labels }, status: { conditions: [{ type: 'Ready', status: ready, lastTransitionTime: at }] },
  });

  it('reads the configured condition, from its transition time', () => {
    assert.deepEqual(readingOf(node({ role: 'worker' }, 'Unknown', '2026-11-27T10:00:00Z'), config, T0 + 1000),
      { state: 'unhealthy', reason: 'Ready=Unknown for 5m', since: T0, expiresAt: T0 + 300_000 });
    assert.deepEqual(readingOf(node({ role: 'worker' }, 'True', '2026-11-27T10:00:00Z'), config, T0), { state: 'healthy' });
  });

  it('a Node the selector does not select, a Node gone, or no section', () => {
    assert.deepEqual(readingOf(node({ role: 'db' }, 'Unknown', '2026-11-27T10:00:00Z'), config, T0), { state: 'unselected' });
    assert.deepEqual(readingOf(undefined, config, T0), { state: 'gone' });
    assert.deepEqual(readingOf(node({ role: 'worker' }, 'Unknown', '2026-11-27T10:00:00Z'), undefined, T0), { state: 'off' });
  });
});

describe('nodeRepair: what the repair queue\'s list answers before an update is asked', () => {
  const config = (() => {
    const r = parseNodeRepair({
      nodeSelector: { matchLabels: { role: 'worker' } }, machineTypeLabel: 'example.org/type', limits: { maximumRepairQueueEntries: 2 },
    });
    assert.ok('config' in r);
    return r.config as NodeRepairConfig;
  })();
  const node = { metadata: { name: 'w-1' }, status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] } };
  const entry = (index: string, address: string, status: string, nodename = '') =>
    ({ index, address, status, nodename, operation: 'unreachable', machine_type: 'sim', deleted: false }) as unknown as RepairQueueEntry;

  it('the entry this Node\'s earlier ask queued, unfinished: the same entry (an ask retried after its answer was lost)', () => {
    const a = listAnswer(config, 'w-1', node, [entry('3', '10.0.0.1', 'processing', 'w-1')], T0);
    assert.deepEqual(a && a.decision === 'enqueued' && [a.index, a.address], ['3', '10.0.0.1']);
  });

  it('refuses by one recent entry per machine (a finished one too) and by the maximum, as the queue would', () => {
    assert.deepEqual(listAnswer(config, 'w-1', node, [entry('3', '10.0.0.1', 'succeeded', 'w-1')], T0), { decision: 'refused', reason: 'recent-entry', sentence: 'the repair queue already has an entry for 10.0.0.1 (succeeded): one recent entry per machine, until an operator deletes it' });
    const full = listAnswer(config, 'w-1', node, [entry('1', '10.0.0.8', 'queued'), entry('2', '10.0.0.9', 'failed')], T0);
    assert.equal(full?.decision === 'refused' && full.reason, 'cluster-limit');
  });

  it('leaves everything else to the update: room in the queue, a Node without its address, a Node gone', () => {
    assert.equal(listAnswer(config, 'w-1', node, [entry('1', '10.0.0.8', 'queued')], T0), undefined);
    assert.equal(listAnswer(config, 'w-1', { metadata: { name: 'w-1' }, status: { addresses: [] } }, [], T0), undefined);
    assert.equal(listAnswer(config, 'w-1', undefined, [entry('1', '10.0.0.8', 'queued'), entry('2', '10.0.0.9', 'failed')], T0), undefined);
  });
});
