// The seed's timeline, end to end through `tend run` (watcher + worker under
// tend's own ServiceAccount): etcd (3 replicas) goes down, kube-apiserver pods
// crash-loop, etcd comes back: the apiserver pods are deleted within seconds
// and replaced by their ReplicaSet; then controller-manager, window after window.
import assert from 'node:assert/strict';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, deployment, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { backoffRemainingMs, crashLooping, restarts, weederConfigFile } from '../harness/weeder.ts';
import { sandbox } from '../harness/hooks.ts';
import { Client, Connection } from '@temporalio/client';
import type { WeederResult } from '../../src/weeder/window.ts';
import { ReadinessStore } from '../../src/weeder/record.ts';
import { DEFAULT_TEND_NAMESPACE } from '../../src/config/weeder.ts';

describe('weeder: the seed\'s cascade', function () {
  this.timeout(240_000);
  const kube = () => admin();
  let ns: string;
  let tend: TendProcess;
  let temporal: Client;

  before(async () => {
    ns = await tempNamespace(kube(), 'weeder-cascade');
    const k = kube();
    const dep = (name: string, replicas: number, role: string, dependsOn?: string) => deployment({
      namespace: ns, name, replicas, labels: { 'gardener.cloud/role': 'controlplane', role },
      annotations: dependsOn ? { 'sim.tend.dev/depends-on': dependsOn } : undefined,
    });
    await k.apps.createNamespacedDeployment({ namespace: ns, body: dep('etcd-main', 3, 'main') });
    await k.core.createNamespacedService({ namespace: ns, body: service(ns, 'etcd-main-client', { app: 'etcd-main' }) });
    await k.apps.createNamespacedDeployment({ namespace: ns, body: dep('kube-apiserver', 2, 'apiserver', 'etcd-main-client') });
    await k.core.createNamespacedService({ namespace: ns, body: service(ns, 'kube-apiserver', { app: 'kube-apiserver' }) });
    await k.apps.createNamespacedDeployment({ namespace: ns, body: dep('kube-controller-manager', 1, 'controller-manager', 'kube-apiserver') });
    const config = await weederConfigFile({
      watchDuration: '45s',
      namespaces: [ns],
      // The seed's example configuration, verbatim.
      servicesAndDependantSelectors: {
        'etcd-main-client': { podSelectors: [{ matchExpressions: [
          { key: 'gardener.cloud/role', operator: 'In', values: ['controlplane'] },
          { key: 'role', operator: 'In', values: ['apiserver'] },
        ] }] },
        'kube-apiserver': { podSelectors: [{ matchExpressions: [
          { key: 'gardener.cloud/role', operator: 'In', values: ['controlplane'] },
          { key: 'role', operator: 'NotIn', values: ['main', 'apiserver'] },
        ] }] },
      },
    });
    tend = new TendProcess(['run', '--config', config]);
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
  });
  after(async () => {
    await tend?.stop();
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube(), ns);
  });

  const allReady = async (app: string, n: number) => {
    const pods = (await podsOf(kube(), ns, `app=${app}`)).filter((p) => !p.metadata?.deletionTimestamp);
    return pods.length === n && pods.every(isReady) ? pods : undefined;
  };

  it('etcd down: apiserver and controller-manager crash-loop; etcd back: the chain recovers in seconds', async () => {
    await waitFor('tend to start', () => /worker started/.test(tend.output) && /weeder watching/.test(tend.output), { timeoutMs: 60_000 });
    const ready = await waitFor('the control plane to be ready', async () => (await allReady('kube-controller-manager', 1)) && (await allReady('kube-apiserver', 2)), { timeoutMs: 60_000 });
    // The watcher records what it has seen, so that etcd's return is a transition.
    await waitFor('the watcher to record etcd ready', async () => {
      return (await new ReadinessStore(kube(), DEFAULT_TEND_NAMESPACE).read(ns, 'etcd-main-client'))?.readiness === 'ready';
    });

    await kube().apps.patchNamespacedDeploymentScale(
      { namespace: ns, name: 'etcd-main', body: { spec: { replicas: 0 } } }, (await import('../../src/kube/api.ts')).mergePatch);
    // Long enough down that kubelet's back-off has grown (time scale 0.1: 1 s, 2 s, 4 s, 8 s ...).
    const before = await waitFor('apiserver pods deep in CrashLoopBackOff', async () => {
      const pods = await podsOf(kube(), ns, 'app=kube-apiserver');
      return pods.length === 2 && pods.every((p) => crashLooping(p) && restarts(p) >= 4) ? pods : undefined;
    }, { timeoutMs: 90_000 });
    // etcd not ready: its window (opened when tend first saw etcd ready) is still open, yet nothing was deleted.
    const firstRun = await temporal.workflow.getHandle(`weeder/${ns}/etcd-main-client`).describe();
    assert.equal(firstRun.status.name, 'RUNNING', 'the first-seen window is open while etcd is down');
    assert.deepEqual(new Set(before.map((p) => p.metadata!.uid)), new Set(ready.map((p) => p.metadata!.uid)), 'no apiserver pod deleted while etcd was not ready');
    await waitFor('controller-manager crash-looping', async () => (await podsOf(kube(), ns, 'app=kube-controller-manager')).some(crashLooping), { timeoutMs: 60_000 });
    // Bring etcd back only when every dependant still has seconds of back-off to sit out, so that none
    // can restart by itself before the weeder acts: what recovers, the weeder recovered.
    const kcmBefore = await waitFor('every dependant 6 s or more from the end of its back-off', async () => {
      const [api, kcm] = await Promise.all([podsOf(kube(), ns, 'app=kube-apiserver'), podsOf(kube(), ns, 'app=kube-controller-manager')]);
      return api.length === 2 && kcm.length === 1 && [...api, ...kcm].every((p) => backoffRemainingMs(p) >= 6000) && kcm;
    }, { timeoutMs: 120_000, intervalMs: 100 });

    const back = Date.now();
    await kube().apps.patchNamespacedDeploymentScale(
      { namespace: ns, name: 'etcd-main', body: { spec: { replicas: 3 } } }, (await import('../../src/kube/api.ts')).mergePatch);
    const oldUids = new Set(before.map((p) => p.metadata!.uid));
    await waitFor('the crash-looping apiserver pods deleted and replaced', async () => {
      const pods = await podsOf(kube(), ns, 'app=kube-apiserver');
      return pods.every((p) => !oldUids.has(p.metadata!.uid)) && (await allReady('kube-apiserver', 2));
    }, { timeoutMs: 30_000 });
    const apiserverBack = Date.now() - back;
    const kcmOld = new Set(kcmBefore.map((p) => p.metadata!.uid));
    await waitFor('controller-manager weeded when kube-apiserver turned ready, and ready again', async () => {
      const pods = await podsOf(kube(), ns, 'app=kube-controller-manager');
      return pods.every((p) => !kcmOld.has(p.metadata!.uid)) && (await allReady('kube-controller-manager', 1));
    }, { timeoutMs: 30_000 });
    const chainBack = Date.now() - back;
    console.log(`      apiserver ready again ${apiserverBack} ms after etcd scaled up; whole chain ${chainBack} ms`);
    // Without a weeder the apiserver pods would sit out a back-off of 8 s or more (restarts >= 4).
    assert.ok(apiserverBack < 8000, `apiserver recovered in ${apiserverBack} ms`);

    // Each deletion is an Event on the pod's owner (the ReplicaSet).
    const events = (await kube().events.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.reason === 'WeededPod');
    for (const uid of oldUids) {
      const e = events.find((ev) => ev.related?.uid === uid);
      assert.ok(e, `a WeededPod event for pod ${uid}`);
      assert.equal(e!.regarding?.kind, 'ReplicaSet');
    }

    // Window after window: both Services' windows list what they weeded.
    const etcdRun = temporal.workflow.getHandle(`weeder/${ns}/etcd-main-client`);
    const result = await waitFor('the etcd window to close', async () => {
      const d = await etcdRun.describe();
      return d.status.name === 'COMPLETED' ? (await etcdRun.result()) as WeederResult : undefined;
    }, { timeoutMs: 75_000 });
    assert.deepEqual(new Set(result.weeded.map((p) => p.uid)), oldUids);
    assert.ok(result.weeded.every((p) => p.owner?.startsWith('ReplicaSet/')));
    const d = await etcdRun.describe();
    assert.deepEqual(d.searchAttributes?.TendCapability, ['weeder']);
    assert.deepEqual(d.searchAttributes?.TendTarget, [`${ns}/etcd-main-client`]);
    const kcmRun = await temporal.workflow.getHandle(`weeder/${ns}/kube-apiserver`).query<{ weeded: { uid: string }[] }>('window')
      .catch(async () => (await temporal.workflow.getHandle(`weeder/${ns}/kube-apiserver`).result()) as WeederResult);
    assert.ok(kcmRun.weeded.some((p) => kcmOld.has(p.uid)), 'the kube-apiserver window weeded controller-manager');
  });
});
