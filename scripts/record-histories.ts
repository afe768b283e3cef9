// Records the histories that `npm run test:replay` replays: real runs of every
// workflow type tend hosts, driven on the sandbox through `tend run`, caught
// in mid-life (continued as new, slots queued, a drain backing off, signals
// not yet handled) and written as JSON, the form `temporal workflow show -o json`
// prints and `historyFromJSON` reads.
//
//   npm run record:histories -- [--state-dir DIR] [--port-offset N] [--label NAME] [--only safety|node-repair]
//
// `--only safety` records the durable pause (safetyWorkflow) alone, without the
// sandbox: that workflow runs no activity, so a worker of its own serves it.
// Its default label is `<version>-<commit>-safety`, a folder of its own beside
// the full recordings.
//
// `--only node-repair` records Nodes' countdowns (nodeRepairWorkflow, with the
// repair queue and entry they lead to) alone: on the sandbox, whose Nodes it
// stops and starts again, with workers of its own running the real activities
// (recordNodeRepairOnly). Its default label is `<version>-<commit>-node-repair`.
//
// The Kubernetes side is the sandbox (started, or reused when it runs with the
// same settings). Temporal is a dev server of this script's own, in memory,
// with a small history limit (continue-as-new is suggested past
// SUGGEST_CONTINUE_AS_NEW events) so that every long-lived workflow continues
// as new within minutes. It is stopped at the end; the sandbox is left running.
//
// Output: test/replay/histories/<label>/ (label: `<version>-<commit>` unless
// given), one file per run and a manifest.json saying what each one is. A
// label's folder is replaced as a whole; other labels' folders are left alone
// (see docs/contributing/patches.md for how long they are kept).
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection, type WorkflowExecutionInfo } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { workflowBundleOptions, workflowsPath } from '../src/workers/worker.ts';
import { pauseSignal, SAFETY_WORKFLOW_ID } from '../src/safety/messages.ts';
import { pause as safetyPause, resume as safetyResume } from '../src/starters/safety-commands.ts';
import { preview } from '../src/checks/preview.ts';
import { parseConfig, type Config } from '../src/config/load.ts';
import { createActivities } from '../src/activities/index.ts';
import { historyToJSON } from '../test/replay/history-json.ts';
import { stringify as toYaml } from 'yaml';
import { kubeClients, loadKubeConfig, type KubeClients } from '../src/kube/client.ts';
import { mergePatch } from '../src/kube/api.ts';
import { ensureBinaries } from '../src/sandbox/binaries.ts';
import { grantRightsFor } from '../src/sandbox/bootstrap.ts';
import { up, type SandboxInfo } from '../src/sandbox/sandbox.ts';
import { TendCapability, TendNode, TendTarget } from '../src/search-attributes.ts';
import { APP_GROUP, APP_PLURAL, APP_VERSION } from '../src/apps/types.ts';
import { extendSignal, windowQuery } from '../src/weeder/messages.ts';
import { appChangedSignal } from '../src/apps/messages.ts';
import { nodeTaintsSignal, slotSettingsSignal, slotsStatusQuery, SLOTS_WORKFLOW_ID } from '../src/taint/messages.ts';
import { listQuery, REPAIR_QUEUE_WORKFLOW_ID, resetEntryBackoffSignal } from '../src/repair/messages.ts';
import type { RepairQueueEntry } from '../src/repair/entry.ts';
import { NODE_REPAIR_CAPABILITY, NODE_REPAIR_WORKFLOW_TYPE, nodeChangedSignal, nodeRepairStatusQuery, nodeRepairWorkflowId } from '../src/noderepair/messages.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** Continue-as-new is suggested past this many events: small, so that a few minutes of life carry every long-lived workflow over. */
const SUGGEST_CONTINUE_AS_NEW = 24;
/** Of each workflow id, at most its first run and its latest; of each type, at most this many ids. */
const IDS_PER_TYPE = 3;

const NS = { weeder: 'replay-weeder', taint: 'replay-taint', apps: 'replay-apps', repair: 'replay-repair' };
const TASK_QUEUE = 'tend-replay';
const MAINTENANCE = 'replay.tend.dev/maintenance';
const RETIRE = 'replay.tend.dev/retire';

