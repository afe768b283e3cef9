// The worker: hosts every workflow and activity on one task queue.
import { Worker } from '@temporalio/worker';
import { installRuntime } from './runtime.ts';
import { fileURLToPath } from 'node:url';
import { createActivities } from '../activities/index.ts';
import { beginRepairShutdown } from '../activities/repair.ts';
import { checkKubernetes, kubeClients, loadKubeConfig, type KubeOptions } from '../kube/client.ts';
import { connectNative, type TemporalSettings } from '../temporal/connection.ts';
import { log } from '../log.ts';
import type { WorkerSections } from '../activities/index.ts';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

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
