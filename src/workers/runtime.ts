// The Temporal SDK's process-wide Runtime: installed once, before any worker
// or native connection, with tend's logger, the Rust core's logs forwarded to
// it, and the core's metrics exported for tend's /metrics.
import { createServer } from 'node:net';
import { LogTimestamp, Runtime, type LogLevel, type LogMetadata, type Logger as SdkLogger } from '@temporalio/worker';
import { atTime, log } from '../log.ts';

let runtimeInstalled = false;
let coreMetricsPort: number | undefined;

const sdkLevels = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;
const levelOrder: LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

/** The SDK's lines are written from this level on: TEND_LOG_LEVEL when set, else WARN. */
function sdkLevel(): LogLevel {
  const wanted = process.env.TEND_LOG_LEVEL?.toUpperCase();
  if (wanted === 'FATAL') return 'ERROR';
  return wanted && wanted in sdkLevels ? (wanted as LogLevel) : 'WARN';
}

/**
 * The field names tend's own lines use, for what the core (snake_case) and the
 * SDK name otherwise: a core line about a workflow task carries workflowId,
 * runId, activityType like a workflow's or an activity's own lines.
 */
const fieldNames: Record<string, string> = {
  workflow_id: 'workflowId', run_id: 'runId', activity_type: 'activityType', activity_id: 'activityId',
  workflow_type: 'workflowType', task_queue: 'taskQueue', namespace: 'namespace',
};

/**
 * An SDK line's metadata as tend writes it: an Error under `error` (or `err`)
 * goes to pino's `err` (type, message, stack kept), core fields get tend's
 * names, the core's span list is flattened into fields, and `source` says who
 * wrote it (temporal-core, or temporal-sdk for the TypeScript side).
 */
export function sdkLogFields(meta: LogMetadata | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const { error, err, spanContexts, sdkComponent, ...rest } = (meta ?? {}) as Record<string, unknown>;
  // The core nests a task's ids in the spans the line was written in: outermost first, innermost wins.
  if (Array.isArray(spanContexts)) {
    for (const span of spanContexts) {
      const fields = (span && typeof span === 'object' && 'fields' in span ? (span as { fields: unknown }).fields : span) as Record<string, unknown> | undefined;
      if (!fields || typeof fields !== 'object') continue;
      for (const [k, v] of Object.entries(fields)) if (k in fieldNames && v !== undefined) out[fieldNames[k]!] = v;
    }
  }
  for (const [k, v] of Object.entries(rest)) {
    if (typeof k === 'symbol') continue;
    out[fieldNames[k] ?? k] = v;
  }
  const e = error ?? err;
  if (e instanceof Error) out.err = e;
  else if (e !== undefined) out.error = e;
  out.source = sdkComponent === 'core' ? 'temporal-core' : 'temporal-sdk';
  if (sdkComponent !== undefined && sdkComponent !== 'core') out.sdkComponent = sdkComponent;
  return out;
}

/**
 * The SDK's log lines (worker, workflow and activity loggers, and the core's,
 * forwarded) go through tend's logger: one stream, the same levels, times and
 * format (docs/logging.md), credentials masked like every other line. A line
 * keeps the time it was written at: the SDK hands the core's and the
 * workflows' lines on in batches, later.
 */
class TendSdkLogger implements SdkLogger {
  private readonly min = levelOrder.indexOf(sdkLevel());

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (levelOrder.indexOf(level) < this.min) return;
    const write = () => log[sdkLevels[level]](sdkLogFields(meta), message);
    const nanos: unknown = meta?.[LogTimestamp];
    if (typeof nanos === 'bigint') atTime(Number(nanos / 1_000_000n), write);
    else write();
  }
  trace(message: string, meta?: LogMetadata) { this.log('TRACE', message, meta); }
  debug(message: string, meta?: LogMetadata) { this.log('DEBUG', message, meta); }
  info(message: string, meta?: LogMetadata) { this.log('INFO', message, meta); }
  warn(message: string, meta?: LogMetadata) { this.log('WARN', message, meta); }
  error(message: string, meta?: LogMetadata) { this.log('ERROR', message, meta); }
}

/** A loopback port free now (the kernel's pick), for the core's metrics exporter. */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface RuntimeOptions {
  /**
   * Export the core's metrics (temporal_*) on this loopback port (one
   * freeLoopbackPort() picked), for /metrics to append (coreMetrics()).
   * Absent: no SDK metrics.
   */
  coreMetricsPort?: number;
}

/**
 * Installs the Runtime (once; later calls do nothing). Signals are handled by
 * the tend process itself, which shuts every part down in order.
 *
 * Why the core's own Prometheus exporter on 127.0.0.1 rather than a meter of
 * tend's: it is the SDK's supported path and writes its histograms, counters
 * and gauges as Prometheus expects; tend's port appends its scrape, so
 * operators scrape one port. Only loopback: nothing outside the pod sees it.
 */
export function installRuntime(opts: RuntimeOptions = {}): void {
  if (runtimeInstalled) return;
  const logging = { filter: { core: sdkLevel(), other: 'ERROR' as LogLevel }, forward: {} };
  const port = opts.coreMetricsPort;
  Runtime.install({
    shutdownSignals: [],
    logger: new TendSdkLogger(),
    telemetryOptions: {
      logging,
      ...(port !== undefined && {
        metrics: { prometheus: { bindAddress: `127.0.0.1:${port}`, countersTotalSuffix: true, useSecondsForDurations: true, unitSuffix: true } },
      }),
    },
  });
  runtimeInstalled = true;
  coreMetricsPort = port;
}

/** The core's metrics in Prometheus text format; empty when not exported (no worker in this process). */
export async function coreMetrics(timeoutMs = 3000): Promise<string> {
  if (coreMetricsPort === undefined) return '';
  const res = await fetch(`http://127.0.0.1:${coreMetricsPort}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`the Temporal SDK's metrics exporter answered ${res.status}`);
  return res.text();
}

