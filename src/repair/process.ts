// Operator commands as process groups, on the worker's host. Each command
// runs without a shell interpreting it, in a process group of its own
// (spawned detached), so a timeout, a cancellation and the worker's shutdown
// kill it whole: `sh -c 'sleep 100'` leaves no `sleep` behind. Its output goes
// to files and its exit code is written by a wrapper in its group
// (spawn-group.ts), so a command outlives a killed worker unharmed. Its group
// is recorded in a per-entry file under the host state folder; the next run
// for that entry first waits until the recorded group is gone (or kills it
// once the killed run's own timeout has passed), and a run of the same step
// and command is adopted (its exit code taken) instead of run again.
//
// Argv and output never leave the host through Temporal: each finished run
// is appended to the entry's log file (logs/entry-INDEX.log, 0600, the first
// RUN_OUTPUT_CAP bytes of each stream) and told in the worker's masked log;
// what the activity returns is the exit code and a few words (docs/repair.md).
// Node-only: never imported by workflow code.
import {
  accessSync, appendFileSync, chmodSync, closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync,
  readFileSync, readSync, renameSync, rmSync, statSync, truncateSync, writeFileSync,
} from 'node:fs';
import { delimiter, join } from 'node:path';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { preview } from '../checks/preview.ts';
import { log } from '../log.ts';
import { launch } from './launcher.ts';
import { defaultStateDir, ENTRY_LOG_CAP, entryLogFiles, fallbackStateDir, RUN_OUTPUT_CAP, runFiles } from './logs.ts';
import type { RunFiles } from './spawn-group.ts';

/** What a run left: the exit code and stdout for the caller, a reason in a few words; never its argv. */
export interface RunResult {
  ok: boolean;
  /** The command's exit code; undefined when it did not exit by itself (timed out, cancelled, killed, not found). */
  exitCode?: number;
  /** Its stdout, up to RUN_OUTPUT_CAP bytes: read by the health check, never sent to Temporal. */
  stdout: string;
  /** Why it failed, with no argv, address or output: `exit code 3`, `timed out after 60s`. */
  error?: string;
  /** The run of the same step and command a killed worker started: its end is this result (it was not run again). */
  adopted?: { run: number; startedAt: string };
}

export { ENTRY_LOG_CAP, entryLogFiles, RUN_OUTPUT_CAP } from './logs.ts';

export interface RunEntry {
  /** The host state folder (stateDir()). */
  dir: string;
  index: string;
  step: number;
  kind: string;
  /** TEND_REPAIR_ATTEMPT of this run. */
  run: number;
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
  /**
   * The entry the run is for: serialises its runs on this host across worker crashes, adopts a run of the
   * same step and kind a killed worker left, and appends each run to the entry's log file. Absent (tools,
   * benchmarks): the output goes to a temporary folder, removed after the run.
   */
  entry?: RunEntry;
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
  /** Names this run's files under logs/ (runFiles). */
  token?: string;
  step?: number;
  kind?: string;
  run?: number;
  startedAt?: string;
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

export { defaultStateDir };

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
    const fallback = fallbackStateDir();
    log.warn({ dir, fallback, error: (err as Error).message }, 'repair: the state folder cannot be created; using the fallback');
    ensurePrivateDir(join(fallback, '..'));
    ensurePrivateDir(fallback);
    dir = fallback;
  }
  resolved.set(key, dir);
  return dir;
}

const recordFile = (dir: string, index: string) => join(dir, `entry-${index}.json`);
const endFile = (dir: string, index: string) => join(dir, `entry-${index}.ended.json`);

/** How the entry's last settled run ended, kept for a waiter that saw it run and was not the one to settle it. */
interface EndRecord { token: string; exitCode?: number; error?: string; stdout: string }

/** What the health check needs of stdout is its first word: the end record keeps this much of it. */
const END_STDOUT = 64 << 10;

function readEnd(dir: string, index: string, token: string): EndRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(endFile(dir, index), 'utf8')) as EndRecord;
    return r.token === token && typeof r.stdout === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

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

