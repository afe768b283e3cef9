// tend in a benchmark, started as an operator starts it: through bin/tend (and so with the
// Node.js flags it passes), with any further Node.js flags (a profiler's) in NODE_OPTIONS.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../bin/tend', import.meta.url));

export function spawnTend(args: readonly string[], opts: { nodeFlags?: readonly string[]; env?: Record<string, string> } = {}): ChildProcess {
  const nodeOptions = [process.env.NODE_OPTIONS, ...(opts.nodeFlags ?? [])].filter(Boolean).join(' ');
  return spawn(bin, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...opts.env, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}) },
  });
}

/** SIGTERM, and wait for it to exit (at once when it already has). */
export async function stopTend(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
