// The sandbox: a real Temporal dev server and a real Kubernetes control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) plus the
// simulated kubelet, all under one state folder. `up` starts what is not
// running and leaves the rest alone; `down` stops exactly what `up` recorded.
import { chmod, mkdir, readFile, writeFile, rm, readdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from 'node:net';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { ensureBinaries, ensureServerBinaries, type Binaries, type ServerBinaries } from './binaries.ts';
import {
  CLUSTER_COMPONENTS, clusterPorts, initPostgres, postgresCommand, postgresDataDir, registerNamespace, SERVICES, serviceArgs, setupSchemas,
  TEND_SEARCH_ATTRIBUTES, uiArgs, writeServerConfig, writeUiConfig,
} from './temporal-cluster.ts';
import { ensurePki, pkiPaths, type Pki } from './certs.ts';
import { howEnded, isRunning, logTail, readRecord, startDetached, stopProcess, type ProcessRecord } from './process.ts';
import { SandboxError } from './errors.ts';
import { removeKubeletContainers } from './kubelet/podman-leftovers.ts';

export { SandboxError };

export interface SandboxSettings {
  nodes: number;
  /** Simulated kubelet time scale: 0.1 makes every kubelet duration ten times shorter. */
  timeScale: number;
  /** kube-apiserver --min-request-timeout in seconds: watches end after 1-2x this. */
  minRequestTimeoutSeconds: number;
  /** kube-controller-manager --node-monitor-grace-period in seconds. */
  nodeMonitorGraceSeconds: number;
  /**
   * kube-apiserver writes an audit log (logs/audit.log, see auditPolicy): tend's
   * own writes and the controllers' EndpointSlice and ReplicaSet status writes,
   * with their request bodies. Off unless asked for (the fault run turns it on).
   */
  auditLog?: boolean;
  /**
   * kube-apiserver serves Go's profiles (/debug/pprof, to the administrator): a benchmark reads
   * where the API server's CPU goes. Off unless asked for.
   */
  profiling?: boolean;
  /**
   * Which Temporal: `dev` (the default), the temporal CLI's dev server, one process over SQLite;
   * `cluster`, Temporal's own server, a process per service, over PostgreSQL (temporal-cluster.ts).
   */
  temporal?: 'dev' | 'cluster';
  /**
   * Image prefixes whose pods the kubelet runs for real, with podman, on the host network
   * (src/sandbox/kubelet/podman-pod.ts); none (the default): every pod is simulated. The only
   * setting a running sandbox takes a change of: `up` restarts the kubelet with it.
   */
  runImages?: string[];
  ports: {
    etcdClient: number;
    etcdPeer: number;
    apiserver: number;
    controllerManager: number;
    scheduler: number;
    temporal: number;
    temporalUi: number;
  };
}

export const defaultSettings: SandboxSettings = {
  nodes: 3,
  timeScale: 1,
  minRequestTimeoutSeconds: 1800,
  nodeMonitorGraceSeconds: 20,
  ports: {
    etcdClient: 23790, etcdPeer: 23800, apiserver: 16443, controllerManager: 10357, scheduler: 10359,
    temporal: 7233, temporalUi: 8233,
  },
};

/** The search attributes tend's workflows set, registered when the dev server starts. */
const searchAttributeFlags = TEND_SEARCH_ATTRIBUTES.flatMap((a) => ['--search-attribute', `${a.name}=${a.type}`]);
const searchAttributeNames = TEND_SEARCH_ATTRIBUTES.map((a) => a.name);

/** `temporal server start-dev`'s arguments, as the sandbox runs it (without a Web UI when `uiPort` is not given). */
export function devServerArgs(o: { port: number; uiPort?: number; dbFile: string; logLevel: string }): string[] {
  return [
    'server', 'start-dev', '--ip', '127.0.0.1', '--port', String(o.port),
    ...(o.uiPort === undefined ? ['--headless'] : ['--ui-port', String(o.uiPort)]),
    '--db-filename', o.dbFile, '--log-level', o.logLevel,
    // SQLite's defaults (a rollback journal, a full sync per commit) make every write to a busy
    // workflow wait on the disk; with a write-ahead log a commit is an append. The state is a
    // sandbox's: losing the last commits in a power cut is acceptable here.
    '--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal',
    ...searchAttributeFlags,
  ];
}

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/**
 * The controller manager's and the scheduler's client rate (requests a second, and the burst above
 * it): 100 and 200, where their defaults (20 and 30; 50 and 100) would have a large workload's pods
 * created and bound at 20 a second. (The scheduler's flags are deprecated in favour of its
 * configuration file, which the sandbox does not write.)
 */
const CONTROL_PLANE_CLIENT_RATE = ['--kube-api-qps=100', '--kube-api-burst=200'];

export function defaultStateDir(): string {
  if (process.env.TEND_SANDBOX_DIR) return resolve(process.env.TEND_SANDBOX_DIR);
  const base = process.env.XDG_STATE_HOME ?? join(homedir(), '.local', 'state');
  return join(base, 'tend', 'sandbox');
}

export interface SandboxInfo {
  stateDir: string;
  /** Administrator kubeconfig (system:masters). */
  kubeconfig: string;
  /** kubeconfig holding a token of tend's own ServiceAccount (deploy/kubernetes RBAC). */
  tendKubeconfig: string;
  /** tend configuration pointing at the sandbox, with tend's own credentials. */
  config: string;
  temporalAddress: string;
  webUi: string;
  apiserver: string;
  settings: SandboxSettings;
}

export function sandboxInfo(stateDir: string, settings: SandboxSettings): SandboxInfo {
  return {
    stateDir,
    kubeconfig: join(stateDir, 'kubeconfig'),
    tendKubeconfig: join(stateDir, 'tend.kubeconfig'),
    config: join(stateDir, 'tend.yaml'),
    temporalAddress: `127.0.0.1:${settings.ports.temporal}`,
    webUi: `http://127.0.0.1:${settings.ports.temporalUi}`,
    apiserver: `https://127.0.0.1:${settings.ports.apiserver}`,
    settings,
  };
}

export interface Component {
  name: string;
  command: string;
  args: string[];
  /** Resolves once the component serves; rejects with the reason it does not. */
  ready: () => Promise<void>;
  timeoutMs: number;
  /** Run as this user (PostgreSQL refuses root), from `/`. */
  user?: { uid: number; gid: number };
}


/** The cluster sandbox's Temporal: PostgreSQL, then one process per service of Temporal's server. */
function clusterComponents(info: SandboxInfo, server: ServerBinaries): Component[] {
  const ports = clusterPorts(info.settings.ports.temporal);
  const pg = postgresCommand(info.stateDir, ports);
  // The worker service serves no gRPC: it is up once it listens for its membership ring.
  const readyPort = { history: ports.history, matching: ports.matching, frontend: ports.frontend, worker: ports.membership.worker };
  return [
    { name: 'postgres', ...pg, ready: () => tcpOpen(ports.postgres), timeoutMs: 60_000 },
    ...SERVICES.map((service): Component => ({
      name: `temporal-${service}`,
      command: server.server,
      args: serviceArgs(info.stateDir, service),
      ready: () => tcpOpen(readyPort[service]),
      timeoutMs: 90_000,
    })),
    { name: 'temporal-ui', command: server.ui, args: uiArgs(info.stateDir), ready: () => httpGet(info.settings.ports.temporalUi, '/'), timeoutMs: 60_000 },
  ];
}

function components(info: SandboxInfo, bin: Binaries, pki: Pki, server?: ServerBinaries): Component[] {
  const s = info.settings;
  const p = s.ports;
  const dir = info.stateDir;
  const kcfg = info.kubeconfig;
  const tlsGet = (port: number, path: string, withCert: boolean) => () =>
    httpsGet(port, path, withCert ? pki : undefined);
  return [
    ...(server ? clusterComponents(info, server) : []),
    {
      name: 'temporal',
      command: bin.temporal,
      args: devServerArgs({ port: p.temporal, uiPort: p.temporalUi, dbFile: join(dir, 'temporal.db'), logLevel: 'warn' }),
      ready: async () => {
        await tcpOpen(p.temporal);
        await httpGet(p.temporalUi, '/');
      },
      timeoutMs: 60_000,
    },
    {
      name: 'etcd',
      command: bin.etcd,
      args: [
        '--name', 'sandbox', '--data-dir', join(dir, 'etcd'),
        '--listen-client-urls', `http://127.0.0.1:${p.etcdClient}`, '--advertise-client-urls', `http://127.0.0.1:${p.etcdClient}`,
        '--listen-peer-urls', `http://127.0.0.1:${p.etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${p.etcdPeer}`,
        '--initial-cluster', `sandbox=http://127.0.0.1:${p.etcdPeer}`,
        '--unsafe-no-fsync', '--log-level', 'warn',
      ],
      ready: () => httpGet(p.etcdClient, '/health'),
      timeoutMs: 30_000,
    },
    {
      name: 'kube-apiserver',
      command: bin.kubeApiserver,
      args: [
        `--etcd-servers=http://127.0.0.1:${p.etcdClient}`,
        '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1', `--secure-port=${p.apiserver}`,
        `--cert-dir=${join(dir, 'apiserver')}`,
        `--tls-cert-file=${pki.serverCert}`, `--tls-private-key-file=${pki.serverKey}`, `--client-ca-file=${pki.caCert}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${pki.saPub}`, `--service-account-signing-key-file=${pki.saKey}`,
        '--service-cluster-ip-range=10.96.0.0/16', '--authorization-mode=RBAC', '--allow-privileged=true',
        `--min-request-timeout=${s.minRequestTimeoutSeconds}`, `--profiling=${s.profiling === true}`, '--v=1',
        ...(s.auditLog ? [
          `--audit-policy-file=${auditPolicyFile(info)}`, `--audit-log-path=${auditLogFile(info)}`,
          '--audit-log-format=json', '--audit-log-mode=blocking', '--audit-log-maxsize=500', '--audit-log-maxbackup=1',
        ] : []),
      ],
      ready: tlsGet(p.apiserver, '/readyz', true),
      timeoutMs: 90_000,
    },
    {
      name: 'kube-controller-manager',
      command: bin.kubeControllerManager,
      args: [
        `--kubeconfig=${kcfg}`, `--authentication-kubeconfig=${kcfg}`, `--authorization-kubeconfig=${kcfg}`,
        '--bind-address=127.0.0.1', `--secure-port=${p.controllerManager}`, '--leader-elect=false',
        `--cert-dir=${join(dir, 'controller-manager')}`,
        `--service-account-private-key-file=${pki.saKey}`, `--root-ca-file=${pki.caCert}`,
        '--use-service-account-credentials=true',
        '--node-monitor-period=1s', `--node-monitor-grace-period=${s.nodeMonitorGraceSeconds}s`,
        ...CONTROL_PLANE_CLIENT_RATE,
        '--profiling=false', '--v=1',
      ],
      ready: tlsGet(p.controllerManager, '/healthz', false),
      timeoutMs: 60_000,
    },
    {
      name: 'kube-scheduler',
      command: bin.kubeScheduler,
      args: [
        `--kubeconfig=${kcfg}`, `--authentication-kubeconfig=${kcfg}`, `--authorization-kubeconfig=${kcfg}`,
        '--bind-address=127.0.0.1', `--secure-port=${p.scheduler}`, '--leader-elect=false',
        `--cert-dir=${join(dir, 'scheduler')}`, ...CONTROL_PLANE_CLIENT_RATE, '--profiling=false', '--v=1',
      ],
      ready: tlsGet(p.scheduler, '/healthz', false),
      timeoutMs: 60_000,
    },
    {
      name: 'kubelet',
      command: process.execPath,
      args: [
        join(repoRoot, 'src/sandbox/kubelet/main.ts'), '--kubeconfig', kcfg,
        '--nodes', String(s.nodes), '--time-scale', String(s.timeScale),
        // Several heartbeats per grace period, as with a real kubelet (10 s vs 40 s).
        '--heartbeat-seconds', String(Math.max(1, Math.floor(s.nodeMonitorGraceSeconds / 4))),
        ...(s.runImages && s.runImages.length > 0 ? ['--run-images', s.runImages.join(','), '--pods-dir', podsDir(info)] : []),
      ],
      ready: () => nodesReady(info),
      // Each node registers, posts its status and creates its Lease: 1,000 of them take
      // 10 to 60 s on a busy 2-core machine.
      timeoutMs: 60_000 + s.nodes * 120,
    },
  ];
}

/** The identity tend runs as on the sandbox (deploy/kubernetes's ServiceAccount). */
export const TEND_USER = 'system:serviceaccount:tend-system:tend';

export const auditLogFile = (info: SandboxInfo) => join(info.stateDir, 'logs', 'audit.log');
const auditPolicyFile = (info: SandboxInfo) => join(info.stateDir, 'audit-policy.yaml');

/**
 * What the audit log records, with request bodies (level Request), once the
 * request completed: every write by tend (but Events), and the writes from
 * which readiness can be told apart in time (EndpointSlices, ReplicaSet status),
 * and ReplicaSet creations (each one a roll of a Deployment's pods).
 */
export const auditPolicy = {
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived', 'ResponseStarted', 'Panic'],
  rules: [
    { level: 'None', resources: [{ group: '', resources: ['events'] }, { group: 'events.k8s.io', resources: ['events'] }] },
    { level: 'Request', users: [TEND_USER], verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
    { level: 'Request', verbs: ['create', 'update', 'patch', 'delete'], resources: [{ group: 'discovery.k8s.io', resources: ['endpointslices'] }] },
    { level: 'Request', verbs: ['update', 'patch'], resources: [{ group: 'apps', resources: ['replicasets/status'] }] },
    { level: 'Metadata', verbs: ['create'], resources: [{ group: 'apps', resources: ['replicasets'] }] },
    { level: 'None' },
  ],
};

async function writeAuditPolicy(info: SandboxInfo): Promise<void> {
  if (info.settings.auditLog) await writeFile(auditPolicyFile(info), toYaml(auditPolicy));
}

/** The files of the pods the kubelet runs for real (volumes, env files). */
const podsDir = (info: SandboxInfo) => join(info.stateDir, 'pods');
const pidFile = (info: SandboxInfo, name: string) => join(info.stateDir, 'run', `${name}.pid`);
const logFile = (info: SandboxInfo, name: string) => join(info.stateDir, 'logs', `${name}.log`);

async function readSettings(stateDir: string): Promise<SandboxSettings | undefined> {
  try {
    return JSON.parse(await readFile(join(stateDir, 'sandbox.json'), 'utf8')) as SandboxSettings;
  } catch {
    return undefined;
  }
}

export interface UpOptions {
  stateDir?: string;
  settings?: Partial<Omit<SandboxSettings, 'ports'>> & { ports?: Partial<SandboxSettings['ports']> };
  progress?: (msg: string) => void;
}

/** Starts whatever part of the sandbox is not running; returns where it lives. */
export async function up(opts: UpOptions = {}): Promise<SandboxInfo> {
  // Absolute: the components are given paths inside it and run from elsewhere.
  const stateDir = resolve(opts.stateDir ?? defaultStateDir());
  const say = opts.progress ?? (() => {});
  const saved = await readSettings(stateDir);
  const wanted: SandboxSettings = {
    ...defaultSettings, ...saved, ...opts.settings,
    ports: { ...defaultSettings.ports, ...saved?.ports, ...opts.settings?.ports },
  };
  const info = sandboxInfo(stateDir, wanted);
  const running = saved !== undefined && (await anyRunning(info));
  if (running && JSON.stringify({ ...saved, runImages: undefined }) === JSON.stringify({ ...wanted, runImages: undefined })
    && JSON.stringify(saved.runImages ?? []) !== JSON.stringify(wanted.runImages ?? [])) {
    // Only the kubelet reads it: stopped here (and its real containers with it), started again below.
    say(`restarting kubelet to run images ${JSON.stringify(wanted.runImages ?? [])} for real`);
    const pf = pidFile(info, 'kubelet');
    const rec = await readRecord(pf);
    if (rec) await stopProcess(rec, pf, 30_000);
  } else if (running && JSON.stringify(saved) !== JSON.stringify(wanted)) {
    throw new SandboxError(
      `the sandbox in ${stateDir} is running with other settings (${JSON.stringify(saved)}); ` +
      'run `tend sandbox down` first to change them');
  }
  // Owner-only: the folder holds keys, kubeconfigs and tokens.
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  await chmod(stateDir, 0o700);
  await Promise.all(['run', 'logs'].map((d) => mkdir(join(stateDir, d), { recursive: true, mode: 0o700 })));
  await writeFile(join(stateDir, 'sandbox.json'), JSON.stringify(wanted, null, 2));

  const bin = await ensureBinaries(say);
  const cluster = wanted.temporal === 'cluster';
  const server = cluster ? await ensureServerBinaries(say) : undefined;
  const pki = await ensurePki(join(stateDir, 'pki'));
  await writeAdminKubeconfig(info, pki);
  await writeAuditPolicy(info);
  const all = components(info, bin, pki, server);
  const byName = new Map(all.map((c) => [c.name, c]));
  // What this call started, so that a failure stops exactly that and leaves
  // alone what was already running.
  const started: ProcessRecord[] = [];
  const start = async (name: string) => {
    const rec = await startComponent(info, byName.get(name)!, say);
    if (rec) started.push(rec);
  };

  // Temporal is independent of Kubernetes: start both chains side by side.
  // A dev server that was running already may predate a search attribute tend has added since:
  // what it lacks is registered (the flags above register them only when it starts).
  const temporal = cluster ? startCluster(info, bin, server!, start, say)
    : start('temporal').then(() => registerNamespace(bin.temporal, info.temporalAddress, searchAttributeNames));
  // Awaited below; a failure before then must not be an unhandled rejection.
  temporal.catch(() => undefined);
  try {
    await start('etcd');
    await start('kube-apiserver');
    await bootstrapCluster(info, say);
    await Promise.all([start('kube-controller-manager'), start('kube-scheduler')]);
    await start('kubelet');
    await temporal;
  } catch (err) {
    await Promise.allSettled([temporal]);
    for (const rec of started.reverse()) await stopProcess(rec, pidFile(info, rec.name));
    throw err;
  }
  say(`sandbox ready in ${stateDir}`);
  return info;
}

/**
 * The cluster's Temporal in order: PostgreSQL (its data folder made the first time), the schemas,
 * history and matching, the frontend, the worker service; then the `default` namespace and tend's
 * search attributes, through the frontend.
 */
async function startCluster(
  info: SandboxInfo, bin: Binaries, server: ServerBinaries, start: (name: string) => Promise<void>, say: (m: string) => void,
): Promise<void> {
  const ports = clusterPorts(info.settings.ports.temporal);
  await initPostgres(info.stateDir);
  await writeServerConfig(info.stateDir, ports);
  await start('postgres');
  await retry('PostgreSQL to take connections', 30_000, () => setupSchemas(server, ports, say));
  // One at a time: each service writes the cluster's metadata into a fresh database at its
  // first start, and two doing it at once fail one of them (duplicate key in cluster_metadata_info).
  await start('temporal-history');
  await start('temporal-matching');
  await start('temporal-frontend');
  await start('temporal-worker');
  await writeUiConfig(info.stateDir, info.temporalAddress, info.settings.ports.temporalUi);
  await start('temporal-ui');
  await retry('the frontend to register the default namespace', 60_000, () => registerNamespace(bin.temporal, info.temporalAddress, searchAttributeNames));
  say(`temporal cluster ready: frontend ${info.temporalAddress}, PostgreSQL 127.0.0.1:${ports.postgres}`);
}

async function retry(what: string, timeoutMs: number, fn: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw new SandboxError(`timed out after ${timeoutMs / 1000}s waiting for ${what}: ${(err as { stderr?: string }).stderr || (err as Error).message}`);
    }
    await sleep(1000);
  }
}

