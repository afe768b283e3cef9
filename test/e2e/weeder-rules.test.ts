// What the weeder touches and what it leaves alone, end to end through
// `tend run`: only matching pods in the Service's namespace (NotIn honoured),
// never a pod without a controller, pods that start crash-looping inside the
// window but not after it, and no window for a deleted slice or ready -> ready.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { runTend, TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, deployment, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';
import { crashLooping, restarts, weederConfigFile } from '../harness/weeder.ts';
import { mergePatch } from '../../src/kube/api.ts';
import type { WeederResult, WindowSnapshot } from '../../src/weeder/window.ts';
import type { WindowRow } from '../../src/starters/weeder-commands.ts';
import { ReadinessStore } from '../../src/weeder/record.ts';
import { DEFAULT_TEND_NAMESPACE } from '../../src/config/weeder.ts';

describe('weeder: what is weeded and what is left alone', function () {
  this.timeout(240_000);
  const kube = () => admin();
  let ns: string;
  let ns2: string;
  let tend: TendProcess;
  let temporal: Client;
  let config: string;
  const dependsOn = (svc: string) => ({ 'sim.tend.dev/depends-on': svc });

  before(async () => {
    const k = kube();
    ns = await tempNamespace(k, 'weeder-rules');
    ns2 = await tempNamespace(k, 'weeder-other');
    await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 0 }) });
    await k.core.createNamespacedService({ namespace: ns, body: service(ns, 'db', { app: 'db' }) });
    await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'marker', replicas: 0 }) });
    await k.core.createNamespacedService({ namespace: ns, body: service(ns, 'marker', { app: 'marker' }) });
    const dep = (namespace: string, name: string, labels: Record<string, string>, svc = 'db') =>
      k.apps.createNamespacedDeployment({ namespace, body: deployment({ namespace, name, replicas: 1, labels, annotations: dependsOn(svc) }) });
    await dep(ns, 'api', { role: 'api', track: 'stable' });
    await dep(ns, 'canary', { role: 'api', track: 'canary' }); // excluded by NotIn
    await dep(ns, 'worker', { role: 'worker' }); // matches no selector
    await dep(ns2, 'api', { role: 'api', track: 'stable' }, `${ns}/db`); // matching labels, other namespace
    await k.core.createNamespacedPod({ namespace: ns, body: {
      // Fails whether db is ready or not: a bare pod that only depended on db could restart cleanly
      // between db turning ready and the window's first look, and never be seen crash-looping.
      metadata: { name: 'bare', labels: { role: 'api', track: 'stable' }, annotations: { ...dependsOn('db'), 'sim.tend.dev/fail': 'true' } },
      spec: { containers: [{ name: 'bare', image: 'registry.example/bare:1' }] },
    } });
    config = await weederConfigFile({
      // Longer than the pods' back-off (16 s and more by then, at time scale 0.1, at most 30 s): the
      // bare pod, judged between two crashes, is proposed again when it crash-loops again, inside the window.
      watchDuration: '40s',
      namespaces: [ns, ns2],
      servicesAndDependantSelectors: {
        db: { podSelectors: [{ matchExpressions: [
          { key: 'role', operator: 'In', values: ['api'] },
          { key: 'track', operator: 'NotIn', values: ['canary'] },
        ] }] },
        marker: { podSelectors: [{ matchLabels: { app: 'nothing-matches-this' } }] },
      },
    });
    tend = new TendProcess(['run', '--config', config]);
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
  });
  after(async () => {
    await tend?.stop();
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube(), ns);
    if (ns2) await deleteNamespace(kube(), ns2);
  });

  // The watcher's readiness record, in tend's ConfigMap (tend runs with tend-system as its namespace here).
  const recorded = async (name: string) => (await new ReadinessStore(kube(), DEFAULT_TEND_NAMESPACE).read(ns, name))?.readiness;
  const scale = (name: string, replicas: number) =>
    kube().apps.patchNamespacedDeploymentScale({ namespace: ns, name, body: { spec: { replicas } } }, mergePatch);
  const live = async (namespace: string, selector: string) =>
    (await podsOf(kube(), namespace, selector)).filter((p) => !p.metadata?.deletionTimestamp);
  const uid = (p: k8s.V1Pod) => p.metadata!.uid!;
  /**
   * The watcher judges one namespace's slices in the order the watch delivers
   * them: once it has recorded the marker Service's new readiness, it has also
   * judged every slice change made before.
   */
  const barrier = async (replicas: number) => {
    await scale('marker', replicas);
    await waitFor(`the watcher to record marker ${replicas ? 'ready' : 'not-ready'}`,
      async () => (await recorded('marker')) === (replicas ? 'ready' : 'not-ready'), { timeoutMs: 30_000 });
  };
  const latestRun = async (id: string) => (await temporal.workflow.getHandle(id).describe()).runId;

  let window: WeederResult;
  let seen: Record<string, k8s.V1Pod>;
  const dbWindow = () => `weeder/${ns}/db`;

  it('with db not ready, nothing is deleted; on db ready, only the matching controlled pod is', async () => {
    await waitFor('tend to start', () => /worker started/.test(tend.output) && /weeder watching/.test(tend.output), { timeoutMs: 60_000 });
    await waitFor('the watcher to record db not ready', async () => (await recorded('db')) === 'not-ready');
    seen = await waitFor('every dependant crash-looping', async () => {
      const all = { api: await live(ns, 'app=api'), canary: await live(ns, 'app=canary'), worker: await live(ns, 'app=worker'),
        other: await live(ns2, 'app=api'), bare: (await podsOf(kube(), ns, 'role=api')).filter((p) => !p.metadata?.ownerReferences?.length) };
      const pods = Object.values(all).flat();
      // Deep in back-off (1 s, 2 s, 4 s, 8 s at time scale 0.1), so that recovering alone would take a while.
      return pods.length === 5 && pods.every((p) => crashLooping(p) && restarts(p) >= 4) ? Object.fromEntries(Object.entries(all).map(([k, v]) => [k, v[0]!])) : undefined;
    }, { timeoutMs: 90_000 });

    // db not ready: its workflow is armed (it watches db and weeds the moment db is ready), no window is open.
    // (Asked until the workflow has taken its first task: its handlers are set once it has looked up its Service.)
    const armed = await waitFor('db\'s workflow armed', async () => {
      const w = await temporal.workflow.getHandle(dbWindow()).query<WindowSnapshot>('window');
      return w.armed ? w : undefined;
    }, { timeoutMs: 30_000 });
    assert.ok(armed.armed && armed.openedAt === undefined && armed.weeded.length === 0, JSON.stringify(armed));
    const list = await runTend(['weeder', 'list', '--json', '--config', config]);
    assert.equal(list.code, 0, list.stderr);
    const row = (JSON.parse(list.stdout) as WindowRow[]).find((r) => r.workflowId === dbWindow());
    assert.equal(row?.state, 'armed', list.stdout);
    assert.ok(row?.notReadySince, list.stdout);

    await scale('db', 1);
    await waitFor('the api pod deleted and replaced', async () => {
      const pods = await live(ns, 'app=api');
      return pods.length === 1 && uid(pods[0]!) !== uid(seen.api!);
    }, { timeoutMs: 30_000 });
  });

  it('a pod that starts crash-looping inside the window is weeded', async () => {
    const [pod] = await live(ns, 'app=api');
    await kube().core.patchNamespacedPod({ namespace: ns, name: pod!.metadata!.name!, body: { metadata: { annotations: { 'sim.tend.dev/fail': 'true' } } } }, mergePatch);
    await waitFor('the newly crash-looping api pod weeded', async () => {
      const pods = await live(ns, 'app=api');
      return pods.length === 1 && uid(pods[0]!) !== uid(pod!);
    }, { timeoutMs: 20_000 });
  });

  it('the window closes after watchDuration; its result lists the weeded pods and reports the bare one', async () => {
    window = await waitFor('the db window to close', async () => {
      const h = temporal.workflow.getHandle(dbWindow());
      return (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined;
    }, { timeoutMs: 60_000 });
    assert.equal(window.weeded.length, 2, JSON.stringify(window));
    assert.ok(window.armedAt && window.openedAt && window.armedAt < window.openedAt, 'armed while db was down, opened when it was ready');
    assert.ok(window.weeded.some((p) => p.uid === uid(seen.api!)));
    assert.deepEqual(window.reported.map((p) => p.uid), [uid(seen.bare!)]);
    // Never touched: canary (NotIn), worker (no match), the pod in the other namespace, the bare pod.
    for (const [name, p] of Object.entries(seen)) {
      if (name === 'api') continue;
      const pods = await podsOf(kube(), p.metadata!.namespace!, `${name === 'bare' ? 'role=api' : `app=${p.metadata!.labels!.app}`}`);
      assert.ok(pods.some((q) => uid(q) === uid(p) && !q.metadata?.deletionTimestamp), `${name} pod untouched`);
    }
    const skipped = (await kube().events.listNamespacedEvent({ namespace: ns })).items.find((e) => e.reason === 'WeederSkippedPod');
    assert.equal(skipped?.regarding?.uid, uid(seen.bare!), 'the bare pod is reported with an Event');
  });

  it('a pod that starts crash-looping after the window is not weeded', async () => {
    const [pod] = await live(ns, 'app=api');
    await kube().core.patchNamespacedPod({ namespace: ns, name: pod!.metadata!.name!, body: { metadata: { annotations: { 'sim.tend.dev/fail': 'true' } } } }, mergePatch);
    await waitFor('the api pod crash-looping for a while, not deleted', async () => {
      const pods = await podsOf(kube(), ns, 'app=api');
      const same = pods.find((p) => uid(p) === uid(pod!));
      assert.ok(same && !same.metadata?.deletionTimestamp, 'the pod is still there');
      return crashLooping(same) && restarts(same) >= 3;
    }, { timeoutMs: 30_000 });
    await kube().core.deleteNamespacedPod({ namespace: ns, name: pod!.metadata!.name! }); // clean up for the next test
  });

  it('deleting a slice does nothing; ready -> ready does nothing', async () => {
    const run = await latestRun(dbWindow());
    const slices = await kube().discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: 'kubernetes.io/service-name=db' });
    for (const s of slices.items) await kube().discovery.deleteNamespacedEndpointSlice({ namespace: ns, name: s.metadata!.name! });
    await waitFor('the endpointslice controller to recreate db\'s slice', async () => {
      const now = await kube().discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: 'kubernetes.io/service-name=db' });
      return now.items.length > 0 && now.items.every((s) => !slices.items.some((o) => o.metadata!.uid === s.metadata!.uid)) &&
        now.items.some((s) => s.endpoints?.some((e) => e.conditions?.ready !== false));
    });
    await barrier(1);
    assert.equal(await latestRun(dbWindow()), run, 'no new window for a deleted slice');
    assert.equal(await recorded('db'), 'ready');

    await scale('db', 2);
    await waitFor('db with two ready endpoints', async () => {
      const now = await kube().discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: 'kubernetes.io/service-name=db' });
      return now.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready).length === 2;
    });
    await barrier(0);
    assert.equal(await latestRun(dbWindow()), run, 'no new window for ready -> ready');
  });
});
