// For the ship tests that run pods for real on the sandbox's kubelet: the
// kubelet switched to the podman runtime for some image prefixes (and back),
// podman as the tests call it, and a small image to run when tend's own is not
// needed (Node alone: the node binary and the libraries it links).
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, copyFile, rm, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { up } from '../../src/sandbox/sandbox.ts';
import { repoRoot, testSettings, testStateDir } from '../harness/env.ts';

const run = promisify(execFile);
export const containersConf = join(repoRoot, 'deploy/containers/containers.conf');

/** podman with the project's settings; its stdout. */
export async function podman(...args: string[]): Promise<string> {
  const { stdout } = await run('podman', args, { env: { ...process.env, CONTAINERS_CONF: containersConf }, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** The sandbox's kubelet runs the pods of these image prefixes for real (none: every pod simulated again). */
export async function kubeletRunsImages(prefixes: string[]): Promise<void> {
  await up({ stateDir: testStateDir, settings: { ...testSettings, runImages: prefixes } });
}

/** A port nothing listens on now (the host network is shared with every other test run). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Node's image for the runtime's own test: built once (podman import of the node binary and its libraries). */
export async function nodeImage(): Promise<string> {
  const ref = `localhost/tend-kubelet-test:node-${process.versions.node}`;
  const found = await podman('images', '--quiet', ref);
  if (found.trim() !== '') return ref;
  const node = await realpath(process.execPath);
  const root = await mkdtemp(join(tmpdir(), 'tend-node-image-'));
  try {
    const { stdout } = await run('ldd', [node]);
    const libs = [...stdout.matchAll(/(\/\S+\.so[^\s]*)/g)].map((m) => m[1]);
    for (const dir of ['usr/local/bin', 'etc', 'tmp', 'proc', 'sys', 'dev', 'run', 'var/run']) await mkdir(join(root, dir), { recursive: true });
    await copyFile(node, join(root, 'usr/local/bin/node'));
    for (const lib of libs) {
      await mkdir(join(root, dirname(lib)), { recursive: true });
      await copyFile(lib, join(root, lib));
    }
    await run('tar', ['-C', root, '-cf', join(root, '..', `${root.split('/').pop()}.tar`), '.']);
    await podman('import', join(root, '..', `${root.split('/').pop()}.tar`), ref);
  } finally {
    await rm(root, { recursive: true, force: true });
    await rm(`${root}.tar`, { force: true });
  }
  return ref;
}

/** Containers with a label (key=value), running or not. */
export async function containersWithLabel(label: string): Promise<string[]> {
  return (await podman('ps', '--all', '--quiet', '--filter', `label=${label}`)).split('\n').filter((s) => s.trim() !== '');
}
