// tend's HTTP port end to end: `tend run --http-address` answers /readyz 503
// until its worker polls and its informers have listed, then 200; /healthz
// 200; /metrics carries the SDK's temporal_* series and tend's tend_* ones,
// which move as a weeder window weeds a pod and a taint replacement evicts
// one. The core's own log lines come out as tend's JSON. A bad address is a
// usage error; a port in use fails start-up naming it.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { Client, Connection } from '@temporalio/client';
import type { KubeClients } from '../../src/kube/client.ts';
import { TendCapability } from '../../src/search-attributes.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { runTend, TendProcess } from '../harness/cli.ts';
import { testPort } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deployment, grantConfiguredRights, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { crashLooping } from '../harness/weeder.ts';
import { cleanUpTaintTest, managedLabel, readPod, TASK_QUEUE, taint } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';

const PORT = testPort(19464);
const base = `http://127.0.0.1:${PORT}`;
const MAINTENANCE = 'example.org/metrics-maintenance';

/** One series' value in a Prometheus text scrape: `name{labels}` with every given label, summed over the rest. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let found: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[3] ?? '';
    if (!Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) continue;
    found = (found ?? 0) + Number(m[4]);
  }
  return found;
}

async function get(path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(15_000) });
  return { status: res.status, body: await res.text() };
}

describe('metrics: the HTTP port of `tend run`', function () {
  this.timeout(420_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string;
  const tainted: string[] = [];
  const readyStatuses: number[] = [];

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'metrics');
    // The weeder's Service (no replicas yet: not ready) and a dependant that crash-loops while it is not ready.
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 0 }) });
    await kube.core.createNamespacedService({ namespace: ns, body: service(ns, 'db', { app: 'db' }) });
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({
      namespace: ns, name: 'api', replicas: 1, labels: { role: 'api' }, annotations: { 'sim.tend.dev/depends-on': 'db' },
    }) });
    const dir = await mkdtemp(join(tmpdir(), 'tend-metrics-'));
    config = join(dir, 'tend.yaml');
    await writeFile(config, toYaml({
      temporal: { address: sandbox().temporalAddress, taskQueue: TASK_QUEUE },
      kubernetes: { kubeconfig: sandbox().tendKubeconfig },
      weeder: { watchDuration: '60s', namespaces: [ns], servicesAndDependantSelectors: { db: { podSelectors: [{ matchLabels: { role: 'api' } }] } } },
      taintReplacement: {
        podSelector: { matchLabels: managedLabel(ns) }, namespaces: [ns],
        taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 1,
      },
    }));
    await grantConfiguredRights(config);
  });
  after(async () => {
    // Taints removed, the node workflows seen to end (their conditions cleared), tend stopped, the namespace deleted.
    await cleanUpTaintTest({ kube, ns, tend, config, tainted: new Set(tainted.map((n) => `${n}|${MAINTENANCE}`)), settleMs: 60_000 });
  });

  it('answers /readyz 503 until the worker polls and the informers have listed, then 200; /healthz 200', async () => {
    tend = new TendProcess(['run', '--config', config, '--http-address', `127.0.0.1:${PORT}`], { TEND_LOG_LEVEL: 'info' });
    await waitFor('/readyz 200', async () => {
      const r = await get('/readyz').catch(() => undefined);
      if (r) readyStatuses.push(r.status);
      return r?.status === 200;
    }, { timeoutMs: 180_000, intervalMs: 100 });
    // The port opens before the worker and the watcher have connected: the first answers say why not ready.
    assert.equal(readyStatuses[0], 503, `first /readyz answers: ${readyStatuses.slice(0, 5).join(', ')}`);
    assert.ok(tend.logs.includes('worker started') && tend.logs.includes('taint watch synced'), 'ready only after both parts started');
    assert.deepEqual(await get('/healthz'), { status: 200, body: 'ok\n' });
  });

  it("has the SDK's temporal_* series and tend's tend_* series", async () => {
    const text = (await get('/metrics')).body;
    assert.ok(sample(text, 'temporal_num_pollers', { task_queue: TASK_QUEUE }) !== undefined, 'temporal_num_pollers');
    assert.ok((sample(text, 'temporal_worker_task_slots_available', { task_queue: TASK_QUEUE }) ?? 0) > 0, 'slots available');
    assert.ok((sample(text, 'tend_watcher_events_total', { capability: 'taint', resource: 'nodes' }) ?? 0) > 0, 'taint watcher events');
    assert.equal(sample(text, 'tend_taint_replacements_in_flight'), 0);
    assert.ok(sample(text, 'tend_weeder_windows', { state: 'armed' }) !== undefined, 'weeder windows gauge');
  });

  it("the core's log lines are tend's JSON, with the task queue as a field", async () => {
    // The SDK forwards the core's lines in batches: the worker's start may be in the next one.
    const line = await waitFor('the core to log its worker start', () => tend!.output.split('\n').find((l) => l.includes('"Initializing worker"')),
      { timeoutMs: 30_000 });
    const entry = JSON.parse(line) as Record<string, unknown>;
    assert.equal(entry.source, 'temporal-core');
    assert.equal(entry.taskQueue, TASK_QUEUE);
    assert.match(String(entry.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(typeof entry.level, 'string');
  });

  it('a weeder window weeding a pod moves the weeded counter and the reaction histogram', async () => {
    const before = (await get('/metrics')).body;
    assert.equal(sample(before, 'tend_weeder_pods_weeded_total', { namespace: ns }) ?? 0, 0);
    const [api] = await waitFor('api crash-looping', async () => {
      const pods = (await podsOf(kube, ns, 'role=api')).filter(crashLooping);
      return pods.length > 0 && pods;
    }, { timeoutMs: 90_000 });
    await waitFor('the weeder window armed', async () =>
      (sample((await get('/metrics')).body, 'tend_weeder_windows', { state: 'armed' }) ?? 0) >= 1, { timeoutMs: 60_000, intervalMs: 1000 });
    await kube.apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'db', body: { spec: { replicas: 1 } } }, mergePatch);
    const after = await waitFor('the weeded counter to move', async () => {
      const text = (await get('/metrics')).body;
      return (sample(text, 'tend_weeder_pods_weeded_total', { namespace: ns, service: 'db' }) ?? 0) >= 1 && text;
    }, { timeoutMs: 90_000, intervalMs: 500 });
    assert.ok((sample(after, 'tend_weeder_reaction_seconds_count', { namespace: ns, service: 'db' }) ?? 0) >= 1, 'a reaction observed');
    // One read: between two, the pod being deleted can be gone.
    const now = await readPod(kube, ns, api!.metadata!.name!);
    assert.ok(!now || now.metadata?.uid !== api!.metadata!.uid || !!now.metadata?.deletionTimestamp, 'the pod was weeded');
    // The armed watch deleted it itself (no deleting activity); the SDK counted that activity.
    assert.ok((sample(after, 'temporal_activity_execution_latency_seconds_count', { activity_type: 'watchDependants' }) ?? 0) >= 1, 'the SDK counted the activity');
  });

  it('a running window no worker answers is counted as unanswered; the state read still succeeds and counts the rest', async () => {
    const metrics = async () => (await get('/metrics')).body;
    const unanswered = (text: string) => sample(text, 'tend_state_unanswered_workflows', { what: 'weeder' }) ?? 0;
    const errors = (text: string) => sample(text, 'tend_state_read_errors_total', { what: 'weeder' }) ?? 0;
    const before = await metrics();
    const temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
    const orphan = `weeder/${ns}/orphan`;
    const h = await temporal.workflow.start('weederWorkflow', {
      taskQueue: `nobody-polls-${ns}`, workflowId: orphan, args: [{}], typedSearchAttributes: [{ key: TendCapability, value: 'weeder' }],
    });
    try {
      const text = await waitFor('the orphan window counted as unanswered', async () => {
        const t = await metrics();
        return unanswered(t) >= unanswered(before) + 1 && t;
      }, { timeoutMs: 60_000, intervalMs: 1000 });
      // That read did not fail: no error counted, and db's window (opened by the weeding above) still answers, and is counted.
      assert.equal(errors(text), errors(before), 'no failed weeder read');
      assert.ok((sample(text, 'tend_state_read_age_seconds', { what: 'weeder' }) ?? Infinity) < 20, 'the weeder read succeeded lately');
      const counted = (sample(text, 'tend_weeder_windows', { state: 'open' }) ?? 0) + (sample(text, 'tend_weeder_windows', { state: 'armed' }) ?? 0);
      assert.ok(counted >= 1, `windows counted beside the orphan: ${counted}`);
    } finally {
      await h.terminate('test over');
      await temporal.connection.close();
    }
  });

  it('a taint replacement moves the taint counters', async () => {
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'cache', replicas: 1, labels: managedLabel(ns) }) });
    const [pod] = await waitFor('cache ready', async () => {
      const pods = (await podsOf(kube, ns, 'app=cache')).filter((p) => isReady(p) && !p.metadata?.deletionTimestamp);
      return pods.length === 1 && pods;
    }, { timeoutMs: 60_000 });
    const before = (await get('/metrics')).body;
    const marked0 = sample(before, 'tend_taint_pods_marked_total', { condition: 'NodeTaintReplacing' }) ?? 0;
    const evicted0 = sample(before, 'tend_taint_evictions_total', { outcome: 'evicted' }) ?? 0;
    const node = pod!.spec!.nodeName!;
    tainted.push(node);
    await taint(kube, node, { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });
    const after = await waitFor('the taint counters to move', async () => {
      const text = (await get('/metrics')).body;
      return (sample(text, 'tend_taint_evictions_total', { outcome: 'evicted' }) ?? 0) > evicted0
        && (sample(text, 'tend_taint_replacements_completed_total') ?? 0) >= 1 && text;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    assert.ok((sample(after, 'tend_taint_pods_marked_total', { condition: 'NodeTaintReplacing' }) ?? 0) > marked0, 'Replacing marks counted');
    assert.ok((sample(after, 'tend_taint_pods_marked_total', { condition: 'NodeTaintDetected' }) ?? 0) >= 1, 'Detected marks counted');
    // A gauge read from the coordinator at scrape time (cached for 10 s): it follows.
    await waitFor('the tainted-nodes gauge to count the node', async () =>
      (sample((await get('/metrics')).body, 'tend_taint_nodes_tainted') ?? 0) >= 1, { timeoutMs: 60_000, intervalMs: 1000 });
  });

  it('a bad --http-address is a usage error naming the flag; a port in use fails start-up naming it', async () => {
    const bad = await runTend(['run', '--config', config, '--http-address', 'localhost'], { timeoutMs: 60_000 });
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--http-address/);
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const busy = await runTend(['worker', '--config', config, '--http-address', `127.0.0.1:${port}`], { timeoutMs: 60_000 });
      assert.equal(busy.code, 1, busy.stderr);
      assert.match(busy.stderr, new RegExp(`cannot listen on --http-address 127\\.0\\.0\\.1:${port} \\(http\\.address\\): the port is in use`));
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});
