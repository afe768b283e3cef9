// The weeder benchmark (not a test): on a running sandbox, side by side in one
// run, the seed's cascade (etcd -> kube-apiserver -> kube-controller-manager)
// recovering with tend, with no weeder at all (the simulated kubelet's real
// back-off), and with Gardener's dependency-watchdog weeder v1.7.0 (the seed's
// example configuration); then reaction latency (EndpointSlice turns ready ->
// delete issued) over many trials for tend and dependency-watchdog; then the
// Temporal actions tend spent per window. Figures go to stdout.
//
//   node bench/weeder.ts [--state-dir DIR] [--trials 30] [--down-restarts 6] [--trace DIR] [--load N]
//
// --load N: N processes that keep a core busy, from the start to the end of the run, so that the
// run meets a machine at a known load (the load average, at the start and the end, is printed).
//
// --trace DIR: tend logs at debug level to DIR/tend.log, with a CPU profile
// (node --cpu-prof, sampled every 100 us) in DIR, and each tend trial's
// reaction is split at the armed watch's own timings (its debug line
// "weeder: armed deletions sent"): this process sees the slice ready -> tend's
// watch delivers it -> the deletions start -> the first DELETE is handed to
// the client -> its body is written to the socket (undici's diagnostics
// channel) -> this process sees the pod deleted. Both processes read the
// same clock (performance.timeOrigin + performance.now()).
//
// Each arm runs in its own namespace. dependency-watchdog watches every
// namespace, so only its arm names its Services as the seed does
// (etcd-main-client, kube-apiserver); tend's and the bare arm's use other names.
// Each tool runs as it is deployed, with a ServiceAccount of its own and the rights
// it needs (tend: those `tend rbac` generates; dependency-watchdog: its weeder's).
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { stringify as toYaml } from 'yaml';
import { mergePatch } from '../src/kube/api.ts';
import { kubeClients, loadKubeConfig, type KubeClients } from '../src/kube/client.ts';
import { startInformer } from '../src/kube/informer.ts';
import { log } from '../src/log.ts';
import { currentSandbox } from '../src/sandbox/sandbox.ts';
import { applyObjects, grantRightsFor, serviceAccountToken } from '../src/sandbox/bootstrap.ts';
import { freeLoopbackPort } from '../src/workers/runtime.ts';
import { pgCounters, pgCountersSettled, persistenceRates } from './lib/persistence.ts';
import { spawnTend } from './lib/tend-process.ts';
import { ensureWorkflowBundle } from '../src/workers/worker.ts';
import { memOf, memoryParts, roundParts, rssSampler } from './lib/taint-support.ts';
import { loadavg } from 'node:os';
import { ReadinessStore } from '../src/weeder/record.ts';
import { tendNamespace } from '../src/config/weeder.ts';
import { FAIL_ANNOTATION } from '../src/sandbox/kubelet/annotations.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: opts } = parseArgs({ options: {
  'state-dir': { type: 'string' },
  trials: { type: 'string', default: '30' },
  'down-restarts': { type: 'string', default: '6' },
  'watch-duration': { type: 'string', default: '5s' },
  trace: { type: 'string' },
  /** Processes that keep a core busy for the whole run (0 to 8): the machine at a known load. */
  load: { type: 'string', default: '0' },
} });
const TRACE = opts.trace;
const TRIALS = Number(opts.trials);
const DOWN_RESTARTS = Number(opts['down-restarts']);
const WATCH = opts['watch-duration']!;

