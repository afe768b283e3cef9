// Read-only facts about the cluster as the worker sees it.
import { checkKubernetes, type KubeClients } from '../kube/client.ts';

export interface ClusterFacts {
  version: string;
  nodes: number;
  readyNodes: number;
  taintedNodes: number;
}

export function createClusterActivities(kube: KubeClients) {
  return {
    async clusterFacts(): Promise<ClusterFacts> {
      const version = await checkKubernetes(kube.kc);
      const nodes = await kube.core.listNode();
      return {
        version,
        nodes: nodes.items.length,
        readyNodes: nodes.items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length,
        taintedNodes: nodes.items.filter((n) => (n.spec?.taints?.length ?? 0) > 0).length,
      };
    },
  };
}
