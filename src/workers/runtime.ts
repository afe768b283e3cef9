// The Temporal SDK's process-wide Runtime: installed once, before any worker
// or native connection, with tend's logger.
import { Runtime, DefaultLogger } from '@temporalio/worker';
import { log } from '../log.ts';

let runtimeInstalled = false;

const sdkLevels = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

/**
 * The SDK's own log lines (worker, workflow and activity loggers) go through
 * tend's logger: one JSON stream, with credentials masked like every other line.
 */
function sdkLogger(): DefaultLogger {
  const wanted = process.env.TEND_LOG_LEVEL?.toUpperCase();
  const level = wanted && wanted in sdkLevels ? (wanted as keyof typeof sdkLevels) : 'WARN';
  return new DefaultLogger(level, ({ level: l, message, meta }) => {
    // An Error under `error` goes to pino's `err`, whose serializer keeps its type, message and stack.
    const { error, ...rest } = meta ?? {};
    log[sdkLevels[l]]({ ...rest, ...(error instanceof Error ? { err: error } : error !== undefined ? { error } : {}), source: 'temporal-sdk' }, message);
  });
}

/** Signals are handled by the tend process itself, which shuts every part down in order. */
export function installRuntime() {
  if (runtimeInstalled) return;
  Runtime.install({ shutdownSignals: [], logger: sdkLogger() });
  runtimeInstalled = true;
}

