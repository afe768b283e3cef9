// Runs the real `tend` CLI as a child process, as an operator would.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { httpPortBlock, repoRoot } from './env.ts';

const cli = join(repoRoot, 'src/starters/cli.ts');

const SERVING = new Set(['run', 'worker', 'watcher']);
let nextHttpPort = 0;

/**
 * A tend that serves its HTTP port (run, worker, watcher) gets one of its own
 * when the test names none: several run at once (a worker and a watcher, two
 * replicas) and each would take the default 0.0.0.0:9464.
 */
export function withHttpAddress(args: string[]): string[] {
  if (!SERVING.has(args[0] ?? '') || args.includes('--http-address') || args.includes('--help')) return args;
  // 50 ports per TEND_TEST_PORT_OFFSET, taken in turn (a process 50 starts ago has long exited).
  const port = httpPortBlock + (nextHttpPort++ % 50);
  return [...args, '--http-address', `127.0.0.1:${port}`];
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The tests read tend's log lines as JSON: a TEND_LOG_FORMAT=text in the caller's environment must
 * not change them (a test that wants text says so in its own `env`).
 */
const jsonLogs = (env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({ ...process.env, TEND_LOG_FORMAT: 'json', ...env });

/**
 * The processes this test file started, by kind: each costs CPU the tend under test does not get
 * (a tend or temporal CLI call, about a second of it), and the root hook says how many at the end.
 */
export const spawned = { tendCalls: 0, tendProcesses: 0, temporalCalls: 0, other: 0 };

export function runTend(args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CliResult> {
  spawned.tendCalls++;
  return collect(process.execPath, [cli, ...withHttpAddress(args)], {
    env: jsonLogs(opts.env), timeoutMs: opts.timeoutMs ?? 60_000, name: `tend ${args.join(' ')}`,
  });
}

/**
 * `command ARGS` to its end, its output kept; killed and refused past `timeoutMs` (120 s). `env` is
 * the whole environment (the test's own when absent); `name` says what ran, in that refusal.
 */
export function runCommand(
  command: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; name?: string } = {},
): Promise<CliResult> {
  spawned.other++;
  return collect(command, args, opts);
}

/** runCommand's work, uncounted (runTend counts its own). */
function collect(
  command: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; name?: string },
): Promise<CliResult> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${opts.name ?? `${command} ${args.join(' ')}`} did not finish within ${timeoutMs} ms\nstdout: ${stdout.slice(-4000)}\nstderr: ${stderr.slice(-4000)}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const LOG_ENVELOPE = new Set(['level', 'time', 'pid', 'hostname', 'msg']);

function flatten(value: unknown, prefix: string, out: string[]): void {
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.push(`${prefix}=${String(value)}`);
  }
}

/** JSON log lines (pino's, the SDK's forwarded ones) decoded to `msg field=value ...`; other lines kept. */
export function decodeLogLines(output: string): string {
  return output.split('\n').map((line) => {
    if (!line.startsWith('{')) return line;
    try {
      const entry = JSON.parse(line) as Record<string, unknown>;
      const fields: string[] = [];
      for (const [k, v] of Object.entries(entry)) if (!LOG_ENVELOPE.has(k)) flatten(v, k, fields);
      return [String(entry.msg ?? ''), ...fields].join(' ');
    } catch {
      return line;
    }
  }).join('\n');
}

/** A long-running tend process (worker, watcher, run); its output is kept for assertions. */
/** Every TendProcess started, so that a failing test shows what they printed (see hooks.ts). */
const started: TendProcess[] = [];

export class TendProcess {
  readonly child: ChildProcess;
  readonly args: string[];
  output = '';
  /** When it exited (epoch ms), once it has. */
  exitedAt?: number;

  constructor(args: string[], env: NodeJS.ProcessEnv = {}) {
    this.args = args;
    spawned.tendProcesses++;
    this.child = spawn(process.execPath, [cli, ...withHttpAddress(args)], { env: jsonLogs(env), stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d) => (this.output += d));
    this.child.stderr!.on('data', (d) => (this.output += d));
    this.child.once('exit', () => (this.exitedAt = Date.now()));
    started.push(this);
  }

  /**
   * The output as a person reads it: each JSON log line as its message and
   * its fields' values (strings as they are, not JSON-escaped), other lines
   * as printed. For assertions on what tend logged.
   */
  get logs(): string {
    return decodeLogLines(this.output);
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** SIGTERM (or `signal`), and wait for exit; returns the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000): Promise<number | null> {
    if (this.exited) return this.child.exitCode;
    const done = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const code = await done;
    clearTimeout(timer);
    return code;
  }
}

/**
 * Kills (SIGKILL) every tend process of this test run still running and returns their command
 * lines: at the end of a run, so that none outlives it, acting on the sandbox and holding its port
 * while the next test file runs.
 */
export function killLeftovers(): string[] {
  const left = started.filter((p) => !p.exited);
  for (const p of left) p.child.kill('SIGKILL');
  return left.map((p) => `tend ${p.args.join(' ')}`);
}
// mocha --exit ends the process without waiting: none is left behind then either.
process.once('exit', () => void killLeftovers());

/**
 * The output tails of the tend processes that ran during a test that began at
 * `since` (epoch ms): what a failing test shows.
 */
export function outputSince(since: number, tailChars = 6000): string {
  return started.filter((p) => p.exitedAt === undefined || p.exitedAt >= since)
    .map((p) => `--- tend ${p.args.join(' ')}${p.exitedAt ? ' (exited)' : ''}: output (tail) ---\n${p.output.slice(-tailChars)}`)
    .join('\n');
}
