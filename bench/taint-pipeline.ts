// Benchmark (not a test): what tend's own pipeline costs per tainted node, with no Kubernetes in it.
// A zone outage's first marks go through one node workflow per node: the watcher's start, a
// workflow task whose first step (the taintNodeStart local activity) reads the node, lists its pods
// and marks them, and a timer. This measures that pipeline alone, so that its CPU can be set
// against the API server's: the Temporal dev server as the sandbox runs it, a worker process with
// the real workflow bundle and the real taint activities over an in-memory API (each node carries
// one configured taint and --pods-per-node managed pods; a read or a write answers at once), and
// --nodes node workflows started as the watcher starts them (signal-with-start, 16 at a time).
//
//   node bench/taint-pipeline.ts [--nodes 334] [--pods-per-node 10] [--rounds 3] [--worker-options JSON] [--profile DIR]
//
// Per round (fresh node names; the round's workflows terminated after it): the time from the first
// start until every pod is marked, and the CPU seconds of the Temporal server, the worker and this
// process (the starts) from the first start until both processes are quiet again, per node.
// --worker-options: more options for Worker.create (JSON), to compare settings. --profile DIR: the
// worker writes a CPU profile there when it stops. JSON on stdout (with one node workflow's history,
// by event type), a table on stderr.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import protos from '@temporalio/proto';
import { createTaintActivities } from '../src/activities/taint.ts';
import { taintReplacementSchema } from '../src/config/taint-replacement.ts';
import type { KubeClients } from '../src/kube/client.ts';
import { ensureBinaries } from '../src/sandbox/binaries.ts';
import { devServerArgs } from '../src/sandbox/sandbox.ts';
import { freeLoopbackPort } from '../src/workers/runtime.ts';
import { TendCapability, TendTarget } from '../src/search-attributes.ts';
import { nodeTaintsSignal, nodeWorkflowId } from '../src/taint/messages.ts';
import { matchingTaints } from '../src/taint/match.ts';
import { WORKFLOW_CACHE_SIZE, workflowBundlePath, workflowCode, writeWorkflowBundle } from '../src/workers/worker.ts';
import { cpuSecondsOf, pool, say, sleep, waitFor } from './lib/taint-support.ts';

const { values: opts } = parseArgs({
  options: {
    nodes: { type: 'string', default: '334' },
    'pods-per-node': { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    'worker-options': { type: 'string', default: '{}' },
    profile: { type: 'string' },
    // Internal: this file run as the worker process.
    'as-worker': { type: 'string' },
  },
});
const whole = (name: string, v: string | undefined, min: number) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) {
    console.error(`taint-pipeline: --${name} must be a whole number of at least ${min} (got ${JSON.stringify(v)})`);
    process.exit(2);
  }
  return n;
};
const NODES = whole('nodes', opts.nodes, 1);
const PODS = whole('pods-per-node', opts['pods-per-node'], 1);
const ROUNDS = whole('rounds', opts.rounds, 1);
let workerOptions: Record<string, unknown>;
try {
  workerOptions = JSON.parse(opts['worker-options']!) as Record<string, unknown>;
  if (typeof workerOptions !== 'object' || workerOptions === null || Array.isArray(workerOptions)) throw new Error('not an object');
} catch (err) {
  console.error(`taint-pipeline: --worker-options must be a JSON object (${(err as Error).message})`);
  process.exit(2);
}

const KEY = 'example.org/zone-outage';
const NS = 'storm';
const TASK_QUEUE = 'tend-taint-pipeline';
const STARTS_AT_ONCE = 16;
const config = taintReplacementSchema.parse({
  podSelector: { matchLabels: { 'tend.dev/managed': 'true' } },
  namespaces: [NS],
  // Nothing falls due within the benchmark: each node workflow marks its pods and sleeps.
  taintReplacementOptions: [{ key: KEY, durationInSeconds: 3600 }],
  taintReplacementTimeSeconds: 1800,
  maxConcurrentReplacements: 10,
});

/** A managed pod as the storm's Deployments make them (labels, owner, conditions), on `node`. */
function podOn(node: string, i: number): k8s.V1Pod {
  const name = `app-${node}-${i}`;
  const at = new Date(Date.now() - 3_600_000).toISOString();
  return {
    metadata: {
      name, namespace: NS, uid: `${node}-uid-${i}`, resourceVersion: '1', creationTimestamp: at as unknown as Date,
      labels: { 'tend.dev/managed': 'true', app: `app-${i}`, 'pod-template-hash': '5d8f7c9b4' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `app-${i}-5d8f7c9b4`, uid: `rs-uid-${i}`, controller: true, blockOwnerDeletion: true }],
    },
    spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    status: {
      phase: 'Running', podIP: '10.0.0.1', startTime: at as unknown as Date,
      conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({ type, status: 'True', lastTransitionTime: at as unknown as Date })),
    },
  };
}

