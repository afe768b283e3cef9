// tend's own metrics, named tend_*: one prom-client registry for the process.
// Every metric is documented in docs/metrics.md (name, type, labels, meaning);
// keep the two together.
//
// Where each is measured:
// - activities count what they do (pods weeded, marks written, evictions,
//   restarts, reconcile errors): in the worker process, when it happens;
// - the watcher counts the events its informers deliver and their restarts;
// - gauges that describe workflow state (the repair queue, the taint slots,
//   weeder windows) are read from the workflows by the watcher at scrape time,
//   cached and bounded (state.ts).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { tendCommit, tendVersion } from '../version.ts';

export const registry = new Registry();
// process_* and nodejs_*: CPU, memory, event-loop lag, handles.
collectDefaultMetrics({ register: registry });

const registers = [registry];

// --- the build ----------------------------------------------------------------

/** The version and commit, read once, at the first scrape (the commit may ask git, in a checkout). */
let build: { version: string; commit: string } | undefined;
export const buildInfo = new Gauge({
  name: 'tend_build_info',
  help: 'Always 1: the version of tend and the commit it was built from, as tend --version prints them.',
  labelNames: ['version', 'commit'] as const,
  registers,
  collect() {
    build ??= { version: tendVersion(), commit: tendCommit() };
    this.set(build, 1);
  },
});

// --- weeder -----------------------------------------------------------------

export const weederPodsWeeded = new Counter({
  name: 'tend_weeder_pods_weeded_total',
  help: 'Crash-looping dependants deleted by a weeder window (one per pod deleted).',
  labelNames: ['namespace', 'service'] as const,
  registers,
});

export const weederPodsReported = new Counter({
  name: 'tend_weeder_pods_reported_total',
  help: 'Crash-looping dependants without a controller, reported (an Event) and never deleted.',
  labelNames: ['namespace', 'service'] as const,
  registers,
});

export const weederDeletesRefused = new Counter({
  name: 'tend_weeder_deletes_refused_total',
  help: 'Deletions of a dependant the API server refused for good (forbidden, invalid, a webhook).',
  labelNames: ['namespace', 'service'] as const,
  registers,
});