export type ComponentName = 'temporal' | 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kubelet'
  | (typeof CLUSTER_COMPONENTS)[number];

/**
 * Stops one component of a running sandbox (SIGTERM, or SIGKILL with `kill`),
 * waits `downMs`, and starts it again with the sandbox's settings as they are
 * now; resolves once it serves. Its data stays (Temporal's database file,
 * etcd's folder): this is a restart, not a reset.
 */
export async function restartComponent(
  dir: string, name: ComponentName, opts: { kill?: boolean; downMs?: number; progress?: (m: string) => void } = {},
): Promise<void> {
  const stateDir = resolve(dir);
  const settings = await readSettings(stateDir);
  if (!settings) throw new SandboxError(`no sandbox in ${stateDir}`);
  const info = sandboxInfo(stateDir, settings);
  const pf = pidFile(info, name);
  const rec = await readRecord(pf);
  if (rec) await stopProcess(rec, pf, opts.kill ? 0 : 10_000);
  if (opts.downMs) await sleep(opts.downMs);
  const pki = await ensurePki(join(stateDir, 'pki'));
  await writeAuditPolicy(info);
  const server = settings.temporal === 'cluster' ? await ensureServerBinaries() : undefined;
  const c = components(info, await ensureBinaries(), pki, server).find((x) => x.name === name);
  if (!c) throw new SandboxError(`no component ${name} in the sandbox in ${stateDir} (its Temporal is ${settings.temporal ?? 'dev'})`);
  await startComponent(info, c, opts.progress ?? (() => {}));
}