const info = await currentSandbox(opts['state-dir']);
if (!info) throw new Error('no sandbox: run `tend sandbox up` (or pass --state-dir)');
const kube = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (m: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}`);

const DWD_ACCOUNT = { namespace: 'default', name: 'dependency-watchdog' };

/** dependency-watchdog's ServiceAccount, its rights (cluster-wide: it watches every namespace) and a kubeconfig with its token. */
async function dwdCredentials(dir: string): Promise<string> {
  const name = 'bench:dependency-watchdog-weeder';
  await applyObjects(info!.kubeconfig, [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: DWD_ACCOUNT },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name },
      rules: [
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['endpoints'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'delete'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update'] },
      ],
    } as k8s.KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', ...DWD_ACCOUNT }],
    } as k8s.KubernetesObject,
  ]);
  const token = await serviceAccountToken(info!.kubeconfig, DWD_ACCOUNT.namespace, DWD_ACCOUNT.name);
  const cluster = loadKubeConfig({ kubeconfig: info!.kubeconfig }).getCurrentCluster()!;
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster], users: [{ name: DWD_ACCOUNT.name, token }],
    contexts: [{ name: DWD_ACCOUNT.name, cluster: cluster.name, user: DWD_ACCOUNT.name }], currentContext: DWD_ACCOUNT.name,
  });
  const file = join(dir, 'dwd.kubeconfig');
  await writeFile(file, kc.exportConfig(), { mode: 0o600 });
  return file;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 120_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s: ${what}`);
    await sleep(everyMs);
  }
}

interface Arm { name: 'tend' | 'none' | 'dwd'; ns: string; etcd: string; api: string }
const suffix = randomBytes(3).toString('hex');
const arms: Arm[] = [
  { name: 'tend', ns: `bench-tend-${suffix}`, etcd: 'etcd-bench', api: 'apiserver-bench' },
  { name: 'none', ns: `bench-none-${suffix}`, etcd: 'etcd-bench', api: 'apiserver-bench' },
  { name: 'dwd', ns: `bench-dwd-${suffix}`, etcd: 'etcd-main-client', api: 'kube-apiserver' },
];

function dep(ns: string, name: string, replicas: number, role: string, dependsOn?: string): k8s.V1Deployment {
  const labels = { app: name, 'gardener.cloud/role': 'controlplane', role };
  return {
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      replicas, selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels, annotations: dependsOn ? { 'sim.tend.dev/depends-on': dependsOn } : undefined },
        spec: { terminationGracePeriodSeconds: 0, containers: [{ name, image: `registry.example/${name}:1`, ports: [{ containerPort: 8080 }] }] },
      },
    },
  };
}
const svc = (ns: string, name: string, app: string): k8s.V1Service => ({
  metadata: { name, namespace: ns }, spec: { selector: { app }, ports: [{ port: 80, targetPort: 8080 }] },
});

async function createArm(a: Arm) {
  await kube.core.createNamespace({ body: { metadata: { name: a.ns, labels: { 'bench.tend.dev/weeder': 'true' } } } });
  await kube.apps.createNamespacedDeployment({ namespace: a.ns, body: dep(a.ns, 'etcd-main', 3, 'main') });
  await kube.core.createNamespacedService({ namespace: a.ns, body: svc(a.ns, a.etcd, 'etcd-main') });
  await kube.apps.createNamespacedDeployment({ namespace: a.ns, body: dep(a.ns, 'kube-apiserver', 2, 'apiserver', a.etcd) });
  await kube.core.createNamespacedService({ namespace: a.ns, body: svc(a.ns, a.api, 'kube-apiserver') });
  await kube.apps.createNamespacedDeployment({ namespace: a.ns, body: dep(a.ns, 'kube-controller-manager', 1, 'controller-manager', a.api) });
}

const seedSelectors = (etcd: string, api: string) => ({
  [etcd]: { podSelectors: [{ matchExpressions: [
    { key: 'gardener.cloud/role', operator: 'In', values: ['controlplane'] },
    { key: 'role', operator: 'In', values: ['apiserver'] },
  ] }] },
  [api]: { podSelectors: [{ matchExpressions: [
    { key: 'gardener.cloud/role', operator: 'In', values: ['controlplane'] },
    { key: 'role', operator: 'NotIn', values: ['main', 'apiserver'] },
  ] }] },
});

const isReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const crashLooping = (p: k8s.V1Pod) => (p.status?.containerStatuses ?? []).some((s) => s.state?.waiting?.reason === 'CrashLoopBackOff');
const restarts = (p: k8s.V1Pod) => Math.max(0, ...(p.status?.containerStatuses ?? []).map((s) => s.restartCount));
const live = async (ns: string, app: string) =>
  (await kube.core.listNamespacedPod({ namespace: ns, labelSelector: `app=${app}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
const allReady = async (ns: string, app: string, n: number) => {
  const pods = await live(ns, app);
  return pods.length === n && pods.every(isReady);
};
const scaleEtcd = (ns: string, replicas: number) =>
  kube.apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'etcd-main', body: { spec: { replicas } } }, mergePatch);
/** New etcd pods crash for ever (the simulated kubelet's fail annotation): running, never ready. */
const etcdFailing = (ns: string, failing: boolean) => kube.apps.patchNamespacedDeployment({
  namespace: ns, name: 'etcd-main', body: { spec: { template: { metadata: { annotations: { [FAIL_ANNOTATION]: failing ? 'true' : null } } } } },
}, mergePatch);
const etcdEndpoints = async (a: Arm) => (await kube.discovery.listNamespacedEndpointSlice({
  namespace: a.ns, labelSelector: `kubernetes.io/service-name=${a.etcd}` })).items.flatMap((sl) => sl.endpoints ?? []);
const controlPlaneReady = async (a: Arm) =>
  (await allReady(a.ns, 'etcd-main', 3)) && (await allReady(a.ns, 'kube-apiserver', 2)) && (await allReady(a.ns, 'kube-controller-manager', 1));

/** When this process first saw each Service's slices with a ready endpoint, and each pod's delete. */
class Observer {
  readyAt = new Map<string, number>(); // ns/service -> first time seen ready since reset
  deletedAt = new Map<string, number>(); // pod uid -> first time seen with deletionTimestamp (or gone)
  appOf = new Map<string, string>(); // pod uid -> namespace/app label
  private stops: (() => Promise<void>)[] = [];
  constructor(kc: KubeClients, namespaces: string[]) {
    for (const ns of namespaces) {
      const slices = startInformer<k8s.V1EndpointSlice>({
        kc: kc.kc, path: `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
        list: () => kc.discovery.listNamespacedEndpointSlice({ namespace: ns }), log,
        onUpsert: (s) => {
          const key = `${ns}/${s.metadata?.labels?.['kubernetes.io/service-name']}`;
          if (!this.readyAt.has(key) && s.endpoints?.some((e) => e.conditions?.ready !== false)) this.readyAt.set(key, performance.now());
        },
        onDelete: () => undefined,
      });
      const pods = startInformer<k8s.V1Pod>({
        kc: kc.kc, path: `/api/v1/namespaces/${ns}/pods`,
        list: () => kc.core.listNamespacedPod({ namespace: ns }), log,
        onUpsert: (p) => {
          this.appOf.set(p.metadata!.uid!, `${ns}/${p.metadata?.labels?.app ?? ''}`);
          if (p.metadata?.deletionTimestamp && !this.deletedAt.has(p.metadata.uid!)) this.deletedAt.set(p.metadata.uid!, performance.now());
        },
        onDelete: (p) => { if (!this.deletedAt.has(p.metadata!.uid!)) this.deletedAt.set(p.metadata!.uid!, performance.now()); },
      });
      this.stops.push(() => slices.stop(), () => pods.stop());
    }
  }
  async stop() { await Promise.all(this.stops.map((s) => s())); }
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
};