/** The API as the taint activities use it, in memory: every node tainted, PODS managed pods on each. */
function memoryKube(onPatch: () => void): KubeClients {
  const taintedAt = new Date().toISOString();
  const pods = new Map<string, k8s.V1Pod[]>();
  const podsOf = (node: string) => {
    let p = pods.get(node);
    if (!p) pods.set(node, (p = Array.from({ length: PODS }, (_, i) => podOn(node, i))));
    return p;
  };
  return {
    nodes: { taints: async () => [{ key: KEY, value: 'storm', effect: 'NoSchedule', timeAdded: taintedAt }] },
    pods: {
      list: async (q: { fieldSelector?: string }) => ({ items: podsOf((q.fieldSelector ?? '').replace('spec.nodeName=', '')), metadata: {} }),
      patchStatus: async () => {
        onPatch();
      },
    },
  } as unknown as KubeClients;
}

// --- the worker process -----------------------------------------------------------------------
if (opts['as-worker'] !== undefined) {
  const { NativeConnection, Runtime, DefaultLogger, Worker } = await import('@temporalio/worker');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  let patched = 0;
  let lastAt = 0;
  let told = 0;
  const kube = memoryKube(() => {
    patched++;
    lastAt = Date.now();
  });
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: opts['as-worker'] }),
    taskQueue: TASK_QUEUE,
    ...await workflowCode(),
    activities: createTaintActivities(kube, config),
    maxCachedWorkflows: WORKFLOW_CACHE_SIZE,
    shutdownGraceTime: 0,
    ...workerOptions,
  });
  const tell = setInterval(() => {
    // With the time of the last write, as the worker saw it (not when this message arrives).
    if (patched !== told) process.send!({ patched: (told = patched), lastAt });
  }, 100);
  process.on('message', (m) => {
    if (m === 'stop') worker.shutdown();
  });
  process.send!('ready');
  await worker.run();
  clearInterval(tell);
  process.exit(0);
}

// --- the benchmark ----------------------------------------------------------------------------
const dir = mkdtempSync(join(tmpdir(), 'tend-taint-pipeline-'));
const children: ChildProcess[] = [];
const stopAll = () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
};
process.on('exit', stopAll);
for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, () => process.exit(130));

// The dev server as the sandbox runs it (src/sandbox/sandbox.ts): SQLite in a file, write-ahead log.
const port = await freeLoopbackPort();
const address = `127.0.0.1:${port}`;
const temporal = spawn((await ensureBinaries()).temporal, devServerArgs({ port, dbFile: join(dir, 'temporal.db'), logLevel: 'error' }),
  { stdio: ['ignore', 'ignore', 'inherit'] });
children.push(temporal);
const connection = await waitFor('the Temporal server', () => Connection.connect({ address, connectTimeout: 1000 }).catch(() => undefined), 60_000, 500);
const client = new Client({ connection });
await waitFor('the default namespace', () => client.workflow.count().then(() => true, () => false), 60_000, 500);

