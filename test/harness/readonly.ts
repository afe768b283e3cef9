// Running a tend process on a read-only filesystem, as in a container with readOnlyRootFilesystem
// and no writable volume: in a mount namespace of its own (`unshare -m`, so root only), every
// mount is bind-remounted read-only (the root filesystem, /tmp wherever it lives, /dev/shm, /proc,
// /sys, ...), for that process tree only. The rest of the machine, the test and the sandbox keep
// writing as before. Nothing stays writable unless named (`writable`: an empty tmpfs mounted
// there, as an emptyDir volume would be); a mount that cannot be made read-only fails the start,
// named, rather than run the process with a hole in it. Under strace (tracedCommand), a write the
// filesystem refused is seen even when the program swallowed the error.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeLogLines, withHttpAddress } from './cli.ts';
import { repoRoot } from './env.ts';

const cli = join(repoRoot, 'src/starters/cli.ts');

/** /proc/mounts writes a space, tab, newline or backslash in a path as an octal escape. */
const unescapeMount = (p: string) => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** The mount points visible to this process, each once, parents before children. */
export function mountPoints(): string[] {
  const points = readFileSync('/proc/self/mounts', 'utf8').split('\n').filter(Boolean)
    .map((line) => unescapeMount(line.split(' ')[1]!));
  return [...new Set(points)];
}

/**
 * The command line that runs `argv` with every mount read-only: unshare makes the mount
 * namespace (private propagation, so nothing leaks back to the host), a shell remounts each
 * mount point read-only, mounts an empty tmpfs on each `writable` folder (the named exceptions),
 * then execs `argv` (same pid: a signal to the child reaches `argv[0]`). A mount that fails ends
 * it before `argv` runs (exit code 97), naming the folder.
 */
export function readOnlyCommand(argv: string[], writable: readonly string[] = []): { command: string; args: string[] } {
  if (process.getuid?.() !== 0) throw new Error('a read-only mount namespace needs root (unshare -m)');
  for (const w of writable) if (!w.startsWith('/')) throw new Error(`writable: ${w} is not an absolute path`);
  // Mount points and folders are absolute paths, so "++" (the writable ones follow) and "--"
  // (the command follows) cannot be one.
  const script = [
    'ro=1',
    'for m in "$@"; do',
    '  case "$m" in',
    '    --) shift; break ;;',
    '    ++) ro=0; shift; continue ;;',
    '  esac',
    '  if [ "$ro" = 1 ]; then',
    '    mount -n -o remount,bind,ro "$m" || { echo "read-only set-up: cannot remount $m read-only" >&2; exit 97; }',
    '  else',
    '    mount -n -t tmpfs -o size=64m,mode=1777 tend-writable "$m" || { echo "read-only set-up: cannot mount a tmpfs on $m" >&2; exit 97; }',
    '  fi',
    '  shift',
    'done',
    'exec "$@"',
  ].join('\n');
  return { command: 'unshare', args: ['--mount', '--propagation', 'private', '--', 'sh', '-c', script, 'sh', ...mountPoints(), '++', ...writable, '--', ...argv] };
}

/** Runs `argv` on the read-only filesystem to its end: exit code and output. */
export function runReadOnly(argv: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { command, args } = readOnlyCommand(argv);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * strace's command line that records every system call of `argv` (and of whatever it starts)
 * that touched a file or file descriptor and failed, to `file`: a write the read-only
 * filesystem refused shows as EROFS even when the program swallowed the error.
 */
export function tracedCommand(file: string, command: string, args: string[]): { command: string; args: string[] } {
  return { command: 'strace', args: ['-f', '--seccomp-bpf', '-qq', '-o', file, '-e', 'trace=%file,%desc', '-e', 'status=failed', '--', command, ...args] };
}

/** The lines of an strace record (tracedCommand) whose call the read-only filesystem refused. */
export const refusedWrites = (trace: string): string[] => trace.split('\n').filter((l) => l.includes('EROFS'));

/** A long-running tend (`worker`, `run`, ...) on the read-only filesystem; its output kept. */
export class ReadOnlyTend {
  readonly child: ChildProcess;
  /** The arguments tend got, --http-address included. */
  readonly args: string[];
  /** Where strace records its failed file system calls, when it runs under strace (see tracedCommand). */
  readonly trace?: string;
  output = '';

  /**
   * `opts.trace`: run under strace, recording its failed file system calls there (outside the
   * namespace). `opts.writable`: folders that stay writable (an empty tmpfs each), by name.
   */
  constructor(args: string[], env: NodeJS.ProcessEnv = {}, opts: { trace?: string; writable?: readonly string[] } = {}) {
    this.args = withHttpAddress(args);
    const ro = readOnlyCommand([process.execPath, cli, ...this.args], opts.writable);
    // strace runs outside the read-only namespace (it writes its record), tend inside it.
    const { command, args: wrapped } = opts.trace ? tracedCommand(opts.trace, ro.command, ro.args) : ro;
    this.trace = opts.trace;
    this.child = spawn(command, wrapped, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d) => (this.output += d));
    this.child.stderr!.on('data', (d) => (this.output += d));
  }

  /** Its HTTP address (host:port). */
  get httpAddress(): string {
    return this.args[this.args.indexOf('--http-address') + 1]!;
  }

  /** The output with each JSON log line as its message and fields (see decodeLogLines). */
  get logs(): string {
    return decodeLogLines(this.output);
  }

  /** Whether it exited (under strace: strace exits when tend has, with tend's exit code). */
  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** The pid of tend itself: the spawned process (unshare execs sh, which execs node), or strace's one child. */
  private tendPid(): number {
    const pid = this.child.pid!;
    if (!this.trace) return pid;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    if (children.length !== 1) throw new Error(`strace (pid ${pid}) has ${children.length} children, expected tend alone`);
    return children[0]!;
  }

  /** SIGTERM to tend, and wait for the exit (SIGKILL after `timeoutMs`); returns the exit code. */
  async stop(timeoutMs = 30_000): Promise<number | null> {
    if (this.exited) return this.child.exitCode;
    const done = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    const pid = this.tendPid();
    process.kill(pid, 'SIGTERM');
    const timer = setTimeout(() => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    const code = await done;
    clearTimeout(timer);
    return code;
  }
}
