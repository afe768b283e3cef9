// The durable pause honoured by taint replacement, end to end: tainted nodes count down, a
// `tend pause taint` lands mid-countdown, nothing is evicted after it is acknowledged (the
// evictions that fell due wait, visible in `tend taint status`), and `tend resume taint` evicts
// what fell due at once.
import assert from 'node:assert/strict';
import { runTend, type TendProcess } from '../harness/cli.ts';
import { admin, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { temporalCli } from '../harness/temporal.ts';
import { cleanUpTaintTest, condition, readPod, readyPodsOn, startTaintTend, taint, taintStatusFor } from '../harness/taint.ts';
import { SAFETY_WORKFLOW_ID } from '../../src/safety/messages.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const MAINTENANCE = 'example.org/maintenance';

/** No pause left from elsewhere, and none left behind: the pause is one per Temporal namespace. */
const endPause = () => temporalCli(['workflow', 'terminate', '--workflow-id', SAFETY_WORKFLOW_ID, '--reason', 'test reset']).catch(() => undefined);

describe('pause: taint replacement evicts nothing while paused (e2e)', function () {
  this.timeout(240_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string | undefined;
  const tainted = new Set<string>();

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'pause-taint');
    await endPause();
  });
  after(async () => {
    await endPause();
    await cleanUpTaintTest({ kube, ns, tend, config, tainted, settleMs: 30_000 });
  });

  it('a pause mid-countdown: no eviction after it is acknowledged; resume evicts what fell due', async () => {
    ({ config, tend } = await startTaintTend(ns, {
      taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 15 }], taintReplacementTimeSeconds: 1, maxConcurrentReplacements: 2,
    }));
    // Both pods on one node, so that one tainted node (under the breaker's share of the cluster) holds them.
    const pods = await readyPodsOn(kube, ns, 'db', 'sim-1', 2);
    tainted.add(`sim-1|${MAINTENANCE}`);
    await taint(kube, 'sim-1', { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });
    await waitFor('both pods marked', async () => {
      const marked = await Promise.all(pods.map(async (p) => condition(await readPod(kube, ns, p.metadata!.name!), 'NodeTaintDetected')));
      return marked.every(Boolean);
    }, { timeoutMs: 20_000 });

    const paused = await runTend(['pause', 'taint', '--reason', 'storm drill', '--config', config!], { timeoutMs: 60_000 });
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /^paused: taint/);

    // The countdown runs on: each pod falls due, its eviction is tried and held (visible, not counted).
    let seen = '';
    const held = await waitFor('both evictions held by the pause', async () => {
      const s = await taintStatusFor(config!);
      const rows = pods.map((p) => s.pods.find((r) => r.pod === p.metadata!.name));
      seen = JSON.stringify(rows);
      return rows.every((r) => r?.state === 'Blocked' && /taint: paused since .* storm drill/.test(r.lastError ?? '')) && rows;
    }, { timeoutMs: 60_000 }).catch((err: Error) => {
      throw new Error(`${err.message}; last seen: ${seen}`);
    });
    assert.ok(held.every((r) => r!.condition === 'NodeTaintReplacing'), JSON.stringify(held));
    // Their evictions were due and tried, and the pods are the same, not terminating: nothing evicted them.
    for (const p of pods) {
      const now = await readPod(kube, ns, p.metadata!.name!);
      assert.equal(now?.metadata?.uid, p.metadata!.uid, `${p.metadata!.name} replaced while paused`);
      assert.ok(!now?.metadata?.deletionTimestamp, `${p.metadata!.name} evicted while paused`);
    }

    const resumed = await runTend(['resume', 'taint', '--config', config!], { timeoutMs: 60_000 });
    assert.equal(resumed.code, 0, resumed.stderr);
    await waitFor('both pods evicted after the resume', async () => {
      const now = await Promise.all(pods.map((p) => readPod(kube, ns, p.metadata!.name!)));
      return now.every((n, i) => !n || n.metadata?.uid !== pods[i]!.metadata!.uid || !!n.metadata?.deletionTimestamp);
    }, { timeoutMs: 30_000 });
  });
});
