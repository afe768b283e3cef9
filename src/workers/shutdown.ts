// How a worker stops: what it waits for, and for how long.
//
// Temporal's Worker.shutdown() stops polling and lets every running activity
// run through the shutdown grace time before it cancels them. Only a repair
// command (or success command) holds work that must finish: its process is
// doing something to a machine. Everything else (watches, waits, drains,
// inspections, reconciles) is idempotent and resumes on the next worker, so it
// stops at once when the shutdown begins, failed as retryable `WorkerShutdown`:
// the server hands it to another worker without waiting for a timeout. The log
// says what the worker still waits for, and for how long (docs/repair-commands.md, "Worker shutdown").
import { ApplicationFailure } from '@temporalio/activity';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import { SHUTTING_DOWN, shuttingDown } from '../temporal/worker-shutdown.ts';
import { log } from '../log.ts';

/** The activities that run on through the grace time: they run a command on a machine. */
export const GRACE_ACTIVITIES: ReadonlySet<string> = new Set(['repairRunCommand']);

/** One running activity, as the shutdown log shows it. */
export interface Running {
  type: string;
  workflowId: string;
  startedAt: number;
}

const running = new Map<object, Running>();

/** The activities running now, the grace ones first (for the shutdown log; exported for tests). */
export function runningActivities(): Running[] {
  return [...running.values()].sort((a, b) => Number(GRACE_ACTIVITIES.has(b.type)) - Number(GRACE_ACTIVITIES.has(a.type)) || a.startedAt - b.startedAt);
}

/** "repairRunCommand for repair/3 (running 12 s)": a running activity in a log line. */
export function describeRunning(r: Running, now = Date.now()): string {
  return `${r.type} for ${r.workflowId} (running ${Math.round((now - r.startedAt) / 1000)} s)`;
}

/** Settles when `signal` aborts (never, when it does not). */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

class StopAtShutdown implements ActivityInboundCallsInterceptor {
  private readonly info: { activityType: string; isLocal: boolean; workflowExecution?: { workflowId: string } };

  private readonly shutdown: AbortSignal;

  constructor(info: StopAtShutdown['info'], shutdown: AbortSignal) {
    this.info = info;
    this.shutdown = shutdown;
  }

  async execute(input: Parameters<NonNullable<ActivityInboundCallsInterceptor['execute']>>[0],
    next: Parameters<NonNullable<ActivityInboundCallsInterceptor['execute']>>[1]): Promise<unknown> {
    const key = {};
    running.set(key, { type: this.info.activityType, workflowId: this.info.workflowExecution?.workflowId ?? '(no workflow)', startedAt: Date.now() });
    try {
      const work = next(input);
      // A local activity runs inside its workflow task, which the shutdown lets finish.
      if (GRACE_ACTIVITIES.has(this.info.activityType) || this.info.isLocal) return await work;
      // The activity's own code may still be finishing a step when this answers; it is idempotent,
      // as after a crash, and the process is about to exit.
      work.catch(() => undefined);
      return await Promise.race([work, aborted(this.shutdown).then(() => {
        throw ApplicationFailure.retryable(SHUTTING_DOWN, 'WorkerShutdown');
      })]);
    } finally {
      running.delete(key);
    }
  }
}

/** The worker's activity interceptor: every activity but a command stops when `shutdown` aborts (the worker's, by default). */
export function stopAtShutdown(shutdown: AbortSignal = shuttingDown): ActivityInterceptorsFactory {
  return (ctx) => ({ inbound: new StopAtShutdown(ctx.info, shutdown) });
}

/** How often the shutdown log says again what it still waits for. */
export const AWAITING_LOG_MS = 10_000;

/**
 * Logs what a stopping worker waits for: at once, then every AWAITING_LOG_MS until `done`
 * settles. `graceSeconds`: how long the worker gives a command before it cancels it.
 */
export async function logAwaited(done: Promise<unknown>, graceSeconds: number, forced = 'send SIGINT or SIGTERM again (Ctrl-C) to stop at once'): Promise<void> {
  const began = Date.now();
  const say = () => {
    const grace = runningActivities().filter((r) => GRACE_ACTIVITIES.has(r.type));
    if (grace.length === 0) return;
    const left = Math.max(0, graceSeconds - Math.round((Date.now() - began) / 1000));
    log.warn({ awaiting: grace.map((r) => describeRunning(r)), graceLeftSeconds: left },
      `shutting down: waiting up to ${left} s for ${grace.length} running command(s) to finish, then cancelling them; ${forced}`);
  };
  say();
  const timer = setInterval(say, AWAITING_LOG_MS);
  try {
    await done;
  } catch {
    // The worker's own failure is reported by its caller.
  } finally {
    clearInterval(timer);
  }
}
