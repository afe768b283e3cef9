// Detached processes that outlive the command that started them, tracked by a
// pid file each. A pid is only trusted while /proc says it still runs the
// same executable, so `down` never signals a process the sandbox did not start.
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

export async function isRunning(rec: ProcessRecord | undefined): Promise<boolean> {
  if (!rec) return false;
  try {
    const cmdline = await readFile(`/proc/${rec.pid}/cmdline`, 'utf8');
    const stat = await readFile(`/proc/${rec.pid}/stat`, 'utf8');
    // A zombie (state Z) has exited; its parent just has not reaped it yet.
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
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
