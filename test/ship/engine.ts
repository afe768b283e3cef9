// The container engine for the ship lane's image and compose tests: podman with the project's
// containers.conf (as `npm run image` runs it), tend's image built (or found built) by
// `npm run image`, free host ports (the kubelet runtime's helper).
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../harness/env.ts';

export { freePort } from './kubelet-runtime.ts';

const run = promisify(execFile);

/** podman's environment: its settings from deploy/containers/containers.conf. */
export const podmanEnv: NodeJS.ProcessEnv = { ...process.env, CONTAINERS_CONF: join(repoRoot, 'deploy', 'containers', 'containers.conf') };

/** podman ARGS; rejects with its stderr on a non-zero exit. */
export async function podman(args: string[], timeoutMs = 120_000): Promise<{ stdout: string; stderr: string }> {
  return run('podman', args, { env: podmanEnv, timeout: timeoutMs, maxBuffer: 64 << 20 });
}

/** What `npm run image` prints on its last line. */
export interface BuiltImage { image: string; id: string; bytes: number; base: string; standIn: boolean; sources: string }

/** `npm run image` (scripts/image.ts): builds tend's image, or finds it built from these sources. */
export async function buildImage(): Promise<BuiltImage & { stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'scripts', 'image.ts')], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) return reject(new Error(`npm run image exited with ${code}:\n${stderr.slice(-4000)}`));
      const last = stdout.trim().split('\n').pop() ?? '';
      try {
        resolve({ ...(JSON.parse(last) as BuiltImage), stderr });
      } catch {
        reject(new Error(`npm run image: its last line is not JSON: ${last.slice(0, 200)}`));
      }
    });
  });
}

/** The HTTP status of GET `url`, or undefined when nothing answers. */
export async function httpStatus(url: string): Promise<number | undefined> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    await r.body?.cancel();
    return r.status;
  } catch {
    return undefined;
  }
}