/**
 * Turns the audit log on in a sandbox (recorded in its settings): a running
 * kube-apiserver started without it is restarted with it. Returns the log's path.
 */
export async function enableAuditLog(dir: string, progress?: (m: string) => void): Promise<string> {
  const stateDir = resolve(dir);
  const settings = await readSettings(stateDir);
  if (!settings) throw new SandboxError(`no sandbox in ${stateDir}`);
  const info = sandboxInfo(stateDir, { ...settings, auditLog: true });
  const rec = await readRecord(pidFile(info, 'kube-apiserver'));
  const logging = rec?.args.some((a) => a.startsWith('--audit-log-path=')) ?? false;
  if (!settings.auditLog) await writeFile(join(stateDir, 'sandbox.json'), JSON.stringify(info.settings, null, 2));
  if (!logging && (await isRunning(rec))) {
    await restartComponent(stateDir, 'kube-apiserver', { progress });
    // A component still starting when the API server went away can exit (kube-controller-manager
    // does when its controllers' first requests are refused): whatever stopped is started again.
    for (const c of await status(stateDir)) if (!c.running) await restartComponent(stateDir, c.name as ComponentName, { progress });
  }
  return auditLogFile(info);
}

/** Starts a component unless it runs already; returns its record if this call started it. */
export async function startComponent(info: SandboxInfo, c: Component, say: (m: string) => void): Promise<ProcessRecord | undefined> {
  const pf = pidFile(info, c.name);
  const rec = await readRecord(pf);
  if (await isRunning(rec)) {
    await waitReady(info, c, rec!);
    return undefined;
  }
  say(`starting ${c.name}`);
  const started = await startDetached(c.name, c.command, c.args, {
    log: logFile(info, c.name), pidFile: pf, ...(c.user ? { user: c.user, cwd: '/' } : { cwd: info.stateDir }),
  });
  try {
    await waitReady(info, c, started);
  } catch (err) {
    await stopProcess(started, pf);
    throw err;
  }
  say(`${c.name} ready (pid ${started.pid})`);
  return started;
}

