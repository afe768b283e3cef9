// How a repair command is started, the same from the command launcher
// (launcher-process.ts) and from the worker where the launcher cannot run
// (launcher.ts): without a shell interpreting anything, detached (a process
// group of its own), its stdout and stderr appended to files (never a pipe: a
// reader that dies would kill the command with SIGPIPE at its next line), and
// its exit code written to a file by a small wrapper in its group, so that
// whoever comes after a killed worker learns how it ended. Imports nothing but
// Node's own modules: the launcher process loads it.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';

/** Where a run's stdout and stderr go (appended, created 0600), where its exit code is written, and its group's id. */
export interface RunFiles {
  stdout: string;
  stderr: string;
  status: string;
  /** Written by the group's leader before the command starts: a worker killed before it learnt the group still leaves it named. */
  pid: string;
}

/** How the wrapper ended (or never started: `error`). The command's own exit code is in RunFiles.status. */
export interface Closed {
  code: number | null;
  signal: string | null;
  error?: { code?: string; message: string };
}

export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // ESRCH: the group is gone already.
  }
}

/**
 * The group's leader: runs the command as "$@" (its words are never parsed by
 * the shell), writes its exit code once it ends, then kills its own group:
 * whatever the command left behind goes with it. Killed before that (timeout,
 * cancellation), it writes nothing: the run has no exit code.
 */
const WRAPPER = 's=$1; p=$2; shift 2; echo $$ > "$p"; "$@"; c=$?; printf "%s\\n" "$c" > "$s"; kill -9 0';

const errorOf = (e: NodeJS.ErrnoException) => ({ ...(e.code ? { code: e.code } : {}), message: e.message });

/**
 * Starts `file args` with `env`, its output into `files`. `started` gets the group id (its leader's pid) at once,
 * or undefined when nothing started; `closed` how the wrapper ended.
 */
export function spawnGroup(file: string, args: string[], env: NodeJS.ProcessEnv, files: RunFiles,
  started: (pgid: number | undefined) => void, closed: (c: Closed) => void): void {
  const fds: number[] = [];
  let child;
  try {
    fds.push(openSync(files.stdout, 'a', 0o600), openSync(files.stderr, 'a', 0o600));
    child = spawn('/bin/sh', ['-c', WRAPPER, 'tend-repair-run', files.status, files.pid, file, ...args],
      { detached: true, stdio: ['ignore', fds[0], fds[1]], env, windowsHide: true });
  } catch (err) {
    for (const fd of fds) closeSync(fd);
    started(undefined);
    closed({ code: null, signal: null, error: errorOf(err as NodeJS.ErrnoException) });
    return;
  }
  // The command has its own copies; this process keeps none.
  for (const fd of fds) closeSync(fd);
  const pgid = child.pid;
  started(pgid);
  let spawnError: NodeJS.ErrnoException | undefined;
  child.once('error', (err: NodeJS.ErrnoException) => {
    spawnError = err;
  });
  // The leader is done: whatever it left in its group goes with it.
  child.once('exit', () => {
    if (pgid) killGroup(pgid);
  });
  child.once('close', (code, signal) => closed({ code, signal, ...(spawnError ? { error: errorOf(spawnError) } : {}) }));
}
