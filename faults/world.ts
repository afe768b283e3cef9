// What a fault run works with: the sandbox (its own, or one it reuses, with the
// audit log on), the proxy tend talks to kube-apiserver through, tend's worker
// and watcher as two processes that can be killed apart, and the faults.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { Client, Connection } from '@temporalio/client';
import { kubeClients, loadKubeConfig, type KubeClients } from '../src/kube/client.ts';
import { restartComponent, type SandboxInfo } from '../src/sandbox/sandbox.ts';
import { grantRightsFor } from '../src/sandbox/bootstrap.ts';
import { ApiProxy, type WriteMatch } from './proxy.ts';
import { AuditLog } from './audit.ts';
import type { FaultKind, FaultRecord } from './report.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const cli = join(repo, 'src/starters/cli.ts');

export interface World {
  info: SandboxInfo;
  /** An administrator's clients (the run's own actions, and what it reads). */
  kube: KubeClients;
  temporal: Client;
  proxy: ApiProxy;
  audit: AuditLog;
  /** This run's folder: configurations, tend's logs, the repair commands' files. */
  dir: string;
  /** tend's kubeconfig (its own ServiceAccount token), pointed at the proxy. */
  tendKubeconfig: string;
  say: (m: string) => void;
}

export async function openWorld(info: SandboxInfo, proxy: ApiProxy, proxyPort: number, audit: AuditLog, dir: string, say: (m: string) => void): Promise<World> {
  const kc = parseYaml(await readFile(info.tendKubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
  for (const c of kc.clusters) c.cluster.server = `https://127.0.0.1:${proxyPort}`;
  const tendKubeconfig = join(dir, 'tend.kubeconfig');
  await writeFile(tendKubeconfig, toYaml(kc), { mode: 0o600 });
  const temporal = new Client({ connection: await Connection.connect({ address: info.temporalAddress }) });
  return { info, kube: kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig })), temporal, proxy, audit, dir, tendKubeconfig, say };
}

/** A tend configuration for one capability: tend's credentials through the proxy, its own task queue. */
export async function writeTendConfig(w: World, capability: string, section: Record<string, unknown>): Promise<string> {
  const file = join(w.dir, `${capability}.yaml`);
  await writeFile(file, toYaml({
    temporal: { address: w.info.temporalAddress, taskQueue: `tend-faults-${capability}` },
    kubernetes: { kubeconfig: w.tendKubeconfig },
    ...section,
  }));
  // The rights `tend rbac` generates for it, as an operator would apply them.
  await grantRightsFor(w.info.kubeconfig, file, 'tend-faults');
  return file;
}

/** One tend process (`tend worker` or `tend watcher`), its output appended to a file. */
class Part {
  child?: ChildProcess;
  readonly part: 'worker' | 'watcher';
  readonly log: string;
  private readonly config: string;
  /** Its own HTTP port: the worker and the watcher run side by side. */
  private readonly httpAddress: string;
  constructor(part: 'worker' | 'watcher', config: string, log: string, httpPort: number) {
    this.part = part;
    this.config = config;
    this.log = log;
    this.httpAddress = `127.0.0.1:${httpPort}`;
  }

  /** Where its log ended when it was last started: what it printed since is this run's. */
  private logFrom = 0;

  start() {
    this.logFrom = (() => {
      try {
        return statSync(this.log).size;
      } catch {
        return 0;
      }
    })();
    const fd = openSync(this.log, 'a');
    try {
      this.child = spawn(process.execPath, [cli, this.part, '--config', this.config, '--http-address', this.httpAddress], { stdio: ['ignore', fd, fd] });
    } finally {
      closeSync(fd);
    }
  }

  /** When the process last started said it serves ('worker started', 'watcher started'), epoch ms; undefined until it has. */
  async readyAt(): Promise<number | undefined> {
    const text = (await readFile(this.log, 'utf8').catch(() => '')).slice(this.logFrom);
    for (const line of text.split('\n')) {
      if (!line.includes(`"${this.part} started"`)) continue;
      try {
        return Date.parse((JSON.parse(line) as { time: string }).time);
      } catch {
        // not a log line of ours
      }
    }
    return undefined;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(signal: NodeJS.Signals): Promise<number | undefined> {
    const c = this.child;
    if (!c || !this.running) return undefined;
    const gone = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill(signal);
    const timer = setTimeout(() => c.kill('SIGKILL'), 30_000);
    await gone;
    clearTimeout(timer);
    return c.pid;
  }
}

export class Tend {
  readonly worker: Part;
  readonly watcher: Part;
  readonly withWatcher: boolean;
  /** httpPorts: the worker's and the watcher's HTTP ports, each free (one port's neighbour may be another process's). */
  constructor(config: string, dir: string, capability: string, withWatcher: boolean, httpPorts: { worker: number; watcher: number }) {
    this.worker = new Part('worker', config, join(dir, `${capability}-worker.log`), httpPorts.worker);
    this.watcher = new Part('watcher', config, join(dir, `${capability}-watcher.log`), httpPorts.watcher);
    this.withWatcher = withWatcher;
  }

  /** The parts this capability runs. */
  get parts(): Part[] {
    return this.withWatcher ? [this.worker, this.watcher] : [this.worker];
  }

  start() {
    for (const p of this.parts) p.start();
  }

  async stop() {
    await Promise.all([this.worker.stop('SIGTERM'), this.watcher.stop('SIGTERM')]);
  }

  /** Whether every part, as last started, has said it serves. */
  async ready(): Promise<boolean> {
    for (const p of this.parts) if ((await p.readyAt()) === undefined) return false;
    return true;
  }

