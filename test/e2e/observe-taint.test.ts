// Observe mode for taint replacement, end to end, and the switch to act without a restart:
// tainted pods count down and fall due in observe mode; nothing is evicted, each eviction act
// mode would ask is recorded (a WouldEvict Event, tend_taint_would_evict_total, `tend taint
// status`); then the same running tend's configuration is switched to act, and exactly the pods
// it recorded are evicted at once (their countdowns are not started again).
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { TendProcess } from '../harness/cli.ts';
import { httpPortBlock } from '../harness/env.ts';
import { admin, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { cleanUpTaintTest, managedLabel, readPod, readyPodsOn, taint, taintConfig, taintStatusJson } from '../harness/taint.ts';
import { counterFor, metricsOf } from '../harness/metrics.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const MAINTENANCE = 'example.org/maintenance';

describe('observe mode: taint replacement records the evictions it would ask, then acts on them when switched (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string | undefined;
  const tainted = new Set<string>();

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'observe-taint');
  });
  after(async () => {
    await cleanUpTaintTest({ kube, ns, tend, config, tainted, settleMs: 30_000 });
  });

  it('observe: nothing evicted, every due eviction recorded; act: exactly those pods evicted, at once', async () => {
    config = await taintConfig({
      mode: 'observe', podSelector: { matchLabels: managedLabel(ns) }, namespaces: [ns],
      taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 5 }], taintReplacementTimeSeconds: 1, maxConcurrentReplacements: 2,
    });
    const http = `127.0.0.1:${httpPortBlock + 49}`;
    tend = new TendProcess(['run', '--config', config, '--http-address', http]);
    await waitFor('tend to start its worker and taint watch',
      () => tend!.output.includes('taint watch synced') && tend!.output.includes('worker started'), { timeoutMs: 120_000 });
    const metric = async () => counterFor(await metricsOf(http), 'tend_taint_would_evict_total', ns);

    // Both pods on one node, so that one tainted node (under the breaker's share of the cluster) holds them.
    const pods = await readyPodsOn(kube, ns, 'db', 'sim-1', 2);
    const uids = new Set(pods.map((p) => p.metadata!.uid!));
    tainted.add(`sim-1|${MAINTENANCE}`);
    await taint(kube, 'sim-1', { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });

    // Observe: both fall due; each eviction is recorded on its pod, none asked.
    const wouldEvict = async () => (await kube.events.listNamespacedEvent({ namespace: ns })).items
      .filter((e) => e.reason === 'WouldEvict' && e.regarding?.kind === 'Pod');
    const recorded = await waitFor('a WouldEvict Event for each pod', async () => {
      const events = await wouldEvict();
      return events.length >= 2 && events;
    }, { timeoutMs: 90_000 });
    assert.deepEqual(new Set(recorded.map((e) => e.regarding!.uid)), uids, 'the recorded pods are not the tainted ones');
    for (const e of recorded) {
      assert.equal(e.action, 'Observe');
      assert.match(e.note ?? '', new RegExp(`^would evict pod ${ns}/db-[a-z0-9-]+ from node sim-1: tainted ${MAINTENANCE}$`));
    }
    const status = await taintStatusJson(config);
    for (const p of pods) {
      const row = status.pods.find((r) => r.pod === p.metadata!.name);
      assert.match(row?.lastError ?? '', /observe mode: would evict/, JSON.stringify(row));
    }
    assert.equal(await metric(), 2);
    for (const p of pods) {
      const now = await readPod(kube, ns, p.metadata!.name!);
      assert.equal(now?.metadata?.uid, p.metadata!.uid, `${p.metadata!.name} replaced in observe mode`);
      assert.ok(!now?.metadata?.deletionTimestamp, `${p.metadata!.name} evicted in observe mode`);
    }

    // Act, by the same tend reading its configuration again: what is due is evicted at once.
    await writeFile(config, (await readFile(config, 'utf8')).replace('mode: observe', 'mode: act'));
    await waitFor('tend to see the mode change', () => tend!.logs.includes('mode changed: taint now acts'), { timeoutMs: 30_000 });
    const evicted = await waitFor('both recorded pods evicted', async () => {
      const now = await Promise.all(pods.map((p) => readPod(kube, ns, p.metadata!.name!)));
      const gone = pods.filter((p, i) => !now[i] || now[i]!.metadata?.uid !== p.metadata!.uid || !!now[i]!.metadata?.deletionTimestamp);
      return gone.length === 2 && gone;
    }, { timeoutMs: 60_000 });
    assert.deepEqual(new Set(evicted.map((p) => p.metadata!.uid!)), new Set(recorded.map((e) => e.regarding!.uid!)),
      'act mode evicted other pods than observe mode recorded');
    assert.equal(await metric(), 2, 'act mode counted would-evictions');
    assert.equal((await wouldEvict()).length, 2, 'act mode recorded WouldEvict Events');
  });
});
