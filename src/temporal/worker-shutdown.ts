// The worker's shutdown, as activities see it. Temporal's Worker.shutdown()
// lets in-flight activities run through the shutdown grace time before it
// cancels them; only repair and success commands need that grace. Everything
// else (watches, inspections, drains, armed lanes) holds no work that must
// finish: it stops when this signal aborts and is retried on the next worker,
// which resumes where it was (docs/repair-commands.md, "Worker shutdown").
import { ApplicationFailure, Context } from '@temporalio/activity';

const shutdown = new AbortController();

/** Called by the worker on SIGTERM/SIGINT, before Worker.shutdown(). */
export function beginShutdown(): void {
  shutdown.abort();
}

/** Aborted when the worker begins to shut down. */
export const shuttingDown: AbortSignal = shutdown.signal;

export const SHUTTING_DOWN = 'the worker is shutting down; retried on the next worker';

/** The current activity's cancellation, and with `stopOnShutdown` the worker's shutdown too. */
export function activityStop(stopOnShutdown = false): AbortSignal {
  const own = Context.current().cancellationSignal;
  return stopOnShutdown ? AbortSignal.any([own, shutdown.signal]) : own;
}

/** Rethrows why the current activity stopped: its cancellation, or the worker's shutdown (retryable, so the next worker takes it at once). */
export function stoppedBy(signal: AbortSignal): never {
  const own = Context.current().cancellationSignal;
  if (own.aborted) throw own.reason;
  if (signal.aborted) throw ApplicationFailure.retryable(SHUTTING_DOWN, 'WorkerShutdown');
  throw new Error('stopped without a reason');
}

/**
 * Rejects when the current activity is cancelled (with its cancellation) or its worker begins to
 * shut down (retryable WorkerShutdown): for a wait that holds no work that must finish, raced
 * against it. The activity's context is read when called, so the rejection may come anywhere.
 */
export function untilStopped(): Promise<never> {
  const own = Context.current().cancellationSignal;
  const stop = activityStop(true);
  const stopped = new Promise<never>((_, reject) => {
    const onStop = () => reject(own.aborted ? own.reason as Error : ApplicationFailure.retryable(SHUTTING_DOWN, 'WorkerShutdown'));
    if (stop.aborted) onStop();
    else stop.addEventListener('abort', onStop, { once: true });
  });
  stopped.catch(() => undefined);
  return stopped;
}
