// Locates the real control-plane binaries, building them on first use through
// scripts/binaries.sh, which caches them outside the work tree by version.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

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

async function paths(): Promise<Binaries> {
  const { stdout } = await run('bash', [script, '--print']);
  const vars = Object.fromEntries(stdout.trim().split('\n').map((l) => l.split('=', 2) as [string, string]));
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

async function allPresent(b: Binaries): Promise<boolean> {
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