const { values: flags } = parseArgs({
  options: {
    'state-dir': { type: 'string', default: join(repoRoot, '.tend', 'record-histories') },
    'port-offset': { type: 'string', default: '0' },
    label: { type: 'string' },
    out: { type: 'string', default: join(repoRoot, 'test', 'replay', 'histories') },
    only: { type: 'string' },
  },
});
const offset = Number(flags['port-offset']);
if (!Number.isInteger(offset) || offset < 0) throw new Error(`--port-offset must be a whole number of 0 or more (got ${flags['port-offset']})`);

const ONLY = ['safety', 'node-repair'];
if (flags.only !== undefined && !ONLY.includes(flags.only)) throw new Error(`--only takes ${ONLY.join(' or ')} (got ${flags.only})`);

const say = (m: string) => process.stderr.write(`record-histories: ${m}\n`);

// ------------------------------------------------------------------ helpers

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolvePort(port));
    });
  });
}

/** A long-running process of this script's own; its output is kept for a failure's report. */
class Proc {
  readonly child: ChildProcess;
  output = '';
  constructor(cmd: string, args: string[]) {
    this.child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d) => (this.output += d));
    this.child.stderr!.on('data', (d) => (this.output += d));
  }
  get exited() {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }
  async stop(): Promise<void> {
    if (this.exited) return;
    const done = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    await done;
    clearTimeout(timer);
  }
}

const tendCli = join(repoRoot, 'src', 'starters', 'cli.ts');
const tend = (args: string[]) => execFileSync(process.execPath, [tendCli, ...args], { encoding: 'utf8', timeout: 120_000 });

async function recreateNamespace(kube: KubeClients, name: string, labels: Record<string, string> = {}) {
  await kube.core.deleteNamespace({ name }).catch(() => undefined);
  await waitFor(`namespace ${name} to be gone`, () => kube.core.readNamespace({ name }).then(() => false, () => true), 180_000);
  await kube.core.createNamespace({ body: { metadata: { name, labels: { 'replay.tend.dev/recording': 'true', ...labels } } } });
}

function deployment(namespace: string, name: string, replicas: number, opts: {
  labels?: Record<string, string>; annotations?: Record<string, string>; node?: string;
} = {}): k8s.V1Deployment {
  const labels = { app: name, ...opts.labels };
  return {
    metadata: { name, namespace, labels },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels, annotations: opts.annotations },
        spec: {
          ...(opts.node ? { nodeSelector: { 'kubernetes.io/hostname': opts.node } } : {}),
          containers: [{ name, image: `registry.example/${name}:1`, ports: [{ containerPort: 8080 }] }],
        },
      },
    },
  };
}

async function setTaint(kube: KubeClients, node: string, key: string, present: boolean) {
  for (let attempt = 0; ; attempt++) {
    const n = await kube.core.readNode({ name: node });
    const others = (n.spec?.taints ?? []).filter((t) => t.key !== key);
    n.spec = { ...n.spec, taints: present ? [...others, { key, effect: 'NoSchedule' }] : others };
    try {
      await kube.core.replaceNode({ name: node, body: n });
      return;
    } catch (err) {
      if (attempt > 10) throw err;
    }
  }
}

const isReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const crashLooping = (p: k8s.V1Pod) => (p.status?.containerStatuses ?? []).some((s) => s.state?.waiting?.reason === 'CrashLoopBackOff');

// ------------------------------------------------------------------ the run

/** The sandbox in --state-dir, started or reused. */
async function sandbox(stateDir: string): Promise<SandboxInfo> {
  const port = (p: number) => p + offset;
  say(`sandbox in ${stateDir} (port offset ${offset}): starting or reusing it`);
  return await up({
    stateDir,
    // The end-to-end tests' settings, but for etcd's peer port, which with
    // theirs is the client port of the sandbox ten offsets up.
    settings: {
      nodes: 3, timeScale: 0.1, nodeMonitorGraceSeconds: 8,
      ports: {
        etcdClient: port(24790), etcdPeer: port(24795), apiserver: port(17443), controllerManager: port(11357), scheduler: port(11359),
        temporal: port(7333), temporalUi: port(8333),
      },
    },
    progress: (m) => say(`sandbox: ${m}`),
  });
}