/** Takes the record away, once: only the caller that took it appends the run to the log (two waiters may see one end). */
function takeRecord(dir: string, index: string, pgid: number): boolean {
  if (readRecord(dir, index)?.pgid !== pgid) return false;
  const taken = `${recordFile(dir, index)}.${process.pid}.taken`;
  try {
    renameSync(recordFile(dir, index), taken);
  } catch {
    return false;
  }
  rmSync(taken, { force: true });
  return true;
}

/**
 * A run about to start: written before the launch, so that a worker killed between the launch and
 * its record (the group's id reaches it a moment after the command starts) still leaves the run
 * named; its group's id is in the run's pid file, written by the group's leader before the command.
 */
type PendingRecord = Omit<GroupRecord, 'pgid' | 'starttime'> & { token: string };
const pendingFile = (dir: string, index: string) => join(dir, `entry-${index}.pending.json`);
/** How long a pending run's group may take to name itself before the run counts as never started. */
const PENDING_GRACE_MS = 5000;

function writePending(dir: string, index: string, rec: PendingRecord): void {
  const file = pendingFile(dir, index);
  writeFileSync(`${file}.tmp`, JSON.stringify(rec), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

function readPending(dir: string, index: string): PendingRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(pendingFile(dir, index), 'utf8')) as PendingRecord;
    return typeof r.token === 'string' && /^[\w-]+$/.test(r.token) && typeof r.deadline === 'number' ? r : undefined;
  } catch {
    return undefined;
  }
}

const dropPending = (dir: string, index: string) => rmSync(pendingFile(dir, index), { force: true });

