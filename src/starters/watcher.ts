// The watcher: turns changes in the cluster into workflow starts, signals and
// updates. Each capability contributes its own informers; the watcher owns the
// connections and the lifecycle.
import type { Client } from '@temporalio/client';
import type { KubeConfig } from '@kubernetes/client-node';
import { checkKubernetes, loadKubeConfig, type KubeOptions } from '../kube/client.ts';
import { connectClient, type TemporalSettings } from '../temporal/connection.ts';
import { log } from '../log.ts';
import { health } from '../http/health.ts';
import { startStateGauges } from '../metrics/state.ts';
import type { Config } from '../config/load.ts';

export interface WatcherOptions extends Partial<Pick<Config, 'repair' | 'taintReplacement' | 'weeder'>> {
  temporal: TemporalSettings;
  kubernetes: KubeOptions;
}

export interface WatchContext {
  client: Client;
  kc: KubeConfig;
  temporal: TemporalSettings;
  signal: AbortSignal;
}

/** A capability's part of the watcher: starts its informers, resolves when `signal` aborts. */
export type CapabilityWatch = (ctx: WatchContext) => Promise<void>;

export async function runWatcher(opts: WatcherOptions, watches: Record<string, CapabilityWatch>, signal: AbortSignal) {
  // Alive while this runs; ready once both sides answered (each informer adds its own check).
  const check = health.settable('watcher', { alive: true, ready: false, reason: 'starting: connecting to Kubernetes and Temporal' });
  try {
    const kc = loadKubeConfig(opts.kubernetes);
    const version = await checkKubernetes(kc);
    const client = await connectClient(opts.temporal);
    // Workflow-state gauges (repair queue, taint slots, weeder windows), read at scrape time.
    const stopGauges = startStateGauges(client, opts);
    try {
      const names = Object.keys(watches);
      log.info({ temporal: opts.temporal.address, kubernetes: version, capabilities: names }, 'watcher started');
      check.set({ alive: true, ready: true });
      const ctx: WatchContext = { client, kc, temporal: opts.temporal, signal };
      await Promise.all([
        ...Object.values(watches).map((w) => w(ctx)),
        new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }))),
      ]);
      log.info('watcher stopped');
    } finally {
      stopGauges();
      await client.connection.close();
    }
  } finally {
    check.remove();
  }
}
