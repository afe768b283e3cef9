// Operator commands as process groups, on the worker's host. Each command
// runs without a shell in a process group of its own (spawned detached), so a
// timeout, a cancellation and the worker's shutdown kill it whole: `sh -c
// 'sleep 100'` leaves no `sleep` behind. Its group is recorded in a per-entry
// file under the host state folder; a worker that was SIGKILLed cannot kill
// its commands, so the next run for that entry first waits until the recorded
// group is gone (or kills it once the killed run's own timeout has passed).
// Node-only: never imported by workflow code.
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { log } from '../log.ts';
import { launch } from './launcher.ts';

export interface RunResult {
  ok: boolean;
  output: string;
  error?: string;
}

export interface RunOptions {
  argv: string[];
  /** Appended as the last argument. */
  address: string;
  /** 0: no timeout (CKE's "zero means infinity"); the command runs until it ends or is cancelled. */
  timeoutSeconds: number;
  signal?: AbortSignal;
  /** Added to the worker's environment, less TEMPORAL_* (TEND_REPAIR_INDEX, ...). */
  env?: Record<string, string>;
  /** Serialises runs for one entry on this host, across worker crashes. */
  lock?: { dir: string; index: string };
  /** Called while waiting for a previous run's group (so the activity heartbeats). */
  onWait?: () => void;
}

// ---------------------------------------------------------------- process groups

/** The recorded deadline of a run without a timeout: never reached, so a killed worker's run is waited for until it ends. */
export const NO_DEADLINE = Number.MAX_SAFE_INTEGER;

/** Groups started by this process and not yet reaped: killed when the process exits. */
const live = new Set<number>();
process.once('exit', () => {
  for (const pgid of live) killGroup(pgid);
});

export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // ESRCH: the group is gone already.
  }
}

interface ProcStat { state: string; pgrp: number; starttime: string }

/** /proc/PID/stat: state, process group and start time (clock ticks since boot), or undefined when there is no such process. */
export function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name, which may hold spaces and parentheses: state is field 3, pgrp 5, starttime 22.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: rest[0]!, pgrp: Number(rest[2]), starttime: rest[19]! };
}

export interface GroupRecord {
  pgid: number;
  /** The leader's start time from /proc: a reused pid is not mistaken for it. */
  starttime: string;
  /** Epoch ms: when that run's own timeout would have killed it (NO_DEADLINE: it has none). */
  deadline: number;
  what: string;
  /** The worker process that started it. */
  pid: number;
}

/**
 * Whether a recorded group still has a live process. The kernel allocates no
 * pid that is some group's id, so a live leader with another start time means
 * the old group had emptied; with the leader gone, any live member counts.
 */
export function groupAlive(rec: Pick<GroupRecord, 'pgid' | 'starttime'>): boolean {
  const leader = procStat(rec.pgid);
  if (leader && leader.state !== 'Z') return leader.starttime === rec.starttime && leader.pgrp === rec.pgid;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return false;
  }
  return pids.some((d) => {
    const s = procStat(Number(d));
    return s !== undefined && s.state !== 'Z' && s.pgrp === rec.pgid && BigInt(s.starttime) >= BigInt(rec.starttime);
  });
}

// ---------------------------------------------------------------- the host state folder

export function defaultStateDir(): string {
  return join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'tend', 'repair');
}

function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) throw new Error(`${dir} belongs to uid ${st.uid}, not to this process`);
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

const resolved = new Map<string, string>();

/**
 * The folder of per-entry group records: `repair.state_dir` when configured
 * (it must work), else $XDG_STATE_HOME/tend/repair or
 * ~/.local/state/tend/repair, falling back to TMPDIR/tend-UID/repair where
 * the home folder is read-only (a container). Mode 0700, owned by tend's user.
 */
export function stateDir(configured?: string): string {
  const key = configured ?? '';
  const known = resolved.get(key);
  if (known) return known;
  let dir = configured ?? defaultStateDir();
  try {
    ensurePrivateDir(dir);
  } catch (err) {
    if (configured) throw new Error(`repair.state_dir ${configured}: ${(err as Error).message}`, { cause: err });
    const fallback = join(tmpdir(), `tend-${process.getuid?.() ?? 'user'}`, 'repair');
    log.warn({ dir, fallback, error: (err as Error).message }, 'repair: the state folder cannot be created; using the fallback');
    ensurePrivateDir(join(fallback, '..'));
    ensurePrivateDir(fallback);
    dir = fallback;
  }
  resolved.set(key, dir);
  return dir;
}

const recordFile = (dir: string, index: string) => join(dir, `entry-${index}.json`);

export function readRecord(dir: string, index: string): GroupRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(recordFile(dir, index), 'utf8')) as GroupRecord;
    return Number.isInteger(r.pgid) && r.pgid > 1 && typeof r.starttime === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

