// Every activity the worker registers, built from its dependencies so that a
// test can hand in its own clients.
import type { KubeClients } from '../kube/client.ts';
import { createClusterActivities } from './cluster.ts';

export interface ActivityDeps {
  kube: KubeClients;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createClusterActivities(deps.kube),
  };
}

export type Activities = ReturnType<typeof createActivities>;
