// The taint replacement benchmark (not a test): a taint storm on hundreds of
// simulated nodes with thousands of managed pods. On its own sandbox (ports
// +250, state .tend/bench-taint), it taints a share of the nodes at once and
// measures:
//   - time until every affected pod carries NodeTaintDetected, and NodeTaintReplacing;
//   - replacements in flight, sampled from the coordinator and from the pods, against the limit;
//   - peak memory (VmHWM) of the watcher and the worker, run as separate processes;
//   - Temporal actions per tainted node, counted from the workflows' histories;
//   - time until every condition is cleared once the taints go.
// Figures go to stdout as JSON.
//
//   node bench/taint.ts [--nodes 200] [--pods 2000] [--tainted 50] [--max-concurrent 5]
//                       [--replace-window 60] [--keep]
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { stringify as toYaml } from 'yaml';
import { kubeClients, loadKubeConfig } from '../src/kube/client.ts';
import { strategicMergePatch } from '../src/kube/api.ts';
import { down, up } from '../src/sandbox/sandbox.ts';
import { grantRightsFor } from '../src/sandbox/bootstrap.ts';
import { DETECTED, REPLACING, SLOTS_WORKFLOW_ID, slotsStatusQuery } from '../src/taint/messages.ts';
import { editTaints, memOf, pool, rssSampler, say, sleep, waitFor } from './lib/taint-support.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: opts } = parseArgs({ options: {
  nodes: { type: 'string', default: '200' },
  pods: { type: 'string', default: '2000' },
  tainted: { type: 'string', default: '50' },
  'max-concurrent': { type: 'string', default: '5' },
  'replace-window': { type: 'string', default: '60' },
  duration: { type: 'string', default: '60' },
  'state-dir': { type: 'string', default: join(repo, '.tend', 'bench-taint') },
  keep: { type: 'boolean', default: false },
} });
const NODES = Number(opts.nodes);
const PODS = Number(opts.pods);
const TAINTED = Number(opts.tainted);
const MAX = Number(opts['max-concurrent']);
const WINDOW_S = Number(opts['replace-window']);
const DURATION = Number(opts.duration);
const KEY = 'bench.tend.dev/storm';
const OFFSET = 250;
const NS = 'bench-taint';


say(`sandbox: ${NODES} nodes in ${opts['state-dir']}`);
const p = (port: number) => port + OFFSET;
const info = await up({
  stateDir: opts['state-dir'],
  settings: {
    nodes: NODES, timeScale: 0.1, nodeMonitorGraceSeconds: 40,
    ports: { etcdClient: p(24790), etcdPeer: p(24800), apiserver: p(17443), controllerManager: p(11357), scheduler: p(11359), temporal: p(7333), temporalUi: p(8333) },
  },
  progress: (m) => say(m),
});
const kube = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));

await kube.core.createNamespace({ body: { metadata: { name: NS } } }).catch(() => undefined);
const labels = { app: 'bench', 'bench.tend.dev/managed': 'true' };
await kube.apps.createNamespacedDeployment({
  namespace: NS,
  body: {
    metadata: { name: 'bench', namespace: NS },
    spec: {
      replicas: PODS, selector: { matchLabels: { app: 'bench' } },
      template: { metadata: { labels }, spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'registry.example/bench:1' }] } },
    },
  },
}).catch(async () => kube.apps.patchNamespacedDeploymentScale(
  { namespace: NS, name: 'bench', body: [{ op: 'replace', path: '/spec/replicas', value: PODS }] }));
