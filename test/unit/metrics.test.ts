// src/metrics/ (state.ts, weeder.ts, apps.ts, informer.ts, registry.ts), and sdkLogFields (src/workers/runtime.ts).
// tend's metrics, their pure parts: what the state gauges count, what the
// activities' counters observe, how the SDK's log lines are written, and that
// an informer restart is counted from the real informer's report of it.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { itemsByStatus, podsByCondition, windowStates } from '../../src/metrics/state.ts';
import { noteReadyAt, weederOutcomes } from '../../src/metrics/weeder.ts';
import { countedReconcile } from '../../src/metrics/apps.ts';
import { startWatchedInformer } from '../../src/metrics/informer.ts';
import { registry, tendMetrics, onScrape } from '../../src/metrics/registry.ts';
import { tendCommit, tendVersion } from '../../src/version.ts';
import { Health } from '../../src/http/health.ts';
import { sdkLogFields } from '../../src/workers/runtime.ts';
import { waitFor } from '../harness/wait.ts';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';
import type { PodStatusRow } from '../../src/taint/node.ts';
import type { WindowSnapshot } from '../../src/weeder/window.ts';

/** One series' value in the registry (labels must match exactly), or undefined. */
async function value(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const base = name.replace(/_(bucket|count|sum)$/, '');
  const metric = registry.getSingleMetric(base) ?? registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const got = await metric.get();
  const want = JSON.stringify(Object.entries(labels).sort());
  const v = got.values.find((s) => (s as { metricName?: string }).metricName === undefined || (s as { metricName?: string }).metricName === name
    ? JSON.stringify(Object.entries(s.labels).sort()) === want
    : false);
  return v?.value;
}

describe('metrics: the build', () => {
  it('tend_build_info is 1 with the version and the commit tend --version prints', async () => {
    assert.equal(await value('tend_build_info', { version: tendVersion(), commit: tendCommit() }), 1);
    const text = await registry.metrics();
    assert.equal(text.split('\n').filter((l) => l.startsWith('tend_build_info{')).length, 1, 'one series');
  });
});

