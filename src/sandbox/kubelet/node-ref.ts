// Which simulated Node a `tend sandbox node` command means: its name, or its InternalIP, the
// address a repair command is given as its last argument (as CKE appends the machine's address).
// The addresses are names only (ipam.ts): nothing is ever sent to them, a command only reads the
// Nodes from the sandbox's API.
import type * as k8s from '@kubernetes/client-node';
import { preview } from '../../checks/preview.ts';
import { SIM_NODE_LABEL } from './annotations.ts';

/** A Node name (a DNS subdomain) or an IPv4 address is at most this long. */
const REF_MAX = 253;

/**
 * The name of the simulated Node among `nodes` that is named `value` or has it as its InternalIP,
 * or a problem naming the value (by its prefix only: it comes from the command line, or from a
 * repair entry's address).
 */
export function simNodeNamed(nodes: readonly k8s.V1Node[], value: string): { name: string } | { problem: string } {
  const shown = preview(value, 64);
  if (value === '' || value.length > REF_MAX) return { problem: `${shown} is not a Node name or address` };
  const named = nodes.find((n) => n.metadata?.name === value);
  if (named) return { name: value };
  const holders = nodes.filter((n) => n.status?.addresses?.some((a) => a.type === 'InternalIP' && a.address === value));
  if (holders.length === 1) return { name: holders[0]!.metadata!.name! };
  if (holders.length > 1) {
    return { problem: `${shown} is the InternalIP of ${holders.length} simulated Nodes (${holders.map((n) => n.metadata?.name).join(', ')}): name the Node instead` };
  }
  return { problem: `no simulated Node is named ${shown} or has it as its InternalIP` };
}

/** The sandbox's simulated Nodes, as the API has them now. */
export async function simNodes(core: k8s.CoreV1Api): Promise<k8s.V1Node[]> {
  return (await core.listNode({ labelSelector: `${SIM_NODE_LABEL}=true` })).items;
}

/** Whether the Node's Ready condition is True: what the sandbox's repair health check asks. */
export function nodeReady(node: k8s.V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
