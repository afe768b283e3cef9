// src/metrics/ (state.ts, pause.ts, informer.ts, registry.ts): the gauges an alert reads.
// The repair entries by operation and status (an unknown operation under `other`), the oldest
// open weeder window, the pause's start, an informer's synced flag from the real informer, and
// every tend_* gauge said to describe the cluster or the process (GAUGE_SCOPE).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import { configuredOperations, entriesByOperation, oldestOpenedAt, OTHER_OPERATION } from '../../src/metrics/state.ts';
import { notePauseState } from '../../src/metrics/pause.ts';
import { startWatchedInformer } from '../../src/metrics/informer.ts';
import { GAUGE_SCOPE, registry } from '../../src/metrics/registry.ts';
import { repairStatuses, type RepairQueueEntry } from '../../src/repair/entry.ts';
import { PAUSABLE } from '../../src/safety/messages.ts';
import { Health } from '../../src/http/health.ts';
import { waitFor } from '../harness/wait.ts';
import { repoRoot } from '../harness/env.ts';
import type { Config } from '../../src/config/load.ts';
import type { WindowSnapshot } from '../../src/weeder/window.ts';

/** The value of `name`'s series with exactly `labels`, or undefined when it has none. */
async function value(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const got = await registry.getSingleMetric(name)!.get();
  const want = JSON.stringify(Object.entries(labels).sort());
  return got.values.find((s) => JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}

describe('metrics: tend_repair_queue_entries by operation and status', () => {
  const e = (operation: string, status: RepairQueueEntry['status']) => ({ operation, status }) as RepairQueueEntry;
  const counted = (entries: RepairQueueEntry[], operations: string[]) =>
    Object.fromEntries([...entriesByOperation(entries, operations).values()].map((c) => [`${c.operation} ${c.status}`, c.n]));

  it('counts every configured operation with every status (0 when none), an unknown operation under other', () => {
    assert.deepEqual(counted([e('reboot', 'queued'), e('reboot', 'queued'), e('reboot', 'failed'), e('x'.repeat(60), 'processing'), e('nope', 'processing')],
      ['reboot', 'reimage']), {
      'reboot queued': 2, 'reboot processing': 0, 'reboot succeeded': 0, 'reboot failed': 1,
      'reimage queued': 0, 'reimage processing': 0, 'reimage succeeded': 0, 'reimage failed': 0,
      [`${OTHER_OPERATION} processing`]: 2,
    });
  });

  it('has at most (operations + 1) x statuses series however many entries and names there are', () => {
    const entries = Array.from({ length: 1000 }, (_, i) => e(`op-${i}`, repairStatuses[i % repairStatuses.length]!));
    assert.equal(entriesByOperation(entries, ['reboot']).size, 2 * repairStatuses.length);
  });

  it('finds the operations of every procedure in the repair section, each once', () => {
    const repair = {
      repair_procedures: [
        { machine_types: ['a'], repair_operations: [{ operation: 'reboot' }, { operation: 'reimage' }] },
        { machine_types: ['b'], repair_operations: [{ operation: 'reboot' }] },
      ],
    } as unknown as Config['repair'];
    assert.deepEqual(configuredOperations(repair), ['reboot', 'reimage']);
    assert.deepEqual(configuredOperations(undefined), []);
  });
});

describe('metrics: tend_weeder_window_oldest_open_seconds', () => {
  const now = 1_000_000;
  const w = (x: Partial<WindowSnapshot>): WindowSnapshot => ({ deadline: 0, transitions: 0, weeded: [], reported: [], ...x });

  it('is the first opening of the oldest window counted open; armed, stopped, failed and expired ones do not count', () => {
    assert.equal(oldestOpenedAt([
      w({ openedAt: now - 50, deadline: now + 10 }),
      w({ openedAt: now - 90, deadline: now + 10 }),
      w({ openedAt: now - 500, deadline: now + 10, armed: { since: now - 5, until: now + 60 } }),
      w({ openedAt: now - 400, deadline: now - 1 }),
      w({ openedAt: now - 300, deadline: now + 10, stopped: { at: now - 3, reason: 'operator' } }),
      w({ openedAt: now - 200, deadline: now + 10, failure: { at: now - 4, reason: 'gave up' } }),
    ], now), now - 90);
  });

  it('is undefined when no window is open', () => {
    assert.equal(oldestOpenedAt([w({ armed: { since: 1, until: now + 60 } })], now), undefined);
    assert.equal(oldestOpenedAt([], now), undefined);
  });
});

describe('metrics: tend_paused and tend_paused_since_timestamp_seconds', () => {
  const paused = (since?: string) => ({ paused: true, reason: 'r', ...(since !== undefined ? { since } : {}) });

  it('gives each paused capability its start in Unix seconds, and none to one that acts', async () => {
    notePauseState(PAUSABLE, { capabilities: { weeder: paused('2026-11-27T10:00:00.5Z'), taint: { paused: false }, apps: { paused: false }, repair: paused('2026-11-27T11:00:00Z') } });
    assert.equal(await value('tend_paused_since_timestamp_seconds', { capability: 'weeder' }), Date.UTC(2026, 10, 27, 10) / 1000 + 0.5);
    assert.equal(await value('tend_paused_since_timestamp_seconds', { capability: 'repair' }), Date.UTC(2026, 10, 27, 11) / 1000);
    assert.equal(await value('tend_paused_since_timestamp_seconds', { capability: 'taint' }), undefined);
    assert.equal(await value('tend_paused', { capability: 'weeder' }), 1);
    assert.equal(await value('tend_paused', { capability: 'taint' }), 0);
  });

  it('drops the start on resume, when no tend-safety runs, and for a pause without a readable start', async () => {
    notePauseState(PAUSABLE, { capabilities: { weeder: { paused: false }, taint: paused(), apps: paused('not a time'), repair: paused('2026-11-27T11:00:00Z') } });
    for (const capability of ['weeder', 'taint', 'apps']) assert.equal(await value('tend_paused_since_timestamp_seconds', { capability }), undefined, capability);
    assert.equal(await value('tend_paused', { capability: 'taint' }), 1);
    notePauseState(PAUSABLE, undefined);
    assert.equal(await value('tend_paused_since_timestamp_seconds', { capability: 'repair' }), undefined);
    assert.equal(await value('tend_paused', { capability: 'repair' }), 0);
  });
});

describe('metrics: tend_watcher_informer_synced', () => {
  it("is 0 before the real informer's first list, 1 once it is delivered, and gone once the informer stops", async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }], users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x',
    });
    let answer!: () => void;
    const listed = new Promise<void>((resolve) => (answer = resolve));
    const labels = { capability: 'unit', resource: 'synced' };
    const informer = startWatchedInformer<k8s.V1Pod>('unit', 'synced', {
      kc, path: '/api/v1/pods', log: pino({ level: 'silent' }), retryMs: 60_000,
      list: async () => {
        await listed;
        return { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '1' }, items: [] };
      },
      onUpsert: () => undefined, onDelete: () => undefined,
    }, new Health());
    try {
      assert.equal(await value('tend_watcher_informer_synced', labels), 0);
      answer();
      await waitFor('synced 1', async () => (await value('tend_watcher_informer_synced', labels)) === 1, { timeoutMs: 5000, intervalMs: 20 });
    } finally {
      await informer.stop();
    }
    assert.equal(await value('tend_watcher_informer_synced', labels), undefined);
  });
});

describe('metrics: what each gauge describes', () => {
  it('names every tend_* gauge of the registry in GAUGE_SCOPE, and nothing else', async () => {
    const gauges = (await registry.getMetricsAsJSON()).filter((m) => m.name.startsWith('tend_') && String(m.type) === 'gauge').map((m) => m.name);
    assert.deepEqual([...gauges].sort(), Object.keys(GAUGE_SCOPE).sort());
  });

  it('names every tend_* gauge written anywhere in src/ (outside src/metrics too)', () => {
    const missing: string[] = [];
    let found = 0;
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, e.name);
        if (e.isDirectory()) walk(path);
        else if (e.name.endsWith('.ts')) {
          for (const m of readFileSync(path, 'utf8').matchAll(/new Gauge\(\{\s*name:\s*['"`](tend_[a-z_]+)/g)) {
            found++;
            if (!Object.hasOwn(GAUGE_SCOPE, m[1]!)) missing.push(`${relative(repoRoot, path)}: ${m[1]}`);
          }
        }
      }
    };
    walk(join(repoRoot, 'src'));
    assert.ok(found >= Object.keys(GAUGE_SCOPE).length, `only ${found} gauges found in src/`);
    assert.deepEqual(missing, []);
  });
});
