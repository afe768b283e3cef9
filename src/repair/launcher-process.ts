// The command launcher: a small Node process of its own, started by the
// worker (src/repair/launcher.ts), that forks the operator's commands for it.
//
// Why: fork() copies the page tables of the process that calls it, and libuv
// waits in the calling thread until the child has exec'd. In the worker (a few
// hundred MiB, a workflow thread, the SDK's core) one spawn blocked the main
// thread 30-50 ms under load (npm run bench -- repair: a quarter of the main
// thread's time at 2 entries/s); in this process, which holds nothing else,
// it takes a millisecond or two and blocks nobody else.
//
// It only spawns: each command without a shell, detached (a process group of
// its own), its output appended to files, and its group killed when its
// leader exits (whatever the command left behind goes with it). Timeouts,
// cancellations, the per-entry state file and every kill on the worker's
// behalf stay in the worker, which knows the group id from the first answer.
// It exits when the worker's IPC channel closes (the worker exited or was
// killed); running commands are left to their groups and go on (their output
// goes to files, not to this process), as a killed worker would leave them. Imports nothing but Node's own modules and spawn-group.ts.
import { spawnGroup, type Closed, type RunFiles } from './spawn-group.ts';

export interface LaunchRequest {
  id: number;
  file: string;
  args: string[];
  env: Record<string, string | undefined>;
  files: RunFiles;
}

export type LaunchAnswer =
  /** Spawned: the group id (its leader's pid). */
  | { id: number; pid: number }
  /** Ended (or never started: `error`, e.g. ENOENT). */
  | { id: number; close: Closed };

function launch(req: LaunchRequest, answer: (a: LaunchAnswer) => void): void {
  spawnGroup(req.file, req.args, req.env, req.files, (pid) => {
    if (pid) answer({ id: req.id, pid });
  }, (close) => answer({ id: req.id, close }));
}

/** Serves the worker over the IPC channel it was started with. */
function serve(): void {
  const send = process.send?.bind(process);
  if (!send) {
    console.error('tend command launcher: start me through src/repair/launcher.ts (an IPC channel is needed)');
    process.exit(2);
  }
  process.on('message', (req: LaunchRequest) => launch(req, (a) => {
    if (process.connected) send(a);
  }));
  // The worker is gone: nothing is left to answer; its commands keep their groups (see above).
  process.on('disconnect', () => process.exit(0));
  // SIGTERM/SIGINT sent to the worker's process group reach this process too: it stays until the worker lets it go,
  // so commands still running in the worker's shutdown grace time get their answers.
  process.on('SIGTERM', () => undefined);
  process.on('SIGINT', () => undefined);
}

serve();
