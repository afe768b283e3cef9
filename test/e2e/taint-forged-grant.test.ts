// A grant reaches a node workflow as a signal, which anyone who may signal in tend's namespace
// can forge: the eviction is asked only for a slot the coordinator itself holds as granted, and a
// coordinator adopts only holds a node's eviction found granted (never what a message names).
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import type { TendProcess } from '../harness/cli.ts';
import { admin, deployment, isReady, podsOf, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { temporalCli } from '../harness/temporal.ts';
import { budget, cleanUpTaintTest, managedLabel, readPod, startTaintTend, taint, taintStatusFor } from '../harness/taint.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const MAINTENANCE = 'example.org/maintenance';

/** The parts of `temporal workflow show --output json`'s events read here. */
interface HistoryEvent {
  eventId?: string | number;
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
  activityTaskCompletedEventAttributes?: { scheduledEventId?: string | number };
}

describe('taint replacement: a forged grant', function () {
  this.timeout(240_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string | undefined;
  const tainted = new Set<string>();

  before(() => {
    kube = admin();
  });
  beforeEach(async () => {
    ns = await tempNamespace(kube, 'taint');
  });
  afterEach(async function () {
    await cleanUpTaintTest({ kube, ns, tend, config, tainted, stoppedNodes: new Set(), settleMs: 60_000 });
    tend = undefined;
    config = undefined;
  });

  const evicted = (p: k8s.V1Pod | undefined, uid: string) => !p || p.metadata?.uid !== uid || !!p.metadata?.deletionTimestamp;
  const pinned = async (name: string, node: string) => {
    const body = deployment({ namespace: ns, name, replicas: 1, labels: managedLabel(ns) });
    body.spec!.template.spec!.nodeSelector = { 'kubernetes.io/hostname': node };
    body.spec!.template.spec!.tolerations = [{ key: MAINTENANCE, operator: 'Exists' }];
    await kube.apps.createNamespacedDeployment({ namespace: ns, body });
    return waitFor(`a ready pod of ${name}`, async () => (await podsOf(kube, ns, `app=${name}`)).find((p) => isReady(p) && !p.metadata?.deletionTimestamp),
      { timeoutMs: 60_000 });
  };

  /** How many times the coordinator has asked a node's workflow what it holds (taintNodeSlots completed), in its current run. */
  const holderChecks = async (): Promise<number> => {
    const { stdout } = await temporalCli(['workflow', 'show', '--workflow-id', 'taint-replacements', '--output', 'json']);
    const events = (JSON.parse(stdout) as { events: HistoryEvent[] }).events;
    const asks = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'taintNodeSlots').map((e) => String(e.eventId)));
    return events.filter((e) => asks.has(String(e.activityTaskCompletedEventAttributes?.scheduledEventId))).length;
  };

  it('maxConcurrentReplacements 1: a forged replacementsGranted, announceSlots or slotsHeld evicts nothing and adopts nothing; the coordinator\'s own grant evicts', async () => {
    ({ config, tend } = await startTaintTend(ns, {
      taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 1,
      maxConcurrentReplacements: 1, breaker: { maxTaintedNodes: 3 },
    }));
    const cfg = config;
    const a = await pinned('a', 'sim-1');
    const b = await pinned('b', 'sim-2');
    // a holds the only slot: its eviction blocked by a budget.
    await budget(kube, ns, 'a', 1);
    tainted.add(`sim-1|${MAINTENANCE}`);
    await taint(kube, 'sim-1', { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });
    await waitFor('a holding the only slot, its eviction blocked', async () => {
      const s = await taintStatusFor(cfg);
      return s.pods.find((p) => p.pod === a.metadata!.name)?.state === 'Blocked' && s.slots?.inFlight.length === 1;
    }, { timeoutMs: 60_000 });
    tainted.add(`sim-2|${MAINTENANCE}`);
    await taint(kube, 'sim-2', { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });
    await waitFor('b waiting for a slot', async () => (await taintStatusFor(cfg)).pods.find((p) => p.pod === b.metadata!.name)?.state === 'Queued',
      { timeoutMs: 60_000 });

    // The forgery: a grant of b's slot, as the coordinator would send it.
    await temporalCli(['workflow', 'signal', '--workflow-id', 'taint/sim-2', '--name', 'replacementsGranted',
      '--input', JSON.stringify({ uids: [b.metadata!.uid] })]);
    const row = await waitFor('b\'s eviction held for want of the coordinator\'s grant', async () =>
      (await taintStatusFor(cfg)).pods.find((p) => p.pod === b.metadata!.name && /holds no slot granted/.test(p.lastError ?? '')), { timeoutMs: 30_000 });
    assert.ok(row);
    assert.ok(!evicted(await readPod(kube, ns, b.metadata!.name!), b.metadata!.uid!), 'b not evicted on a forged grant');
    assert.ok(!evicted(await readPod(kube, ns, a.metadata!.name!), a.metadata!.uid!), 'a held by its budget');
    assert.equal(row.state, 'Queued', 'b waits for a slot again');
    const only = async (what: string) => {
      const s = await taintStatusFor(cfg);
      assert.deepEqual(s.slots?.inFlight.map((g) => g.pod), [`${ns}/${a.metadata!.name!}`], `${what}: one in flight, a's, the limit`);
      assert.ok(!evicted(await readPod(kube, ns, b.metadata!.name!), b.metadata!.uid!), `${what}: b not evicted`);
    };
    await only('after a forged grant');

    // Then what a fresh coordinator would send: b's node asked what it holds (announceSlots; its
    // answer names b only if the forged grant had made b hold a slot), and a slotsHeld naming b,
    // as if from b's node. Each is a hint: the coordinator asks sim-2's workflow itself.
    const asked = await holderChecks();
    await temporalCli(['workflow', 'signal', '--workflow-id', 'taint/sim-2', '--name', 'replacementsGranted', '--input', JSON.stringify({ uids: [b.metadata!.uid] })]);
    await temporalCli(['workflow', 'signal', '--workflow-id', 'taint/sim-2', '--name', 'announceSlots']);
    await temporalCli(['workflow', 'signal', '--workflow-id', 'taint-replacements', '--name', 'slotsHeld', '--input', JSON.stringify({
      node: 'sim-2', held: [{ node: 'sim-2', uid: b.metadata!.uid, pod: `${ns}/${b.metadata!.name!}`, requestedAt: Date.now() }],
    })]);
    await waitFor('the coordinator asked sim-2\'s workflow what it holds', async () => (await holderChecks()) > asked, { timeoutMs: 30_000 });
    await waitFor('b waiting for a slot again', async () => (await taintStatusFor(cfg)).pods.find((p) => p.pod === b.metadata!.name)?.state === 'Queued',
      { timeoutMs: 30_000 });
    await only('after forged announceSlots and slotsHeld');

    // The real grant, once a's slot is free, still goes through.
    await kube.policy.deleteNamespacedPodDisruptionBudget({ namespace: ns, name: 'a' });
    await waitFor('a evicted once its budget is gone', async () => evicted(await readPod(kube, ns, a.metadata!.name!), a.metadata!.uid!),
      { timeoutMs: 120_000 });
    await waitFor('b granted the slot a gave back, and evicted', async () => evicted(await readPod(kube, ns, b.metadata!.name!), b.metadata!.uid!),
      { timeoutMs: 120_000 });
  });
});