  /**
   * Until every part serves; fails at once, with the end of its log, when a part exits before it
   * served (a port in use, a configuration refused), and after `timeoutMs` otherwise.
   */
  async serving(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await this.ready())) {
      for (const p of this.parts) {
        if (!p.running && (await p.readyAt()) === undefined) {
          const tail = (await readFile(p.log, 'utf8').catch(() => '')).trim().split('\n').slice(-3).join('\n');
          throw new Error(`tend's ${p.part} exited before it served: ${tail}`);
        }
      }
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for tend's worker and watcher to serve`);
      await sleep(200);
    }
  }
}

/**
 * One round's fault: its kind, and (drawn when the round begins, so that the
 * same seed gives the same run) when it strikes and, for an API error, which
 * write it fails. `arm` starts the clock when the round's action begins.
 */
export class Fault {
  private readonly delayMs: number;
  private readonly match?: WriteMatch;
  private armedAt = 0;
  /** When it struck (epoch ms), once it has; for an API error, when the write was failed. */
  struckAt?: number;
  private timer?: NodeJS.Timeout;
  private running?: Promise<FaultRecord>;
  private settle?: (r: FaultRecord) => void;
  private injection?: Promise<unknown>;

  private readonly w: World;
  private readonly tend: Tend;
  readonly kind: FaultKind;
  constructor(w: World, tend: Tend, kind: FaultKind, random: () => number, windowMs: number, writes: WriteMatch[]) {
    this.w = w;
    this.tend = tend;
    this.kind = kind;
    // An API error waits for its write once armed: armed early, it finds one.
    this.delayMs = Math.round(random() * windowMs * (kind === 'api-error' ? 0.3 : 1));
    const pick = random();
    if (kind === 'api-error') this.match = writes[Math.floor(pick * writes.length)]!;
  }

  arm(): void {
    this.armedAt = Date.now();
    this.running = new Promise((resolve) => {
      this.settle = resolve;
      this.timer = setTimeout(() => resolve(this.strike().catch((err: Error) => ({
        kind: this.kind, atMs: Date.now() - this.armedAt, injected: false, detail: `could not be injected: ${err.message}`,
      }))), this.delayMs);
    });
  }

  private async strike(): Promise<FaultRecord> {
    this.struckAt = Date.now();
    const atMs = this.struckAt - this.armedAt;
    const record = (detail: string, injected = true): FaultRecord => ({ kind: this.kind, atMs, injected, detail });
    const { stateDir } = this.w.info;
    this.w.say(`  fault: ${this.kind} at +${(atMs / 1000).toFixed(1)} s`);
    switch (this.kind) {
      case 'kill-worker':
      case 'kill-watcher': {
        const part = this.kind === 'kill-worker' ? this.tend.worker : this.tend.watcher;
        const pid = await part.stop('SIGKILL');
        await sleep(500);
        part.start();
        return record(`SIGKILL of the ${part.part} (pid ${pid ?? 'not running'}), started again 0.5 s later`, pid !== undefined);
      }
      case 'restart-temporal': {
        const t = Date.now();
        await restartComponent(stateDir, 'temporal');
        return record(`Temporal dev server restarted (database kept), serving again after ${((Date.now() - t) / 1000).toFixed(1)} s`);
      }
      case 'restart-apiserver': {
        const t = Date.now();
        await restartComponent(stateDir, 'kube-apiserver');
        return record(`kube-apiserver restarted, serving again after ${((Date.now() - t) / 1000).toFixed(1)} s`);
      }
      case 'drop-watches': {
        const n = this.w.proxy.dropWatches();
        return record(`${n} open watch connection(s) of tend cut`, n > 0);
      }
      case 'api-error': {
        this.struckAt = undefined;
        const match = this.match!;
        this.injection = this.w.proxy.failNext(match);
        return record(`armed: the next ${match.description} answered 500`, false);
      }
    }
  }

  /** Waits for the fault to be over; an API error that has not fired by `graceMs` is withdrawn. */
  async done(graceMs = 10_000): Promise<FaultRecord> {
    if (!this.running) throw new Error('the fault was never armed');
    const r = await this.running;
    if (this.kind !== 'api-error' || !this.injection) return r;
    const fired = await Promise.race([this.injection, sleep(graceMs).then(() => undefined)]);
    if (!fired) {
      this.w.proxy.disarm();
      return { ...r, detail: `${r.detail}; no such write came` };
    }
    const e = fired as { method: string; path: string; at: number };
    this.struckAt = e.at;
    return { ...r, injected: true, detail: `${e.method} ${e.path} answered 500 at +${((e.at - this.armedAt) / 1000).toFixed(1)} s` };
  }

  /**
   * For a killed process: from when it was killed until the new one said it
   * serves (epoch ms); undefined for other faults, or before it is back.
   */
  async outage(): Promise<{ part: 'worker' | 'watcher'; from: number; to: number } | undefined> {
    if (this.struckAt === undefined || (this.kind !== 'kill-worker' && this.kind !== 'kill-watcher')) return undefined;
    const part = this.kind === 'kill-worker' ? this.tend.worker : this.tend.watcher;
    const to = await part.readyAt();
    return to === undefined ? undefined : { part: part.part, from: this.struckAt, to };
  }

  /** Withdraws the fault if it has not struck (the round ended first). */
  cancel() {
    clearTimeout(this.timer);
    this.w.proxy.disarm();
    this.settle?.({ kind: this.kind, atMs: Date.now() - this.armedAt, injected: false, detail: 'the round ended before it struck' });
  }
}

/** Calls fn until it succeeds (the API server or Temporal may be restarting), within timeoutMs. */
export async function retry<T>(what: string, fn: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(err as Error).message}`);
      await sleep(500);
    }
  }
}