async function main() {
  const info = await sandbox(resolve(flags['state-dir']));
  const kube = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));
  const work = await mkdtemp(join(tmpdir(), 'tend-record-'));

  // Temporal: a dev server of our own, in memory, with a small history limit.
  const { address, server } = await startDevServer();
  let tendRun: Proc | undefined;
  try {
    const connection = await waitFor('the dev server to answer', () => Connection.connect({ address }), 60_000);
    const client = new Client({ connection });

    say('namespaces and workloads');
    await Promise.all([
      recreateNamespace(kube, NS.weeder), recreateNamespace(kube, NS.taint), recreateNamespace(kube, NS.apps),
      recreateNamespace(kube, NS.repair, { 'repair.tend.dev/protected': 'true' }),
    ]);
    for (const n of (await kube.core.listNode()).items) {
      for (const key of [MAINTENANCE, RETIRE]) if (n.spec?.taints?.some((t) => t.key === key)) await setTaint(kube, n.metadata!.name!, key, false);
      if (n.spec?.unschedulable) await kube.core.patchNode({ name: n.metadata!.name!, body: [{ op: 'remove', path: '/spec/unschedulable' }] });
    }

    // Weeder: db (not ready: no replicas) and api, which needs db and crash-loops meanwhile.
    await kube.apps.createNamespacedDeployment({ namespace: NS.weeder, body: deployment(NS.weeder, 'db', 0) });
    await kube.core.createNamespacedService({ namespace: NS.weeder, body: { metadata: { name: 'db' }, spec: { selector: { app: 'db' }, ports: [{ port: 80, targetPort: 8080 }] } } });
    await kube.apps.createNamespacedDeployment({ namespace: NS.weeder, body: deployment(NS.weeder, 'api', 1, {
      labels: { role: 'api' }, annotations: { 'sim.tend.dev/depends-on': 'db' },
    }) });
    // Taint: managed pods pinned to the two nodes that get tainted.
    const managed = { 'replay.tend.dev/managed': 'true' };
    await kube.apps.createNamespacedDeployment({ namespace: NS.taint, body: deployment(NS.taint, 'cache', 1, { labels: managed, node: 'sim-1' }) });
    await kube.apps.createNamespacedDeployment({ namespace: NS.taint, body: deployment(NS.taint, 'store', 2, { labels: managed, node: 'sim-2' }) });
    // Repair: a pod under a budget that allows no disruption, on the node the drain entry repairs.
    await kube.apps.createNamespacedDeployment({ namespace: NS.repair, body: deployment(NS.repair, 'keep', 1, { node: 'sim-3' }) });
    await kube.policy.createNamespacedPodDisruptionBudget({ namespace: NS.repair, body: {
      metadata: { name: 'keep' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'keep' } } },
    } });

    // One configuration with every capability.
    const sh = (script: string) => ['sh', '-c', script];
    const health = sh(`test -f ${work}/"$0" && echo true || echo false`);
    const config = join(work, 'tend.yaml');
    await writeFile(config, toYaml({
      temporal: { address, namespace: 'default', taskQueue: TASK_QUEUE },
      kubernetes: { kubeconfig: info.tendKubeconfig },
      // tend's HTTP port (metrics, health) on a free port of its own, not the default 9464.
      http: { address: `127.0.0.1:${await freePort()}` },
      weeder: {
        watchDuration: '10m', namespaces: [NS.weeder],
        servicesAndDependantSelectors: { db: { podSelectors: [{ matchLabels: { role: 'api' } }] } },
      },
      taintReplacement: {
        podSelector: { matchLabels: managed }, namespaces: [NS.taint],
        taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 3600 }, { key: RETIRE, durationInSeconds: 1 }],
        taintReplacementTimeSeconds: 1, maxConcurrentReplacements: 1, breaker: { maxTaintedNodes: 2 },
      },
      apps: { namespaces: [NS.apps] },
      repair: {
        max_concurrent_repairs: 3, time_scale: 0.05, eviction_timeout_seconds: 200,
        protected_namespaces: { matchLabels: { 'repair.tend.dev/protected': 'true' } },
        repair_procedures: [{
          machine_types: ['sim'],
          repair_operations: [
            { operation: 'heal', repair_steps: [{ repair_command: sh(`touch ${work}/"$0"`), watch_seconds: 20 }], health_check_command: health },
            { operation: 'watch-long', repair_steps: [{ repair_command: sh('true'), watch_seconds: 36000 }], health_check_command: health },
            { operation: 'drain', repair_steps: [{ repair_command: sh(`touch ${work}/"$0"`), need_drain: true, watch_seconds: 20 }], health_check_command: health },
          ],
        }],
        state_dir: join(work, 'repair-state'),
      },
    }));
    await grantRightsFor(info.kubeconfig, config, 'tend-replay');

    say('tend run');
    tendRun = new Proc(process.execPath, [tendCli, 'run', '--config', config]);
    const running = tendRun;
    await waitFor('tend to start its worker', () => running.output.includes('worker started') || running.exited, 240_000);
    if (running.exited) throw new Error('tend run exited');

    // check: `tend doctor`.
    say('check: tend doctor');
    tend(['doctor', '--config', config]);

    // weeder: armed while db is not ready; weeds api and opens the window once db is ready.
    say('weeder: armed, then a window');
    const weederId = `weeder/${NS.weeder}/db`;
    await waitFor('the weeder workflow armed', async () => (await client.workflow.getHandle(weederId).query(windowQuery)).armed, 180_000);
    await waitFor('api crash-looping', async () => (await kube.core.listNamespacedPod({ namespace: NS.weeder, labelSelector: 'app=api' })).items.some(crashLooping), 180_000);
    await kube.apps.patchNamespacedDeploymentScale({ namespace: NS.weeder, name: 'db', body: { spec: { replicas: 1 } } }, mergePatch);
    await waitFor('a window open, api weeded', async () => {
      const w = await client.workflow.getHandle(weederId).query(windowQuery);
      return w.openedAt !== undefined && w.weeded.length > 0;
    }, 180_000);
    // Extensions until the window has continued as new at least once.
    await waitFor('the weeder window continued as new', async () => {
      await client.workflow.getHandle(weederId).signal(extendSignal, { seconds: 600 });
      return (await runsOf(client, weederId)).length > 1;
    }, 180_000);

    // apps: an App started, restarted twice (continues as new on the way).
    say('apps: an App, restarted');
    const appRef = { group: APP_GROUP, version: APP_VERSION, plural: APP_PLURAL, namespace: NS.apps };
    await kube.custom.createNamespacedCustomObject({ ...appRef, body: {
      apiVersion: `${APP_GROUP}/${APP_VERSION}`, kind: 'App', metadata: { name: 'web', namespace: NS.apps },
      spec: { desiredState: 'STARTED', processes: [{ type: 'web', instances: 2, template: { metadata: { labels: { role: 'web' } }, spec: { containers: [{ name: 'web', image: 'registry.example/hello:1' }] } } }] },
    } });
    const appId = `app/${NS.apps}/web`;
    await waitFor('the App ready', async () => {
      const app = await kube.custom.getNamespacedCustomObject({ ...appRef, name: 'web' }) as { status?: { conditions?: { type: string; status: string }[] } };
      return app.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    }, 180_000);
    for (let i = 0; i < 2 || (await runsOf(client, appId)).length < 2; i++) {
      if (i > 6) throw new Error(`the App workflow did not continue as new after ${i} restarts`);
      tend(['app', 'restart', `${NS.apps}/web`, '--config', config]);
    }

    // taint: sim-1 marked and waiting an hour; sim-2's two pods replaced one at a time (one slot), their replacements unschedulable.
    say('taint: two nodes tainted');
    await waitFor('the managed pods running', async () => {
      const pods = (await kube.core.listNamespacedPod({ namespace: NS.taint })).items;
      return pods.filter(isReady).length === 3;
    }, 180_000);
    await setTaint(kube, 'sim-1', MAINTENANCE, true);
    await setTaint(kube, 'sim-2', RETIRE, true);
    await waitFor('an eviction on sim-2 and a request queued', async () => {
      const s = await client.workflow.getHandle(SLOTS_WORKFLOW_ID).query(slotsStatusQuery);
      return s.granted >= 1 && s.queue.length >= 1;
    }, 180_000);
    await waitFor('the coordinator and both node workflows continued as new', async () => {
      for (const id of [SLOTS_WORKFLOW_ID, 'taint/sim-1', 'taint/sim-2']) if ((await runsOf(client, id)).length < 2) {
        // "Look again" (each costs a read): events, so that the history grows past the limit.
        if (id === SLOTS_WORKFLOW_ID) await client.workflow.getHandle(id).signal(slotSettingsSignal);
        else await client.workflow.getHandle(id).signal(nodeTaintsSignal, { taints: [] });
        return false;
      }
      return true;
    }, 240_000);

    // repair: one entry healed (completed), one watching for hours, one draining sim-3 against a budget (backing off).
    say('repair: three entries');
    await writeFile(join(work, '192.0.2.10'), '');
    const add = (op: string, addr: string) => JSON.parse(tend(['repair-queue', 'add', '--config', config, op, 'sim', addr])) as RepairQueueEntry;
    const heal = add('heal', '192.0.2.1');
    const watch = add('watch-long', '192.0.2.2');
    const drain = add('drain', '10.88.0.3');
    const entries = () => client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(listQuery);
    await waitFor('heal succeeded, watch-long watching, drain backing off', async () => {
      const all = await entries();
      const of = (e: RepairQueueEntry) => all.find((x) => x.index === e.index);
      if (of(heal)?.status === 'processing') await writeFile(join(work, '192.0.2.1'), '').catch(() => undefined);
      return of(heal)?.status === 'succeeded' && of(watch)?.step_status === 'watching' && (of(drain)?.drain_backoff_count ?? 0) >= 2;
    }, 300_000);
    await waitFor('the repair queue and the drain entry continued as new', async () =>
      (await runsOf(client, REPAIR_QUEUE_WORKFLOW_ID)).length > 1 && (await runsOf(client, `repair/${drain.index}`)).length > 1, 300_000);

    // safety: paused and resumed through the CLI until it has continued as new.
    say('safety: tend pause and tend resume');
    await driveSafety(client, async (i) => void tend(i % 2
      ? ['resume', 'repair', '--config', config]
      : ['pause', 'repair', '--reason', `recording ${i}`, '--config', config]));

    // Signals that reach the open runs while no worker runs: their histories end with them unhandled.
    say('stopping tend; signals left pending');
    await running.stop();
    await client.workflow.getHandle(SAFETY_WORKFLOW_ID).signal(pauseSignal, { capabilities: ['taint'], reason: 'left pending' });
    await client.workflow.getHandle(weederId).signal(extendSignal, { seconds: 600 });
    const app = await kube.custom.getNamespacedCustomObject({ ...appRef, name: 'web' }) as { metadata: { generation: number; uid: string } };
    await client.workflow.getHandle(appId).signal(appChangedSignal, { generation: app.metadata.generation, uid: app.metadata.uid });
    await client.workflow.getHandle('taint/sim-1').signal(nodeTaintsSignal, { taints: [] });
    await client.workflow.getHandle(SLOTS_WORKFLOW_ID).signal(slotSettingsSignal);
    await client.workflow.getHandle(`repair/${drain.index}`).signal(resetEntryBackoffSignal);

    await writeHistories(client);
    await connection.close();
  } catch (err) {
    if (tendRun) process.stderr.write(`--- tend run output (tail) ---\n${tendRun.output.slice(-6000)}\n`);
    throw err;
  } finally {
    await tendRun?.stop();
    await server.stop();
    await setTaint(kube, 'sim-1', MAINTENANCE, false).catch(() => undefined);
    await setTaint(kube, 'sim-2', RETIRE, false).catch(() => undefined);
    await kube.core.patchNode({ name: 'sim-3', body: [{ op: 'remove', path: '/spec/unschedulable' }] }).catch(() => undefined);
    for (const name of Object.values(NS)) await kube.core.deleteNamespace({ name }).catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}

