// Locates the real control-plane binaries, building them on first use through
// scripts/binaries.sh, which caches them outside the work tree by version.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../../scripts/binaries.sh', import.meta.url));

export interface Binaries {
  temporal: string;
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  /** For the tests' `kubectl auth can-i`; the sandbox itself does not run it. */
  kubectl: string;
}

/** Temporal's own server, for the cluster sandbox (`--temporal cluster`): built only when asked for. */
export interface ServerBinaries {
  /** The server: frontend, history, matching and worker services, one per process here. */
  server: string;
  /** temporal-sql-tool: creates the databases and applies the schema. */
  sqlTool: string;
  /** schema/postgresql/v12/{temporal,visibility}/versioned, from the server's module. */
  schema: string;
  /** The Web UI's server. */
  ui: string;
}

async function printed(): Promise<Record<string, string>> {
  const { stdout } = await run('bash', [script, '--print']);
  return Object.fromEntries(stdout.trim().split('\n').map((l) => l.split('=', 2) as [string, string]));
}

async function paths(): Promise<Binaries> {
  const vars = await printed();
  const k8s = vars.KUBERNETES!;
  return {
    temporal: vars.TEMPORAL!,
    etcd: vars.ETCD!,
    kubeApiserver: join(k8s, 'kube-apiserver'),
    kubeControllerManager: join(k8s, 'kube-controller-manager'),
    kubeScheduler: join(k8s, 'kube-scheduler'),
    kubectl: vars.KUBECTL!,
  };
}

/** Temporal's server, its SQL tool and schema, building them the first time (several minutes). */
export async function ensureServerBinaries(onBuild?: (msg: string) => void): Promise<ServerBinaries> {
  const dir = (await printed()).TEMPORAL_SERVER!;
  const b = {
    server: join(dir, 'temporal-server'), sqlTool: join(dir, 'temporal-sql-tool'), schema: join(dir, 'schema', 'postgresql', 'v12'), ui: join(dir, 'temporal-ui-server'),
  };
  try {
    await access(join(dir, '.complete'));
    return b;
  } catch {
    onBuild?.("building Temporal's server from its Go module (first run only)");
  }
  await new Promise<void>((resolve, reject) => {
    const child = execFile('bash', [script, '--cluster'], { maxBuffer: 64 << 20 }, (err) => (err ? reject(err) : resolve()));
    child.stderr?.on('data', (d: Buffer) => process.stderr.write(d));
  });
  await access(join(dir, '.complete'));
  return b;
}

/**
 * What scripts/binaries.sh builds, one part at a time (`--part`), in the order scripts/test.ts
 * builds them: the sandbox's first (every sandbox lane and the workflow tests need them), then
 * Temporal's server (the cluster and ship lanes), Helm and promtool (the ship lane).
 */
export const PARTS = ['temporal', 'etcd', 'kubernetes', 'kubectl', 'server', 'helm', 'promtool'] as const;
export type Part = (typeof PARTS)[number];

/** Each part's folder in the cache; a part is built when its folder holds `.complete`. */
async function partDirs(): Promise<Record<Part, string>> {
  const v = await printed();
  return {
    temporal: dirname(v.TEMPORAL!), etcd: dirname(v.ETCD!), kubernetes: v.KUBERNETES!, kubectl: dirname(v.KUBECTL!),
    server: v.TEMPORAL_SERVER!, helm: dirname(v.HELM!), promtool: dirname(v.PROMTOOL!),
  };
}

/** Which parts are built already (in the cache, for this version). */
export async function builtParts(): Promise<Set<Part>> {
  const dirs = await partDirs();
  const found = await Promise.all(PARTS.map(async (p) => access(join(dirs[p], '.complete')).then(() => p, () => undefined)));
  return new Set(found.filter((p) => p !== undefined));
}

/**
 * Builds one part (at once when cached). Rejects with scripts/binaries.sh's last lines of output
 * (Go's errors) when the build fails, is stopped by `signal`, or takes longer than `timeoutMs`.
 * Its progress lines go to `onOutput`.
 */
export async function buildPart(part: Part, opts: { signal?: AbortSignal; timeoutMs?: number; onOutput?: (line: string) => void } = {}): Promise<void> {
  const output: string[] = [];
  await new Promise<void>((resolve, reject) => {
    let why: string | undefined;
    // A process group of its own, so that stopping it stops the go commands it runs too.
    const child = spawn('bash', [script, '--part', part], { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (rest) output.push(rest);
      if (code === 0) return resolve();
      reject(new Error(`scripts/binaries.sh --part ${part} failed (${why ?? `exit ${code ?? signal}`}):\n${output.slice(-40).join('\n')}`));
    });
    const kill = (reason: string) => {
      why ??= reason;
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch { /* already ended */ }
    };
    const onAbort = () => kill('stopped');
    opts.signal?.addEventListener('abort', onAbort);
    if (opts.signal?.aborted) onAbort();
    const timer = opts.timeoutMs ? setTimeout(() => kill(`stopped after ${Math.round(opts.timeoutMs! / 1000)} s`), opts.timeoutMs) : undefined;
    let rest = '';
    child.stderr.on('data', (d: Buffer) => {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        output.push(line);
        if (output.length > 200) output.shift();
        opts.onOutput?.(line);
      }
    });
  });
}

async function allPresent(b: Binaries | ServerBinaries): Promise<boolean> {
  try {
    await Promise.all(Object.values(b).map((p) => access(p)));
    return true;
  } catch {
    return false;
  }
}

/** Returns the binaries, building the missing ones (slow only the first time). */
export async function ensureBinaries(onBuild?: (msg: string) => void): Promise<Binaries> {
  const b = await paths();
  if (await allPresent(b)) return b;
  onBuild?.('building the sandbox binaries from their Go modules (first run only)');
  await new Promise<void>((resolve, reject) => {
    const child = execFile('bash', [script], { maxBuffer: 64 << 20 }, (err) => (err ? reject(err) : resolve()));
    child.stderr?.on('data', (d: Buffer) => process.stderr.write(d));
  });
  if (!(await allPresent(b))) throw new Error(`scripts/binaries.sh finished but binaries are missing: ${Object.values(b).join(', ')}`);
  return b;
}
