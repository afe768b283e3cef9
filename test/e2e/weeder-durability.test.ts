// The weeder survives its own parts failing, and answers operators: worker and
// watcher run as separate processes (`tend worker`, `tend watcher`) so each
// can be killed; windows are extended and stopped with the real temporal CLI
// and listed with `tend weeder list`.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { runTend, TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, deployment, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';
import { backoffRemainingMs, crashLooping, temporal as temporalCli, weederConfigFile } from '../harness/weeder.ts';
import { mergePatch } from '../../src/kube/api.ts';
import type { WeederResult, WindowSnapshot } from '../../src/weeder/window.ts';
import type { WindowRow } from '../../src/starters/weeder-commands.ts';
import { ReadinessStore } from '../../src/weeder/record.ts';
import { DEFAULT_TEND_NAMESPACE } from '../../src/config/weeder.ts';
import { TendCapability } from '../../src/search-attributes.ts';

describe('weeder: signals, the list, and killing its parts', function () {
  this.timeout(240_000);
  const kube = () => admin();
  let ns: string;
  let config: string;
  let worker: TendProcess;
  let watcher: TendProcess;
  let temporal: Client;

  before(async () => {
    const k = kube();
    ns = await tempNamespace(k, 'weeder-durable');
    for (const name of ['db', 'quiet', 'marker']) {
      await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name, replicas: 1 }) });
      await k.core.createNamespacedService({ namespace: ns, body: service(ns, name, { app: name }) });
    }
    await k.apps.createNamespacedDeployment({ namespace: ns, body: deployment({
      namespace: ns, name: 'api', replicas: 1, labels: { role: 'api' }, annotations: { 'sim.tend.dev/depends-on': 'db' },
    }) });
    config = await weederConfigFile({
      watchDuration: '40s',
      namespaces: [ns],
      servicesAndDependantSelectors: {
        db: { podSelectors: [{ matchLabels: { role: 'api' } }] },
        quiet: { podSelectors: [{ matchLabels: { role: 'nothing-here' } }] },
        marker: { podSelectors: [{ matchLabels: { role: 'nothing-here' } }] },
      },
    });
    // Ready before tend first looks, so that each is first seen ready (a window), never not ready (armed).
    for (const name of ['db', 'quiet', 'marker']) {
      await waitFor(`${name} ready`, async () => (await k.discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: `kubernetes.io/service-name=${name}` }))
        .items.some((s) => s.endpoints?.some((e) => e.conditions?.ready !== false)), { timeoutMs: 60_000 });
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

  const id = (svc: string) => `weeder/${ns}/${svc}`;
  // The watcher's readiness record, in tend's ConfigMap (tend runs with tend-system as its namespace here).
  const recorded = async (name: string) => (await new ReadinessStore(kube(), DEFAULT_TEND_NAMESPACE).read(ns, name))?.readiness;
  const scale = (name: string, replicas: number) =>
    kube().apps.patchNamespacedDeploymentScale({ namespace: ns, name, body: { spec: { replicas } } }, mergePatch);
  const describe_ = (svc: string) => temporal.workflow.getHandle(id(svc)).describe();
  const sliceReady = async (svc: string) => {
    const slices = await kube().discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: `kubernetes.io/service-name=${svc}` });
    return slices.items.some((s) => s.endpoints?.some((e) => e.conditions?.ready !== false));
  };
  const setFail = async (pod: k8s.V1Pod) => kube().core.patchNamespacedPod(
    { namespace: ns, name: pod.metadata!.name!, body: { metadata: { annotations: { 'sim.tend.dev/fail': 'true' } } } }, mergePatch);
  const livePods = async (selector: string) => (await podsOf(kube(), ns, selector)).filter((p) => !p.metadata?.deletionTimestamp);

  it('a Service first seen ready opens a window; extend and stop it with the temporal CLI; tend weeder list shows it', async () => {
    await waitFor('tend to start', () => /worker started/.test(worker.output) && /weeder watching/.test(watcher.output), { timeoutMs: 60_000 });
    const first = await waitFor('a window for db (first seen ready)', async () => {
      const d = await describe_('db').catch(() => undefined);
      return d?.status.name === 'RUNNING' ? d : undefined;
    }, { timeoutMs: 60_000 });
    const summary = await first.staticSummary();
    assert.ok(summary?.startsWith(`weeder: Service ${ns}/db: deletes its dependants stuck in CrashLoopBackOff for 40s`), summary);

    await temporalCli(['workflow', 'signal', '--workflow-id', id('db'), '--name', 'extend', '--input', '{"seconds": 600}']);
    const list = await waitFor('tend weeder list to show the extended window', async () => {
      const r = await runTend(['weeder', 'list', '--json', '--config', config]);
      assert.equal(r.code, 0, r.stderr);
      const rows = JSON.parse(r.stdout) as WindowRow[];
      const row = rows.find((w) => w.workflowId === id('db'));
      return row && Date.parse(row.until) > Date.now() + 500_000 ? row : undefined;
    });
    assert.equal(list.service, `${ns}/db`);
    const table = await runTend(['weeder', 'list', '--config', config]);
    assert.match(table.stdout, /SERVICE\s+STATE\s+UNTIL/);
    assert.ok(table.stdout.includes(`${ns}/db`), table.stdout);

    await temporalCli(['workflow', 'signal', '--workflow-id', id('db'), '--name', 'stop', '--input', '{"reason": "operator says so"}']);
    const result = await waitFor('the stopped window to close', async () => {
      const h = temporal.workflow.getHandle(id('db'));
      return (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined;
    }, { timeoutMs: 15_000 });
    assert.equal(result.stopped, 'operator says so');
    assert.equal(result.transitions, 2, 'the opening transition and the extension');
  });

  it('tend weeder list names a running window no worker answers, within seconds, instead of waiting for it', async () => {
    const orphan = `weeder/${ns}/orphan`;
    const h = await temporal.workflow.start('weederWorkflow', {
      taskQueue: `nobody-polls-${ns}`, workflowId: orphan, args: [{}], typedSearchAttributes: [{ key: TendCapability, value: 'weeder' }],
    });
    try {
      await waitFor('the orphan window in the visibility store', async () => {
        for await (const wf of temporal.workflow.list({ query: `WorkflowId = '${orphan}' AND TendCapability = 'weeder'` })) return wf;
        return undefined;
      });
      const t0 = Date.now();
      const r = await runTend(['weeder', 'list', '--json', '--config', config]);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(Date.now() - t0 < 20_000, `answered in ${Date.now() - t0} ms`);
      assert.match(r.stderr, new RegExp(`did not answer within 5 s .*not listed: .*${orphan.replace(/[/.-]/g, '\\$&')}`));
      const rows = JSON.parse(r.stdout) as WindowRow[];
      assert.equal(rows.some((w) => w.workflowId === orphan), false);
    } finally {
      await h.terminate('test over');
    }
  });

  it('watcher down across a transition: the window still opens when it returns; a restart without one opens nothing', async () => {
    const run = (await describe_('db')).runId;
    await watcher.stop('SIGKILL');
    await scale('db', 0);
    await waitFor('db not ready', async () => !(await sliceReady('db')));
    await scale('db', 1);
    await waitFor('db ready again', () => sliceReady('db'));
    assert.equal((await describe_('db')).runId, run, 'nothing happened while the watcher was down');
    watcher = new TendProcess(['watcher', '--config', config]);
    await waitFor('a new window for db', async () => {
      const d = await describe_('db');
      return d.runId !== run && d.status.name === 'RUNNING';
    }, { timeoutMs: 30_000 });

    const reopened = (await describe_('db')).runId;
    await watcher.stop('SIGTERM');
    watcher = new TendProcess(['watcher', '--config', config]);
    // Barrier: once the new watcher has judged marker going down, it has judged db's slices too.
    await scale('marker', 0);
    await waitFor('the new watcher to record marker not ready', async () => (await recorded('marker')) === 'not-ready', { timeoutMs: 30_000 });
    assert.equal((await describe_('db')).runId, reopened, 'a watcher restart without a transition opens nothing');
  });

  it('worker killed mid-window: the window completes and still weeds', async () => {
    const h = temporal.workflow.getHandle(id('db'));
    assert.equal((await h.describe()).status.name, 'RUNNING');
    await worker.stop('SIGKILL');
    worker = new TendProcess(['worker', '--config', config]);
    await waitFor('the new worker', () => /worker started/.test(worker.output), { timeoutMs: 60_000 });
    const [pod] = await livePods('app=api');
    await setFail(pod!);
    await waitFor('the crash-looping api pod weeded by the resumed window', async () => {
      const pods = await livePods('app=api');
      return pods.length === 1 && pods[0]!.metadata!.uid !== pod!.metadata!.uid && !crashLooping(pods[0]!) && isReady(pods[0]!);
    }, { timeoutMs: 40_000 });
    const result = await waitFor('the window to complete', async () =>
      (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined, { timeoutMs: 60_000 });
    // The run may also hold a pod weeded when it opened (the previous test's outage), so: includes.
    assert.ok(result.weeded.some((p) => p.uid === pod!.metadata!.uid), JSON.stringify(result.weeded));
  });

  it('worker killed while armed: when db returns, its crash-looping dependant is still weeded at once', async () => {
    await scale('db', 0);
    const armedRun = await waitFor('db armed, its armed activity started', async () => {
      const h = temporal.workflow.getHandle(id('db'));
      const d = await h.describe();
      if (d.status.name !== 'RUNNING') return undefined;
      const w = await h.query<WindowSnapshot>('window');
      return w.armed && (d.raw.pendingActivities ?? []).some((a) => a.lastStartedTime) ? d.runId : undefined;
    }, { timeoutMs: 30_000 });
    // The armed activity is lost with its worker; Temporal retries it after its heartbeat timeout
    // (3 s), on the new worker once it polls, and that attempt deletes at once when db returns.
    await worker.stop('SIGKILL');
    worker = new TendProcess(['worker', '--config', config]);
    await waitFor('the new worker', () => /worker started/.test(worker.output), { timeoutMs: 60_000 });
    // Deep enough in back-off (16 s at time scale 0.1) that the pod cannot recover by itself before
    // the weeder acts, even with the dead worker's sticky workflow task timing out first (10 s).
    const [before] = await waitFor('the api pod deep in CrashLoopBackOff', async () => {
      const pods = await livePods('app=api');
      return pods.length === 1 && backoffRemainingMs(pods[0]!) >= 14_000 ? pods : undefined;
    }, { timeoutMs: 90_000, intervalMs: 100 });
    await scale('db', 1);
    await waitFor('the crash-looping api pod weeded (a new pod) and ready', async () => {
      const pods = await livePods('app=api');
      return pods.length === 1 && pods[0]!.metadata!.uid !== before!.metadata!.uid && isReady(pods[0]!);
    }, { timeoutMs: 30_000 });
    const h = temporal.workflow.getHandle(id('db'), armedRun);
    const result = await waitFor('the window to complete', async () =>
      (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined, { timeoutMs: 150_000 });
    assert.ok(result.armedAt && result.openedAt && result.armedAt < result.openedAt, JSON.stringify(result));
    assert.ok(result.weeded.some((p) => p.uid === before!.metadata!.uid), JSON.stringify(result));
  });

  // Last: its window (watchDuration) has run out during the tests before, instead of being waited out on its own;
  // the worker killed meanwhile leaves it one activity still (Temporal retries it; it schedules nothing new).
  it('a quiet window costs one activity, no timers', async () => {
    const h = temporal.workflow.getHandle(id('quiet'));
    await waitFor('the quiet window to close', async () => (await h.describe()).status.name === 'COMPLETED', { timeoutMs: 60_000 });
    const events = (await h.fetchHistory()).events ?? [];
    const count = (type: string) => events.filter((e) => e.eventType != null && String(e.eventType).includes(type)).length;
    const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes).length;
    const timers = events.filter((e) => e.timerStartedEventAttributes).length;
    const signals = events.filter((e) => e.workflowExecutionSignaledEventAttributes).length;
    assert.equal(scheduled, 1, `activities scheduled (${count('')} events)`);
    assert.equal(timers, 0);
    assert.equal(signals, 1, 'the opening transition');
  });
});