async function waitReady(info: SandboxInfo, c: Component, rec: ProcessRecord): Promise<void> {
  const deadline = Date.now() + c.timeoutMs;
  let last: unknown;
  for (;;) {
    if (!(await isRunning(rec))) {
      const how = howEnded(rec.pid);
      throw new SandboxError(`${c.name} exited during start-up${how ? ` (${how})` : ''}; last lines of ${rec.log}:\n${await logTail(rec.log) || '(nothing)'}`);
    }
    try {
      await c.ready();
      return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new SandboxError(
        `${c.name} did not become ready within ${c.timeoutMs / 1000}s (${(last as Error)?.message ?? last}); ` +
        `last lines of ${logFile(info, c.name)}:\n${await logTail(rec.log)}`);
    }
    await sleep(250);
  }
}

async function anyRunning(info: SandboxInfo): Promise<boolean> {
  for (const s of await status(info.stateDir)) if (s.running) return true;
  return false;
}

export interface ComponentStatus {
  name: string;
  running: boolean;
  pid?: number;
  log: string;
}

const componentNames = [...CLUSTER_COMPONENTS, 'temporal', 'etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet'];

export async function status(dir = defaultStateDir()): Promise<ComponentStatus[]> {
  const stateDir = resolve(dir);
  const info = sandboxInfo(stateDir, (await readSettings(stateDir)) ?? defaultSettings);
  const names = info.settings.temporal === 'cluster' ? componentNames.filter((n) => n !== 'temporal') : componentNames.filter((n) => !(CLUSTER_COMPONENTS as readonly string[]).includes(n));
  return Promise.all(names.map(async (name) => {
    const rec = await readRecord(pidFile(info, name));
    const running = await isRunning(rec);
    return { name, running, pid: running ? rec!.pid : undefined, log: logFile(info, name) };
  }));
}

