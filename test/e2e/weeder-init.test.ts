// The weeder and init containers: a dependant whose init container waits for
// its upstream (and crash-loops while it is down) is weeded when the upstream
// is ready again, as one whose app container crash-loops is.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, deployment, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';
import { backoffRemainingMs, weederConfigFile } from '../harness/weeder.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { stopSignal } from '../../src/weeder/messages.ts';
import type { WeederResult } from '../../src/weeder/window.ts';

describe('weeder: a dependant whose init container crash-loops on its upstream', function () {
  this.timeout(300_000);
  const kube = () => admin();
  let ns: string;
  let worker: TendProcess;
  let watcher: TendProcess;
  let temporal: Client;

  before(async () => {
    const k = kube();
    ns = await tempNamespace(k, 'weeder-init');
    await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 1 }) });
    await k.core.createNamespacedService({ namespace: ns, body: service(ns, 'db', { app: 'db' }) });
    const config = await weederConfigFile({
      watchDuration: '1m',
      namespaces: [ns],
      servicesAndDependantSelectors: { db: { podSelectors: [{ matchLabels: { role: 'api' } }] } },
    });
    await waitFor('db ready', async () => (await podsOf(k, ns, 'app=db')).some(isReady), { timeoutMs: 60_000 });
    worker = new TendProcess(['worker', '--config', config]);
    watcher = new TendProcess(['watcher', '--config', config]);
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
  });
  after(async () => {
    await Promise.all([worker?.stop(), watcher?.stop()]);
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube(), ns);
  });

  const initStatus = (pod: k8s.V1Pod) => pod.status?.initContainerStatuses?.find((s) => s.name === 'wait-db');

  it('the init container waits in CrashLoopBackOff while db is down; when db is back the pod is weeded at once', async () => {
    await waitFor('tend to start', () => /worker started/.test(worker.output) && /weeder watching/.test(watcher.output), { timeoutMs: 120_000 });
    await kube().apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'db', body: { spec: { replicas: 0 } } }, mergePatch);
    // Created while db is down: its init container runs, fails, and crash-loops.
    const api = deployment({
      namespace: ns, name: 'api', replicas: 1, labels: { role: 'api' },
      annotations: { 'sim.tend.dev/depends-on': 'db', 'sim.tend.dev/init-depends-on': 'wait-db' },
    });
    api.spec!.template.spec!.initContainers = [{ name: 'wait-db', image: 'registry.example/wait-for:1' }];
    await kube().apps.createNamespacedDeployment({ namespace: ns, body: api });
    const [before] = await waitFor('api\'s init container deep in CrashLoopBackOff', async () => {
      const pods = (await podsOf(kube(), ns, 'app=api')).filter((p) => !p.metadata?.deletionTimestamp);
      const pod = pods[0];
      return pods.length === 1 && initStatus(pod!)?.state?.waiting?.reason === 'CrashLoopBackOff' &&
        backoffRemainingMs(pod!, Date.now(), 'init') >= 6_000 ? pods : undefined;
    }, { timeoutMs: 120_000, intervalMs: 100 });
    assert.equal(before!.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'PodInitializing', 'the app container never started');

    const dbBackAt = Date.now();
    await kube().apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'db', body: { spec: { replicas: 1 } } }, mergePatch);
    const outcome = await waitFor('api weeded, or recovered by itself', async () => {
      const pods = await podsOf(kube(), ns, 'app=api');
      const original = pods.find((p) => p.metadata?.uid === before!.metadata!.uid);
      if (!original || original.metadata?.deletionTimestamp) return 'weeded';
      return isReady(original) ? 'recovered by itself' : undefined;
    }, { timeoutMs: 60_000, intervalMs: 50 });
    assert.equal(outcome, 'weeded');
    await waitFor('the new api pod ready (its init container done at once)', async () =>
      (await podsOf(kube(), ns, 'app=api')).some((p) => p.metadata?.uid !== before!.metadata!.uid && isReady(p)), { timeoutMs: 60_000 });

    const h = temporal.workflow.getHandle(`weeder/${ns}/db`);
    await h.signal(stopSignal, { reason: 'test over' });
    const result = await waitFor('the window to complete', async () =>
      (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined, { timeoutMs: 60_000 });
    const weeded = result.weeded.find((p) => p.uid === before!.metadata!.uid);
    assert.ok(weeded, JSON.stringify(result));
    assert.deepEqual(weeded.containers, ['wait-db'], 'weeded for its init container');
    assert.ok(result.armedAt, 'the workflow was armed while db was down');
    // Deleted by the armed watch itself, announced first: the signal naming it is in the history
    // before the watch's answer, and no deleting activity was needed.
    const events = (await h.fetchHistory()).events ?? [];
    const payloads = (e: (typeof events)[number]) => (e.workflowExecutionSignaledEventAttributes?.input?.payloads ?? [])
      .map((p) => Buffer.from(p.data ?? new Uint8Array()).toString());
    const announcedAt = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'armedWeeding' &&
      payloads(e).some((text) => text.includes(before!.metadata!.uid!)));
    assert.ok(announcedAt > 0, 'an armedWeeding signal names the pod');
    const announcedTime = events[announcedAt]!.eventTime!;
    assert.ok(Number(announcedTime.seconds) * 1000 + Math.floor((announcedTime.nanos ?? 0) / 1e6) < dbBackAt,
      'announced while db was still down, as the pod started crash-looping, not when db came back');
    const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => e.activityTaskScheduledEventAttributes!.activityType?.name);
    assert.ok(!scheduled.includes('weedPods'), `no deleting activity: ${scheduled.join(', ')}`);
    assert.ok(events.findIndex((e, i) => i > announcedAt && e.activityTaskCompletedEventAttributes) > announcedAt, 'the armed watch answered after its announcement');
  });
});