/** Changes to tend-safety (pause, resume, ...) until it has continued as new (the small history limit), ending on a resume. */
async function driveSafety(client: Client, change: (i: number) => Promise<void>) {
  for (let i = 0; (await runsOf(client, SAFETY_WORKFLOW_ID)).length < 2 || i % 2 === 1; i++) {
    if (i > 40) throw new Error(`tend-safety did not continue as new after ${i} changes`);
    await change(i);
  }
}

/** A dev server of this script's own, in memory, with a small history limit (continue-as-new within minutes). */
async function startDevServer(): Promise<{ address: string; server: Proc }> {
  const temporalPort = await freePort();
  const bin = (await ensureBinaries()).temporal;
  const server = new Proc(bin, [
    'server', 'start-dev', '--ip', '127.0.0.1', '--port', String(temporalPort), '--headless', '--log-level', 'error',
    ...[TendCapability, TendTarget, TendNode].flatMap((k) => ['--search-attribute', `${k.name}=Keyword`]),
    ...[`limit.historyCount.suggestContinueAsNew=${SUGGEST_CONTINUE_AS_NEW}`, 'limit.historyCount.warn=5000', 'limit.historyCount.error=10000']
      .flatMap((v) => ['--dynamic-config-value', v]),
  ]);
  return { address: `127.0.0.1:${temporalPort}`, server };
}