await writeWorkflowBundle(workflowBundlePath);
// The worker's process as bin/tend runs it (its V8 and glibc settings).
const worker = fork(fileURLToPath(import.meta.url), ['--as-worker', address, '--pods-per-node', String(PODS), '--worker-options', JSON.stringify(workerOptions)], {
  execArgv: ['--max-semi-space-size=8', '--heap-growing-percent=20', ...(opts.profile ? ['--cpu-prof', '--cpu-prof-dir', opts.profile] : [])],
  env: { ...process.env, MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
children.push(worker);
let patched = 0;
let lastPatchAt = 0;
worker.on('message', (m: unknown) => {
  if (m && typeof m === 'object' && 'patched' in m) ({ patched, lastAt: lastPatchAt } = m as { patched: number; lastAt: number });
});
await new Promise<void>((resolve, reject) => {
  worker.once('message', () => resolve());
  worker.once('exit', (code) => reject(new Error(`the worker exited (${code}) before it was ready`)));
});

const cpu = async () => ({
  temporal: (await cpuSecondsOf(temporal.pid!)) ?? NaN,
  worker: (await cpuSecondsOf(worker.pid!)) ?? NaN,
  starts: (() => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  })(),
});
type Cpu = Awaited<ReturnType<typeof cpu>>;
const minus = (b: Cpu, a: Cpu): Cpu => ({ temporal: b.temporal - a.temporal, worker: b.worker - a.worker, starts: b.starts - a.starts });
/** Until the server and the worker use less than 2 % of a core over a second (at most 60 s, said if so). */
const quiet = async () => {
  const until = Date.now() + 60_000;
  let a = await cpu();
  while (Date.now() < until) {
    await sleep(1000);
    const b = await cpu();
    const d = minus(b, a);
    if (d.temporal < 0.02 && d.worker < 0.02) return;
    a = b;
  }
  say('the server or the worker was still busy after 60 s: the round\'s CPU includes what they did meanwhile');
};

/** One round: NODES node workflows started as the watcher starts them, until every pod is marked and both processes are quiet. */
async function round(r: number) {
  const names = Array.from({ length: NODES }, (_, i) => `r${r}-node-${i}`);
  await quiet();
  const before = await cpu();
  const base = patched;
  const t0 = Date.now();
  const taints = matchingTaints([{ key: KEY, effect: 'NoSchedule' }], config.taintReplacementOptions).map((t) => ({ ...t, seenAt: t0 }));
  await pool(names, STARTS_AT_ONCE, async (node) => {
    await client.workflow.signalWithStart('taintNodeWorkflow', {
      workflowId: nodeWorkflowId(node), taskQueue: TASK_QUEUE, args: [{ node }], signal: nodeTaintsSignal, signalArgs: [{ taints }],
      staticSummary: `taint replacement on node ${node}: ${KEY}:NoSchedule`,
      typedSearchAttributes: [{ key: TendCapability, value: 'taint' }, { key: TendTarget, value: node }],
    });
  });
  const startedMs = Date.now() - t0;
  await waitFor(`round ${r}: ${NODES * PODS} pods marked`, async () => patched - base >= NODES * PODS, 10 * 60_000, 50);
  const markedMs = lastPatchAt - t0;
  await quiet();
  const used = minus(await cpu(), before);
  // One node workflow's history, by event type.
  const events: Record<string, number> = {};
  for (const e of (await client.workflow.getHandle(nodeWorkflowId(names[0]!)).fetchHistory()).events ?? []) {
    const type = protos.temporal.api.enums.v1.EventType[e.eventType ?? 0]!.replace('EVENT_TYPE_', '');
    events[type] = (events[type] ?? 0) + 1;
  }
  const perNode = (s: number) => +(s * 1000 / NODES).toFixed(2);
  const result = {
    round: r, startedMs, nodeHistory: events, markedMs, nodesPerSecond: +(NODES / (markedMs / 1000)).toFixed(1), podsPerSecond: +(NODES * PODS / (markedMs / 1000)).toFixed(1),
    cpuSeconds: { temporal: +used.temporal.toFixed(2), worker: +used.worker.toFixed(2), starts: +used.starts.toFixed(2) },
    cpuMsPerNode: { temporal: perNode(used.temporal), worker: perNode(used.worker), starts: perNode(used.starts), all: perNode(used.temporal + used.worker + used.starts) },
  };
  say(`round ${r}: ${NODES} nodes started in ${startedMs} ms, every pod marked at ${markedMs} ms (${result.podsPerSecond} pods/s); ` +
    `CPU per node: Temporal ${result.cpuMsPerNode.temporal} ms, worker ${result.cpuMsPerNode.worker} ms, starts ${result.cpuMsPerNode.starts} ms`);
  // The round's workflows ended, so that the next round starts as this one did.
  await pool(names, STARTS_AT_ONCE, async (node) => {
    await client.workflow.getHandle(nodeWorkflowId(node)).terminate('benchmark round over').catch(() => undefined);
  });
  return result;
}

const rounds: Awaited<ReturnType<typeof round>>[] = [];
for (let r = 1; r <= ROUNDS; r++) rounds.push(await round(r));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const summary = {
  nodes: NODES, podsPerNode: PODS, workerOptions, rounds,
  median: {
    markedMs: median(rounds.map((x) => x.markedMs)),
    cpuMsPerNode: Object.fromEntries((['temporal', 'worker', 'starts', 'all'] as const).map((k) => [k, median(rounds.map((x) => x.cpuMsPerNode[k]))])),
  },
};
console.error('\nround  marked (ms)  pods/s  CPU ms per node: Temporal  worker  starts  all');
for (const x of rounds) {
  console.error(`${String(x.round).padStart(5)}  ${String(x.markedMs).padStart(11)}  ${String(x.podsPerSecond).padStart(6)}  ` +
    `${String(x.cpuMsPerNode.temporal).padStart(24)}  ${String(x.cpuMsPerNode.worker).padStart(6)}  ${String(x.cpuMsPerNode.starts).padStart(6)}  ${String(x.cpuMsPerNode.all).padStart(4)}`);
}
console.log(JSON.stringify(summary, null, 2));
if (worker.exitCode === null) {
  worker.send('stop');
  await new Promise((resolve) => worker.once('exit', resolve));
}
await connection.close();
process.exit(0);