const listPods = async () => (await kube.core.listNamespacedPod({ namespace: NS, labelSelector: 'app=bench' })).items;
const ready = (pod: k8s.V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
const t = Date.now();
await waitFor(`${PODS} pods ready`, async () => {
  const n = (await listPods()).filter((x) => ready(x) && !x.metadata?.deletionTimestamp).length;
  say(`${n}/${PODS} pods ready`);
  return n >= PODS;
}, 30 * 60_000, 5000);
say(`pods ready in ${((Date.now() - t) / 1000).toFixed(0)} s`);

// A clean start: no storm taint left from an earlier run, no taint workflow running.
const bootstrap = new Client({ connection: await Connection.connect({ address: info.temporalAddress }) });
for await (const wf of bootstrap.workflow.list({ query: 'TendCapability="taint" AND ExecutionStatus="Running"' })) {
  await bootstrap.workflow.getHandle(wf.workflowId).terminate('benchmark restart').catch(() => undefined);
}
await bootstrap.connection.close();
{
  const all = (await kube.core.listNode()).items.filter((n) => n.spec?.taints?.some((x) => x.key === 'bench.tend.dev/storm'));
  await Promise.all(all.map(async (n) => {
    n.spec!.taints = n.spec!.taints!.filter((x) => x.key !== 'bench.tend.dev/storm');
    await kube.core.replaceNode({ name: n.metadata!.name!, body: n }).catch(() => undefined);
  }));
}

// Conditions left by an interrupted run would make detection look instant: clear them.
{
  const stale = (await listPods()).filter((x) => x.status?.conditions?.some((c) => c.type.startsWith('NodeTaint')));
  await pool(stale, 25, async (x) => {
    await kube.core.patchNamespacedPodStatus({
      namespace: NS, name: x.metadata!.name!,
      body: { status: { conditions: [{ type: DETECTED, $patch: 'delete' }, { type: REPLACING, $patch: 'delete' }] } },
    }, strategicMergePatch).catch(() => undefined);
  });
  if (stale.length) say(`cleared conditions left on ${stale.length} pods by an earlier run`);
}
const benchStart = new Date();

// tend: watcher and worker apart, so each one's memory can be read.
const dir = join(opts['state-dir'], 'bench');
await mkdir(dir, { recursive: true });
const config = join(dir, 'tend.yaml');
await writeFile(config, toYaml({
  temporal: { address: info.temporalAddress, taskQueue: 'tend-bench-taint' },
  kubernetes: { kubeconfig: info.tendKubeconfig },
  taintReplacement: {
    podSelector: { matchLabels: { 'bench.tend.dev/managed': 'true' } },
    namespaces: [NS],
    taintReplacementOptions: [{ key: KEY, durationInSeconds: DURATION }],
    taintReplacementTimeSeconds: DURATION / 2,
    maxConcurrentReplacements: MAX,
    breaker: { maxTaintedNodes: '100%' },
  },
}));// The rights `tend rbac` generates for this configuration, as an operator would apply them.
await grantRightsFor(info.kubeconfig, config, 'tend-bench');

const cli = join(repo, 'src/starters/cli.ts');
// The worker and the watcher each serve their own HTTP port.
const httpPorts: Record<string, number> = { worker: 19481, watcher: 19482 };
const run = (part: string): ChildProcess => {
  const child = spawn(process.execPath, [cli, part, '--config', config, '--http-address', `127.0.0.1:${httpPorts[part]}`], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TEND_LOG_LEVEL: 'warn' } });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${part}] ${d}`));
  return child;
};
const worker = run('worker');
const watcher = run('watcher');
// However the benchmark ends, it takes its tend processes with it.
process.on('exit', () => {
  watcher.kill('SIGKILL');
  worker.kill('SIGKILL');
});
// Steady-state peak: the worker's start (bundling the workflow code) has its own peak, VmHWM.
const rss = rssSampler({ watcher, worker });
const connection = await Connection.connect({ address: info.temporalAddress });
const client = new Client({ connection });
await waitFor('the coordinator', async () => (await client.workflow.getHandle(SLOTS_WORKFLOW_ID).describe()).status.name === 'RUNNING', 60_000);
await sleep(5000); // let the worker finish bundling and polling

// The storm: TAINTED nodes, all at once.
const nodes = (await kube.core.listNode()).items.map((n) => n.metadata!.name!).sort();
const stormNodes = nodes.slice(0, TAINTED);
const affected = (await listPods()).filter((x) => stormNodes.includes(x.spec?.nodeName ?? '') && !x.metadata?.deletionTimestamp);
const affectedUids = new Set(affected.map((x) => x.metadata!.uid!));
say(`tainting ${stormNodes.length} nodes carrying ${affected.length} managed pods`);
rss.reset();
const t0 = Date.now();
await pool(stormNodes, 25, (n) => editTaints(kube, n, (ts) => [...ts.filter((x) => x.key !== KEY), { key: KEY, value: 'storm', effect: 'NoSchedule' }]));
const taintedIn = Date.now() - t0;

const has = (pod: k8s.V1Pod, type: string) => pod.status?.conditions?.some((c) => c.type === type && c.status === 'True');
let detectedAt = 0;
let replacingAt = 0;
let peakSeen = 0;
let peakCoordinator = 0;
let evicted = 0;
let samples = 0;
const sample = async () => {
  const pods = await listPods();
  const onStorm = pods.filter((x) => affectedUids.has(x.metadata!.uid!));
  const detected = onStorm.filter((x) => has(x, DETECTED)).length;
  const replacing = onStorm.filter((x) => has(x, REPLACING)).length;
  const gone = affected.length - onStorm.filter((x) => !x.metadata?.deletionTimestamp).length;
  const fresh = pods.filter((x) => !affectedUids.has(x.metadata!.uid!) && ready(x) && !x.metadata?.deletionTimestamp).length - (PODS - affected.length);
  // A query needs a worker task; under load it may time out: skip that sample, the pods still count.
  const s = await client.workflow.getHandle(SLOTS_WORKFLOW_ID).query(slotsStatusQuery)
    .catch(() => ({ inFlight: [] as unknown[], queue: [] as unknown[], peakInFlight: 0 }));
  peakCoordinator = Math.max(peakCoordinator, s.inFlight.length, s.peakInFlight);
  // Evicted originals not yet matched by a ready replacement (the others' count can lag: an estimate from outside).
  peakSeen = Math.max(peakSeen, gone - Math.max(0, fresh));
  evicted = gone;
  samples++;
  // An evicted pod was marked before it went.
  if (!detectedAt && detected + gone >= affected.length) detectedAt = Date.now() - t0;
  if (!replacingAt && replacing + gone >= affected.length) replacingAt = Date.now() - t0;
  return { detected, replacing, gone, inFlight: s.inFlight.length, queued: s.queue.length };
};
await waitFor('every affected pod marked NodeTaintDetected', async () => {
  const s = await sample();
  say(`detected ${s.detected}/${affected.length}`);
  return detectedAt > 0;
}, 10 * 60_000, 1000);
await waitFor('every affected pod marked NodeTaintReplacing', async () => {
  const s = await sample();
  say(`replacing ${s.replacing}/${affected.length}, evicted ${s.gone}`);
  return replacingAt > 0;
}, 10 * 60_000, 1000);
const windowEnd = Date.now() + WINDOW_S * 1000;
while (Date.now() < windowEnd) {
  const s = await sample();
  say(`in flight ${s.inFlight} (limit ${MAX}), queued ${s.queued}, evicted ${s.gone}`);
  await sleep(1000);
}

// The storm passes: conditions cleared, queued replacements withdrawn.
const t1 = Date.now();
await pool(stormNodes, 25, (n) => editTaints(kube, n, (ts) => ts.filter((x) => x.key !== KEY)));
await waitFor('every condition cleared', async () => {
  const left = (await listPods()).filter((x) => has(x, DETECTED) && !x.metadata?.deletionTimestamp).length;
  say(`${left} pods still marked`);
  return left === 0;
}, 10 * 60_000, 1000);
const clearedIn = Date.now() - t1;
await waitFor('every node workflow ended', async () => {
  let running = 0;
  for await (const wf of client.workflow.list({ query: 'TendCapability="taint" AND ExecutionStatus="Running"' })) running += wf.workflowId ? 1 : 0;
  return running <= 1;
}, 5 * 60_000, 1000);
rss.stop();
const memory = {
  watcherPeakRssMiB: Math.round(rss.peak.watcher!), workerPeakRssMiB: Math.round(rss.peak.worker!),
  watcherVmHWMMiB: Math.round(await memOf(watcher.pid!, 'VmHWM')), workerVmHWMMiB: Math.round(await memOf(worker.pid!, 'VmHWM')),
};

// Temporal actions: starts, signals (received and sent), timers, activities, from the histories.
const actions: Record<string, number> = {};
let nodeRuns = 0;
for await (const wf of client.workflow.list({ query: `TendCapability="taint" AND StartTime >= "${benchStart.toISOString()}"` })) {
  const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
  if (wf.workflowId !== SLOTS_WORKFLOW_ID) nodeRuns++;
  for (const e of history.events ?? []) {
    const type = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
    const name = type?.replace(/EventAttributes$/, '') ?? '';
    const billed = ['workflowExecutionStarted', 'workflowExecutionSignaled', 'timerStarted', 'activityTaskScheduled',
      'signalExternalWorkflowExecutionInitiated', 'workflowExecutionContinuedAsNew'];
    if (billed.includes(name)) {
      const key = `${wf.workflowId === SLOTS_WORKFLOW_ID ? 'coordinator' : 'nodes'}.${name}`;
      actions[key] = (actions[key] ?? 0) + 1;
    }
  }
}
const nodeActions = Object.entries(actions).filter(([k]) => k.startsWith('nodes.')).reduce((a, [, v]) => a + v, 0);
const coordinatorActions = Object.entries(actions).filter(([k]) => k.startsWith('coordinator.')).reduce((a, [, v]) => a + v, 0);

console.log(JSON.stringify({
  nodes: NODES, pods: PODS, taintedNodes: stormNodes.length, affectedPods: affected.length, maxConcurrentReplacements: MAX,
  taintWritesMs: taintedIn,
  durationInSeconds: DURATION, taintReplacementTimeSeconds: DURATION / 2,
  allDetectedMs: detectedAt,
  allReplacingMs: replacingAt,
  replaceWindowSeconds: WINDOW_S,
  evictedInWindow: evicted,
  peakInFlightCoordinator: peakCoordinator,
  peakInFlightSeenFromPods: peakSeen,
  samples,
  conditionsClearedMs: clearedIn,
  memory,
  nodeWorkflowRuns: nodeRuns,
  actions,
  actionsPerTaintedNode: +(nodeActions / stormNodes.length).toFixed(1),
  coordinatorActions,
}, null, 2));

watcher.kill('SIGTERM');
worker.kill('SIGTERM');
await connection.close();
if (!opts.keep) await down(opts['state-dir']);
process.exit(0);