/** The running sandbox's addresses, or undefined when it has never been set up. */
export async function currentSandbox(dir = defaultStateDir()): Promise<SandboxInfo | undefined> {
  const stateDir = resolve(dir);
  const settings = await readSettings(stateDir);
  return settings ? sandboxInfo(stateDir, settings) : undefined;
}

/** Stops, in reverse order, every process the sandbox recorded. Data is kept unless `purge`. */
export async function down(dir = defaultStateDir(), opts: { purge?: boolean; progress?: (m: string) => void } = {}) {
  const stateDir = resolve(dir);
  const settings = (await readSettings(stateDir)) ?? defaultSettings;
  const info = sandboxInfo(stateDir, settings);
  for (const name of [...componentNames].reverse()) {
    const pf = pidFile(info, name);
    const rec = await readRecord(pf);
    if (!rec) continue;
    if (await isRunning(rec)) opts.progress?.(`stopping ${name} (pid ${rec.pid})`);
    await stopProcess(rec, pf);
  }
  // The containers of pods run for real: the kubelet stops them as it stops, unless it was killed.
  if (settings.runImages && settings.runImages.length > 0) await removeKubeletContainers(podsDir(info));
  if (opts.purge && existsSync(stateDir)) {
    for (const entry of await readdir(stateDir)) await rm(join(stateDir, entry), { recursive: true, force: true });
  }
  // The cluster's PostgreSQL data, beside the state folder when it runs as nobody.
  if (opts.purge) await rm(postgresDataDir(stateDir), { recursive: true, force: true });
}

