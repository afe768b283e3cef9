// Waiting for a condition with a bounded timeout: never sleep-and-hope.
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

/**
 * Calls `probe` until it returns something other than undefined/false, and
 * returns that. On timeout, fails naming `what` and the last thing seen.
 */
export async function waitFor<T>(
  what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, opts: WaitOptions = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError ? ` (last error: ${(lastError as Error).message ?? lastError})` : '';
      throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${why}`);
    }
    await sleep(opts.intervalMs ?? 200);
  }
}