function writeRecord(dir: string, index: string, rec: GroupRecord): void {
  const file = recordFile(dir, index);
  writeFileSync(`${file}.tmp`, JSON.stringify(rec), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

function removeRecord(dir: string, index: string, pgid: number): void {
  if (readRecord(dir, index)?.pgid === pgid) rmSync(recordFile(dir, index), { force: true });
}

/**
 * Before a run for `index`: a recorded group that is still alive belongs to a
 * run whose worker died. Wait for it (a non-idempotent command finishes; one
 * at a time holds); once that run's own deadline passes, kill it, as its
 * timeout would have.
 */
export async function waitForPrevious(dir: string, index: string, signal?: AbortSignal, onWait?: () => void): Promise<void> {
  const rec = readRecord(dir, index);
  if (!rec) return;
  if (!groupAlive(rec)) {
    // Its worker died before recording the end: the next run may repeat what it did (TEND_REPAIR_ATTEMPT says so).
    log.warn({ index, pgid: rec.pgid, what: rec.what, worker: rec.pid },
      'repair: a previous run of this entry ended without its worker recording its end (the worker died); running again');
  }
  let logged = false;
  while (groupAlive(rec)) {
    if (Date.now() >= rec.deadline) {
      log.warn({ index, pgid: rec.pgid, what: rec.what }, 'repair: a previous run outlived its timeout; killing its process group');
      killGroup(rec.pgid);
    } else if (!logged) {
      log.warn({ index, pgid: rec.pgid, what: rec.what, deadline: new Date(rec.deadline).toISOString() },
        'repair: a previous run of this entry (its worker died) is still running; waiting for it to end');
      logged = true;
    }
    onWait?.();
    await sleep(200, undefined, { signal });
  }
  removeRecord(dir, index, rec.pgid);
}

// ---------------------------------------------------------------- one run

/**
 * The worker's environment without tend's own Temporal settings and
 * credentials (TEMPORAL_*: the API key above all): a repair script needs none
 * of them, nor the allocator settings bin/tend made for the worker itself
 * (the glibc MALLOC_* variables TEND_SET_MALLOC names: those bin/tend set
 * because they were unset). Everything else (PATH, an IPMI password, the
 * operator's own MALLOC_* values) stays.
 */
export function commandEnv(extra: Record<string, string> = {}, from: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const ours = new Set(['TEND_SET_MALLOC', ...(from.TEND_SET_MALLOC ?? '').split(' ').filter((k) => /^MALLOC_[A-Z_]+$/.test(k))]);
  for (const [k, v] of Object.entries(from)) if (!/^TEMPORAL_/i.test(k) && !ours.has(k)) env[k] = v;
  return { ...env, ...extra };
}

/** One run of argv + address, no shell, in its own process group; resolves with its outcome, never throws for the command's own failure. */
export async function runOnce(o: RunOptions): Promise<RunResult> {
  const [file, ...args] = o.argv;
  const shown = [file, ...args, o.address].join(' ');
  if (o.lock) await waitForPrevious(o.lock.dir, o.lock.index, o.signal, o.onWait);
  if (o.signal?.aborted) return { ok: false, output: '', error: `${shown}: cancelled` };
  // Forked by the launcher (src/repair/launcher.ts): the worker's threads never wait in fork().
  const child = launch(file!, [...args, o.address], commandEnv(o.env));
  let why: string | undefined;
  /** Known once the launcher answers; a stop before that kills the group when it does. */
  const group: { pgid?: number } = {};
  const stop = (reason: string) => {
    why ??= reason;
    if (group.pgid) killGroup(group.pgid);
  };
  const timer = o.timeoutSeconds > 0 ? setTimeout(() => stop(`timed out after ${o.timeoutSeconds}s`), o.timeoutSeconds * 1000) : undefined;
  const onAbort = () => stop('cancelled');
  o.signal?.addEventListener('abort', onAbort, { once: true });
  const pgid = group.pgid = await child.pid;
  if (pgid) {
    live.add(pgid);
    const st = procStat(pgid);
    if (o.lock && st) {
      writeRecord(o.lock.dir, o.lock.index, { pgid, starttime: st.starttime, deadline: o.timeoutSeconds > 0 ? Date.now() + o.timeoutSeconds * 1000 : NO_DEADLINE, what: shown, pid: process.pid });
    }
    // Timed out or cancelled before the group was known: it goes now.
    if (why) killGroup(pgid);
  }
  const end = await child.done;
  clearTimeout(timer);
  o.signal?.removeEventListener('abort', onAbort);
  if (pgid) {
    live.delete(pgid);
    if (o.lock) removeRecord(o.lock.dir, o.lock.index, pgid);
  }
  const stdout = end.stdout;
  const err = end.stderr.trim() ? `: ${end.stderr.trim().slice(0, 500)}` : '';
  if (end.error) {
    const e = end.error.code === 'ENOENT' ? `command not found: ${file}` : end.error.message;
    return { ok: false, output: stdout, error: `${shown}: ${e}` };
  }
  if (why) return { ok: false, output: stdout, error: `${shown}: ${why}${err}` };
  if (end.code === 0) return { ok: true, output: stdout };
  return { ok: false, output: stdout, error: `${shown}: ${end.code !== null ? `exit status ${end.code}` : `killed by ${end.signal}`}${err}` };
}