// ---------------------------------------------------------------------------
// Kubernetes bootstrap: the kubeconfigs, tend's RBAC, tend's own credentials.

function kubeconfigYaml(info: SandboxInfo, caData: string, user: Record<string, string>): string {
  return toYaml({
    apiVersion: 'v1', kind: 'Config',
    clusters: [{ name: 'tend-sandbox', cluster: { server: info.apiserver, 'certificate-authority-data': caData } }],
    users: [{ name: 'user', user }],
    contexts: [{ name: 'tend-sandbox', context: { cluster: 'tend-sandbox', user: 'user' } }],
    'current-context': 'tend-sandbox',
  });
}

const b64 = async (f: string) => Buffer.from(await readFile(f)).toString('base64');

async function writeAdminKubeconfig(info: SandboxInfo, pki: Pki) {
  const yaml = kubeconfigYaml(info, await b64(pki.caCert), {
    'client-certificate-data': await b64(pki.adminCert), 'client-key-data': await b64(pki.adminKey),
  });
  await writeSecretFile(info.kubeconfig, yaml);
}

/**
 * Applies deploy/kubernetes's namespace and RBAC, writes tend's own kubeconfig
 * and configuration, and applies the rights `tend rbac` generates for that
 * configuration: tend on the sandbox has exactly what a cluster would give it.
 */
