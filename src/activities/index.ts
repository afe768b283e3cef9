// Every activity the worker registers, built from its dependencies so that a
// test can hand in its own clients.
import type { KubeClients } from '../kube/client.ts';
import type { RepairConfig } from '../config/repair.ts';
import { createAppActivities } from './apps.ts';
import { createClusterActivities } from './cluster.ts';
import { createRepairActivities } from './repair.ts';
import { createTaintActivities } from './taint.ts';
import { createWeederActivities } from './weeder.ts';

export interface ActivityDeps {
  kube: KubeClients;
  /** The worker's own repair section: the only source of the commands it runs. */
  repair?: RepairConfig;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createAppActivities(deps.kube),
    ...createClusterActivities(deps.kube),
    ...createRepairActivities(deps.kube, deps.repair),
    ...createTaintActivities(deps.kube),
    ...createWeederActivities(deps.kube),
  };
}

export type Activities = ReturnType<typeof createActivities>;
