// Every activity the worker registers, built from its dependencies so that a
// test can hand in its own clients.
import type { KubeClients } from '../kube/client.ts';
import type { Config } from '../config/schema.ts';
import { createAppActivities } from './apps.ts';
import { createClusterActivities } from './cluster.ts';
import { createNodeRepairActivities } from './node-repair.ts';
import { createNodeRepairQueueActivities } from './node-repair-queue.ts';
import { createRepairActivities, repairCommandActivities } from './repair.ts';
import { createTaintActivities } from './taint.ts';
import { createWeederActivities } from './weeder.ts';
import type { ModeGate, PauseGate, SafetyGates } from './safety-gate.ts';

/** The capability sections of the worker's own configuration. */
export type WorkerSections = Pick<Config, 'weeder' | 'taintReplacement' | 'apps' | 'repair' | 'nodeRepair'>;

export interface ActivityDeps {
  kube: KubeClients;
  /**
   * The worker's own configuration: the only source of the commands,
   * selectors and namespaces its activities act on. Workflow inputs, signals
   * and updates reach the worker through Temporal and are never trusted for
   * these (docs/security.md).
   */
  config: WorkerSections;
  /** The durable pause, asked right before each destructive write (absent: never paused). */
  pause?: PauseGate;
  /** The capabilities' modes (act or observe), asked right before each destructive write (absent: act). */
  modes?: ModeGate;
}

const gatesOf = (deps: { pause?: PauseGate; modes?: ModeGate }): SafetyGates => ({
  ...(deps.pause ? { pause: deps.pause } : {}), ...(deps.modes ? { modes: deps.modes } : {}),
});

/** The capabilities a worker can be limited to (`tend worker --capabilities`). */
export const CAPABILITIES = ['weeder', 'taint', 'apps', 'repair'] as const;
export type Capability = (typeof CAPABILITIES)[number];

export interface ActivityOptions {
  /** Register only these capabilities' activities (and the cluster checks `tend doctor` uses); absent: all. */
  capabilities?: readonly Capability[];
  /**
   * The worker polling repair.taskQueue: only the activities that run the
   * operator's repair commands, guarded on the entry's Node through deps.kube
   * when it has one (per host only without).
   */
  repairCommandsOnly?: boolean;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createAppActivities(deps.kube, deps.config.apps, gatesOf(deps)),
    ...createClusterActivities(deps.kube),
    ...createRepairActivities(deps.kube, deps.config.repair, 'main', gatesOf(deps)),
    ...createNodeRepairActivities(deps.kube, deps.config.nodeRepair),
    ...createNodeRepairQueueActivities(deps.kube, deps.config, gatesOf(deps)),
    ...createTaintActivities(deps.kube, deps.config.taintReplacement, gatesOf(deps)),
    ...createWeederActivities(deps.kube, deps.config.weeder, gatesOf(deps)),
  };
}

export type Activities = ReturnType<typeof createActivities>;

/**
 * The activities a worker registers: every capability's by default, or only
 * the named capabilities' (with the cluster checks), or, on the worker that
 * polls repair.taskQueue, only the repair command activities.
 */
export function workerActivities(deps: { kube?: KubeClients; config: WorkerSections; pause?: PauseGate; modes?: ModeGate }, opts: ActivityOptions = {}): Partial<Activities> {
  if (opts.repairCommandsOnly) return repairCommandActivities(deps.kube, deps.config.repair, gatesOf(deps)) as Partial<Activities>;
  if (!deps.kube) throw new Error('workerActivities: a Kubernetes connection is needed for these activities');
  const kube = deps.kube;
  const wanted = new Set<Capability>(opts.capabilities ?? CAPABILITIES);
  return {
    ...(wanted.has('apps') ? createAppActivities(kube, deps.config.apps, gatesOf(deps)) : {}),
    ...createClusterActivities(kube),
    ...(wanted.has('repair') ? createRepairActivities(kube, deps.config.repair, 'main', gatesOf(deps)) : {}),
    // A Node's countdown ends in a repair entry: node repair's activities are repair's.
    ...(wanted.has('repair') ? { ...createNodeRepairActivities(kube, deps.config.nodeRepair), ...createNodeRepairQueueActivities(kube, deps.config, gatesOf(deps)) } : {}),
    ...(wanted.has('taint') ? createTaintActivities(kube, deps.config.taintReplacement, gatesOf(deps)) : {}),
    ...(wanted.has('weeder') ? createWeederActivities(kube, deps.config.weeder, gatesOf(deps)) : {}),
  };
}

/** Parses `--capabilities weeder,repair`: every name known, at least one; a bad one is named. */
export function parseCapabilities(text: string): Capability[] | { problem: string } {
  const names = text.split(',').map((n) => n.trim());
  if (names.every((n) => n === '')) return { problem: `name at least one capability (${CAPABILITIES.join(', ')})` };
  const unknown = names.filter((n) => !(CAPABILITIES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    return { problem: `unknown capability ${unknown.map((n) => JSON.stringify(n)).join(', ')} (known: ${CAPABILITIES.join(', ')})` };
  }
  return [...new Set(names as Capability[])];
}