async function bootstrapCluster(info: SandboxInfo, say: (m: string) => void) {
  const { applyManifests, applyObjects, applyRights, serviceAccountToken } = await import('./bootstrap.ts');
  // Custom resource definitions first, so that RBAC rules and tend's informers find their kinds.
  const crds = join(repoRoot, 'deploy/crds');
  if (existsSync(crds)) say(`applied ${await applyManifests(info.kubeconfig, crds)} objects from deploy/crds`);
  const applied = await applyManifests(info.kubeconfig, join(repoRoot, 'deploy/kubernetes'), (o) => o.kind !== 'Deployment' && o.kind !== 'ConfigMap');
  say(`applied ${applied} objects from deploy/kubernetes`);
  const token = await serviceAccountToken(info.kubeconfig, 'tend-system', 'tend');
  const yaml = kubeconfigYaml(info, await b64(pkiPaths(join(info.stateDir, 'pki')).caCert), { token });
  await writeSecretFile(info.tendKubeconfig, yaml);
  await writeTendConfig(info);
  const { loadConfig } = await import('../config/load.ts');
  const { GENERATED_LABEL, rbacObjects } = await import('../rbac/generate.ts');
  const objects = rbacObjects(await loadConfig({ file: info.config }));
  // The demo's namespaces, named in the sandbox's configuration, exist before their Roles (the demo fills them later).
  const namespaces = [...new Set(objects.flatMap((o) => o.metadata.namespace ?? []))];
  await applyObjects(info.kubeconfig, namespaces.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })));
  const rights = await applyRights(info.kubeconfig, objects, `${GENERATED_LABEL}=true`);
  say(`applied ${rights.applied} RBAC objects generated for ${info.config}` +
    (rights.removed.length ? `; removed ${rights.removed.length} it no longer needs (${rights.removed.join(', ')})` : ''));
}

