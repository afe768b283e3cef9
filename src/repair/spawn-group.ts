// How a repair command is started, the same from the command launcher
// (launcher-process.ts) and from the worker where the launcher cannot run
// (launcher.ts): without a shell, detached (a process group of its own), its
// output kept up to a limit, and its group killed when its leader exits
// (whatever the command left behind goes with it). Imports nothing but Node's
// own modules: the launcher process loads it.
import { spawn } from 'node:child_process';

/** Output kept per stream; the rest is dropped (the command is not killed for talking). */
export const OUTPUT_LIMIT = 1 << 20;

/** How a command ended (or never started: `error`, e.g. ENOENT). */
export interface Closed {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  error?: { code?: string; message: string };
}

export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // ESRCH: the group is gone already.
  }
}

const errorOf = (e: NodeJS.ErrnoException) => ({ ...(e.code ? { code: e.code } : {}), message: e.message });

/**
 * Starts `file args` with `env`. `started` gets the group id (its leader's pid) at once, or
 * undefined when nothing started; `closed` how it ended, once its output is closed.
 */
export function spawnGroup(file: string, args: string[], env: NodeJS.ProcessEnv, started: (pgid: number | undefined) => void, closed: (c: Closed) => void): void {
  let child;
  try {
    child = spawn(file, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env, windowsHide: true });
  } catch (err) {
    started(undefined);
    closed({ code: null, signal: null, stdout: '', stderr: '', error: errorOf(err as NodeJS.ErrnoException) });
    return;
  }
  const pgid = child.pid;
  started(pgid);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { if (stdout.length < OUTPUT_LIMIT) stdout += String(d); });
  child.stderr.on('data', (d: Buffer) => { if (stderr.length < OUTPUT_LIMIT) stderr += String(d); });
  let spawnError: NodeJS.ErrnoException | undefined;
  child.once('error', (err: NodeJS.ErrnoException) => {
    spawnError = err;
  });
  // The leader is done: whatever it left in its group goes with it.
  child.once('exit', () => {
    if (pgid) killGroup(pgid);
  });
  child.once('close', (code, signal) => closed({ code, signal, stdout, stderr, ...(spawnError ? { error: errorOf(spawnError) } : {}) }));
}