/** `--only safety`: a dev server and a worker of this script's own; no sandbox (safetyWorkflow runs no activity). */
async function recordSafetyOnly() {
  const { address, server } = await startDevServer();
  try {
    const connection = await waitFor('the dev server to answer', () => Connection.connect({ address }), 60_000);
    const client = new Client({ connection });
    Runtime.install({ logger: new DefaultLogger('WARN') });
    const native = await NativeConnection.connect({ address });
    const { preloadModules } = workflowBundleOptions();
    const worker = await Worker.create({ connection: native, taskQueue: TASK_QUEUE, workflowsPath, bundlerOptions: { preloadModules }, activities: {} });
    const config = { temporal: { address, namespace: 'default', taskQueue: TASK_QUEUE } } as Config;
    say('safety: pause and resume through the CLI\'s functions');
    await worker.runUntil(driveSafety(client, async (i) => void (i % 2
      ? await safetyResume(client, config, ['repair'])
      : await safetyPause(client, config, ['repair'], `recording ${i}`))));
    // A signal that reaches the open run while no worker runs: its history ends with it unhandled.
    await client.workflow.getHandle(SAFETY_WORKFLOW_ID).signal(pauseSignal, { capabilities: ['taint'], reason: 'left pending' });
    await writeHistories(client, 'safety');
    await native.close();
    await connection.close();
  } finally {
    await server.stop();
  }
}