/**
 * tend's configuration for the sandbox: its addresses and credentials, plus
 * the capability sections that suit the demo workload (deploy/demo/config.yaml).
 */
async function writeTendConfig(info: SandboxInfo) {
  const demo = join(repoRoot, 'deploy/demo/config.yaml');
  const sections = existsSync(demo) ? (parseYaml(await readFile(demo, 'utf8')) as Record<string, unknown> | null) : undefined;
  const yaml = toYaml({
    temporal: { address: info.temporalAddress, namespace: 'default', taskQueue: 'tend' },
    kubernetes: { kubeconfig: info.tendKubeconfig },
    ...sections,
  });
  await writeSecretFile(info.config, '# tend configuration for the local sandbox (written by `tend sandbox up`)\n' + yaml);
}

// ---------------------------------------------------------------------------
// Readiness probes.

function tcpOpen(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: '127.0.0.1', port }, () => {
      sock.end();
      resolve();
    });
    sock.once('error', reject);
    sock.setTimeout(2000, () => sock.destroy(new Error(`127.0.0.1:${port}: timed out`)));
  });
}

function httpGet(port: number, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, timeout: 2000 }, (res) => {
      res.resume();
      if (res.statusCode === 200) resolve();
      else reject(new Error(`GET http://127.0.0.1:${port}${path}: ${res.statusCode}`));
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
}

async function httpsGet(port: number, path: string, pki?: Pki): Promise<void> {
  const tls = pki
    ? { ca: await readFile(pki.caCert), cert: await readFile(pki.adminCert), key: await readFile(pki.adminKey) }
    : { rejectUnauthorized: false };
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path, timeout: 2000, ...tls }, (res) => {
      res.resume();
      if (res.statusCode === 200) resolve();
      else reject(new Error(`GET https://127.0.0.1:${port}${path}: ${res.statusCode}`));
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
}

async function nodesReady(info: SandboxInfo): Promise<void> {
  const { readyNodeCount } = await import('./bootstrap.ts');
  const ready = await readyNodeCount(info.kubeconfig);
  if (ready < info.settings.nodes) throw new Error(`${ready}/${info.settings.nodes} simulated nodes Ready`);
}

/** Writes a file only its owner may read; `mode` alone applies to new files, so an older file is tightened too. */
async function writeSecretFile(path: string, text: string): Promise<void> {
  await writeFile(path, text, { mode: 0o600 });
  await chmod(path, 0o600);
}
