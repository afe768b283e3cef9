// Detached processes that outlive the command that started them, tracked by a
// pid file each. A pid is only trusted while /proc says it is still the process
// started (its start time, or for an older record its executable), so `down`
// never signals a process the sandbox did not start.
import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { readFile, writeFile, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessRecord {
  name: string;
  pid: number;
  /** argv[0] as started: checked against /proc/<pid>/cmdline. */
  command: string;
  args: string[];
  log: string;
  startedAt: string;
  /**
   * The process's start time (/proc/<pid>/stat, clock ticks since boot), read as it was started: a
   * pid is this process while its start time is this. Absent in records written before it.
   */
  startTicks?: string;
}

/** How the processes this process started ended, while it still runs: pid → "exit code N" or "killed by SIGX". */
const ended = new Map<number, string>();

/** How a process this process started has ended ("exit code 1", "killed by SIGKILL"), if it has and it was seen. */
export function howEnded(pid: number): string | undefined {
  return ended.get(pid);
}

export async function readRecord(pidFile: string): Promise<ProcessRecord | undefined> {
  try {
    return JSON.parse(await readFile(pidFile, 'utf8')) as ProcessRecord;
  } catch {
    return undefined;
  }
}

/** State and start time of a pid, from /proc/<pid>/stat (fields 3 and 22); undefined when there is no such process. */
async function procStat(pid: number): Promise<{ state: string; startTicks: string } | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: the fields after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', startTicks: fields[19] ?? '' };
  } catch {
    return undefined;
  }
}

/**
 * Whether the record's process still runs. By its start time when the record has one: its command
 * line is no proof, since for a moment after the start the kernel shows it empty (the new program
 * is being loaded, the start already reported to the parent), and a busy machine can stretch that
 * moment past a first look. An older record is checked by its command line.
 */
export async function isRunning(rec: ProcessRecord | undefined): Promise<boolean> {
  if (!rec) return false;
  const stat = await procStat(rec.pid);
  // A zombie (state Z) has exited; its parent just has not reaped it yet.
  if (!stat || stat.state === 'Z') return false;
  if (rec.startTicks !== undefined) return stat.startTicks === rec.startTicks;
  try {
    const cmdline = await readFile(`/proc/${rec.pid}/cmdline`, 'utf8');
    return cmdline.split('\0')[0] === rec.command;
  } catch {
    return false;
  }
}

export async function startDetached(
  name: string, command: string, args: string[],
  opts: { log: string; pidFile: string; env?: NodeJS.ProcessEnv; cwd?: string; /** Run as this user (from root). */ user?: { uid: number; gid: number } },
): Promise<ProcessRecord> {
  // Owner-only, like the credentials beside it: a component may log more than it should.
  const fd = openSync(opts.log, 'a', 0o600);
  try {
    const child = spawn(command, args, {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      // libuv drops the supplementary groups when it changes the user.
      ...(opts.user ?? {}),
    });
    const failed = new Promise<never>((_, reject) => child.once('error', reject));
    // Kept for the start-up's error message; the handle does not hold this process open (unref below).
    child.once('exit', (code, sig) => {
      if (child.pid) ended.set(child.pid, sig ? `killed by ${sig}` : `exit code ${code}`);
    });
    const rec: ProcessRecord = {
      name, pid: child.pid ?? -1, command, args, log: opts.log, startedAt: new Date().toISOString(),
    };
    if (rec.pid < 0) await failed;
    // Read before anything can reap it: a process that has ended already keeps no start time, and is not running.
    const startTicks = (await procStat(rec.pid))?.startTicks;
    if (startTicks) rec.startTicks = startTicks;
    child.unref();
    await writeFile(opts.pidFile, JSON.stringify(rec, null, 2));
    return rec;
  } finally {
    closeSync(fd);
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopProcess(rec: ProcessRecord, pidFile: string, graceMs = 10_000): Promise<void> {
  if (await isRunning(rec)) {
    signal(rec.pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while ((await isRunning(rec)) && Date.now() < deadline) await sleep(100);
    if (await isRunning(rec)) {
      signal(rec.pid, 'SIGKILL');
      while (await isRunning(rec)) await sleep(50);
    }
  }
  await rm(pidFile, { force: true });
}

function signal(pid: number, sig: NodeJS.Signals) {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

export async function logTail(path: string, lines = 25): Promise<string> {
  try {
    const text = await readFile(path, 'utf8');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