/** The countdowns' task queues: one per nodeRepair configuration (a few seconds' condition, an hour's). */
const COUNTDOWN_QUEUES = { soon: TASK_QUEUE, late: `${TASK_QUEUE}-late` };

/** A tend configuration whose nodeRepair asks after `duration` of Ready=Unknown; its repair entry changes nothing. */
function nodeRepairConfig(address: string, taskQueue: string, duration: string, work: string) {
  return toYaml({
    temporal: { address, namespace: 'default', taskQueue },
    repair: {
      max_concurrent_repairs: 1, time_scale: 0.05, state_dir: join(work, 'repair-state'),
      repair_procedures: [{
        machine_types: ['sim'],
        repair_operations: [{
          operation: 'unreachable',
          // The Node's address is appended: `true` ignores it, and the Node stays down (so its countdown stays queued).
          repair_steps: [{ repair_command: ['true'], need_drain: false, watch_seconds: 20 }],
          health_check_command: ['sh', '-c', 'echo true'],
        }],
      }],
    },
    nodeRepair: {
      nodeSelector: { matchLabels: { 'node.kubernetes.io/instance-type': 'sim' } },
      unhealthyConditions: [{ type: 'Ready', status: 'Unknown', duration }],
      machineTypeLabel: 'node.kubernetes.io/instance-type',
      // All three Nodes end down: the storm limit is off, so that the cluster limit is what refuses.
      limits: { maximumRepairQueueEntries: 1, minHealthy: 0 },
    },
  });
}

/**
 * `--only node-repair`: Nodes' countdowns (`node/<name>`) on the sandbox, served by workers of
 * this script's own with the real activities. A countdown's condition duration is the worker's
 * configuration, so the countdowns that must not ask (one counting, one recovering) run on a task
 * queue whose worker says an hour, the others on one whose worker says a few seconds (the repair
 * queue they ask runs there too).
 * Caught: a countdown continued as new and counting, one queued, one refused and waiting to ask
 * again, and one ended by its Node's recovery. Every Node stopped is started again at the end.
 */
