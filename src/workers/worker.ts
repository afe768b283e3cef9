// The worker: hosts every workflow and activity on one task queue.
import { Worker, Runtime, DefaultLogger } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { createActivities } from '../activities/index.ts';
import { beginRepairShutdown } from '../activities/repair.ts';
import { checkKubernetes, kubeClients, loadKubeConfig, type KubeOptions } from '../kube/client.ts';
import { connectNative, type TemporalSettings } from '../temporal/connection.ts';
import { log } from '../log.ts';
import type { WorkerSections } from '../activities/index.ts';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

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

/**
 * On SIGTERM a worker that runs repair commands stops polling and gives
 * running activities this long to finish before it cancels them (a cancelled
 * repair command's process group is killed; the attempt is retried by the next
 * worker). Repair watches and drains stop at once instead (they resume on the
 * next worker); other capabilities' activities are cancelled at the end of the
 * grace time, as they are at once on a worker without a repair section. Keep
 * the Deployment's terminationGracePeriodSeconds (90) above it, so the
 * kubelet's SIGKILL never comes first.
 */
export const SHUTDOWN_GRACE_SECONDS = 60;

export interface WorkerOptions extends WorkerSections {
  temporal: TemporalSettings;
  kubernetes: KubeOptions;
}

/** Connects to both sides, then runs until `signal` aborts. */
export async function runWorker(opts: WorkerOptions, signal: AbortSignal): Promise<void> {
  installRuntime();
  const kc = loadKubeConfig(opts.kubernetes);
  const version = await checkKubernetes(kc);
  const connection = await connectNative(opts.temporal);
  try {
    const worker = await Worker.create({
      connection,
      namespace: opts.temporal.namespace,
      taskQueue: opts.temporal.taskQueue,
      workflowsPath,
      activities: createActivities({ kube: kubeClients(kc), config: opts }),
      shutdownGraceTime: opts.repair ? `${SHUTDOWN_GRACE_SECONDS}s` : 0,
    });
    log.info({ taskQueue: opts.temporal.taskQueue, temporal: opts.temporal.address, kubernetes: version }, 'worker started');
    const stop = () => {
      beginRepairShutdown();
      worker.shutdown();
    };
    signal.addEventListener('abort', stop, { once: true });
    if (signal.aborted) stop();
    await worker.run();
    log.info('worker stopped');
  } finally {
    await connection.close();
  }
}
