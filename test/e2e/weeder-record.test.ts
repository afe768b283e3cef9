// The weeder's record of what it deleted, against its worker dying and its
// window being stopped: every deletion is in the workflow's result, whenever
// the worker dies; after a stop is taken in, nothing is deleted.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, deployment, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';
import { backoffRemainingMs, crashLooping, weederConfigFile } from '../harness/weeder.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { stopSignal, windowQuery } from '../../src/weeder/messages.ts';
import type { WeederResult } from '../../src/weeder/window.ts';

describe('weeder: the record of deletions survives the worker, and stop is immediate', function () {
  this.timeout(300_000);
  const kube = () => admin();
  let ns: string;
  let config: string;
  let worker: TendProcess;
  let watcher: TendProcess | undefined;
  let temporal: Client;
  let podWatch: AbortController | undefined;

  before(async () => {
    const k = kube();
    ns = await tempNamespace(k, 'weeder-record');
    for (const db of ['db', 'db2']) {
      await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: db, replicas: 1 }) });
      await k.core.createNamespacedService({ namespace: ns, body: service(ns, db, { app: db }) });
    }
    await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({
      namespace: ns, name: 'api', replicas: 1, labels: { role: 'api' }, annotations: { 'sim.tend.dev/depends-on': 'db' },
    }) });
    await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({
      namespace: ns, name: 'api2', replicas: 1, labels: { role: 'api2' }, annotations: { 'sim.tend.dev/depends-on': 'db2' },
    }) });
    config = await weederConfigFile({
      watchDuration: '5m',
      namespaces: [ns],
      servicesAndDependantSelectors: {
        db: { podSelectors: [{ matchLabels: { role: 'api' } }] },
        db2: { podSelectors: [{ matchLabels: { role: 'api2' } }] },
      },
    });
    for (const name of ['db', 'db2', 'api', 'api2']) {
      await waitFor(`${name} ready`, async () => (await podsOf(k, ns, `app=${name}`)).some(isReady), { timeoutMs: 60_000 });
    }
    worker = new TendProcess(['worker', '--config', config]);
    watcher = new TendProcess(['watcher', '--config', config]);
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
  });
  after(async () => {
    podWatch?.abort();
    await Promise.all([worker?.stop(), watcher?.stop()]);
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube(), ns);
  });

  const handle = (svc: string) => temporal.workflow.getHandle(`weeder/${ns}/${svc}`);
  const livePods = async (selector: string) => (await podsOf(kube(), ns, selector)).filter((p) => !p.metadata?.deletionTimestamp);
  const running = (svc: string) => waitFor(`a window for ${svc}`, async () => {
    const d = await handle(svc).describe().catch(() => undefined);
    return d?.status.name === 'RUNNING' ? d : undefined;
  }, { timeoutMs: 60_000 });

  it('the worker SIGKILLed the moment a deletion is issued: the deletion is still in the window\'s result', async () => {
    await waitFor('tend to start', () => /worker started/.test(worker.output) && /weeder watching/.test(watcher!.output), { timeoutMs: 120_000 });
    const run = (await running('db')).runId;
    const [pod] = await livePods('app=api');
    // Kill the worker the instant the API server has the pod's deletion: before the weeder can report it.
    podWatch = new AbortController();
    let killed: Promise<unknown> | undefined;
    const kc = loadKubeConfig({ kubeconfig: sandbox().kubeconfig });
    await new k8s.Watch(kc).watch(`/api/v1/namespaces/${ns}/pods`, { labelSelector: 'app=api' }, (_type, obj: k8s.V1Pod) => {
      if (!killed && obj.metadata?.uid === pod!.metadata!.uid && (obj.metadata?.deletionTimestamp || _type === 'DELETED')) {
        killed = worker.stop('SIGKILL');
      }
    }, () => undefined).then((req) => podWatch!.signal.addEventListener('abort', () => req.abort()));
    await kube().core.patchNamespacedPod(
      { namespace: ns, name: pod!.metadata!.name!, body: { metadata: { annotations: { 'sim.tend.dev/fail': 'true' } } } }, mergePatch);
    await waitFor('the crash-looping api pod deleted, and the worker killed at that moment', () => killed, { timeoutMs: 60_000, intervalMs: 20 });
    await killed;
    podWatch.abort();
    worker = new TendProcess(['worker', '--config', config]);
    const h = temporal.workflow.getHandle(`weeder/${ns}/db`, run);
    // End the window rather than wait it out; the stop waits for any deletion under way.
    await waitFor('the new worker', () => /worker started/.test(worker.output), { timeoutMs: 60_000 });
    await h.signal(stopSignal, { reason: 'test over' });
    const result = await waitFor('the window to complete', async () =>
      (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined, { timeoutMs: 120_000 });
    assert.ok(result.weeded.some((p) => p.uid === pod!.metadata!.uid),
      `the deleted pod ${pod!.metadata!.name} is in the result: ${JSON.stringify(result)}`);
  });

  it('stop: once the window has taken it in, nothing is deleted, even when the Service turns ready with a crash-looping dependant', async () => {
    const h = handle('db2');
    await running('db2');
    // No new window from the watcher: what is tested is the stopped one.
    await watcher!.stop('SIGKILL');
    watcher = undefined;
    await kube().apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'db2', body: { spec: { replicas: 0 } } }, mergePatch);
    const [before] = await waitFor('api2 deep in CrashLoopBackOff', async () => {
      const pods = await livePods('app=api2');
      return pods.length === 1 && crashLooping(pods[0]!) && backoffRemainingMs(pods[0]!) >= 8_000 ? pods : undefined;
    }, { timeoutMs: 120_000, intervalMs: 100 });
    await h.signal(stopSignal, { reason: 'operator' });
    await waitFor('the stop taken in', async () => (await h.query(windowQuery)).stopped, { timeoutMs: 30_000 });
    await kube().apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'db2', body: { spec: { replicas: 1 } } }, mergePatch);
    // Either the original pod recovers by itself (its back-off ends: nobody deleted it) or it is deleted.
    const after = await waitFor('api2 ready again, or replaced', async () => {
      const pods = await podsOf(kube(), ns, 'app=api2');
      const original = pods.find((p) => p.metadata?.uid === before!.metadata!.uid);
      if (!original || original.metadata?.deletionTimestamp) return 'deleted';
      return isReady(original) ? 'recovered by itself' : undefined;
    }, { timeoutMs: 120_000, intervalMs: 50 });
    assert.equal(after, 'recovered by itself', 'nothing is deleted after the stop is taken in');
    const result = await waitFor('the window to complete', async () =>
      (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined, { timeoutMs: 60_000 });
    assert.equal(result.stopped, 'operator');
    assert.ok(!result.weeded.some((p) => p.uid === before!.metadata!.uid), JSON.stringify(result));
  });
});
