// The zone-outage benchmark (not a test): 1,000 simulated nodes, 10,000 managed
// pods in 100 Deployments, and every node of one zone (a third of them) tainted
// at once. On its own sandbox (default ports +400, state .tend/bench-taint-storm), with
// tend's watcher and worker as separate processes, it measures in one run:
//   - the time until every affected pod carries NodeTaintDetected;
//   - the raw rate of the same writes (the same pods/status patch, the same
//     identity, sent the same way) from a tight loop, before tend runs, fastest
//     of two rounds at each of two concurrencies: the physical limit of this
//     machine, and tend's rate as a share of it; and as many rounds more with
//     the zone's taints written in the same window, as tend meets them (its time
//     runs from the first taint write);
//   - replacements in flight (from the coordinator and from the pods) against
//     the limit, sampled every second through a replacement window;
//   - grants per second through the coordinator, its history growth (events,
//     runs: continued as new) and the node workflows' largest history;
//   - Temporal actions per tainted node, from the histories;
//   - the watcher's and the worker's peak memory.
// JSON on stdout, a short table on stderr.
//
//   node bench/taint-storm.ts [--nodes 1000] [--pods 10000] [--apps 100] [--zone zone-a]
//        [--max-concurrent 10] [--replace-window 120] [--raw-concurrency N[,N...]] [--profile DIR] [--keep]
//        [--state-dir DIR] [--port-offset 400] [--worker-node-flags '--max-semi-space-size=8']
// --profile DIR: the worker and the watcher write CPU profiles there (node --cpu-prof) when they stop,
// and the API server's (Go's pprof, `go tool pprof -top FILE`) are taken while the raw loop sets its
// marks (apiserver-raw.pprof) and during tend's first seconds of marking (apiserver-tend.pprof).
// --heap-snapshot DIR: the worker runs with the inspector on a loopback port, and each of its threads'
// heaps (the main thread, the workflow thread) is written to DIR just before the taints (idle-*) and
// once every pod is marked (marked-*, the node workflows all cached), with what grew between them
// per tainted node (bench/lib/heap-diff.ts). The snapshots pause the worker: the replacement
// window's figures of such a run are not tend's.
// --worker-node-flags: Node.js (V8) flags for the worker's process (NODE_OPTIONS), to measure their effect on its memory.
// --tend-nice N: tend's worker and watcher and the Temporal server run at nice N (lower CPU priority)
// while the Kubernetes control plane keeps 0: on this one machine they share the cores with the API
// server, where in a cluster they run elsewhere. Tells how much of tend's share of the raw rate is
// its own pipeline and how much the cores it takes from the API server.
// --pin: the Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
// bound to CPU 0, and everything else (Temporal, the simulated kubelet, this process with its raw
// loop, tend's worker and watcher) to the other CPUs, from the raw loop on: in a cluster the control
// plane has machines of its own. The raw loop and tend then meet the same control plane, on the same
// core, and their ratio is how well tend's pipeline uses it.
// Every run reports each process's CPU seconds while the raw loop's fastest round wrote and while
// tend marked, and the API server's per affected pod.
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, setPriority } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { stringify as toYaml } from 'yaml';
import { kubeClients, loadKubeConfig, type KubeClients } from '../src/kube/client.ts';
import { statusOf } from '../src/kube/client.ts';
import { startInformer } from '../src/kube/informer.ts';
import { down, up } from '../src/sandbox/sandbox.ts';
import { isRunning, readRecord } from '../src/sandbox/process.ts';
import { log } from '../src/log.ts';
import { workflowBundlePath, writeWorkflowBundle } from '../src/workers/worker.ts';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { grantRightsFor } from '../src/sandbox/bootstrap.ts';
import { SLOTS_WORKFLOW_ID, slotsStatusQuery } from '../src/taint/messages.ts';
import { DETECTED, REPLACING, WRITES_AT_ONCE } from '../src/activities/taint.ts';
import {
  actionsOf, apfDelta, apfSnapshot, type ApfDelta, countHistories, cpuMeter, editTaints, pinTo, memOf, memoryParts, partsSampler, roundParts, taskWaits, waitsBetween, pool, rssSampler, say, sleep, waitFor,
} from './lib/taint-support.ts';
import { ensureBinaries } from '../src/sandbox/binaries.ts';
import { spawnTend } from './lib/tend-process.ts';
import { inspectorAddress, snapshotThreads } from './lib/thread-heaps.ts';
import { printHeapDiff } from './lib/heap-diff.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: opts } = parseArgs({ options: {
  nodes: { type: 'string', default: '1000' },
  pods: { type: 'string', default: '10000' },
  apps: { type: 'string', default: '100' },
  zone: { type: 'string', default: 'zone-a' },
  'max-concurrent': { type: 'string', default: '10' },
  'replace-window': { type: 'string', default: '120' },
  duration: { type: 'string', default: '60' },
  'raw-concurrency': { type: 'string' },
  'state-dir': { type: 'string', default: join(repo, '.tend', 'bench-taint-storm') },
  'port-offset': { type: 'string', default: '400' },
  profile: { type: 'string' },
  'heap-snapshot': { type: 'string' },
  'worker-node-flags': { type: 'string', default: '' },
  'tend-nice': { type: 'string' },
  pin: { type: 'boolean', default: false },
  keep: { type: 'boolean', default: false },
} });
const NODES = Number(opts.nodes);
const PODS = Number(opts.pods);
const APPS = Number(opts.apps);
const MAX = Number(opts['max-concurrent']);
const WINDOW_S = Number(opts['replace-window']);
const DURATION = Number(opts.duration);
const KEY = 'bench.tend.dev/zone-outage';
const OFFSET = Number(opts['port-offset']);
const NS = 'bench-storm';
const ACTIVITY_SLOTS = 100;
const MANAGED = 'bench.tend.dev/managed';
// Options checked before anything starts.
const RAW_CS_GIVEN = opts['raw-concurrency']?.split(',').map((x) => {
  const n = Number(x);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--raw-concurrency: ${JSON.stringify(x)} is not a whole number above 0 (a list: 1000,100)`);
  return n;
});
const CPUS = availableParallelism();
if (opts.pin && CPUS < 2) throw new Error(`--pin needs at least 2 CPUs; this machine has ${CPUS}`);
/** How many Node taint writes the benchmark makes at once (as cluster admin, exempt from flow control). */
const TAINTS_AT_ONCE = 100;

say(`sandbox: ${NODES} nodes in ${opts['state-dir']}`);
const p = (port: number) => port + OFFSET;
const sandboxStart = Date.now();
const info = await up({
  stateDir: opts['state-dir'],
  settings: {
    nodes: NODES, timeScale: 0.1, nodeMonitorGraceSeconds: 40, ...(opts.profile ? { profiling: true } : {}),
    ports: { etcdClient: p(23790), etcdPeer: p(23800), apiserver: p(16443), controllerManager: p(10357), scheduler: p(10359), temporal: p(7233), temporalUi: p(8233) },
  },
  progress: (m) => say(m),
});
const sandboxUpMs = Date.now() - sandboxStart;
const admin = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));

// --- the workload: APPS Deployments, PODS pods in all ------------------------------------------
await admin.core.createNamespace({ body: { metadata: { name: NS } } }).catch(() => undefined);
const apps = Array.from({ length: APPS }, (_, i) => `app-${String(i).padStart(3, '0')}`);
const replicasOf = (i: number) => Math.floor(PODS / APPS) + (i < PODS % APPS ? 1 : 0);
await pool(apps, 10, async (name) => {
  const replicas = replicasOf(apps.indexOf(name));
  const labels = { app: name, [MANAGED]: 'true' };
  await admin.apps.createNamespacedDeployment({
    namespace: NS,
    body: {
      metadata: { name, namespace: NS },
      spec: {
        replicas, selector: { matchLabels: { app: name } },
        template: { metadata: { labels }, spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'registry.example/bench:1' }] } },
      },
    },
  }).catch(async () => admin.apps.patchNamespacedDeploymentScale(
    { namespace: NS, name, body: [{ op: 'replace', path: '/spec/replicas', value: replicas }] }));
});

// When each affected pod was first seen marked, from the storm on.
const markedAt = new Map<string, number>();
let stormAt = 0;
let affectedUids = new Set<string>();
const noticed = (pod: k8s.V1Pod) => {
  const uid = pod.metadata?.uid ?? '';
  if (stormAt && affectedUids.has(uid) && !markedAt.has(uid) && has(pod, DETECTED)) markedAt.set(uid, Date.now());
};
// Every pod of the namespace, kept current by a watch (a list of 10,000 pods a second would load the machine).
const pods = startInformer<k8s.V1Pod>({
  kc: admin.kc, path: '/api/v1/pods', namespaces: [NS],
  list: () => admin.core.listNamespacedPod({ namespace: NS }),
  log,
  onUpsert: (pod) => noticed(pod),
  onDelete: () => undefined,
});
await pods.synced;
function ready(pod: k8s.V1Pod): boolean {
  return !!pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
}
function has(pod: k8s.V1Pod, type: string): boolean {
  return !!pod.status?.conditions?.some((c) => c.type === type && c.status === 'True');
}
const livePods = () => pods.list(NS).filter((x) => !x.metadata?.deletionTimestamp);
const t = Date.now();
await waitFor(`${PODS} pods ready`, async () => {
  const n = livePods().filter(ready).length;
  say(`${n}/${PODS} pods ready`);
  return n >= PODS && livePods().length === PODS;
}, 60 * 60_000, 10_000);
say(`pods ready in ${((Date.now() - t) / 1000).toFixed(0)} s`);

// --- a clean start: no storm taint, no taint workflow, no condition left from an earlier run ---
const bootstrap = new Client({ connection: await Connection.connect({ address: info.temporalAddress }) });
for await (const wf of bootstrap.workflow.list({ query: 'TendCapability="taint" AND ExecutionStatus="Running"' })) {
  await bootstrap.workflow.getHandle(wf.workflowId).terminate('benchmark restart').catch(() => undefined);
}
await bootstrap.connection.close();
{
  const left = (await admin.core.listNode()).items.filter((n) => n.spec?.taints?.some((x) => x.key === KEY)).map((n) => n.metadata!.name!);
  await pool(left, 25, (n) => editTaints(admin, n, (ts) => ts.filter((x) => x.key !== KEY)));
}

// --- the zone, and the pods on it -----------------------------------------------------------------
const allNodes = (await admin.core.listNode({ labelSelector: 'sim.tend.dev/node=true' })).items;
const stormNodes = allNodes.filter((n) => n.metadata?.labels?.['topology.kubernetes.io/zone'] === opts.zone).map((n) => n.metadata!.name!);
const stormSet = new Set(stormNodes);
/** The zone's Nodes as they are now (read before a clock starts), so that each taint is one write. */
const readZone = async () => new Map((await admin.core.listNode({ labelSelector: 'sim.tend.dev/node=true' })).items.map((n) => [n.metadata!.name!, n]));
/** Taints every node of the zone, TAINTS_AT_ONCE at a time, so that the zone goes down about at once, as in an outage. */
const taintZone = (zone: Map<string, k8s.V1Node>) =>
  pool(stormNodes, TAINTS_AT_ONCE, (n) => editTaints(admin, n, (ts) => [...ts.filter((x) => x.key !== KEY), { key: KEY, value: 'storm', effect: 'NoSchedule' }], zone.get(n)));
const untaintZone = () => pool(stormNodes, 25, (n) => editTaints(admin, n, (ts) => ts.filter((x) => x.key !== KEY)));
const affected = livePods().filter((x) => stormSet.has(x.spec?.nodeName ?? ''));
affectedUids = new Set(affected.map((x) => x.metadata!.uid!));
const perNode = Math.max(...stormNodes.map((n) => affected.filter((x) => x.spec?.nodeName === n).length));
// The raw loop's concurrencies, each tried RAW_ROUNDS times. By default two: tend's own most for these
// writes (the worker's activity slots, the SDK's default 100, each node's activity writing its pods
// WRITES_AT_ONCE at a time), and RAW_NARROW, which keeps the API server's cores busy while staying
// well under what flow control queues for one identity (at 1,000 at a time it refuses thousands with
// 429, and each refused write waits a second: how many is luck, and the rate with it).
const RAW_NARROW = 100;
const RAW_CS = RAW_CS_GIVEN ?? [Math.min(ACTIVITY_SLOTS, stormNodes.length) * Math.min(WRITES_AT_ONCE, perNode), RAW_NARROW];
say(`${opts.zone}: ${stormNodes.length} of ${allNodes.length} nodes, ${affected.length} managed pods (at most ${perNode} on a node)`);

// tend's configuration (and the rights `tend rbac` generates for it, as an operator would apply them).
const dir = join(opts['state-dir'], 'bench');
await mkdir(dir, { recursive: true });
const config = join(dir, 'tend.yaml');
await writeFile(config, toYaml({
  temporal: { address: info.temporalAddress, taskQueue: 'tend-bench-storm' },
  kubernetes: { kubeconfig: info.tendKubeconfig },
  taintReplacement: {
    podSelector: { matchLabels: { [MANAGED]: 'true' } },
    namespaces: [NS],
    taintReplacementOptions: [{ key: KEY, durationInSeconds: DURATION }],
    taintReplacementTimeSeconds: DURATION / 2,
    maxConcurrentReplacements: MAX,
    breaker: { maxTaintedNodes: '100%' },
  },
}));
await grantRightsFor(info.kubeconfig, config, 'tend-bench');
const tend = kubeClients(loadKubeConfig({ kubeconfig: info.tendKubeconfig }));

/**
 * The same writes tend makes (writeTaintConditions: a strategic merge patch of
 * pods/status keyed by condition type, with a UID precondition), as tend's
 * ServiceAccount, sent as tend sends them (preparedPods), `concurrency` at a time: set, then
 * cleared. A refusal by the API server's flow control (429) waits a second
 * before the write goes again, as tend's does; it and a conflict are counted.
 */
async function rawWrites(kube: KubeClients, set: boolean, concurrency: number): Promise<{ ms: number; retries: number }> {
  const cond = (type: string) => (set
    ? { type, status: 'True', reason: 'NodeTainted', message: `the node carries ${KEY}=storm:NoSchedule`, lastTransitionTime: new Date().toISOString() }
    : { type, $patch: 'delete' });
  let retries = 0;
  const start = Date.now();
  await pool(affected, concurrency, async (pod) => {
    const body = { metadata: { uid: pod.metadata!.uid }, status: { conditions: [cond(DETECTED), set ? { type: REPLACING, $patch: 'delete' } : cond(REPLACING)] } };
    for (;;) {
      try {
        await kube.pods.patchStatus(NS, pod.metadata!.name!, body);
        return;
      } catch (err) {
        const code = statusOf(err);
        if (code !== 429 && code !== 409 && code !== 500 && code !== 503 && code !== 504) throw err;
        retries++;
        if (code === 429) await sleep(1000);
      }
    }
  });
  return { ms: Date.now() - start, retries };
}
// The processes whose CPU is counted: the sandbox's (from its pid files), this one, and tend's two once started.
const CONTROL_PLANE = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
const sandboxPids: Record<string, number | undefined> = {};
for (const name of [...CONTROL_PLANE, 'temporal', 'kubelet']) {
  const rec = await readRecord(join(opts['state-dir'], 'run', `${name}.pid`));
  sandboxPids[name] = (await isRunning(rec)) ? rec!.pid : undefined;
}
const tendPids: Record<string, number | undefined> = {};
const cpu = cpuMeter(() => ({ ...sandboxPids, bench: process.pid, ...tendPids }));
if (opts.pin) {
  const rest = CPUS === 2 ? '1' : `1-${CPUS - 1}`;
  for (const [name, pid] of Object.entries(sandboxPids)) {
    if (pid === undefined) throw new Error(`--pin: no running ${name} in ${opts['state-dir']}`);
    await pinTo(pid, (CONTROL_PLANE as readonly string[]).includes(name) ? '0' : rest);
  }
  // tend's worker and watcher are this process's children: they start bound as it is.
  await pinTo(process.pid, rest);
  say(`pinned: ${CONTROL_PLANE.join(', ')} to CPU 0; Temporal, the kubelet, this process and tend to CPU ${rest}`);
}
say(`raw writes: ${affected.length} pods, ${RAW_CS.join(' and ')} at a time, as tend's ServiceAccount`);
await rawWrites(tend, false, RAW_NARROW); // conditions left by an interrupted run; also warms the connections
const { kubectl } = await ensureBinaries(() => undefined);
const apf = () => apfSnapshot(kubectl, info.kubeconfig);
/** The API server's CPU profile over the next `seconds`, to DIR/apiserver-NAME.pprof (--profile). */
const apiserverProfile = async (name: string, seconds: number): Promise<void> => {
  if (!opts.profile) return;
  await mkdir(opts.profile, { recursive: true });
  const pprof = await new Promise<Buffer | undefined>((resolve) => {
    execFile(kubectl, ['get', '--raw', `/debug/pprof/profile?seconds=${seconds}`], { env: { ...process.env, KUBECONFIG: info.kubeconfig }, encoding: 'buffer', maxBuffer: 256 << 20 },
      (err, out) => {
        if (err) say(`the API server's profile (${name}): ${err.message.split('\n')[0]}`);
        resolve(err ? undefined : out);
      });
  });
  if (pprof) await writeFile(join(opts.profile, `apiserver-${name}.pprof`), pprof);
};

// The raw rate varies from run to run (250 to 505 pods/s on this machine over one day), so the loop
// sets and clears RAW_ROUNDS times at each concurrency, and tend is compared with its fastest round:
// the limit. Then the same again with the zone's taints written in the same window, as tend meets
// them (its time runs from the first taint write): the API server and the controller manager spend
// on each Node while the pods are marked. The loop knows the pods already: it needs no taint to start.
const RAW_ROUNDS = 2;
interface RawRound { concurrency: number; ms: number; retries: number; clearMs: number; apf: ApfDelta; cpu: Record<string, number> }
async function rawRounds(withZone: boolean): Promise<RawRound[]> {
  const rounds: RawRound[] = [];
  for (const concurrency of RAW_CS) {
    for (let round = 0; round < RAW_ROUNDS; round++) {
      const zone = withZone ? await readZone() : undefined;
      const apf0 = await apf();
      const rawProfile = !withZone && rounds.length === 0 ? apiserverProfile('raw', 5) : undefined;
      const cpu0 = await cpu.take();
      const start = Date.now();
      const [set] = await Promise.all([rawWrites(tend, true, concurrency), zone && taintZone(zone)]);
      const ms = Date.now() - start;
      const cpuSet = cpu.since(cpu0, await cpu.take());
      await rawProfile;
      const apfDone = apfDelta(apf0, await apf());
      const clearStart = Date.now();
      await Promise.all([rawWrites(tend, false, RAW_NARROW), withZone && untaintZone()]);
      rounds.push({ concurrency, ms, retries: set.retries, clearMs: Date.now() - clearStart, apf: apfDone, cpu: cpuSet });
      say(`raw round ${round + 1}, ${concurrency} at a time${withZone ? ', with the zone\'s taints' : ''}: set ${affected.length} in ${ms} ms ` +
        `(${(affected.length / (ms / 1000)).toFixed(0)} pods/s, ${set.retries} retries), cleared in ${Date.now() - clearStart} ms`);
    }
  }
  return rounds;
}
/** The fastest of `rounds`, its rate, and every round's rate by concurrency. */
function fastestOf(rounds: RawRound[]) {
  const best = rounds.reduce((a, b) => (b.ms < a.ms ? b : a));
  const rates = Object.fromEntries(RAW_CS.map((c) => [c, rounds.filter((r) => r.concurrency === c).map((r) => +(affected.length / (r.ms / 1000)).toFixed(1))]));
  const told = RAW_CS.map((c) => `${c} at a time: ${rates[c]!.join(', ')}`).join('; ');
  return { best, rate: affected.length / (best.ms / 1000), rates, told };
}
const raw = fastestOf(await rawRounds(false));
const { concurrency: RAW_C, cpu: cpuRaw, apf: apfRaw } = raw.best;
const rawRate = raw.rate;
say(`raw: fastest ${rawRate.toFixed(0)} pods/s, ${RAW_C} at a time (${raw.told})`);
const zoneRaw = fastestOf(await rawRounds(true));
const zoneRate = zoneRaw.rate;
say(`raw with the zone's taints: fastest ${zoneRate.toFixed(0)} pods/s, ${zoneRaw.best.concurrency} at a time (${zoneRaw.told})`);
await waitFor('no pod marked', async () => !livePods().some((x) => has(x, DETECTED) || has(x, REPLACING)), 60_000, 500);

// --- tend: watcher and worker apart, so each one's memory can be read ---------------------------------
// The worker loads its workflow code pre-built, as the image's does (`npm run bundle`): bundling at
// start-up would leave webpack's heap in its resident memory.
// A bundle this run writes is removed at its end, so that no later worker in this tree finds a stale one.
const hadBundle = existsSync(workflowBundlePath);
const hadFolder = existsSync(dirname(workflowBundlePath));
const bundle = await writeWorkflowBundle();
say(`workflow bundle: ${bundle.path} (${Math.round(bundle.bytes / 1024)} KiB)`);
process.on('exit', () => {
  if (!hadFolder) rmSync(dirname(workflowBundlePath), { recursive: true, force: true });
  else if (!hadBundle) for (const f of [workflowBundlePath, workflowBundlePath.replace(/\.js$/, '.fingerprint')]) rmSync(f, { force: true });
});
const benchStart = new Date();
const httpPorts: Record<string, number> = { worker: 19481 + OFFSET, watcher: 19482 + OFFSET };
if (opts.profile) await mkdir(opts.profile, { recursive: true });
if (opts['heap-snapshot']) await mkdir(opts['heap-snapshot'], { recursive: true });
let workerInspector: string | undefined;
/** The worker's threads' heaps, written to --heap-snapshot's folder under `label`. */
const snapshotWorker = async (label: string): Promise<string[]> => {
  if (!workerInspector) throw new Error('--heap-snapshot: the worker did not print its inspector address');
  const t = Date.now();
  const files = await snapshotThreads(workerInspector, opts['heap-snapshot']!, label);
  say(`heap snapshots (${label}): ${files.join(', ')} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return files;
};
const run = (part: string): ChildProcess => {
  const prof = opts.profile ? ['--cpu-prof', '--cpu-prof-dir', opts.profile, '--cpu-prof-name', `${part}.cpuprofile`] : [];
  const inspect = part === 'worker' && opts['heap-snapshot'] ? ['--inspect=127.0.0.1:0'] : [];
  const nodeFlags = [...prof, ...inspect, ...(part === 'worker' ? opts['worker-node-flags'].split(/\s+/).filter(Boolean) : [])];
  const child = spawnTend([part, '--config', config, '--http-address', `127.0.0.1:${httpPorts[part]}`], { nodeFlags, env: { TEND_LOG_LEVEL: 'warn' } });
  child.stderr!.on('data', (d: Buffer) => {
    if (inspect.length) workerInspector ??= inspectorAddress(String(d));
    process.stderr.write(`[${part}] ${d}`);
  });
  return child;
};
const worker = run('worker');
const watcher = run('watcher');
tendPids.worker = worker.pid;
tendPids.watcher = watcher.pid;
if (opts['tend-nice'] !== undefined) {
  const nice = Number(opts['tend-nice']);
  // Linux keeps a nice per thread: every thread of each (threads started later inherit it).
  for (const pid of [worker.pid, watcher.pid, sandboxPids.temporal]) {
    if (pid) for (const tid of readdirSync(`/proc/${pid}/task`)) setPriority(Number(tid), nice);
  }
  say(`tend's worker and watcher and the Temporal server at nice ${nice}`);
}
process.on('exit', () => {
  watcher.kill('SIGKILL');
  worker.kill('SIGKILL');
});
// A worker or watcher that stops (a Node.js flag refused, a crash) ends the run at once: nothing
// it measured after that would be tend's.
let finished = false;
for (const [part, child] of [['worker', worker], ['watcher', watcher]] as const) {
  child.once('exit', (code, signal) => {
    if (finished) return;
    say(`tend's ${part} stopped (${signal ?? `exit code ${code}`}) before the benchmark ended`);
    process.exit(1);
  });
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));
const rss = rssSampler({ watcher, worker });
// The worker's memory by part (its /metrics), at its largest RSS.
const workerParts = partsSampler(httpPorts.worker!);
const connection = await Connection.connect({ address: info.temporalAddress });
const client = new Client({ connection });
await waitFor('the coordinator', async () => (await client.workflow.getHandle(SLOTS_WORKFLOW_ID).describe()).status.name === 'RUNNING', 120_000);
await sleep(5000); // the worker's polls and the watcher's resync settle
const slots = () => client.workflow.getHandle(SLOTS_WORKFLOW_ID).query(slotsStatusQuery);

// --- the storm: every node of the zone, at once ------------------------------------------------------
say(`tainting ${stormNodes.length} nodes carrying ${affected.length} managed pods`);
const workerIdle = await memoryParts(httpPorts.worker!).catch(() => undefined);
const idleHeaps = opts['heap-snapshot'] ? await snapshotWorker('idle') : [];
rss.reset();
workerParts.reset();
const apfTend0 = await apf();
const waits0 = await taskWaits(httpPorts.worker!).catch(() => undefined);
const zoneNow = await readZone();
const tendProfile = apiserverProfile('tend', 10);
const cpuTend0 = await cpu.take();
const t0 = Date.now();
stormAt = t0;
await taintZone(zoneNow);
const taintWritesMs = Date.now() - t0;
const gone = () => affected.filter((x) => { const now = pods.get(x.metadata!.name!, NS); return !now || now.metadata?.uid !== x.metadata!.uid || !!now.metadata?.deletionTimestamp; }).length;
const allMarked = await waitFor('every affected pod marked NodeTaintDetected', async () => {
  say(`detected ${markedAt.size}/${affected.length}`);
  return markedAt.size + (markedAt.size < affected.length ? gone() : 0) >= affected.length ? Date.now() : undefined;
}, 20 * 60_000, 1000);
const cpuTend = cpu.since(cpuTend0, await cpu.take());
await tendProfile;
const apfTend = apfDelta(apfTend0, await apf());
const waits1 = await taskWaits(httpPorts.worker!).catch(() => undefined);
// How long the marking's tasks waited for the worker (its activity slots, its workflow task slots).
const markingWaits = waits0 && waits1 ? waitsBetween(waits0, waits1) : undefined;
const marks = [...markedAt.values()].sort((a, b) => a - b);
const allDetectedMs = (marks.at(-1) ?? allMarked) - t0;
const firstMarkMs = (marks[0] ?? allMarked) - t0;
const tendRate = affected.length / (allDetectedMs / 1000);
say(`all ${affected.length} marked ${allDetectedMs} ms after the first taint write (${tendRate.toFixed(0)} pods/s; first mark at ${firstMarkMs} ms)`);
if (opts['heap-snapshot']) {
  const markedHeaps = await snapshotWorker('marked');
  for (const [i, file] of markedHeaps.entries()) {
    if (!idleHeaps[i]) continue;
    say(`${i === 0 ? 'the worker\'s main thread' : `the worker's thread ${i}`}, from idle to every pod marked:`);
    printHeapDiff(idleHeaps[i]!, file, stormNodes.length);
  }
}

// --- replacements: a window from the first grant ------------------------------------------------------
const missing = () => {
  // Pods evicted and not yet replaced: for each app, desired less its ready, live pods.
  const readyByApp = new Map<string, number>();
  for (const x of livePods()) if (ready(x)) readyByApp.set(x.metadata!.labels!.app!, (readyByApp.get(x.metadata!.labels!.app!) ?? 0) + 1);
  return apps.reduce((sum, a, i) => sum + Math.max(0, replicasOf(i) - (readyByApp.get(a) ?? 0)), 0);
};
const firstGrant = await waitFor('the first grant', async () => {
  const s = await slots().catch(() => undefined);
  return s && s.granted > 0 ? s : undefined;
}, 10 * 60_000, 1000);
const windowStart = Date.now();
const grantedAtStart = firstGrant.granted;
let peakCoordinator = 0;
let peakFromPods = 0;
let samples = 0;
let skipped = 0;
let lastGranted = grantedAtStart;
let queued = 0;
while (Date.now() < windowStart + WINDOW_S * 1000) {
  const s = await slots().catch(() => undefined);
  if (s) {
    peakCoordinator = Math.max(peakCoordinator, s.inFlight.length, s.peakInFlight);
    lastGranted = s.granted;
    queued = s.queue.length;
  } else skipped++;
  peakFromPods = Math.max(peakFromPods, missing());
  samples++;
  say(`in flight ${s?.inFlight.length ?? '?'} (limit ${MAX}), queued ${s?.queue.length ?? '?'}, granted ${lastGranted - grantedAtStart} in window, missing ${missing()}`);
  await sleep(1000);
}
const windowMs = Date.now() - windowStart;
const grants = lastGranted - grantedAtStart;
const evictedInWindow = gone();

// --- the storm passes -----------------------------------------------------------------------------------
const t1 = Date.now();
await untaintZone();
await waitFor('every condition cleared', async () => {
  const left = livePods().filter((x) => has(x, DETECTED) || has(x, REPLACING)).length;
  say(`${left} pods still marked`);
  return left === 0;
}, 20 * 60_000, 2000);
const clearedMs = Date.now() - t1;
await waitFor('every node workflow ended', async () => {
  let running = 0;
  for await (const wf of client.workflow.list({ query: 'TendCapability="taint" AND ExecutionStatus="Running"' })) running += wf.workflowId === SLOTS_WORKFLOW_ID ? 0 : 1;
  say(`${running} node workflows running`);
  return running === 0;
}, 20 * 60_000, 2000);
rss.stop();
workerParts.stop();
const memory = {
  watcherPeakRssMiB: Math.round(rss.peak.watcher!), workerPeakRssMiB: Math.round(rss.peak.worker!),
  watcherVmHWMMiB: Math.round(await memOf(watcher.pid!, 'VmHWM')), workerVmHWMMiB: Math.round(await memOf(worker.pid!, 'VmHWM')),
  // MiB: the main thread's heap, its buffers, and the rest (the workflow thread's heap, the SDK's core, code).
  workerIdleBeforeStorm: workerIdle && roundParts(workerIdle), workerAtPeak: workerParts.atPeak, workerMostWorkflowsCached: workerParts.maxCached,
};
const histories = await countHistories(client, `TendCapability="taint" AND StartTime >= "${benchStart.toISOString()}"`,
  (id) => (id === SLOTS_WORKFLOW_ID ? 'coordinator' : 'nodes'));
const coordinator = histories.runs.coordinator ?? { runs: 0, events: 0, maxEvents: 0 };
const nodesRuns = histories.runs.nodes ?? { runs: 0, events: 0, maxEvents: 0 };
const loadavg = (await import('node:fs/promises')).readFile('/proc/loadavg', 'utf8').then((s) => s.trim());

/** The API server's CPU per affected pod (ms) in a phase, from its processes' CPU seconds. */
const apiserverMsPerPod = (cpuSeconds: Record<string, number>) => +((1000 * (cpuSeconds['kube-apiserver'] ?? NaN)) / affected.length).toFixed(2);
const result = {
  nodes: NODES, pods: PODS, apps: APPS, zone: opts.zone, taintedNodes: stormNodes.length, affectedPods: affected.length,
  sandboxUpMs,
  maxConcurrentReplacements: MAX, durationInSeconds: DURATION, taintReplacementTimeSeconds: DURATION / 2,
  taintWritesMs,
  workerNodeFlags: opts['worker-node-flags'],
  marking: {
    firstMarkMs, allDetectedMs, tendPodsPerSecond: +tendRate.toFixed(1),
    rawConcurrency: RAW_C, rawSetMs: raw.best.ms, rawRetries: raw.best.retries, rawClearMs: raw.best.clearMs,
    rawPodsPerSecond: +rawRate.toFixed(1), rawRoundsPodsPerSecond: raw.rates, tendShareOfRaw: +(tendRate / rawRate).toFixed(2),
    // The raw loop with the zone's taints written in the same window.
    rawWithZoneTaintsConcurrency: zoneRaw.best.concurrency, rawWithZoneTaintsMs: zoneRaw.best.ms, rawWithZoneTaintsRetries: zoneRaw.best.retries,
    rawWithZoneTaintsPodsPerSecond: +zoneRate.toFixed(1), rawWithZoneTaintsRoundsPodsPerSecond: zoneRaw.rates,
    tendShareOfRawWithZoneTaints: +(tendRate / zoneRate).toFixed(2),
    // kube-apiserver's flow control for tend's identity (workload-low) while the raw loop set the
    // conditions, and while tend marked the pods (the watcher's and the worker's every request).
    apfRaw, apfTend, markingWaits,
    pinned: opts.pin,
    // CPU seconds by process while the raw loop's fastest round wrote, and from the first taint
    // write until every affected pod was marked (the wait's last poll, up to a second later).
    cpuRaw, cpuRawWithZoneTaints: zoneRaw.best.cpu, cpuTend,
    apiserverCpuMsPerPod: { raw: apiserverMsPerPod(cpuRaw), rawWithZoneTaints: apiserverMsPerPod(zoneRaw.best.cpu), tend: apiserverMsPerPod(cpuTend) },
  },
  replacements: {
    windowMs, grants, grantsPerSecond: +(grants / (windowMs / 1000)).toFixed(2), queuedAtEnd: queued,
    peakInFlightCoordinator: peakCoordinator, peakInFlightSeenFromPods: peakFromPods, limit: MAX, samples, samplesWithoutQuery: skipped,
    evictedInWindow,
  },
  conditionsClearedMs: clearedMs,
  coordinator: { runs: coordinator.runs, continuedAsNew: Math.max(0, coordinator.runs - 1), events: coordinator.events, maxEventsInARun: coordinator.maxEvents },
  nodeWorkflows: { runs: nodesRuns.runs, maxEventsInARun: nodesRuns.maxEvents },
  actions: histories.actions,
  actionsPerTaintedNode: +(actionsOf(histories, 'nodes') / stormNodes.length).toFixed(1),
  coordinatorActionsPerTaintedNode: +(actionsOf(histories, 'coordinator') / stormNodes.length).toFixed(2),
  memory,
  loadavg: await loadavg,
};
console.log(JSON.stringify(result, null, 2));
const row = (k: string, v: string | number) => console.error(`  ${k.padEnd(44)} ${v}`);
console.error('\ntaint-storm');
row('nodes / pods / tainted nodes / affected pods', `${NODES} / ${PODS} / ${stormNodes.length} / ${affected.length}`);
row('all affected pods marked (from first taint)', `${(allDetectedMs / 1000).toFixed(1)} s (the zone's taints written in ${(taintWritesMs / 1000).toFixed(1)} s)`);
row('tend / raw write rate (pods/s)', `${tendRate.toFixed(0)} / ${rawRate.toFixed(0)} = ${Math.round((100 * tendRate) / rawRate)} % (raw: fastest, ${RAW_C} at a time; ${raw.told})`);
const cores = (c: Record<string, number>, ms: number) => Object.entries(c).map(([k, v]) => `${k} ${(v / (ms / 1000)).toFixed(2)}`).join(', ');
row('tend / raw with the zone\'s taints (pods/s)', `${tendRate.toFixed(0)} / ${zoneRate.toFixed(0)} = ${Math.round((100 * tendRate) / zoneRate)} % (fastest, ${zoneRaw.best.concurrency} at a time; ${zoneRaw.told})`);
row('cores used while the raw loop wrote', cores(cpuRaw, raw.best.ms) + (opts.pin ? ' (control plane pinned to CPU 0)' : ''));
row('  with the zone\'s taints', cores(zoneRaw.best.cpu, zoneRaw.best.ms));
row('cores used while tend marked', cores(cpuTend, allMarked - t0));
const perPod = result.marking.apiserverCpuMsPerPod;
row('API server CPU per affected pod', `tend ${perPod.tend} ms; raw ${perPod.raw}, with the zone's taints ${perPod.rawWithZoneTaints}`);
row('API seats per affected pod (tend / raw)', `${(apfTend.seats / affected.length).toFixed(2)} / ${(apfRaw.seats / affected.length).toFixed(2)}`);
if (markingWaits) {
  row('marking: tasks waiting for the worker', `activities ${markingWaits.activity.meanWaitSeconds} s (${markingWaits.activity.tasks}), ` +
    `workflow tasks ${markingWaits.workflowTask.meanWaitSeconds} s (${markingWaits.workflowTask.tasks})`);
}
row('API requests per affected pod (tend / raw)', `${(apfTend.dispatched / affected.length).toFixed(2)} / ${(apfRaw.dispatched / affected.length).toFixed(2)}`);
row('in flight, peak (coordinator / pods)', `${peakCoordinator} / ${peakFromPods} (limit ${MAX})`);
row('grants per second (window)', `${(grants / (windowMs / 1000)).toFixed(2)} (${grants} in ${(windowMs / 1000).toFixed(0)} s)`);
row('coordinator runs / events (largest run)', `${coordinator.runs} / ${coordinator.events} (${coordinator.maxEvents})`);
row('node workflow largest history', `${nodesRuns.maxEvents} events`);
row('actions per tainted node (+ coordinator)', `${result.actionsPerTaintedNode} (+${result.coordinatorActionsPerTaintedNode})`);
row('watcher / worker peak RSS', `${memory.watcherPeakRssMiB} / ${memory.workerPeakRssMiB} MiB`);
const wp = memory.workerAtPeak;
const wi = memory.workerIdleBeforeStorm;
if (wi) row('worker idle before: heap / buffers / rest', `${wi.heapTotal} (${wi.heapUsed} used) / ${wi.external} / ${wi.rest} MiB (RSS ${wi.rss})`);
if (wp) row('worker at its peak: heap / buffers / rest', `${wp.heapTotal} (${wp.heapUsed} used) / ${wp.external} / ${wp.rest} MiB; ${memory.workerMostWorkflowsCached} workflows cached at most`);
row('load average at the end', result.loadavg);

finished = true;
watcher.kill('SIGTERM');
worker.kill('SIGTERM');
await Promise.all([watcher, worker].map((c) => new Promise((r) => (c.exitCode !== null ? r(undefined) : c.once('exit', r)))));
await pods.stop();
await connection.close();
if (!opts.keep) await down(opts['state-dir']);
process.exit(0);
