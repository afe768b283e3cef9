// A Service deleted while its dependants run, and applied again: a new
// Service, so a transition (its dependants crash-looped meanwhile), in the
// watcher's memory and in its readiness record; and a later restart of the
// watcher opens nothing more.
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, deployment, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';
import { backoffRemainingMs, crashLooping, weederConfigFile } from '../harness/weeder.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { DEFAULT_TEND_NAMESPACE } from '../../src/config/weeder.ts';
import { ReadinessStore } from '../../src/weeder/record.ts';
import type { WeederResult } from '../../src/weeder/window.ts';

describe('weeder: a Service deleted and applied again is a new transition', function () {
  this.timeout(300_000);
  const kube = () => admin();
  let ns: string;
  let config: string;
  let worker: TendProcess;
  let watcher: TendProcess;
  let temporal: Client;

  before(async () => {
    const k = kube();
    ns = await tempNamespace(k, 'weeder-recreate');
    for (const name of ['db', 'marker']) {
      await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name, replicas: 1 }) });
      await k.core.createNamespacedService({ namespace: ns, body: service(ns, name, { app: name }) });
    }
    await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({
      namespace: ns, name: 'api', replicas: 1, labels: { role: 'api' }, annotations: { 'sim.tend.dev/depends-on': 'db' },
    }) });
    config = await weederConfigFile({
      watchDuration: '10s',
      namespaces: [ns],
      servicesAndDependantSelectors: {
        db: { podSelectors: [{ matchLabels: { role: 'api' } }] },
        marker: { podSelectors: [{ matchLabels: { role: 'nothing-here' } }] },
      },
    });
    for (const name of ['db', 'marker', 'api']) {
      await waitFor(`${name} ready`, async () => (await podsOf(k, ns, `app=${name}`)).some(isReady), { timeoutMs: 60_000 });
    }
    worker = new TendProcess(['worker', '--config', config]);
    watcher = new TendProcess(['watcher', '--config', config]);
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
  });
  after(async () => {
    await Promise.all([worker?.stop(), watcher?.stop()]);
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube(), ns);
  });

  const store = () => new ReadinessStore(kube(), DEFAULT_TEND_NAMESPACE);
  const handle = () => temporal.workflow.getHandle(`weeder/${ns}/db`);
  const livePods = async (selector: string) => (await podsOf(kube(), ns, selector)).filter((p) => !p.metadata?.deletionTimestamp);

  it('re-created while its dependant crash-loops: the dependant is weeded at once; a restart later opens nothing', async () => {
    await waitFor('tend to start', () => /worker started/.test(worker.output) && /weeder watching/.test(watcher.output), { timeoutMs: 60_000 });
    // The window of db first seen ready runs out: what follows is judged by the watcher alone.
    const first = await waitFor('db recorded ready, its first window closed', async () => {
      const d = await handle().describe().catch(() => undefined);
      return d?.status.name === 'COMPLETED' && (await store().read(ns, 'db'))?.readiness === 'ready' ? d : undefined;
    }, { timeoutMs: 90_000 });
    const oldUid = (await kube().core.readNamespacedService({ namespace: ns, name: 'db' })).metadata!.uid!;

    await kube().core.deleteNamespacedService({ namespace: ns, name: 'db' });
    const [before] = await waitFor('api deep in CrashLoopBackOff', async () => {
      const pods = await livePods('app=api');
      return pods.length === 1 && crashLooping(pods[0]!) && backoffRemainingMs(pods[0]!) >= 8_000 ? pods : undefined;
    }, { timeoutMs: 120_000, intervalMs: 100 });
    const again = await kube().core.createNamespacedService({ namespace: ns, body: service(ns, 'db', { app: 'db' }) });

    const outcome = await waitFor('api weeded, or recovered by itself', async () => {
      const pods = await podsOf(kube(), ns, 'app=api');
      const original = pods.find((p) => p.metadata?.uid === before!.metadata!.uid);
      if (!original || original.metadata?.deletionTimestamp) return 'weeded';
      return isReady(original) ? 'recovered by itself (no window opened)' : undefined;
    }, { timeoutMs: 60_000, intervalMs: 50 });
    assert.equal(outcome, 'weeded');
    const window = await waitFor('a new window for db', async () => {
      const d = await handle().describe();
      return d.runId !== first.runId ? d : undefined;
    });
    const signals = ((await handle().fetchHistory()).events ?? []).flatMap((e) => e.workflowExecutionSignaledEventAttributes ? [e] : []);
    assert.ok(signals.length > 0);
    await waitFor('the record names the new Service', async () => (await store().read(ns, 'db'))?.service === again.metadata!.uid);
    assert.notEqual(again.metadata!.uid, oldUid);

    const result = await waitFor('the window to complete', async () =>
      (await handle().describe()).status.name === 'COMPLETED' ? (await handle().result()) as WeederResult : undefined, { timeoutMs: 60_000 });
    assert.ok(result.weeded.some((p) => p.uid === before!.metadata!.uid), JSON.stringify(result));
    assert.match(watcher.logs, /Service re-created -> ready/);

    // A plain restart of the watcher: nothing changed since it last looked, so nothing opens.
    await watcher.stop('SIGTERM');
    watcher = new TendProcess(['watcher', '--config', config]);
    // Barrier: once the new watcher has judged marker going down, it has judged db's slices too.
    await kube().apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'marker', body: { spec: { replicas: 0 } } }, mergePatch);
    await waitFor('the new watcher to record marker not ready', async () => (await store().read(ns, 'marker'))?.readiness === 'not-ready', { timeoutMs: 60_000 });
    assert.equal((await handle().describe()).runId, window.runId, 'a restart without a transition opens nothing');
    assert.doesNotMatch(watcher.logs, /unrecorded -> ready/);
  });
});