async function recordNodeRepairOnly() {
  const stateDir = resolve(flags['state-dir']);
  const info = await sandbox(stateDir);
  const admin = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));
  const work = await mkdtemp(join(tmpdir(), 'tend-record-'));
  const { address, server } = await startDevServer();
  const stopped = new Set<string>();
  const sandboxNode = (verb: 'start' | 'stop', node: string) => void tend(['sandbox', 'node', verb, node, '--state-dir', stateDir]);
  const readyOf = async (node: string) => (await admin.core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status;
  try {
    const connection = await waitFor('the dev server to answer', () => Connection.connect({ address }), 60_000);
    const client = new Client({ connection });
    for (const n of ['sim-1', 'sim-2', 'sim-3']) {
      sandboxNode('start', n);
      await waitFor(`${n} Ready`, async () => (await readyOf(n)) === 'True', 120_000);
    }

    const files = { soon: join(work, 'soon.yaml'), late: join(work, 'late.yaml') };
    await writeFile(files.soon, nodeRepairConfig(address, COUNTDOWN_QUEUES.soon, '5s', work));
    await writeFile(files.late, nodeRepairConfig(address, COUNTDOWN_QUEUES.late, '1h', work));
    await grantRightsFor(info.kubeconfig, files.soon, 'tend-replay-node-repair');
    const kube = kubeClients(loadKubeConfig({ kubeconfig: info.tendKubeconfig }));
    const configOf = async (file: string) => parseConfig(await readFile(file, 'utf8'), file, { file });

    Runtime.install({ logger: new DefaultLogger('WARN') });
    const native = await NativeConnection.connect({ address });
    // Bundled once for both workers.
    const { code } = await bundleWorkflowCode({ ...workflowBundleOptions(), logger: new DefaultLogger('WARN') });
    const workerOn = async (taskQueue: string, file: string) =>
      Worker.create({ connection: native, taskQueue, workflowBundle: { code }, activities: createActivities({ kube, config: await configOf(file) }) });
    const soon = await workerOn(COUNTDOWN_QUEUES.soon, files.soon);
    const late = await workerOn(COUNTDOWN_QUEUES.late, files.late);
    await soon.runUntil(late.runUntil(driveCountdowns(client, {
      stop: async (node) => {
        stopped.add(node);
        sandboxNode('stop', node);
        await waitFor(`${node} Ready=Unknown`, async () => (await readyOf(node)) === 'Unknown', 120_000);
      },
      start: async (node) => {
        sandboxNode('start', node);
        stopped.delete(node);
        await waitFor(`${node} Ready`, async () => (await readyOf(node)) === 'True', 120_000);
      },
    })));
    // A change that reaches the counting run while no worker runs: its history ends with it unhandled.
    await client.workflow.getHandle(nodeRepairWorkflowId('sim-1')).signal(nodeChangedSignal);
    // Every run: a countdown continues as new between its asks, so the asks and refusals are in the runs between.
    await writeHistories(client, 'node-repair', true);
    await native.close();
    await connection.close();
  } finally {
    await server.stop();
    for (const n of stopped) {
      try {
        sandboxNode('start', n);
      } catch (err) {
        say(`starting ${n} again failed: ${(err as Error).message}`);
      }
    }
    await rm(work, { recursive: true, force: true });
  }
}

/** The countdowns, started as the watcher starts them (signalWithStart, the search attributes), driven into the states recorded. */
async function driveCountdowns(client: Client, nodes: { stop(node: string): Promise<void>; start(node: string): Promise<void> }) {
  const countdown = (node: string, taskQueue: string) => client.workflow.signalWithStart(NODE_REPAIR_WORKFLOW_TYPE, {
    workflowId: nodeRepairWorkflowId(node), taskQueue, args: [{ node }], signal: nodeChangedSignal, signalArgs: [],
    staticSummary: `node repair: Node ${node}'s countdown, then a repair queue entry`,
    typedSearchAttributes: [{ key: TendCapability, value: NODE_REPAIR_CAPABILITY }, { key: TendTarget, value: node }, { key: TendNode, value: node }],
  });
  const status = (node: string) => client.workflow.getHandle(nodeRepairWorkflowId(node)).query(nodeRepairStatusQuery);

  say('node repair: a countdown ended by its Node\'s recovery (sim-3)');
  await nodes.stop('sim-3');
  const recovering = await countdown('sim-3', COUNTDOWN_QUEUES.late);
  await waitFor('sim-3 counting', async () => (await status('sim-3')).phase === 'counting');
  await nodes.start('sim-3');
  await recovering.signal(nodeChangedSignal);
  const ended = await recovering.result() as string;
  if (!ended.includes('meets no unhealthy condition')) throw new Error(`sim-3's countdown ended otherwise: ${ended}`);

  say('node repair: a countdown continued as new, counting an hour (sim-1)');
  await nodes.stop('sim-1');
  await countdown('sim-1', COUNTDOWN_QUEUES.late);
  const sim1 = nodeRepairWorkflowId('sim-1');
  for (let i = 0; (await runsOf(client, sim1)).length < 2; i++) {
    if (i > 20) throw new Error(`${sim1} did not continue as new after ${i} changes`);
    const h = client.workflow.getHandle(sim1);
    const before = (await h.describe()).historyLength;
    await h.signal(nodeChangedSignal);
    // Each change read before the next: the history grows by a read each time.
    await waitFor(`${sim1} to read its Node again`, async () => (await runsOf(client, sim1)).length > 1 || (await h.describe()).historyLength >= before + 6);
  }
  await waitFor(`${sim1}'s new run counting`, async () => (await status('sim-1')).phase === 'counting');

  say('node repair: a countdown queued (sim-2), one refused by the cluster limit and asking again (sim-3)');
  await nodes.stop('sim-2');
  await countdown('sim-2', COUNTDOWN_QUEUES.soon);
  await waitFor('sim-2 queued', async () => (await status('sim-2')).phase === 'queued');
  await nodes.stop('sim-3');
  await countdown('sim-3', COUNTDOWN_QUEUES.soon);
  // ASK_AGAIN_MS after the first refusal, the second. A run continued as new carries the count of
  // refusals, not the last answer: the reason is checked whenever a run has one.
  let otherwise: string | undefined;
  await waitFor('sim-3 refused twice by the cluster limit, waiting', async () => {
    const s = await status('sim-3');
    if (s.answer && (s.answer.decision !== 'refused' || s.answer.reason !== 'cluster-limit')) otherwise ??= preview(s.answer, 300);
    return otherwise !== undefined || (s.phase === 'waiting' && s.refusals >= 2);
  }, 120_000);
  if (otherwise) throw new Error(`sim-3's countdown was answered otherwise: ${otherwise}`);
  // The queued entry has run its command and health check by now: it is part of the recording too.
  const entries = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(listQuery);
  say(`repair queue: ${entries.map((e) => `${e.index} ${e.address} ${e.status}`).join(', ')}`);
}

