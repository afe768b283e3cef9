// Two workers (separate processes, one configuration, one task queue), as a Deployment of two
// replicas runs them, and one watcher. The worker whose armed watch has announced the
// crash-looping dependants is killed (SIGKILL) the moment their upstream recovers: the other
// worker weeds them at once, not after the armed watch's heartbeat timeout (docs/weeder.md,
// "Armed").
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, podsOf, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { backoffRemainingMs, crashLooping, dbBack, dbWithDependants, deletedOf, dependantsCrashLooping, weederConfigFile } from '../harness/weeder.ts';
import { ARMED_DELETES_HEARTBEAT_MS } from '../../src/workflows/weeder.ts';
import type { WeederResult, WindowSnapshot } from '../../src/weeder/window.ts';
import type { KubeClients } from '../../src/kube/client.ts';

/**
 * How soon after the kill the survivor must have weeded. Before the takeover nothing could be sooner
 * than the armed watch's heartbeat timeout (10 s) after its last heartbeat (one per 5 s), plus the
 * 1 s retry: 6 s at the least (10.8 s measured, with the sticky-queue wait). Now: the heartbeat
 * timeout (3 s), the 0.2 s retry and a new attempt's start (its watches list, then it announces and
 * deletes), 4 to 5 s on a loaded machine.
 */
const TAKEOVER_BOUND_MS = 0.6 * ARMED_DELETES_HEARTBEAT_MS;

describe('weeder with two workers: the armed watch\'s worker killed as the upstream recovers (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let ns: string;
  let temporal: Client;
  const workers: TendProcess[] = [];
  let watcher: TendProcess | undefined;

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'weeder-failover');
    const weeder = await dbWithDependants(kube, ns, 2);
    const config = await weederConfigFile({ ...weeder, watchDuration: '15s' });
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
    for (let i = 0; i < 2; i++) workers.push(new TendProcess(['worker', '--config', config]));
    watcher = new TendProcess(['watcher', '--config', config]);
    await waitFor('two workers polling and the watcher watching', () =>
      workers.every((w) => w.output.includes('worker started')) && watcher!.output.includes('weeder watching'), { timeoutMs: 120_000 });
  });
  after(async () => {
    await Promise.all([...workers, ...(watcher ? [watcher] : [])].map((p) => p.stop()));
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube, ns);
  });

  const id = () => `weeder/${ns}/db`;
  const sliceReady = async () => (await kube.discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: 'kubernetes.io/service-name=db' }))
    .items.some((s) => s.endpoints?.some((e) => e.conditions?.ready !== false));

  it('the other worker weeds the announced dependants at once', async () => {
    // db was ready when tend first looked: that window closes first, so that only the armed watch runs.
    const first = temporal.workflow.getHandle(id());
    await waitFor('the first window to close', async () => (await first.describe()).status.name === 'COMPLETED', { timeoutMs: 60_000 });

    const looping = await dependantsCrashLooping(kube, ns, 2);
    const uids = looping.map((p) => p.metadata!.uid!);
    // Armed, the armed watch has announced both dependants (they are pending in the window), and
    // both are deep enough in back-off that they cannot restart by themselves during the bound.
    const holder = await waitFor('both dependants announced by the armed watch, deep in back-off', async () => {
      const h = temporal.workflow.getHandle(id());
      const d = await h.describe();
      if (d.status.name !== 'RUNNING') return undefined;
      const w = await h.query<WindowSnapshot>('window');
      const pending = new Set((w.pending ?? []).map((p) => p.uid));
      const watches = (d.raw.pendingActivities ?? []).filter((a) => a.activityType?.name === 'watchDependants' && a.lastStartedTime);
      if (!w.armed || watches.length !== 1 || !uids.every((u) => pending.has(u))) return undefined;
      const pods = await podsOf(kube, ns, 'app=api');
      if (pods.length !== 2 || !pods.every((p) => crashLooping(p) && backoffRemainingMs(p) >= 2 * TAKEOVER_BOUND_MS)) return undefined;
      const pid = Number(/^(\d+)@/.exec(watches[0]!.lastWorkerIdentity ?? '')?.[1]);
      return workers.find((w) => w.child.pid === pid);
    }, { timeoutMs: 150_000, intervalMs: 100 });

    // The moment the upstream recovers, the worker holding the armed watch dies.
    holder.child.kill('SIGKILL');
    const killedAt = Date.now();
    await dbBack(kube, ns);
    const readyAt = await waitFor('db ready again', async () => (await sliceReady()) && Date.now(), { timeoutMs: 60_000, intervalMs: 20 });
    const deletedAt = await waitFor('both dependants deleted', async () => (await deletedOf(kube, ns, looping)).length === 2 && Date.now(),
      { timeoutMs: 60_000, intervalMs: 20 });
    const took = deletedAt - killedAt;
    console.log(`      weeder failover: both dependants deleted ${took} ms after the kill, ${deletedAt - readyAt} ms after db was ready again (bound ${TAKEOVER_BOUND_MS} ms after the kill)`);
    assert.ok(took <= TAKEOVER_BOUND_MS, `deleted ${took} ms after the kill (db ready ${readyAt - killedAt} ms after it): more than ${TAKEOVER_BOUND_MS} ms`);

    // The window records both as weeded.
    const h = temporal.workflow.getHandle(id());
    const result = await waitFor('the window to complete', async () =>
      (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined, { timeoutMs: 120_000 });
    for (const uid of uids) assert.ok(result.weeded.some((p) => p.uid === uid), JSON.stringify(result));
  });
});
