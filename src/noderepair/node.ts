// A Node as the node-repair decisions read it, and how it maps to a repair queue entry: the
// address of the configured type, the machine type from a label, the operation for the condition
// it meets (as CKE's sabakan-triggered repair makes an entry of a machine: its first IPv4, its
// BMC type, its state lowercased). Pure: imported by workflow code (no Node built-ins, no clock).
import { preview } from '../checks/preview.ts';
import { conditionKey, DEFAULT_OPERATION_KEY, operationFor } from '../config/node-repair-operation.ts';
import type { NodeRepairConfig } from '../config/node-repair.ts';

/** A Node condition, its lastTransitionTime in epoch ms (undefined when absent or unreadable). */
export interface NodeConditionView {
  type: string;
  status: string;
  lastTransitionTime?: number | undefined;
}

export interface NodeView {
  name: string;
  labels?: Readonly<Record<string, string>> | undefined;
  annotations?: Readonly<Record<string, string>> | undefined;
  /** spec.unschedulable: cordoned. */
  unschedulable?: boolean | undefined;
  addresses?: readonly { type: string; address: string }[] | undefined;
  conditions?: readonly NodeConditionView[] | undefined;
}

/** The parts of a Kubernetes Node (as the API returns it, times as RFC 3339 text) that are read. */
export interface KubeNodeLike {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { unschedulable?: boolean };
  status?: {
    addresses?: { type: string; address: string }[];
    conditions?: { type: string; status: string; lastTransitionTime?: string | Date }[];
  };
}

/**
 * A name from a Node (its name, an address, a label value) as said in a sentence: as it is when
 * it is made of the characters names and addresses have, else preview's quoted, bounded prefix
 * (a kubelet writes its own Node's addresses).
 */
export const shown = (value: string): string => (/^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$/.test(value) ? value : preview(value, 80));

/** Epoch ms of an RFC 3339 time (or a Date, as some clients give it); undefined when absent or unreadable. */
function epochMs(t: string | Date | undefined): number | undefined {
  if (t === undefined) return undefined;
  const ms = typeof t === 'string' ? Date.parse(t) : t.getTime();
  return Number.isFinite(ms) ? ms : undefined;
}

export function nodeViewOf(node: KubeNodeLike): NodeView {
  return {
    name: node.metadata?.name ?? '',
    labels: node.metadata?.labels,
    annotations: node.metadata?.annotations,
    unschedulable: node.spec?.unschedulable,
    addresses: node.status?.addresses,
    conditions: node.status?.conditions?.map((c) => ({ type: c.type, status: c.status, lastTransitionTime: epochMs(c.lastTransitionTime) })),
  };
}

/**
 * Whether the Node is in a planned reboot: cordoned and carrying the configured annotation (any
 * value). Without limits.rebootAnnotation no Node is.
 */
export function inPlannedReboot(node: NodeView, limits: Pick<NodeRepairConfig['limits'], 'rebootAnnotation'>): boolean {
  const key = limits.rebootAnnotation;
  return key !== undefined && node.unschedulable === true && Object.hasOwn(node.annotations ?? {}, key);
}

/** What the repair queue is asked to add for a Node. */
export interface RepairRequest {
  address: string;
  machineType: string;
  operation: string;
}

export type RequestProblem = 'no-address' | 'no-machine-type' | 'no-operation';

/**
 * The repair entry a Node meeting `condition` maps to, or why it maps to none. CKE skips a
 * machine without an IPv4 address with a warning; so does tend a Node without an address of the
 * configured type, and one without the machine type label (the queue could find no procedure).
 */
export function repairRequestOf(
  node: NodeView,
  condition: { type: string; status: string },
  config: Pick<NodeRepairConfig, 'address' | 'machineTypeLabel' | 'operations'>,
): { request: RepairRequest } | { problem: RequestProblem; sentence: string } {
  const name = shown(node.name);
  // CKE takes the first IPv4 address; the first of the configured type, likewise.
  const address = node.addresses?.find((a) => a.type === config.address.type && a.address !== '')?.address;
  if (address === undefined) return { problem: 'no-address', sentence: `Node ${name} has no ${config.address.type} address: nothing to repair by` };
  const machineType = node.labels?.[config.machineTypeLabel];
  if (!machineType) return { problem: 'no-machine-type', sentence: `Node ${name} has no ${config.machineTypeLabel} label: its machine type, which names its repair procedure, is unknown` };
  const operation = operationFor(config.operations, condition);
  if (!operation) return { problem: 'no-operation', sentence: `no operation for ${conditionKey(condition)}: operations names neither it nor ${DEFAULT_OPERATION_KEY}` };
  return { request: { address, machineType, operation } };
}
