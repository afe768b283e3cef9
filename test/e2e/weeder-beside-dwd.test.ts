// tend in observe mode beside a weeder that acts (dependency-watchdog, as a migration runs them;
// here the test deletes the crash-looping dependants the moment the Service is ready, as
// dependency-watchdog does): tend still records a WouldDelete Event for each, so that comparing
// the two is possible (docs/weeder.md, "Coming from dependency-watchdog").
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, podsOf, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { backoffRemainingMs, crashLooping, dbBack, dbWithDependants, dependantsCrashLooping, weederConfigFile } from '../harness/weeder.ts';
import { ReadinessStore } from '../../src/weeder/record.ts';
import { startInformer } from '../../src/kube/informer.ts';
import { log } from '../../src/log.ts';
import type * as k8s from '@kubernetes/client-node';
import { DEFAULT_TEND_NAMESPACE } from '../../src/config/weeder.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import type { WindowSnapshot } from '../../src/weeder/window.ts';

const DEPENDANTS = 2;

describe('weeder: observe mode beside another weeder that acts (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let temporal: Client | undefined;

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'weeder-beside');
  });
  after(async () => {
    await tend?.stop();
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube, ns);
  });

  it('records a WouldDelete Event for each dependant the other weeder deleted the moment the Service was ready', async () => {
    const section = await dbWithDependants(kube, ns, DEPENDANTS);
    const config = await weederConfigFile({ mode: 'observe', watchDuration: '10s', ...section });
    tend = new TendProcess(['run', '--config', config]);
    await waitFor('tend to start its worker and the weeder watch',
      () => /worker started/.test(tend!.output) && /weeder watching/.test(tend!.output), { timeoutMs: 120_000 });
    await waitFor('the watcher to record db ready',
      async () => (await new ReadinessStore(kube, DEFAULT_TEND_NAMESPACE).read(ns, 'db'))?.readiness === 'ready', { timeoutMs: 60_000 });

    // The window db's first sight opened closes first: only the armed watch runs when db returns.
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
    const first = temporal.workflow.getHandle(`weeder/${ns}/db`);
    await waitFor('the first window to close', async () => (await first.describe()).status.name === 'COMPLETED', { timeoutMs: 60_000 });

    const looping = await dependantsCrashLooping(kube, ns, DEPENDANTS);
    const uids = looping.map((p) => p.metadata!.uid!);
    // Announced by the armed watch, and deep enough in back-off that neither restarts while db returns.
    await waitFor('both dependants announced, deep in back-off', async () => {
      const w = await temporal!.workflow.getHandle(`weeder/${ns}/db`).query<WindowSnapshot>('window');
      const pending = new Set((w.pending ?? []).map((p) => p.uid));
      const pods = await podsOf(kube, ns, 'app=api');
      return uids.every((u) => pending.has(u)) && pods.length === DEPENDANTS && pods.every((p) => crashLooping(p) && backoffRemainingMs(p) >= 4_000);
    }, { timeoutMs: 120_000, intervalMs: 100 });
    // The other weeder, as dependency-watchdog: on the slice event that says db is ready, it deletes
    // the crash-looping dependants (by name), from its own watch of them: within milliseconds.
    const shot: k8s.V1Pod[] = [];
    let shooting: Promise<unknown> | undefined;
    const pods = startInformer<k8s.V1Pod>({
      kc: kube.kc, path: '/api/v1/pods', namespaces: [ns], labelSelector: 'app=api', log, resyncMs: 30_000,
      list: () => kube.core.listNamespacedPod({ namespace: ns, labelSelector: 'app=api' }),
      onUpsert: () => undefined, onDelete: () => undefined,
    });
    const slices = startInformer<k8s.V1EndpointSlice>({
      kc: kube.kc, path: '/apis/discovery.k8s.io/v1/endpointslices', namespaces: [ns], labelSelector: 'kubernetes.io/service-name=db', log, resyncMs: 30_000,
      list: () => kube.discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: 'kubernetes.io/service-name=db' }),
      onUpsert: (slice) => {
        if (shooting || !slice.endpoints?.some((e) => e.conditions?.ready !== false)) return;
        shot.push(...pods.list(ns).filter((p) => crashLooping(p) && !p.metadata?.deletionTimestamp));
        shooting = Promise.all(shot.map((p) => kube.core.deleteNamespacedPod({ namespace: ns, name: p.metadata!.name! })));
      },
      onDelete: () => undefined,
    });
    try {
      await Promise.all([pods.synced, slices.synced]);
      await dbBack(kube, ns);
      await waitFor('the other weeder to have deleted', () => shooting, { timeoutMs: 60_000, intervalMs: 5 });
      await shooting;
    } finally {
      await Promise.all([pods.stop(), slices.stop()]);
    }
    assert.deepEqual(new Set(shot.map((p) => p.metadata!.uid)), new Set(uids), 'the other weeder deleted other pods');

    const recorded = await waitFor(`a WouldDelete Event for each of the ${DEPENDANTS} pods`, async () => {
      const events = (await kube.events.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.reason === 'WouldDelete' && e.regarding?.kind === 'Pod');
      return events.length >= DEPENDANTS && events;
    }, { timeoutMs: 30_000 });
    assert.deepEqual(new Set(recorded.map((e) => e.regarding!.uid)), new Set(looping.map((p) => p.metadata!.uid)));
    for (const e of recorded) assert.match(e.note ?? '', new RegExp(`^would delete pod ${ns}/api-[a-z0-9-]+: CrashLoopBackOff \\(api\\) while ${ns}/db became ready$`));
  });
});
