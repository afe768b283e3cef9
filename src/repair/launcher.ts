// The worker's side of the command launcher (src/repair/launcher-process.ts):
// one small process, started at the first command and kept, forks every
// command, so the worker's threads never wait in fork(). A command runs the
// same either way (no shell, a process group of its own, its output appended
// to files, its group killed when its leader exits); where the launcher cannot
// run, commands are spawned from the worker as before. Node-only: never
// imported by workflow code.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { log } from '../log.ts';
import type { LaunchAnswer, LaunchRequest } from './launcher-process.ts';
import { spawnGroup, type Closed, type RunFiles } from './spawn-group.ts';

export interface Launched {
  /** The group id (its leader's pid), as soon as it is known; undefined when the command never started. */
  pid: Promise<number | undefined>;
  /**
   * How its leader ended; `lost`: the launcher died first, so the end is not known here: the command
   * goes on (its output goes to files), and the caller waits for its group and reads its exit code.
   */
  done: Promise<Closed & { lost?: string }>;
}

interface Pending {
  pid?: number;
  resolvePid(pid: number | undefined): void;
  resolveDone(close: Closed & { lost?: string }): void;
}

const script = fileURLToPath(new URL('./launcher-process.ts', import.meta.url));

let launcher: ChildProcess | undefined;
/** Set when the launcher could not be started or died: commands are spawned from the worker from then on. */
let unavailable = process.env.TEND_REPAIR_LAUNCHER === 'off';
const pending = new Map<number, Pending>();
let nextId = 1;

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
      // Their answers cannot come any more; the commands go on, and their callers follow their groups instead.
      for (const [id, p] of pending) {
        pending.delete(id);
        p.resolvePid(undefined);
        p.resolveDone({ code: null, signal: null, lost: `the command launcher ${why}` });
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
function spawnHere(file: string, args: string[], env: NodeJS.ProcessEnv, files: RunFiles): Launched {
  let resolvePid!: (pid: number | undefined) => void;
  let resolveDone!: (close: Closed) => void;
  const pid = new Promise<number | undefined>((r) => (resolvePid = r));
  const done = new Promise<Closed>((r) => (resolveDone = r));
  spawnGroup(file, args, env, files, resolvePid, resolveDone);
  return { pid, done };
}

/**
 * Runs `file args` without a shell, detached (a process group of its own),
 * through the launcher when it runs. `pid` resolves once the group exists (the
 * caller records it and kills it on timeout or cancellation), `done` when the
 * command has ended and its output is closed.
 */
export function launch(file: string, args: string[], env: NodeJS.ProcessEnv, files: RunFiles): Launched {
  const child = start();
  if (!child) return spawnHere(file, args, env, files);
  const id = nextId++;
  let resolvePid!: (pid: number | undefined) => void;
  let resolveDone!: (close: Closed & { lost?: string }) => void;
  const pid = new Promise<number | undefined>((r) => (resolvePid = r));
  const done = new Promise<Closed & { lost?: string }>((r) => (resolveDone = r));
  pending.set(id, { resolvePid, resolveDone });
  const req: LaunchRequest = { id, file, args, env, files };
  child.send(req, (err) => {
    if (!err) return;
    // Not delivered: nothing was started; spawned here instead.
    if (!pending.delete(id)) return;
    const here = spawnHere(file, args, env, files);
    void here.pid.then(resolvePid);
    void here.done.then(resolveDone);
  });
  return { pid, done };
}
