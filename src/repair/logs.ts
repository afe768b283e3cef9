// Where a repair command's argv and output are kept: never in Temporal (every
// Web UI viewer reads the history), only on the host of the worker that ran
// it, in the entry's log file under the host state folder (0700):
// logs/entry-INDEX.log (0600), each finished run appended with its argv, the
// first RUN_OUTPUT_CAP bytes of its stdout and stderr and how it ended; past
// ENTRY_LOG_CAP the file is moved to entry-INDEX.log.1. `tend repair-queue
// logs INDEX` reads them on that host (docs/repair.md). Node-only.
import { existsSync, readFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunFiles } from './spawn-group.ts';

/** Each stream of each run is kept in the entry's log up to this many bytes; the rest is dropped (the command is not stopped). */
export const RUN_OUTPUT_CAP = 1 << 20;
/** An entry's log file past this size is moved to entry-INDEX.log.1 (replacing it) before the next run is appended. */
export const ENTRY_LOG_CAP = 16 << 20;

export function defaultStateDir(): string {
  return join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'tend', 'repair');
}

/** Where the state folder goes when the default cannot be made (a read-only home folder). */
export function fallbackStateDir(): string {
  return join(tmpdir(), `tend-${process.getuid?.() ?? 'user'}`, 'repair');
}

/** An entry's log file (finished runs), and the one it was moved to past ENTRY_LOG_CAP. */
export function entryLogFiles(dir: string, index: string): { current: string; previous: string } {
  const current = join(dir, 'logs', `entry-${index}.log`);
  return { current, previous: `${current}.1` };
}

/** The files of one run while it runs: its stdout, stderr and exit code. */
export function runFiles(logs: string, index: string, token: string): RunFiles {
  const base = join(logs, `entry-${index}.${token}`);
  return { stdout: `${base}.out`, stderr: `${base}.err`, status: `${base}.status`, pid: `${base}.pid` };
}

/**
 * A terminal shows the text, not what its control characters would make it do:
 * each one but newline and tab (C0, DEL, C1: escape sequences among them) as \xNN.
 */
export function terminalSafe(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * An entry's log as this host has it: the older file first, then the current
 * one; a run still going on shows its output so far. Undefined when this host
 * has none, with the folders looked in.
 */
export function readEntryLog(configured: string | undefined, index: string): { text: string; dir: string } | { looked: string[] } {
  const dirs = configured ? [configured] : [defaultStateDir(), fallbackStateDir()];
  for (const dir of dirs) {
    const { current, previous } = entryLogFiles(dir, index);
    const running = runningOutput(dir, index);
    if (!existsSync(current) && !existsSync(previous) && running === undefined) continue;
    const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : '');
    return { text: read(previous) + read(current) + (running ?? ''), dir };
  }
  return { looked: dirs.map((d) => join(d, 'logs')) };
}

/** The run going on for the entry (its record names its files): its output so far. */
function runningOutput(dir: string, index: string): string | undefined {
  let rec: { token?: string; what?: string; startedAt?: string; step?: number; kind?: string; run?: number };
  try {
    rec = JSON.parse(readFileSync(join(dir, `entry-${index}.json`), 'utf8')) as typeof rec;
  } catch {
    return undefined;
  }
  if (typeof rec.token !== 'string' || !/^[\w-]+$/.test(rec.token)) return undefined;
  const files = runFiles(join(dir, 'logs'), index, rec.token);
  const read = (f: string) => {
    try {
      return readFileSync(f, 'utf8').slice(0, RUN_OUTPUT_CAP);
    } catch {
      return '';
    }
  };
  return `=== ${rec.startedAt ?? '?'} step ${rec.step ?? '?'} ${rec.kind ?? 'command'} run ${rec.run ?? '?'}: ${rec.what ?? ''}\n` +
    `--- stdout (so far)\n${read(files.stdout)}\n--- stderr (so far)\n${read(files.stderr)}\n=== still running\n`;
}
