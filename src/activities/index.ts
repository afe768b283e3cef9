// Every activity the worker registers, built from its dependencies so that a
// test can hand in its own clients.
import type { KubeClients } from '../kube/client.ts';
import type { Config } from '../config/schema.ts';
import { createAppActivities } from './apps.ts';
import { createClusterActivities } from './cluster.ts';
import { createRepairActivities } from './repair.ts';
import { createTaintActivities } from './taint.ts';
import { createWeederActivities } from './weeder.ts';

/** The capability sections of the worker's own configuration. */
export type WorkerSections = Pick<Config, 'weeder' | 'taintReplacement' | 'apps' | 'repair'>;

export interface ActivityDeps {
  kube: KubeClients;
  /**
   * The worker's own configuration: the only source of the commands,
   * selectors and namespaces its activities act on. Workflow inputs, signals
   * and updates reach the worker through Temporal and are never trusted for
   * these (docs/security.md).
   */
  config: WorkerSections;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createAppActivities(deps.kube, deps.config.apps),
    ...createClusterActivities(deps.kube),
    ...createRepairActivities(deps.kube, deps.config.repair),
    ...createTaintActivities(deps.kube, deps.config.taintReplacement),
    ...createWeederActivities(deps.kube, deps.config.weeder),
  };
}

export type Activities = ReturnType<typeof createActivities>;