export const weederReaction = new Histogram({
  name: 'tend_weeder_reaction_seconds',
  help: 'From an armed window seeing its Service ready (EndpointSlices) to the deletion of the crash-looping dependants.',
  labelNames: ['namespace', 'service'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
  registers,
});

export const weederWindows = new Gauge({
  name: 'tend_weeder_windows',
  help: 'Running weeder windows by state: open (weeding until its deadline) or armed (waiting for its Service to be ready). Read from the workflows at scrape time.',
  labelNames: ['state'] as const,
  registers,
});

export const weederOldestOpen = new Gauge({
  name: 'tend_weeder_window_oldest_open_seconds',
  help: 'Age in seconds of the oldest open weeder window (since it first opened), reckoned at each scrape from the last read of the workflows; 0 when none is open.',
  registers,
});

// --- taint replacement ------------------------------------------------------

export const taintPodsMarked = new Counter({
  name: 'tend_taint_pods_marked_total',
  help: 'Pod conditions newly set by taint replacement: NodeTaintDetected, NodeTaintReplacing.',
  labelNames: ['condition'] as const,
  registers,
});

export const taintEvictions = new Counter({
  name: 'tend_taint_evictions_total',
  help: 'Eviction requests by outcome: evicted, refused (a PodDisruptionBudget said no; retried with back-off), gone (the pod had left already), paused (not asked: tend pause, or the pause state unconfirmed), observed (not asked: observe mode, recorded once per pod), ungranted (not asked: the coordinator holds no slot granted to the pod; a forged grant waited out).',
  labelNames: ['outcome'] as const,
  registers,
});

export const taintReplacementsDone = new Counter({
  name: 'tend_taint_replacements_completed_total',
  help: 'Evicted pods whose replacement (a newer pod of the same controller) became Ready.',
  registers,
});

export const taintPods = new Gauge({
  name: 'tend_taint_pods',
  help: 'Pods on tainted nodes by the condition they carry now (NodeTaintDetected, NodeTaintReplacing). Read from the taint/<node> workflows at scrape time.',
  labelNames: ['condition'] as const,
  registers,
});

export const taintInFlight = new Gauge({
  name: 'tend_taint_replacements_in_flight',
  help: 'Replacement slots granted and not yet given back (the coordinator taint-replacements).',
  registers,
});

export const taintQueued = new Gauge({
  name: 'tend_taint_replacements_queued',
  help: 'Pods due for replacement waiting for a slot.',
  registers,
});

export const taintBreakerOpen = new Gauge({
  name: 'tend_taint_breaker_open',
  help: '1 while too many nodes are tainted (maxTaintedNodes) and no replacement is granted, else 0.',
  registers,
});

export const taintNodesTainted = new Gauge({
  name: 'tend_taint_nodes_tainted',
  help: 'Nodes with a configured taint, as the coordinator last counted them.',
  registers,
});

// --- apps -------------------------------------------------------------------

export const appsReconciles = new Counter({
  name: 'tend_apps_reconciles_total',
  help: 'App reconciles that completed (workloads applied, status written).',
  labelNames: ['namespace'] as const,
  registers,
});

export const appsReconcileErrors = new Counter({
  name: 'tend_apps_reconcile_errors_total',
  help: 'App reconciles that failed (each attempt; the workflow retries with back-off).',
  labelNames: ['namespace'] as const,
  registers,
});

export const appsRestarts = new Counter({
  name: 'tend_apps_restarts_total',
  help: 'Rolling restarts of an App tend started (its app-rev moved for a restart).',
  labelNames: ['namespace'] as const,
  registers,
});

// --- repair queue (CKE's shapes) ---------------------------------------------

export const repairQueueEnabled = new Gauge({
  name: 'tend_repair_queue_enabled',
  help: '1 when the repair queue is enabled (entries are processed), 0 when disabled. Absent when no queue runs.',
  registers,
});

export const repairQueueItems = new Gauge({
  name: 'tend_repair_queue_items',
  help: 'Repair queue entries by status: queued, processing, succeeded, failed.',
  labelNames: ['status'] as const,
  registers,
});

export const repairQueueEntries = new Gauge({
  name: 'tend_repair_queue_entries',
  help: 'Repair queue entries by operation and status (an operation the configuration does not name counts as "other"). Read from the queue at scrape time.',
  labelNames: ['operation', 'status'] as const,
  registers,
});

export const repairCommands = new Counter({
  name: 'tend_repair_commands_total',
  help: 'Runs of a repair step\'s commands by this worker, by kind (repair_command, success_command) and result (ok, failed: a non-zero exit or a timeout).',
  labelNames: ['kind', 'result'] as const,
  registers,
});

// --- watcher ----------------------------------------------------------------

export const watcherEvents = new Counter({
  name: 'tend_watcher_events_total',
  help: 'Objects the watcher\'s informers delivered (new or changed: upsert; deleted: delete), by capability and resource.',
  labelNames: ['capability', 'resource', 'kind'] as const,
  registers,
});

export const watcherInformerRestarts = new Counter({
  name: 'tend_watcher_informer_restarts_total',
  help: 'Times an informer\'s list or watch failed outright and was restarted after a back-off.',
  labelNames: ['capability', 'resource'] as const,
  registers,
});

export const watcherInformerSynced = new Gauge({
  name: 'tend_watcher_informer_synced',
  help: '1 once the informer has delivered its first list (and while it runs), 0 before.',
  labelNames: ['capability', 'resource'] as const,
  registers,
});

// --- the scrape-time state reader (state.ts) ----------------------------------

export const stateReadErrors = new Counter({
  name: 'tend_state_read_errors_total',
  help: 'Failed reads of workflow state for the gauges above (query or list): the gauges keep their last values.',
  labelNames: ['what'] as const,
  registers,
});

export const stateUnanswered = new Gauge({
  name: 'tend_state_unanswered_workflows',
  help: 'Running workflows that did not answer their query within 5 s at the last read (their task queue unpolled?): left out of the gauges above.',
  labelNames: ['what'] as const,
  registers,
});

export const stateReadAge = new Gauge({
  name: 'tend_state_read_age_seconds',
  help: 'Seconds since the workflow-state gauges were last read successfully.',
  labelNames: ['what'] as const,
  registers,
});

// --- the durable pause (src/safety/pause.ts, in each process that reads it) ----

export const pausedGauge = new Gauge({
  name: 'tend_paused',
  help: '1 while the capability is paused (tend pause), 0 while it acts, as this process last read the tend-safety workflow; see tend_pause_state_age_seconds for how fresh that is.',
  labelNames: ['capability'] as const,
  registers,
});

export const pausedSince = new Gauge({
  name: 'tend_paused_since_timestamp_seconds',
  help: 'Unix time at which the capability was paused (tend pause), as the tend-safety workflow keeps it; present while it is paused, as this process last read it.',
  labelNames: ['capability'] as const,
  registers,
});

export const pauseStateAge = new Gauge({
  name: 'tend_pause_state_age_seconds',
  help: 'Seconds since this process last read the pause state (tend-safety) successfully; past 1 s its destructive actions wait (fail closed).',
  registers,
});

// --- what each gauge describes ------------------------------------------------

/**
 * Each tend_* gauge: `cluster` when it describes the cluster's workflows (every replica that
 * reads them serves the same value: read it with `max by`, never `sum`, or two replicas show
 * twice the truth), `process` when it describes the process serving it (read it per instance).
 * docs/metrics.md says why each is which; a unit test keeps every gauge named here.
 */
export const GAUGE_SCOPE: Readonly<Record<string, 'cluster' | 'process'>> = {
  tend_weeder_windows: 'cluster',
  tend_weeder_window_oldest_open_seconds: 'cluster',
  tend_taint_pods: 'cluster',
  tend_taint_replacements_in_flight: 'cluster',
  tend_taint_replacements_queued: 'cluster',
  tend_taint_breaker_open: 'cluster',
  tend_taint_nodes_tainted: 'cluster',
  tend_repair_queue_enabled: 'cluster',
  tend_repair_queue_items: 'cluster',
  tend_repair_queue_entries: 'cluster',
  tend_paused_since_timestamp_seconds: 'cluster',
  tend_build_info: 'process',
  tend_watcher_informer_synced: 'process',
  tend_state_unanswered_workflows: 'process',
  tend_state_read_age_seconds: 'process',
  tend_paused: 'process',
  tend_pause_state_age_seconds: 'process',
  tend_mode: 'process',
};

// --- the exposition ----------------------------------------------------------

const beforeScrape = new Set<() => Promise<void>>();

/** Runs `refresh` before each scrape (it must bound its own time); returns a function that stops it. */
export function onScrape(refresh: () => Promise<void>): () => void {
  beforeScrape.add(refresh);
  return () => beforeScrape.delete(refresh);
}

/** Every tend_* (and process) metric in Prometheus text format, refreshed first. */
export async function tendMetrics(): Promise<string> {
  await Promise.allSettled([...beforeScrape].map((r) => r()));
  return registry.metrics();
}

// --- observe mode (src/activities/safety-gate.ts, src/safety/modes.ts) --------

/** What each capability would have done in observe mode: tend_<capability>_would_<action>_total. */
export const WOULD_ACTIONS = {
  weeder: ['delete'],
  taint: ['evict'],
  apps: ['write'],
  repair: ['cordon', 'evict', 'delete', 'command', 'uncordon', 'enqueue'],
} as const;
export type WouldCapability = keyof typeof WOULD_ACTIONS;

const wouldHelp: Record<string, string> = {
  'weeder/delete': 'Crash-looping dependants a weeder window would have deleted, in observe mode (nothing deleted).',
  'taint/evict': 'Pods taint replacement would have evicted, in observe mode (nothing evicted).',
  'apps/write': 'Deployment and App writes an App would have made, in observe mode, by kind and verb (nothing written).',
  'repair/cordon': 'Nodes a repair would have cordoned, in observe mode (nothing cordoned).',
  'repair/enqueue': 'Repair entries node repair would have queued for Nodes whose condition ran out, in observe mode (nothing queued).',
  'repair/evict': 'Pods a repair drain would have evicted, in observe mode.',
  'repair/delete': 'Pods a repair drain would have deleted (unprotected, not evictable), in observe mode.',
  'repair/command': 'Repair and success commands a repair would have run, in observe mode (health checks run: they only read).',
  'repair/uncordon': 'Nodes a repair would have uncordoned, in observe mode.',
};

export const wouldCounters = new Map<string, Counter<string>>(
  Object.entries(WOULD_ACTIONS).flatMap(([capability, actions]) => actions.map((action) => [
    `${capability}/${action}`,
    new Counter({
      name: `tend_${capability}_would_${action}_total`,
      help: wouldHelp[`${capability}/${action}`]!,
      labelNames: ['namespace', 'kind', 'verb'] as const,
      registers,
    }),
  ])),
);

export const modeGauge = new Gauge({
  name: 'tend_mode',
  help: '1 for the mode each capability is in now (act or observe), as this worker read its configuration last; 0 for the other.',
  labelNames: ['capability', 'mode'] as const,
  registers,
});

export const configReloads = new Counter({
  name: 'tend_config_reloads_total',
  help: 'Readings of the configuration after start-up (SIGHUP or the periodic check), by result: changed (a mode changed), unchanged, invalid (kept the last good one), restart (other fields changed: they need a restart).',
  labelNames: ['result'] as const,
  registers,
});
