// Observe mode for the repair queue, end to end, and the switch to act without a restart: an
// entry whose step drains its node and runs a command goes through every step in observe mode,
// while the node is never cordoned, no pod is evicted and the command never runs; each write is
// recorded (Would* Events on the Node and the pods, tend_repair_would_*_total, the entry's
// result). Then the same running tend is switched to act, the same scenario runs again, and
// exactly what was recorded is done: the cordon, the same pods' evictions, the command, the uncordon.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { TendProcess } from '../harness/cli.ts';
import { httpPortBlock } from '../harness/env.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { counterFor, metricsOf } from '../harness/metrics.ts';
import { waitFor } from '../harness/wait.ts';
import { add, nodeUnschedulable, pinned, repairWorld, resetRepairQueue, temporalCli, tendWrites, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import { GUARD_ANNOTATION } from '../../src/repair/guard.ts';
import { repairEntryWorkflowId } from '../../src/repair/messages.ts';
import type { RepairEntryResult } from '../../src/workflows/repair.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const NODE = 'sim-2';
const ADDRESS = '10.88.0.2';

describe('observe mode: a repair entry records its cordon, evictions, command and uncordon, then does them when switched (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let world: RepairWorld;
  let tend: TendProcess | undefined;
  let ns: string;
  /** Whether the node was seen unschedulable: sampled every 100 ms while a run goes on. */
  let sampler: NodeJS.Timeout | undefined;
  let cordonSeen = false;
  let writes: Awaited<ReturnType<typeof tendWrites>>;
  const named = (w: { verb: string; resource: string; subresource?: string }) => `${w.verb} ${w.resource}${w.subresource ? `/${w.subresource}` : ''}`;
  type Patch = { verb: string; resource: string; name?: string; body?: unknown };
  const nodePatch = (w: Patch) => w.verb === 'patch' && w.resource === 'nodes' && w.name === NODE;
  const body = (w: Patch) => (w.body ?? {}) as { spec?: Record<string, unknown>; metadata?: { annotations?: Record<string, unknown> } };
  /** A cordon or an uncordon: a patch of the Node that sets or clears spec.unschedulable. */
  const cordonWrite = (w: Patch) => nodePatch(w) && 'unschedulable' in (body(w).spec ?? {});
  /** The entry's guard taken, renewed or released around a command (src/repair/guard.ts). */
  const guardWrite = (w: Patch) => nodePatch(w) && GUARD_ANNOTATION in (body(w).metadata?.annotations ?? {});

  before(async () => {
    kube = admin();
    writes = await tendWrites();
    await resetRepairQueue();
    // watch 600 s -> 30 s; the machine is healed by the test once the entry watches.
    world = repairWorld({ mode: 'observe' });
    ns = await tempNamespace(kube, 'observe-repair');
  });
  after(async () => {
    clearInterval(sampler);
    await tend?.stop();
    await deleteNamespace(kube, ns);
    await resetRepairQueue();
  });

  const sample = () => {
    cordonSeen = false;
    clearInterval(sampler);
    sampler = setInterval(() => {
      void nodeUnschedulable(NODE).then((u) => { cordonSeen ||= u; }, () => undefined);
    }, 100);
  };
  const commandRuns = () => {
    const f = join(world.dir, `${ADDRESS}.log`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').length : 0;
  };
  const podsOnNode = async () => (await kube.core.listNamespacedPod({ namespace: ns })).items
    .filter((p) => p.spec?.nodeName === NODE && p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
  /** Adds an entry, heals the machine once it watches (its command done or recorded), and waits for it to succeed. */
  const repairOnce = async () => {
    world.broken(ADDRESS);
    const e = await add(world, 'drain-wait', ADDRESS);
    await waitFor(`entry ${e.index} watching`, async () => (await queueEntry(e.index))?.step_status === 'watching', { timeoutMs: 120_000 });
    world.healthy(ADDRESS);
    const done = await waitFor(`entry ${e.index} succeeded`, async () => {
      const x = await queueEntry(e.index);
      if (x?.status === 'failed') throw new Error(`entry ${e.index} failed: ${JSON.stringify(x)}`);
      return x?.status === 'succeeded' && x;
    }, { timeoutMs: 120_000 });
    return done;
  };

  it('observe: nothing written, each write recorded; act: the same writes made, on the same pods', async () => {
    const http = `127.0.0.1:${httpPortBlock + 48}`;
    tend = new TendProcess(['run', '--config', world.config, '--http-address', http]);
    await waitFor('worker started', () => tend!.output.includes('worker started'), { timeoutMs: 180_000 });
    const d = pinned(ns, 'web', NODE);
    d.spec!.replicas = 2;
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: d });
    const pods = await waitFor('2 pods running on the node', async () => {
      const p = await podsOnNode();
      return p.length === 2 && p;
    }, { timeoutMs: 90_000 });
    const uids = new Set(pods.map((p) => p.metadata!.uid!));

    // Observe.
    sample();
    const observing = Date.now();
    const observed = await repairOnce();
    clearInterval(sampler);
    // kube-apiserver's own record: tend wrote nothing (Events aside) while observing.
    const observeWrites = await writes(observing);
    assert.deepEqual(observeWrites.map(named), [], 'tend wrote in observe mode');
    // Not even the guard a command runs under: observe mode runs no command, so it takes none.
    assert.deepEqual(observeWrites.filter(guardWrite).map(named), [], 'observe mode took the entry\'s guard on the Node');
    assert.equal(cordonSeen, false, 'the node was cordoned in observe mode');
    assert.equal(commandRuns(), 0, 'the repair command ran in observe mode');
    assert.deepEqual(new Set((await podsOnNode()).map((p) => p.metadata!.uid!)), uids, 'a pod was evicted in observe mode');
    assert.equal(observed.drain_backoff_count ?? 0, 0);

    const nodeEvents = async () => (await kube.events.listNamespacedEvent({ namespace: 'default', fieldSelector: `regarding.name=${NODE}` })).items
      .filter((e) => e.action === 'Observe' && (e.note ?? '').includes(`repair queue entry ${observed.index}`));
    const reasons = (await nodeEvents()).map((e) => e.reason).sort();
    assert.deepEqual(reasons, ['WouldCommand', 'WouldCordon', 'WouldUncordon'], JSON.stringify(reasons));
    const command = (await nodeEvents()).find((e) => e.reason === 'WouldCommand')!;
    assert.match(command.note ?? '', new RegExp(`^would run the repair_command of step 0 of operation "drain-wait" of machine type "sim" for ${ADDRESS.replace(/\./g, '\\.')}: repair queue entry ${observed.index};`));
    const wouldEvict = (await kube.events.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.reason === 'WouldEvict');
    assert.deepEqual(new Set(wouldEvict.map((e) => e.regarding!.uid)), uids, 'the recorded evictions are not of the pods on the node');
    for (const e of wouldEvict) assert.match(e.note ?? '', new RegExp(`^would evict pod ${ns}/web-[a-z0-9-]+ from node ${NODE}: repair queue entry ${observed.index} drains node ${NODE}$`));

    const metrics = await metricsOf(http);
    assert.equal(counterFor(metrics, 'tend_repair_would_evict_total', ns), 2);
    for (const action of ['cordon', 'command', 'uncordon']) assert.equal(counterFor(metrics, `tend_repair_would_${action}_total`, ''), 1, action);

    const { stdout } = await temporalCli(['workflow', 'result', '--workflow-id', repairEntryWorkflowId(observed.index), '--output', 'json']);
    const result = (JSON.parse(stdout) as { result: RepairEntryResult }).result;
    // Pods of other namespaces on the node count too: at least this test's two.
    assert.equal(result.observed?.length, 3, JSON.stringify(result.observed));
    const drained = new RegExp(`^drain node ${NODE}: cordon it, evict (\\d+) pod\\(s\\), delete \\d+$`).exec(result.observed![0]!);
    assert.ok(drained && Number(drained[1]) >= 2, result.observed![0]);
    assert.deepEqual(result.observed!.slice(1), ['run the repair_command of step 0', `uncordon node ${NODE}`]);

    // Act, by the same tend reading its configuration again.
    writeFileSync(world.config, readFileSync(world.config, 'utf8').replace('mode: observe', 'mode: act'));
    await waitFor('tend to see the mode change', () => tend!.logs.includes('mode changed: repair now acts'), { timeoutMs: 30_000 });
    sample();
    const acting = Date.now();
    const acted = await repairOnce();
    clearInterval(sampler);
    // The same record: act mode made each write observe mode recorded (one cordon and one uncordon, two evictions;
    // other pods on the node, of other namespaces, are drained too).
    const made = await writes(acting);
    const cordons = made.filter(cordonWrite).map((w) => body(w).spec!.unschedulable);
    assert.deepEqual(cordons, [true, null], `the cordon, then the uncordon: ${made.map(named).join(', ')}`);
    // Every other patch of the Node is the command's guard (taken, then released with its exit code).
    assert.deepEqual(made.filter((w) => nodePatch(w) && !cordonWrite(w) && !guardWrite(w)).map(named), [], 'act mode patched the Node otherwise');
    assert.ok(made.filter(guardWrite).length >= 2, 'act mode ran the command without its guard on the Node');
    assert.equal(made.filter((w) => named(w) === 'create pods/eviction' && w.namespace === ns).length, 2, made.map(named).join(', '));
    assert.equal(cordonSeen, true, 'act mode did not cordon the node');
    assert.equal(commandRuns(), 1, 'act mode did not run the repair command once');
    assert.equal(await nodeUnschedulable(NODE), false, 'act mode left the node cordoned');
    const now = (await kube.core.listNamespacedPod({ namespace: ns })).items as k8s.V1Pod[];
    const gone = [...uids].filter((u) => !now.some((p) => p.metadata?.uid === u && !p.metadata?.deletionTimestamp));
    assert.deepEqual(new Set(gone), uids, 'act mode evicted other pods than observe mode recorded');
    assert.equal(counterFor(await metricsOf(http), 'tend_repair_would_evict_total', ns), 2, 'act mode counted would-evictions');
    const actedResult = (JSON.parse((await temporalCli(['workflow', 'result', '--workflow-id', repairEntryWorkflowId(acted.index), '--output', 'json'])).stdout) as { result: RepairEntryResult }).result;
    assert.equal(actedResult.observed, undefined, 'act mode recorded observations');
  });
});