const children: ChildProcess[] = [];
let dwdCrashes = 0;
const LOAD = Number(opts.load);
if (!Number.isInteger(LOAD) || LOAD < 0 || LOAD > 8) {
  console.error(`weeder benchmark: --load must be a whole number from 0 to 8 (processes that keep a core busy), not ${JSON.stringify(opts.load)}`);
  process.exit(2);
}
async function main() {
  // The load, first, so that the load average has climbed by the time the trials start.
  for (let i = 0; i < LOAD; i++) children.push(spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }));
  const dwdBin = execFileSync('bash', [join(repo, 'scripts/dependency-watchdog.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const dir = await mkdtemp(join(tmpdir(), 'tend-bench-'));
  // On the cluster sandbox: what PostgreSQL does for an idle Temporal, then for the whole run.
  const idleBefore = await pgCounters(info!);
  if (idleBefore) await sleep(20_000);
  const idleAfter = await pgCounters(info!);
  say(`sandbox ${info!.stateDir}: creating ${arms.map((a) => a.ns).join(', ')}`);
  for (const a of arms) await createArm(a);

  const tendArm = arms[0]!;
  const taskQueue = `tend-weeder-bench-${suffix}`;
  const tendConfig = join(dir, 'tend.yaml');
  await writeFile(tendConfig, toYaml({
    temporal: { address: info!.temporalAddress, taskQueue },
    kubernetes: { kubeconfig: info!.tendKubeconfig },
    weeder: { watchDuration: WATCH, namespaces: [tendArm.ns], servicesAndDependantSelectors: seedSelectors(tendArm.etcd, tendArm.api) },
  }));  // The rights `tend rbac` generates for this configuration, as an operator would apply them.
  await grantRightsFor(info!.kubeconfig, tendConfig, 'tend-bench');

  // dependency-watchdog as it is deployed: with a ServiceAccount of its own and the rights its weeder
  // uses (EndpointSlices read, pods read and deleted, events written), so that its requests go through
  // the API server's authorization and flow control as tend's do; the sandbox's administrator
  // (system:masters) is exempt from flow control and passes authorization unchecked.
  const dwdKubeconfig = await dwdCredentials(dir);
  const dwdConfig = join(dir, 'dwd-weeder.yaml');
  await writeFile(dwdConfig, toYaml({ watchDuration: WATCH, servicesAndDependantSelectors: seedSelectors('etcd-main-client', 'kube-apiserver') }));
  // Its own HTTP port, so that the benchmark runs beside a tend already serving the default one.
  if (TRACE) await mkdir(TRACE, { recursive: true });
  const traceArgs = TRACE ? ['--cpu-prof', '--cpu-prof-interval', '100', '--cpu-prof-dir', TRACE] : [];
  const httpPort = await freeLoopbackPort();
  await ensureWorkflowBundle();
  const tend = spawnTend(['run', '--config', tendConfig, '--http-address', `127.0.0.1:${httpPort}`],
    { nodeFlags: traceArgs, env: { TEND_LOG_LEVEL: TRACE ? 'debug' : 'warn' } });
  children.push(tend);
  // `tend run`'s resident memory (the worker and the watcher, one process as the Deployment runs them), every second.
  // Its RSS from /proc, which costs tend nothing; its parts from its /metrics once, after the trials:
  // a scrape runs on tend's event loop and would compete with the reactions measured.
  const rss = rssSampler({ tend });
  let tendErr = ''; let dwdErr = '';
  tend.stderr!.on('data', (d) => (tendErr = (tendErr + d).slice(-4000)));
  if (TRACE) tend.stderr!.pipe(createWriteStream(join(TRACE, 'tend.log')));
  tend.once('exit', (code) => { if (!stopping) { say(`tend exited (${code}):\n${tendErr}`); process.exit(1); } });
  // dependency-watchdog v1.7.0 can crash (a nil watch after a cancelled context, internal/weeder/watcher.go:59).
  // In a cluster its Deployment would restart it; here it is restarted at once, and its crashes counted.
  const startDwd = () => {
    const dwd = spawn(dwdBin, ['weeder', `--config-file=${dwdConfig}`, '--metrics-bind-addr=0', '--health-bind-addr=0', '--pprof-bind-addr=0', '--kube-api-qps=20', '--kube-api-burst=100'],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, KUBECONFIG: dwdKubeconfig } });
    children.push(dwd);
    dwd.stderr!.on('data', (d) => (dwdErr = (dwdErr + d).slice(-4000)));
    dwd.once('exit', (code) => {
      if (stopping) return;
      dwdCrashes++;
      say(`dependency-watchdog exited (${code}); restarting it. Its last words:\n${dwdErr.split('\n').filter((l) => !l.startsWith('{')).slice(0, 6).join('\n')}`);
      startDwd();
    });
  };
  startDwd();
  const temporal = new Client({ connection: await Connection.connect({ address: info!.temporalAddress }) });
  const obs = new Observer(kube, arms.map((a) => a.ns));

  await waitFor('every arm\'s control plane ready', async () => (await Promise.all(arms.map(controlPlaneReady))).every(Boolean), 180_000, 500);
  const readiness = new ReadinessStore(kube, tendNamespace({}));
  await waitFor('tend to record etcd ready', async () =>
    (await readiness.read(tendArm.ns, tendArm.etcd))?.readiness === 'ready', 120_000, 500);
  await sleep(6000); // let the first-seen windows (tend and dependency-watchdog) close

  // ---- cascade ----
  say(`cascade: etcd down in all three arms until kube-apiserver has restarted ${DOWN_RESTARTS} times (deep in back-off)`);
  await Promise.all(arms.map((a) => scaleEtcd(a.ns, 0)));
  await waitFor('deep back-off everywhere', async () => {
    for (const a of arms) {
      const pods = [...await live(a.ns, 'kube-apiserver'), ...await live(a.ns, 'kube-controller-manager')];
      if (pods.length !== 3 || !pods.every((p) => crashLooping(p) && restarts(p) >= DOWN_RESTARTS)) return false;
    }
    return true;
  }, 600_000, 1000);
  const t0 = performance.now();
  await Promise.all(arms.map((a) => scaleEtcd(a.ns, 3)));
  const cascade: Record<string, { apiserver: number; chain: number }> = {};
  await Promise.all(arms.map(async (a) => {
    const api = await waitFor(`${a.name}: apiserver ready`, async () => (await allReady(a.ns, 'kube-apiserver', 2)) && performance.now(), 900_000, 100);
    const chain = await waitFor(`${a.name}: chain ready`, async () => (await controlPlaneReady(a)) && performance.now(), 900_000, 100);
    cascade[a.name] = { apiserver: api - t0, chain: chain - t0 };
    say(`cascade ${a.name}: kube-apiserver ready after ${((api - t0) / 1000).toFixed(1)} s, whole chain after ${((chain - t0) / 1000).toFixed(1)} s`);
  }));

  // ---- reaction latency ----
  const loadAtStart = loadavg();
  const latency: Record<'tend' | 'dwd', number[]> = { tend: [], dwd: [] };
  /** tend's trials: this process's readyAt and deletedAt, as epoch ms. */
  const tendTrials: { readyAt: number; deletedAt: number }[] = [];
  const whileDown: Record<'tend' | 'dwd', number> = { tend: 0, dwd: 0 };
  const recoveredAlone: Record<'tend' | 'dwd', number> = { tend: 0, dwd: 0 };
  const latArms = [arms[0]!, arms[2]!];
  say(`reaction latency: ${TRIALS} trials each for tend and dependency-watchdog`);
  await Promise.all(latArms.map(async (a) => {
    const name = a.name as 'tend' | 'dwd';
    for (let i = 0; i < TRIALS; i++) {
      await waitFor(`${a.name}: control plane ready`, () => controlPlaneReady(a), 180_000, 200);
      // A fresh window each trial: the previous ones (watchDuration 5 s) must have closed
      // before etcd goes down, or a tool that weeds while its upstream is down would do so.
      const lastReady = obs.readyAt.get(`${a.ns}/${a.etcd}`) ?? 0;
      const wait = lastReady + 6000 - performance.now();
      if (wait > 0) await sleep(wait);
      if (a.name === 'tend') {
        await waitFor('tend windows closed', async () => {
          for (const s of [a.etcd, a.api]) {
            const d = await temporal.workflow.getHandle(`weeder/${a.ns}/${s}`).describe().catch(() => undefined);
            if (d?.status.name === 'RUNNING') return false;
          }
          return true;
        }, 60_000, 200);
      }
      await scaleEtcd(a.ns, 0);
      // Deep enough in back-off (1 s, 2 s, 4 s at time scale 0.1) that recovering alone does not race the weeder.
      const crashing = await waitFor(`${a.name}: apiserver crash-looping`, async () => {
        const pods = await live(a.ns, 'kube-apiserver');
        return pods.length === 2 && pods.every((p) => crashLooping(p) && restarts(p) >= 3) ? pods : undefined;
      }, 120_000, 100);
      const uids = crashing.map((p) => p.metadata!.uid!);
      obs.readyAt.delete(`${a.ns}/${a.etcd}`);
      await scaleEtcd(a.ns, 1);
      const readyAt = await waitFor(`${a.name}: etcd slice ready`, async () => obs.readyAt.get(`${a.ns}/${a.etcd}`), 60_000, 20);
      const outcome = await waitFor(`${a.name}: a crash-looping apiserver pod deleted, or recovered alone`, async () => {
        const ts = uids.map((u) => obs.deletedAt.get(u)).filter((t): t is number => t !== undefined);
        if (ts.length) return { deletedAt: Math.min(...ts) };
        const pods = await live(a.ns, 'kube-apiserver');
        return pods.length === 2 && pods.every((p) => uids.includes(p.metadata!.uid!) && isReady(p)) ? { deletedAt: undefined } : undefined;
      }, 60_000, 20);
      if (outcome.deletedAt === undefined) recoveredAlone[name]++;
      else if (outcome.deletedAt < readyAt) whileDown[name]++;
      else {
        latency[name].push(outcome.deletedAt - readyAt);
        if (name === 'tend') tendTrials.push({ readyAt: performance.timeOrigin + readyAt, deletedAt: performance.timeOrigin + outcome.deletedAt });
      }
      await scaleEtcd(a.ns, 3);
    }
  }));

  // ---- the upstream scaled to zero ----
  // dependency-watchdog v1.7.0 takes a slice as ready when none of its endpoints says not ready, so
  // an empty slice (every upstream pod gone) is ready to it: an upstream that came back broken
  // (running, never ready) and is then scaled to zero looks like a recovery, and it deletes the
  // dependants while the upstream is down. tend takes an empty slice as not ready. Each arm: etcd to
  // zero until the apiservers crash-loop, back as one pod that never turns ready, then to zero again;
  // every apiserver deletion from the first scale-down until ZERO_HOLD_MS after the last is counted.
  const ZERO_HOLD_MS = 5000;
  const zeroDeletes: Record<'tend' | 'dwd', number> = { tend: 0, dwd: 0 };
  say('the upstream scaled to zero: etcd down, back broken, then scaled to zero again');
  await Promise.all(latArms.map(async (a) => {
    const name = a.name as 'tend' | 'dwd';
    await waitFor(`${a.name}: control plane ready`, () => controlPlaneReady(a), 180_000, 200);
    await sleep(6000); // the last trial's windows close
    const from = performance.now();
    await scaleEtcd(a.ns, 0);
    await waitFor(`${a.name}: apiserver crash-looping`, async () => {
      const pods = await live(a.ns, 'kube-apiserver');
      return pods.length === 2 && pods.every((p) => crashLooping(p) && restarts(p) >= 3);
    }, 120_000, 100);
    await etcdFailing(a.ns, true);
    await scaleEtcd(a.ns, 1);
    await waitFor(`${a.name}: etcd back, not ready`, async () => {
      const eps = await etcdEndpoints(a);
      return eps.length > 0 && eps.every((e) => e.conditions?.ready === false);
    }, 60_000, 50);
    await scaleEtcd(a.ns, 0);
    await waitFor(`${a.name}: etcd's slice empty`, async () => (await etcdEndpoints(a)).length === 0, 60_000, 50);
    await sleep(ZERO_HOLD_MS);
    const until = performance.now();
    zeroDeletes[name] = [...obs.deletedAt].filter(([uid, t]) => t >= from && t <= until && obs.appOf.get(uid) === `${a.ns}/kube-apiserver`).length;
    await etcdFailing(a.ns, false);
    await scaleEtcd(a.ns, 3);
  }));
  say(`deletions while the upstream was scaled to zero: tend ${zeroDeletes.tend}, dependency-watchdog ${zeroDeletes.dwd}`);

  // Before the histories are read, so that their reads are not counted.
  const pgAfter = await pgCountersSettled(info!);

  // ---- Temporal actions per window ----
  const windows: { id: string; events: number; starts: number; signals: number; activities: number; timers: number; heartbeats: number }[] = [];
  for await (const wf of temporal.workflow.list({ query: `TendCapability="weeder" AND TaskQueue="${taskQueue}"` })) {
    const h = await temporal.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    const ev = h.events ?? [];
    // Heartbeats that reach the server: the SDK sends at most one per 0.8 x the activity's heartbeat timeout.
    let heartbeats = 0;
    const scheduled = new Map<string, { at: number; heartbeatMs: number }>();
    for (const e of ev) {
      const t = Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
      const s = e.activityTaskScheduledEventAttributes;
      if (s) scheduled.set(String(e.eventId), { at: t, heartbeatMs: Number(s.heartbeatTimeout?.seconds ?? 0) * 1000 || 60_000 });
      const done = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskCanceledEventAttributes;
      const from = done && scheduled.get(String(done.scheduledEventId));
      if (from) heartbeats += Math.floor((t - from.at) / (0.8 * from.heartbeatMs));
    }
    windows.push({
      id: wf.workflowId, events: ev.length, starts: 1,
      signals: ev.filter((e) => e.workflowExecutionSignaledEventAttributes).length,
      activities: ev.filter((e) => e.activityTaskScheduledEventAttributes).length,
      timers: ev.filter((e) => e.timerStartedEventAttributes).length,
      heartbeats,
    });
  }
  const avg = (f: (w: (typeof windows)[number]) => number) => windows.reduce((s, w) => s + f(w), 0) / Math.max(1, windows.length);
  const heartbeats = avg((w) => w.heartbeats);
  const actions = windows.reduce((s, w) => s + w.starts + w.signals + w.activities + w.timers + w.heartbeats, 0);
  const persistence = persistenceRates(idleAfter, pgAfter, actions, idleBefore && idleAfter && { before: idleBefore, after: idleAfter });

  stopping = true;
  rss.stop();
  const afterTrials = await memoryParts(httpPort).then(roundParts, () => undefined);
  const memory = { tendRunPeakRss: Math.round(rss.peak.tend!), tendRunVmHWM: Math.round(await memOf(tend.pid!, 'VmHWM')), goal: 400, afterTrials };
  const load = { atTrials: loadAtStart.map((x) => +x.toFixed(2)), atEnd: loadavg().map((x) => +x.toFixed(2)) };
  await obs.stop();
  await temporal.connection.close();
  const fmt = (xs: number[]) => xs.length ? `p50 ${quantile(xs, 0.5).toFixed(0)} ms, p99 ${quantile(xs, 0.99).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms (n=${xs.length})` : 'no samples';
  console.log(JSON.stringify({ sandbox: info!.stateDir, timeScale: JSON.parse(await readFile(join(info!.stateDir, 'sandbox.json'), 'utf8')).timeScale, watchDuration: WATCH, cascade, latency: {
    tend: latency.tend.length ? { p50: quantile(latency.tend, 0.5), p99: quantile(latency.tend, 0.99), n: latency.tend.length, samples: latency.tend.map(Math.round) } : null,
    dwd: latency.dwd.length ? { p50: quantile(latency.dwd, 0.5), p99: quantile(latency.dwd, 0.99), n: latency.dwd.length, samples: latency.dwd.map(Math.round) } : null,
  }, whileDown, recoveredAlone, scaledToZero: { deletedWhileDown: zeroDeletes, holdMs: ZERO_HOLD_MS }, dwdCrashes, temporalPerWindow: { windows: windows.length, starts: 1, signals: avg((w) => w.signals), activities: avg((w) => w.activities), timers: avg((w) => w.timers), heartbeatsEstimated: heartbeats }, persistence, memoryMiB: memory, loadavg: load, busyProcesses: LOAD }, null, 2));
  console.log('');
  console.log(`cascade recovery after etcd returns (kube-apiserver / whole chain):`);
  for (const a of arms) console.log(`  ${a.name.padEnd(5)} ${(cascade[a.name]!.apiserver / 1000).toFixed(1)} s / ${(cascade[a.name]!.chain / 1000).toFixed(1)} s`);
  console.log(`  speed-up of tend over no weeder (chain): ${(cascade.none!.chain / cascade.tend!.chain).toFixed(1)}x; dependency-watchdog: ${(cascade.none!.chain / cascade.dwd!.chain).toFixed(1)}x`);
  console.log(`reaction latency, slice ready -> delete issued (as seen by this process's watches):`);
  console.log(`  tend                 ${fmt(latency.tend)}`);
  console.log(`  dependency-watchdog  ${fmt(latency.dwd)}`);
  console.log(`  deleted while etcd was still down: tend ${whileDown.tend}, dependency-watchdog ${whileDown.dwd}; ` +
    `recovered alone before any deletion: tend ${recoveredAlone.tend}, dependency-watchdog ${recoveredAlone.dwd} (of ${TRIALS} each)`);
  console.log(`  dependency-watchdog crashed ${dwdCrashes} times (restarted at once each time)`);
  console.log(`upstream scaled to zero (down, back never ready, to zero again; ${ZERO_HOLD_MS / 1000} s after): apiserver pods deleted ` +
    `while etcd was down: tend ${zeroDeletes.tend}, dependency-watchdog ${zeroDeletes.dwd}`);
  console.log(`Temporal actions per tend window (${windows.length} windows): 1 start + ${avg((w) => w.signals).toFixed(2)} signals + ` +
    `${avg((w) => w.activities).toFixed(2)} activities + ${avg((w) => w.timers).toFixed(2)} timers + ~${heartbeats.toFixed(2)} heartbeats`);
  if (LOAD > 0) console.log(`load: ${LOAD} busy processes beside the run`);
  console.log(`tend run (worker and watcher, one process): peak RSS ${memory.tendRunPeakRss} MiB (VmHWM ${memory.tendRunVmHWM} MiB; goal under ${memory.goal}); ` +
    `load average when the trials began ${load.atTrials.join(' ')}, at the end ${load.atEnd.join(' ')}`);
  if (persistence) {
    console.log(`PostgreSQL under Temporal, whole run (${persistence.seconds} s): ${persistence.transactionsPerSecond} transactions/s ` +
      `(idle: ${persistence.idleTransactionsPerSecond}/s), ${persistence.transactionsPerAction} transactions and ${persistence.rowsWrittenPerAction} rows written per action (${actions} actions)`);
  }
  for (const c of children) c.kill('SIGTERM');
  if (TRACE) {
    await Promise.race([new Promise((r) => tend.once('exit', r)), sleep(30_000)]); // its profile written, its log flushed
    console.log(breakdown(await readFile(join(TRACE, 'tend.log'), 'utf8'), tendTrials));
  }
  for (const a of arms) await kube.core.deleteNamespace({ name: a.ns }).catch(() => undefined);
}