function readPid(file: string): number | undefined {
  try {
    const n = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(n) && n > 1 ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The record of a run whose worker died before it wrote one: its group, named by the run's pid
 * file (waited for a moment: a launch in flight), or undefined when it never started.
 */
async function recordOfPending(e: RunEntry, signal?: AbortSignal): Promise<GroupRecord | undefined> {
  const p = readPending(e.dir, e.index);
  if (!p) return undefined;
  const files = runFiles(join(e.dir, 'logs'), e.index, p.token);
  const until = Date.now() + PENDING_GRACE_MS;
  for (;;) {
    // Its own worker, alive after all, wrote the record meanwhile.
    const written = readRecord(e.dir, e.index);
    if (written) return written;
    const pgid = readPid(files.pid);
    if (pgid) {
      // The leader gone already (the command ended): no live process can match a start time of 0's group but its own.
      const rec: GroupRecord = { ...p, pgid, starttime: procStat(pgid)?.starttime ?? '0' };
      writeRecord(e.dir, e.index, rec);
      dropPending(e.dir, e.index);
      return rec;
    }
    if (Date.now() >= until) {
      dropPending(e.dir, e.index);
      return undefined;
    }
    await sleep(100, undefined, { signal });
  }
}

/** The folder of the entries' log files: logs/ under the host state folder, 0700. */
export function logDir(dir: string): string {
  const logs = join(dir, 'logs');
  ensurePrivateDir(logs);
  return logs;
}

// ---------------------------------------------------------------- a run's files and its end

/** The first `cap` bytes of a file ('' when it is not there). */
function head(file: string, cap: number): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return '';
  }
  try {
    const buf = Buffer.alloc(Math.min(fstatSync(fd).size, cap));
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** While a run goes on: each stream cut back to RUN_OUTPUT_CAP (the command appends, so it writes on at the new end). */
function capOutput(files: RunFiles): void {
  for (const f of [files.stdout, files.stderr]) {
    try {
      if (statSync(f).size > RUN_OUTPUT_CAP) truncateSync(f, RUN_OUTPUT_CAP);
    } catch {
      // Not there (yet, or any more).
    }
  }
}

/** The exit code the wrapper wrote, or undefined (it was killed first). */
function exitCodeOf(files: RunFiles): number | undefined {
  try {
    const t = readFileSync(files.status, 'utf8');
    return /^\d{1,3}\n$/.test(t) ? Number(t) : undefined;
  } catch {
    return undefined;
  }
}

/** Who ran what: the entry log's header of a run, and the fields of the worker's log line. */
interface RunMeta { index: string; step?: number; kind?: string; run?: number; startedAt?: string; what: string }

const cut = (text: string) => (Buffer.byteLength(text) >= RUN_OUTPUT_CAP ? `${text}\n[output past ${RUN_OUTPUT_CAP} bytes dropped]` : text);

/** Appends a finished run to the entry's log file (0600), moving a file past ENTRY_LOG_CAP aside first. */
function appendRun(dir: string, m: RunMeta, end: string, out: { stdout: string; stderr: string }): void {
  try {
    logDir(dir);
    const { current, previous } = entryLogFiles(dir, m.index);
    if (existsSync(current) && statSync(current).size > ENTRY_LOG_CAP) renameSync(current, previous);
    const title = `${m.startedAt ?? '?'} step ${m.step ?? '?'} ${m.kind ?? 'command'} run ${m.run ?? '?'}: ${m.what}`;
    appendFileSync(current, `=== ${title}\n--- stdout\n${cut(out.stdout)}\n--- stderr\n${cut(out.stderr)}\n=== ${end} at ${new Date().toISOString()}\n\n`,
      { mode: 0o600 });
  } catch (err) {
    log.warn({ index: m.index, error: (err as Error).message }, 'repair: could not append the run to the entry\'s log file');
  }
}

/** A stream's last words for the worker's log line (masked as every line is): a bounded, escaped preview. */
const tail = (text: string) => (text === '' ? undefined : preview(text.slice(-2000), 2000));

/**
 * A run that has ended, whoever started it: its exit code and stdout read; then, when `settled` (this
 * caller took its record, or it had none), appended to the entry's log, told in the worker's log,
 * and its files removed.
 */
function ended(files: RunFiles, m: RunMeta & { token: string }, why: string | undefined, logTo: string | undefined, settled: boolean): { exitCode?: number; stdout: string; error?: string } {
  const exitCode = why ? undefined : exitCodeOf(files);
  const out = { stdout: head(files.stdout, RUN_OUTPUT_CAP), stderr: head(files.stderr, RUN_OUTPUT_CAP) };
  const error = why ?? (exitCode === undefined ? 'ended with no exit code (killed)' : exitCode === 0 ? undefined : `exit code ${exitCode}`);
  if (settled) {
    if (logTo) {
      const end: EndRecord = { token: m.token, ...(exitCode !== undefined ? { exitCode } : {}), ...(error ? { error } : {}), stdout: out.stdout.slice(0, END_STDOUT) };
      writeFileSync(endFile(logTo, m.index), JSON.stringify(end), { mode: 0o600 });
      appendRun(logTo, m, error ?? 'exit code 0', out);
    }
    log[error ? 'warn' : 'debug']({
      index: m.index, step: m.step, kind: m.kind, run: m.run, command: m.what, ...(exitCode !== undefined ? { exitCode } : {}),
      ...(error ? { error, stdout: tail(out.stdout), stderr: tail(out.stderr) } : {}),
    }, error ? 'repair: command failed' : 'repair: command ended');
    for (const f of [files.stdout, files.stderr, files.status, files.pid]) rmSync(f, { force: true });
  }
  return { ...(exitCode !== undefined ? { exitCode } : {}), stdout: out.stdout, ...(error ? { error } : {}) };
}

/**
 * Before a run for an entry: a recorded group that is still alive belongs to a
 * run whose worker died. Wait for it (a non-idempotent command finishes; one
 * at a time holds); once that run's own deadline passes, kill it, as its
 * timeout would have. Then settle it; when it was a run of the same step and
 * command, its end is the answer (adopted): a half-finished command is never
 * started again.
 */
export async function previousRun(e: RunEntry, signal?: AbortSignal, onWait?: () => void): Promise<RunResult | undefined> {
  const rec = readRecord(e.dir, e.index) ?? await recordOfPending(e, signal);
  if (!rec) return undefined;
  const files = rec.token ? runFiles(join(e.dir, 'logs'), e.index, rec.token) : undefined;
  let why: string | undefined;
  let logged = false;
  while (groupAlive(rec)) {
    if (Date.now() >= rec.deadline) {
      log.warn({ index: e.index, pgid: rec.pgid, what: rec.what }, 'repair: a previous run outlived its timeout; killing its process group');
      why = 'outlived its timeout';
      killGroup(rec.pgid);
    } else if (!logged) {
      log.warn({ index: e.index, pgid: rec.pgid, what: rec.what, deadline: new Date(rec.deadline).toISOString() },
        'repair: a previous run of this entry (its worker died) is still running; waiting for it to end');
      logged = true;
    }
    if (files) capOutput(files);
    onWait?.();
    await sleep(200, undefined, { signal });
  }
  if (!files || !rec.token) {
    takeRecord(e.dir, e.index, rec.pgid);
    return undefined;
  }
  // Its own worker (alive after all: a retry on this host while the first attempt still ran) may have settled it first.
  const end = takeRecord(e.dir, e.index, rec.pgid)
    ? ended(files, { index: e.index, ...pick(rec), what: rec.what, token: rec.token }, why, e.dir, true)
    : readEnd(e.dir, e.index, rec.token);
  if (!end || rec.step !== e.step || rec.kind !== e.kind) return undefined;
  log.warn({ index: e.index, step: e.step, kind: e.kind, run: rec.run, ...(end.exitCode !== undefined ? { exitCode: end.exitCode } : {}) },
    'repair: the run a killed worker started for this step ended; its exit code is taken, the command is not run again');
  return { ...resultOf(end), adopted: { run: rec.run ?? 0, startedAt: rec.startedAt ?? '' } };
}

const resultOf = (end: Omit<EndRecord, 'token'> & { token?: string }): RunResult => ({
  ok: end.exitCode === 0 && !end.error, stdout: end.stdout,
  ...(end.exitCode !== undefined ? { exitCode: end.exitCode } : {}), ...(end.error ? { error: end.error } : {}),
});

const pick = (r: GroupRecord) => ({
  ...(r.step !== undefined ? { step: r.step } : {}), ...(r.kind !== undefined ? { kind: r.kind } : {}),
  ...(r.run !== undefined ? { run: r.run } : {}), ...(r.startedAt !== undefined ? { startedAt: r.startedAt } : {}),
});

// ---------------------------------------------------------------- one run

const withheld = new Set<string>();

/**
 * Names an environment variable commands never see, beside TEMPORAL_*: the one
 * temporal.apiKeyEnv names holds tend's Temporal API key under a name of the
 * operator's choosing.
 */
export function withholdFromCommands(name: string | undefined): void {
  if (name) withheld.add(name);
}

/**
 * The worker's environment without tend's own Temporal settings and
 * credentials (TEMPORAL_*, and the variable temporal.apiKeyEnv names: the API
 * key above all): a repair script needs none of them, nor the allocator
 * settings bin/tend made for the worker itself (the glibc MALLOC_* variables
 * TEND_SET_MALLOC names: those bin/tend set because they were unset).
 * Everything else (PATH, an IPMI password, the operator's own MALLOC_* values)
 * stays.
 */
export function commandEnv(extra: Record<string, string> = {}, from: NodeJS.ProcessEnv = process.env, hidden: Iterable<string> = withheld): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const ours = new Set(['TEND_SET_MALLOC', ...hidden, ...(from.TEND_SET_MALLOC ?? '').split(' ').filter((k) => /^MALLOC_[A-Z_]+$/.test(k))]);
  for (const [k, v] of Object.entries(from)) if (!/^TEMPORAL_/i.test(k) && !ours.has(k)) env[k] = v;
  return { ...env, ...extra };
}

/** Where sh looks when the environment has no PATH. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The executable `file` names, as execvp finds it (through PATH when it has no slash), or undefined. The
 * wrapper is given this path, so a name that is also a shell builtin (echo, test) runs the program, as it
 * would without the wrapper.
 */
function executable(file: string, path: string | undefined): string | undefined {
  const runnable = (f: string) => {
    try {
      accessSync(f, constants.X_OK);
      return statSync(f).isFile();
    } catch {
      return false;
    }
  };
  if (file.includes('/')) return runnable(file) ? file : undefined;
  for (const d of (path ?? DEFAULT_PATH).split(delimiter)) {
    const f = join(d || '.', file);
    if (runnable(f)) return f;
  }
  return undefined;
}

let runs = 0;

/**
 * One run of argv + address, no shell, in its own process group; resolves with its outcome, never throws for
 * the command's own failure. With `entry`: a run of the same step and kind a killed worker left is adopted.
 */
export async function runOnce(o: RunOptions): Promise<RunResult> {
  const [file, ...args] = o.argv;
  const e = o.entry;
  const token = `${Date.now().toString(36)}-${process.pid}-${++runs}`;
  const m = { index: e?.index ?? '-', ...(e ? { step: e.step, kind: e.kind, run: e.run } : {}), startedAt: new Date().toISOString(), what: [file, ...args, o.address].join(' '), token };
  if (e) {
    const adopted = await previousRun(e, o.signal, o.onWait);
    if (adopted) return adopted;
  }
  if (o.signal?.aborted) return { ok: false, stdout: '', error: 'cancelled' };
  const env = commandEnv(o.env);
  const program = file === undefined ? undefined : executable(file, env.PATH);
  if (!program) {
    const error = 'the command is not an executable file on this worker (see the entry\'s log)';
    if (e) appendRun(e.dir, m, 'not found (nothing ran)', { stdout: '', stderr: '' });
    log.warn({ index: m.index, step: m.step, kind: m.kind, command: m.what }, 'repair: command not found');
    return { ok: false, stdout: '', error };
  }
  const logs = e ? logDir(e.dir) : mkdtempSync(join(tmpdir(), 'tend-run-'));
  const files = runFiles(logs, e?.index ?? 'run', token);
  const deadline = o.timeoutSeconds > 0 ? Date.now() + o.timeoutSeconds * 1000 : NO_DEADLINE;
  if (e) writePending(e.dir, e.index, { deadline, what: m.what, pid: process.pid, token, step: e.step, kind: e.kind, run: e.run, startedAt: m.startedAt! });
  // Forked by the launcher (src/repair/launcher.ts): the worker's threads never wait in fork().
  const child = launch(program, [...args, o.address], env, files);
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
  const capper = setInterval(() => capOutput(files), 1000);
  const pgid = group.pgid = await child.pid;
  const st = pgid ? procStat(pgid) : undefined;
  if (pgid) {
    live.add(pgid);
    if (e && st) {
      writeRecord(e.dir, e.index, {
        pgid, starttime: st.starttime, deadline, what: m.what, pid: process.pid,
        token, step: e.step, kind: e.kind, run: e.run, startedAt: m.startedAt!,
      });
    }
  }
  if (e) dropPending(e.dir, e.index);
  if (pgid) {
    // Timed out or cancelled before the group was known: it goes now.
    if (why) killGroup(pgid);
  }
  const end = await child.done;
  // The launcher died first: the command went on; its group is followed here until it ends.
  if (end.lost && pgid && st) while (groupAlive({ pgid, starttime: st.starttime })) await sleep(200);
  clearInterval(capper);
  clearTimeout(timer);
  o.signal?.removeEventListener('abort', onAbort);
  if (pgid) live.delete(pgid);
  const start = end.error && !pgid ? `could not start (${end.error.code ?? 'error'})` : undefined;
  // Settled here unless a waiter took the record first (and settled it itself).
  const settled = !e || !pgid || !st || takeRecord(e.dir, e.index, pgid);
  if (!settled) {
    // The waiter settled it: its end as the waiter read it.
    const end = readEnd(e.dir, e.index, token);
    if (end) return resultOf(end);
  }
  const r = ended(files, m, why ?? start, e?.dir, settled);
  if (!e) rmSync(logs, { recursive: true, force: true });
  return resultOf(r);
}