async function runsOf(client: Client, workflowId: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const r of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(r);
  return runs;
}

export interface ManifestEntry {
  file: string;
  workflowId: string;
  runId: string;
  workflowType: string;
  /** RUNNING, COMPLETED, CONTINUED_AS_NEW, FAILED, ... when fetched. */
  status: string;
  /** The run was started by continue-as-new (it carries state over). */
  continued: boolean;
  events: number;
}

export interface Manifest {
  label: string;
  /** tend's version and commit the histories were recorded with. */
  version: string;
  commit: string;
  recordedAt: string;
  histories: ManifestEntry[];
}

/**
 * Of every workflow id: its first run and its latest one (with `everyRun`, the runs between too,
 * `run<N>`); at most IDS_PER_TYPE ids per type.
 */
async function writeHistories(client: Client, suffix?: string, everyRun = false) {
  const version = (JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
  const label = flags.label ?? `${version}-${commit}${suffix ? `-${suffix}` : ''}`;
  const final = join(resolve(flags.out), label);
  // Written aside first: a failure leaves no half-written label for the replay test to trip on.
  const dir = `${final}.partial`;
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });

  const byId = new Map<string, WorkflowExecutionInfo[]>();
  for await (const r of client.workflow.list()) byId.set(r.workflowId, [...(byId.get(r.workflowId) ?? []), r]);
  const idsOfType = new Map<string, number>();
  const histories: ManifestEntry[] = [];
  for (const [id, runs] of [...byId].sort(([a], [b]) => a.localeCompare(b))) {
    runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
    const type = runs[0]!.type;
    const n = idsOfType.get(type) ?? 0;
    if (n >= IDS_PER_TYPE) continue;
    idsOfType.set(type, n + 1);
    const named = runs.map((run, i) => [i === 0 ? 'first' : i === runs.length - 1 ? 'latest' : `run${i + 1}`, run] as const);
    const picked = runs.length === 1 ? [['only', runs[0]!] as const] : everyRun ? named : [named[0]!, named.at(-1)!];
    for (const [which, run] of picked) {
      const history = await client.workflow.getHandle(id, run.runId).fetchHistory();
      const first = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      const file = `${type}.${id.replace(/[^A-Za-z0-9-]+/g, '_')}.${which}.json`;
      await writeFile(join(dir, file), `${historyToJSON(history)}\n`);
      histories.push({
        file, workflowId: id, runId: run.runId, workflowType: type, status: run.status.name,
        continued: !!first?.continuedExecutionRunId, events: history.events?.length ?? 0,
      });
      say(`${file}: ${run.status.name}, ${history.events?.length} events`);
    }
  }
  const manifest: Manifest = { label, version, commit, recordedAt: new Date().toISOString(), histories };
  await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  await rm(final, { recursive: true, force: true });
  await rename(dir, final);
  say(`${histories.length} histories in ${final}`);
}

await (flags.only === 'safety' ? recordSafetyOnly() : flags.only === 'node-repair' ? recordNodeRepairOnly() : main());