/** Each tend trial split at the armed watch's timings (its debug lines in tend's log), and the medians. */
function breakdown(tendLog: string, trials: { readyAt: number; deletedAt: number }[]): string {
  const sent: { sliceEvent: number; weedStart: number; sent: number[]; written?: (number | null)[] }[] = [];
  for (const line of tendLog.split('\n')) {
    if (!line.includes('armed deletions sent')) continue;
    try { sent.push(JSON.parse(line)); } catch { /* not a log line */ }
  }
  const rows: number[][] = [];
  for (const t of trials) {
    // The armed watch's line for this trial: its slice event nearest this process's.
    const s = sent.filter((x) => Math.abs(x.sliceEvent - t.readyAt) < 500).sort((a, b) => Math.abs(a.sliceEvent - t.readyAt) - Math.abs(b.sliceEvent - t.readyAt))[0];
    if (!s) continue;
    const first = Math.min(...s.sent);
    const written = Math.min(...(s.written ?? []).filter((w): w is number => typeof w === 'number'));
    const w = Number.isFinite(written) ? written : first;
    rows.push([s.sliceEvent - t.readyAt, s.weedStart - s.sliceEvent, first - s.weedStart, w - first, t.deletedAt - w, t.deletedAt - t.readyAt]);
  }
  const med = (i: number) => quantile(rows.map((r) => r[i]!), 0.5).toFixed(2);
  const head = ['bench sees ready -> tend\'s watch delivers it', '-> deletions start', '-> first DELETE handed to the client',
    '-> written to the socket', '-> bench sees the pod deleted', 'total'];
  return [`tend's reaction split (${rows.length} of ${trials.length} trials matched), ms:`, `  ${head.join(' | ')}`,
    ...rows.map((r) => `  ${r.map((x) => x.toFixed(2)).join(' | ')}`), `  median: ${head.map((_, i) => med(i)).join(' | ')}`].join('\n');
}


let stopping = false;
try {
  await main();
} catch (err) {
  stopping = true;
  console.error(err);
  for (const c of children) c.kill('SIGTERM');
  for (const a of arms) await kube.core.deleteNamespace({ name: a.ns }).catch(() => undefined);
  process.exitCode = 1;
}
process.exit();
