// The durable pause honoured by a repair drain, end to end: a drain is held up by a
// PodDisruptionBudget (its eviction retried every second), `tend pause repair` lands, the budget
// is lifted: the drain reaches its next eviction and holds it, nothing is evicted, deleted,
// uncordoned or run after the pause is acknowledged; `tend resume repair` lets the drain go on
// at once: the pods are evicted, the command runs, the node is uncordoned, the entry succeeds.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { runTend, TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { add, nodeUnschedulable, pinned, repairWorld, resetRepairQueue, temporalCli, tendWrites, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import { SAFETY_WORKFLOW_ID } from '../../src/safety/messages.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const NODE = 'sim-3';
const ADDRESS = '10.88.0.3';

/** No pause left from elsewhere, and none left behind: the pause is one per Temporal namespace. */
const endPause = () => temporalCli(['workflow', 'terminate', '--workflow-id', SAFETY_WORKFLOW_ID, '--reason', 'test reset']).catch(() => undefined);

describe('pause: a repair drain stops evicting while paused (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let world: RepairWorld;
  let tend: TendProcess | undefined;
  /** Sorted before `rest`, so that the drain meets its budget-held pod first. */
  let held: string;
  let rest: string;
  let writes: Awaited<ReturnType<typeof tendWrites>>;

  before(async () => {
    kube = admin();
    writes = await tendWrites();
    await endPause();
    await resetRepairQueue();
    // A refused eviction is asked again every second (20 s x 0.05), for as long as the eviction timeout (4000 s x 0.05 = 200 s).
    world = repairWorld({ evict_retries: 1000, evict_interval: 20, eviction_timeout_seconds: 4000 });
    held = await tempNamespace(kube, 'pause-repair-a');
    rest = await tempNamespace(kube, 'pause-repair-b');
    await kube.core.patchNamespace({ name: held, body: [{ op: 'add', path: '/metadata/labels/repair.tend.dev~1protected', value: 'true' }] });
  });
  after(async () => {
    await endPause();
    await tend?.stop();
    for (const ns of [held, rest]) await deleteNamespace(kube, ns);
    await resetRepairQueue();
  });

  const running = async (ns: string) => (await kube.core.listNamespacedPod({ namespace: ns })).items
    .filter((p) => p.spec?.nodeName === NODE && p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
  const untouched = async (pods: k8s.V1Pod[]) => {
    for (const p of pods) {
      const now = (await kube.core.listNamespacedPod({ namespace: p.metadata!.namespace! })).items.find((x) => x.metadata?.uid === p.metadata!.uid);
      assert.ok(now && !now.metadata?.deletionTimestamp, `${p.metadata!.namespace}/${p.metadata!.name} evicted or deleted while paused`);
    }
  };
  const commandRuns = () => {
    const f = join(world.dir, `${ADDRESS}.log`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').length : 0;
  };

  it('a pause mid-drain: no eviction, deletion, uncordon or command after it is acknowledged; resume goes on at once', async () => {
    tend = new TendProcess(['run', '--config', world.config]);
    await waitFor('worker started', () => tend!.output.includes('worker started'), { timeoutMs: 180_000 });
    await kube.apps.createNamespacedDeployment({ namespace: held, body: pinned(held, 'db', NODE) });
    await kube.policy.createNamespacedPodDisruptionBudget({
      namespace: held, body: { metadata: { name: 'keep', namespace: held }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } } },
    });
    const web = pinned(rest, 'web', NODE);
    web.spec!.replicas = 2;
    await kube.apps.createNamespacedDeployment({ namespace: rest, body: web });
    const pods = await waitFor('3 pods running on the node, the budget observed', async () => {
      const [a, b] = await Promise.all([running(held), running(rest)]);
      const pdb = await kube.policy.readNamespacedPodDisruptionBudget({ namespace: held, name: 'keep' });
      return a.length === 1 && b.length === 2 && pdb.status?.currentHealthy === 1 && pdb.status.observedGeneration === pdb.metadata?.generation && [...a, ...b];
    }, { timeoutMs: 90_000 });

    const e = await add(world, 'drain', ADDRESS);
    // Draining: cordoned, and the budget-held pod's eviction refused (429) and asked again every second.
    await waitFor('the drain held up by the budget', async () => (await queueEntry(e.index))?.step_status === 'draining' && (await nodeUnschedulable(NODE)),
      { timeoutMs: 60_000 });
    await untouched(pods);

    assert.ok(!tend.logs.includes('repair: paused: the next write waits for tend resume'), 'a write held before the pause');
    const paused = await runTend(['pause', 'repair', '--reason', 'drain drill', '--config', world.config], { timeoutMs: 60_000 });
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /^paused: repair/);
    const acknowledged = Date.now();
    // Now every eviction would be allowed: only the pause stops the drain.
    await kube.policy.deleteNamespacedPodDisruptionBudget({ namespace: held, name: 'keep' });
    await waitFor('the drain to reach its next eviction and hold it', () => tend!.logs.includes('repair: paused: the next write waits for tend resume'),
      { timeoutMs: 30_000 });
    await untouched(pods);
    assert.equal(await nodeUnschedulable(NODE), true, 'uncordoned while paused');
    assert.equal(commandRuns(), 0, 'the repair command ran while paused');
    assert.equal((await queueEntry(e.index))?.status, 'processing');

    // kube-apiserver's own record: nothing written by tend from the acknowledgement to the resume.
    const resuming = Date.now();
    const during = await writes(acknowledged, resuming);
    assert.deepEqual(during.map((w) => `${w.verb} ${w.resource}${w.subresource ? `/${w.subresource}` : ''} ${w.namespace ?? ''}/${w.name ?? ''}`), [],
      'tend wrote while paused');
    const resumed = await runTend(['resume', 'repair', '--config', world.config], { timeoutMs: 60_000 });
    assert.equal(resumed.code, 0, resumed.stderr);
    const answered = Date.now();
    await waitFor('the three pods evicted after the resume', async () => {
      const now = [...(await kube.core.listNamespacedPod({ namespace: held })).items, ...(await kube.core.listNamespacedPod({ namespace: rest })).items];
      return pods.every((p) => !now.some((x) => x.metadata?.uid === p.metadata!.uid && !x.metadata?.deletionTimestamp));
    }, { timeoutMs: 30_000, intervalMs: 50 });
    console.log(`      evicted within ${Date.now() - answered} ms of tend resume repair's answer`);
    const done = await waitFor('the entry to succeed', async () => {
      const x = await queueEntry(e.index);
      if (x?.status === 'failed') throw new Error(`entry failed: ${JSON.stringify(x)}`);
      return x?.status === 'succeeded' && x;
    }, { timeoutMs: 90_000 });
    assert.equal(done.drain_backoff_count ?? 0, 0, 'the pause counted as a back-off');
    assert.equal(commandRuns(), 1);
    assert.equal(await nodeUnschedulable(NODE), false, 'left cordoned after the resume');
    // The same record after the resume: the evictions and the uncordon were tend's.
    const made = await writes(resuming);
    const after = made.map((w) => `${w.verb} ${w.resource}${w.subresource ? `/${w.subresource}` : ''}`);
    assert.equal(after.filter((w) => w === 'create pods/eviction').length >= 3, true, after.join(', '));
    // The uncordon itself (the command's guard patches the Node too).
    const uncordon = made.filter((w) => w.verb === 'patch' && w.resource === 'nodes' && w.name === NODE && (w.body as { spec?: Record<string, unknown> } | undefined)?.spec?.unschedulable === null);
    assert.equal(uncordon.length, 1, after.join(', '));
  });
});
