// The worker's side of the command launcher (src/repair/launcher-process.ts):
// one small process, started at the first command and kept, forks every
// command, so the worker's threads never wait in fork(). A command runs the
// same either way (no shell, a process group of its own, its output kept up to
// a limit, its group killed when its leader exits); where the launcher cannot
// run, commands are spawned from the worker as before. Node-only: never
// imported by workflow code.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { log } from '../log.ts';
import type { LaunchAnswer, LaunchRequest } from './launcher-process.ts';

/** Output kept per stream; the rest is dropped (the command is not killed for talking). */
const OUTPUT_LIMIT = 1 << 20;

export interface Launched {
  /** The group id (its leader's pid), as soon as it is known; undefined when the command never started. */
  pid: Promise<number | undefined>;
  /** How it ended. */
  done: Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string; error?: { code?: string; message: string } }>;
}

type Close = Extract<LaunchAnswer, { close: unknown }>['close'];

interface Pending {
  pid?: number;
  resolvePid(pid: number | undefined): void;
  resolveDone(close: Close): void;
}

const script = fileURLToPath(new URL('./launcher-process.ts', import.meta.url));

let launcher: ChildProcess | undefined;
/** Set when the launcher could not be started or died: commands are spawned from the worker from then on. */
let unavailable = process.env.TEND_REPAIR_LAUNCHER === 'off';
const pending = new Map<number, Pending>();
let nextId = 1;

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // ESRCH: the group is gone already.
  }
}

function start(): ChildProcess | undefined {
  if (launcher?.connected) return launcher;
  if (unavailable) return undefined;
  try {
    // Node's own options of the worker (a CPU profile, an inspector) are not the launcher's.
    const child = fork(script, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: [], serialization: 'json' });
    child.on('message', (a: LaunchAnswer) => {
      const p = pending.get(a.id);
      if (!p) return;
      if ('pid' in a) {
        p.pid = a.pid;
        p.resolvePid(a.pid);
        return;
      }
      pending.delete(a.id);
      p.resolvePid(undefined);
      p.resolveDone(a.close);
    });
    const lost = (why: string) => {
      if (launcher !== child) return;
      launcher = undefined;
      unavailable = true;
      log.warn({ reason: why }, 'repair: the command launcher is gone; commands are spawned from the worker from now on');
      // Their answers cannot come any more: their groups are killed, and each run ends as failed with the reason.
      for (const [id, p] of pending) {
        pending.delete(id);
        if (p.pid) killGroup(p.pid);
        p.resolvePid(undefined);
        p.resolveDone({ code: null, signal: null, stdout: '', stderr: '', error: { message: `the command launcher ${why}; the command was killed` } });
      }
    };
    child.once('error', (err) => lost(`failed: ${err.message}`));
    child.once('exit', (code, signal) => lost(`exited (${signal ?? `status ${code}`})`));
    // Neither the process nor its channel keeps the worker alive; it exits when the channel closes.
    child.unref();
    child.channel?.unref();
    launcher = child;
    return child;
  } catch (err) {
    unavailable = true;
    log.warn({ err }, 'repair: the command launcher cannot be started; commands are spawned from the worker');
    return undefined;
  }
}

/** Spawned from this process, as before the launcher (and wherever it cannot run). */
function spawnHere(file: string, args: string[], env: NodeJS.ProcessEnv): Launched {
  let resolvePid!: (pid: number | undefined) => void;
  const pid = new Promise<number | undefined>((r) => (resolvePid = r));
  const done = new Promise<Close>((resolve) => {
    const child = spawn(file, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env, windowsHide: true });
    resolvePid(child.pid);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { if (stdout.length < OUTPUT_LIMIT) stdout += String(d); });
    child.stderr.on('data', (d: Buffer) => { if (stderr.length < OUTPUT_LIMIT) stderr += String(d); });
    let spawnError: NodeJS.ErrnoException | undefined;
    child.once('error', (err: NodeJS.ErrnoException) => {
      spawnError = err;
    });
    child.once('exit', () => {
      if (child.pid) killGroup(child.pid);
    });
    child.once('close', (code, signal) => resolve({
      code, signal, stdout, stderr,
      ...(spawnError ? { error: { ...(spawnError.code ? { code: spawnError.code } : {}), message: spawnError.message } } : {}),
    }));
  });
  return { pid, done };
}

/**
 * Runs `file args` without a shell, detached (a process group of its own),
 * through the launcher when it runs. `pid` resolves once the group exists (the
 * caller records it and kills it on timeout or cancellation), `done` when the
 * command has ended and its output is closed.
 */
export function launch(file: string, args: string[], env: NodeJS.ProcessEnv): Launched {
  const child = start();
  if (!child) return spawnHere(file, args, env);
  const id = nextId++;
  let resolvePid!: (pid: number | undefined) => void;
  let resolveDone!: (close: Close) => void;
  const pid = new Promise<number | undefined>((r) => (resolvePid = r));
  const done = new Promise<Close>((r) => (resolveDone = r));
  pending.set(id, { resolvePid, resolveDone });
  const req: LaunchRequest = { id, file, args, env };
  child.send(req, (err) => {
    if (!err) return;
    // Not delivered: nothing was started; spawned here instead.
    if (!pending.delete(id)) return;
    const here = spawnHere(file, args, env);
    void here.pid.then(resolvePid);
    void here.done.then(resolveDone);
  });
  return { pid, done };
}