describe('metrics: workflow-state gauges', () => {
  const now = 1_000_000;
  const w = (x: Partial<WindowSnapshot>): WindowSnapshot => ({ deadline: 0, transitions: 0, weeded: [], reported: [], ...x });

  it('counts weeder windows open and armed; stopped, failed and expired ones are neither', () => {
    assert.deepEqual(windowStates([
      w({ openedAt: 1, deadline: now + 10 }),
      w({ openedAt: 1, deadline: now + 10, armed: { since: 5, until: now + 60 } }),
      w({ armed: { since: 5, until: now + 60 } }),
      w({ openedAt: 1, deadline: now - 1 }),
      w({ openedAt: 1, deadline: now + 10, stopped: { at: 3, reason: 'operator' } }),
      w({ armed: { since: 5, until: now + 60 }, failure: { at: 4, reason: 'gave up' } }),
    ], now), { open: 1, armed: 2 });
  });

  it('counts repair queue entries by every status, 0 for none', () => {
    const e = (status: RepairQueueEntry['status']) => ({ status }) as RepairQueueEntry;
    assert.deepEqual(itemsByStatus([e('queued'), e('queued'), e('failed')]), { queued: 2, processing: 0, succeeded: 0, failed: 1 });
    assert.deepEqual(itemsByStatus([]), { queued: 0, processing: 0, succeeded: 0, failed: 0 });
  });

  it('counts taint pods by the condition they carry', () => {
    const r = (condition: PodStatusRow['condition']) => ({ condition }) as PodStatusRow;
    assert.deepEqual(podsByCondition([r('NodeTaintDetected'), r('NodeTaintReplacing'), r('NodeTaintReplacing'), r('')]),
      { NodeTaintDetected: 1, NodeTaintReplacing: 2 });
  });

  it('runs the scrape-time refreshers before writing, and one that fails does not fail the scrape', async () => {
    let ran = 0;
    const stopA = onScrape(async () => { ran++; });
    const stopB = onScrape(async () => { throw new Error('Temporal is down'); });
    try {
      const text = await tendMetrics();
      assert.equal(ran, 1);
      assert.match(text, /^# HELP tend_weeder_pods_weeded_total /m);
    } finally {
      stopA();
      stopB();
    }
  });
});

describe('metrics: weeder counters and reaction time', () => {
  it('counts deletions (not an earlier attempt\'s), reports and refusals; observes the reaction once per readiness', async () => {
    const labels = { namespace: 'm-ns', service: 'db' };
    const t0 = Date.now();
    noteReadyAt('m-ns', 'db', t0);
    weederOutcomes('m-ns', 'db', [
      { uid: 'a', outcome: 'deleted', at: '' },
      { uid: 'b', outcome: 'deleted', at: '', earlier: true },
      { uid: 'c', outcome: 'reported', at: '' },
      { uid: 'd', outcome: 'failed', at: '', reason: 'forbidden' },
      { uid: 'e', outcome: 'skipped', reason: 'gone' },
    ], t0 + 1500);
    assert.equal(await value('tend_weeder_pods_weeded_total', labels), 1);
    assert.equal(await value('tend_weeder_pods_reported_total', labels), 1);
    assert.equal(await value('tend_weeder_deletes_refused_total', labels), 1);
    assert.equal(await value('tend_weeder_reaction_seconds_count', labels), 1);
    assert.equal(await value('tend_weeder_reaction_seconds_sum', labels), 1.5);
    // A later deletion in the same window is no reaction to the Service turning ready.
    weederOutcomes('m-ns', 'db', [{ uid: 'f', outcome: 'deleted', at: '' }], t0 + 60_000);
    assert.equal(await value('tend_weeder_pods_weeded_total', labels), 2);
    assert.equal(await value('tend_weeder_reaction_seconds_count', labels), 1);
  });

  it('a deletion the pause held, or observe mode recorded, first is no reaction time', async () => {
    for (const [service, first] of [['held-db', { uid: 'h', outcome: 'held', reason: 'weeder: paused' }], ['observed-db', { uid: 'o', outcome: 'observed', at: '', note: 'would delete' }]] as const) {
      const labels = { namespace: 'm-ns', service };
      const t0 = Date.now();
      noteReadyAt('m-ns', service, t0);
      weederOutcomes('m-ns', service, [first], t0 + 100);
      // Resumed (or switched to act) five minutes later: the deletion is counted, its wait is not tend's reaction.
      weederOutcomes('m-ns', service, [{ uid: first.uid, outcome: 'deleted', at: '' }], t0 + 300_000);
      assert.equal(await value('tend_weeder_pods_weeded_total', labels), 1);
      assert.equal(await value('tend_weeder_reaction_seconds_count', labels), undefined, service);
    }
  });
});

describe('metrics: apps reconciles', () => {
  it('counts completed and failed reconciles by namespace, passing results and errors through', async () => {
    const reconcile = countedReconcile(async (input: { namespace: string; fail?: boolean }) => {
      if (input.fail) throw new Error('conflict');
      return 'ok';
    });
    assert.equal(await reconcile({ namespace: 'apps-m' }), 'ok');
    await assert.rejects(reconcile({ namespace: 'apps-m', fail: true }), /conflict/);
    await assert.rejects(reconcile({ namespace: 'apps-m', fail: true }), /conflict/);
    assert.equal(await value('tend_apps_reconciles_total', { namespace: 'apps-m' }), 1);
    assert.equal(await value('tend_apps_reconcile_errors_total', { namespace: 'apps-m' }), 2);
  });
});

describe('metrics: the watcher\'s informers', () => {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  const log = pino({ level: 'info' }, sink);

  it("counts the real informer's restarts after failed lists, and is not ready before its first list", async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }], users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x',
    });
    const checks = new Health();
    let lists = 0;
    const labels = { capability: 'unit', resource: 'pods' };
    const before = (await value('tend_watcher_informer_restarts_total', labels)) ?? 0;
    const informer = startWatchedInformer<k8s.V1Pod>('unit', 'pods', {
      kc, path: '/api/v1/pods', log, retryMs: 10,
      list: async () => {
        lists++;
        throw new Error('connection refused');
      },
      onUpsert: () => undefined, onDelete: () => undefined,
    }, checks);
    try {
      await waitFor('two restarts', async () => ((await value('tend_watcher_informer_restarts_total', labels)) ?? 0) - before >= 2, { timeoutMs: 5000, intervalMs: 20 });
      assert.ok(lists >= 2);
      assert.deepEqual(checks.readiness(), { ok: false, problems: ['informer unit/pods: first list not done yet'] });
    } finally {
      await informer.stop();
    }
    assert.deepEqual(checks.names(), []);
  });
});

describe('metrics: the SDK\'s log lines', () => {
  it('a core line gets tend\'s field names, its spans\' workflow and activity ids, and source temporal-core', () => {
    const fields = sdkLogFields({
      sdkComponent: 'core', target: 'temporalio_sdk_core::worker', task_queue: 'tend',
      spanContexts: [
        { name: 'poll', fields: { task_queue: 'tend' } },
        { name: 'activity', fields: { workflow_id: 'weeder/ns/db', run_id: 'r1', activity_type: 'weedPods' } },
      ],
    } as never);
    assert.deepEqual(fields, {
      taskQueue: 'tend', workflowId: 'weeder/ns/db', runId: 'r1', activityType: 'weedPods',
      target: 'temporalio_sdk_core::worker', source: 'temporal-core',
    });
  });

  it('an SDK line keeps its fields; an Error goes to err', () => {
    const err = new Error('boom');
    const fields = sdkLogFields({ sdkComponent: 'worker', taskQueue: 'tend', error: err } as never);
    assert.deepEqual(fields, { taskQueue: 'tend', err, source: 'temporal-sdk', sdkComponent: 'worker' });
  });
});
