// What a simulated node looks like to the API: its identity, the status a
// kubelet reports for it, and its heartbeat Lease. Pure.
import { createHash } from 'node:crypto';
import { SIM_NODE_LABEL } from './annotations.ts';
import { nodeIP, podCapacity, podCIDR } from './ipam.ts';
import { microTime, rfc3339 } from './time.ts';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
/** The kubelet's nodeLeaseDurationSeconds default. */
export const LEASE_DURATION_SECONDS = 40;
export const ZONES = ['zone-a', 'zone-b', 'zone-c'] as const;
export const REGION = 'sim';
/**
 * The machine type every simulated Node carries in the well-known instance-type label: what a
 * repair procedure's machine_types and nodeRepair's machineTypeLabel name (deploy/demo/node-repair.yaml).
 */
export const INSTANCE_TYPE_LABEL = 'node.kubernetes.io/instance-type';
export const INSTANCE_TYPE = 'sim';

export interface SimNode {
  name: string;
  /** 1-based; picks the node's addresses. */
  index: number;
  zone: string;
  internalIP: string;
  /** The range its pods' addresses come from, as spec.podCIDR says (ipam.ts). */
  podCIDR: string;
}

export function simNode(namePrefix: string, index: number): SimNode {
  return {
    name: `${namePrefix}${index}`,
    index,
    zone: ZONES[(index - 1) % ZONES.length],
    internalIP: nodeIP(index),
    podCIDR: podCIDR(index),
  };
}

export function nodeLabels(n: SimNode): Record<string, string> {
  return {
    'kubernetes.io/hostname': n.name,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'topology.kubernetes.io/zone': n.zone,
    'topology.kubernetes.io/region': REGION,
    [INSTANCE_TYPE_LABEL]: INSTANCE_TYPE,
    [SIM_NODE_LABEL]: 'true',
  };
}

export interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  lastTransitionTime: string;
}

/** A condition as it stands on the Node now, as far as lastTransitionTime is concerned. */
export interface ObservedCondition {
  type?: string;
  status?: string;
  lastTransitionTime?: unknown;
}

/** What a node offers; `pods` is the kubelet's default of 110, or fewer when the node's pod range holds fewer addresses. */
export function nodeResources(n: SimNode) {
  return { cpu: '8', memory: '32Gi', pods: String(Math.min(110, podCapacity(n.podCIDR))), 'ephemeral-storage': '100Gi' };
}

/**
 * The full status a healthy kubelet posts. `observed` are the Node's current
 * conditions: a condition's lastTransitionTime is kept while its status holds,
 * and moves when it changes, which includes taking Ready back from the node
 * lifecycle controller's Unknown after heartbeats resume.
 */
export function nodeStatus(n: SimNode, kubeletVersion: string, now: number, observed: readonly ObservedCondition[]) {
  const condition = (type: string, status: 'True' | 'False', reason: string, message: string): NodeCondition => {
    const before = observed.find((c) => c.type === type);
    const kept = before?.status === status ? asTimeString(before.lastTransitionTime) : undefined;
    return { type, status, reason, message, lastHeartbeatTime: rfc3339(now), lastTransitionTime: kept ?? rfc3339(now) };
  };
  const resources = nodeResources(n);
  return {
    capacity: resources,
    allocatable: resources,
    addresses: [
      { type: 'InternalIP', address: n.internalIP },
      { type: 'Hostname', address: n.name },
    ],
    conditions: [
      condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
      condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    nodeInfo: nodeInfo(n, kubeletVersion),
  };
}

/** The kubelet's nodeStatusReportFrequency: an unchanged status is posted again this often; the Lease is the heartbeat meanwhile. */
export const STATUS_REPORT_MS = 5 * 60_000;

/** What a Node's status shows, as far as statusDue is concerned. */
export interface ObservedStatus {
  conditions?: readonly ObservedCondition[];
  addresses?: readonly { type?: string; address?: string }[];
  capacity?: Record<string, unknown>;
  allocatable?: Record<string, unknown>;
  nodeInfo?: { kubeletVersion?: string };
}

/**
 * Whether a heartbeat posts the Node's status, as a kubelet decides it: when
 * it was never posted, when the Node shows something other than this kubelet
 * reports (a condition's status, such as the lifecycle controller's
 * Ready=Unknown, an address, capacity or version), or when the last post is
 * `reportMs` old. Otherwise the Lease alone says the node is alive, which is
 * what the node lifecycle controller reads; at 1,000 nodes this halves the
 * heartbeat writes.
 */
export function statusDue(n: SimNode, kubeletVersion: string, observed: ObservedStatus | undefined, lastPostedAt: number | undefined, now: number, reportMs = STATUS_REPORT_MS): boolean {
  if (!observed || lastPostedAt === undefined || now - lastPostedAt >= reportMs) return true;
  const want = nodeStatus(n, kubeletVersion, now, observed.conditions ?? []);
  const statusOf = (type: string) => observed.conditions?.find((c) => c.type === type)?.status;
  if (want.conditions.some((c) => statusOf(c.type) !== c.status)) return true;
  const address = (type: string) => observed.addresses?.find((a) => a.type === type)?.address;
  if (want.addresses.some((a) => address(a.type) !== a.address)) return true;
  const sameResources = (seen: Record<string, unknown> | undefined) =>
    Object.entries(want.capacity).every(([k, v]) => String(seen?.[k] ?? '') === v);
  if (!sameResources(observed.capacity) || !sameResources(observed.allocatable)) return true;
  return observed.nodeInfo?.kubeletVersion !== kubeletVersion;
}

function nodeInfo(n: SimNode, kubeletVersion: string) {
  const id = createHash('sha256').update(`sim-node/${n.name}`).digest('hex');
  return {
    machineID: id.slice(0, 32),
    systemUUID: `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20, 32)}`,
    bootID: id.slice(32, 64),
    kernelVersion: '6.1.0-sim',
    osImage: 'tend simulated node',
    containerRuntimeVersion: 'sim://1.0.0',
    kubeletVersion,
    operatingSystem: 'linux',
    architecture: 'amd64',
  };
}

export function leaseSpec(n: SimNode, now: number) {
  return { holderIdentity: n.name, leaseDurationSeconds: LEASE_DURATION_SECONDS, renewTime: microTime(now) };
}

function asTimeString(value: unknown): string | undefined {
  if (value instanceof Date) return rfc3339(value.getTime());
  return typeof value === 'string' && value !== '' ? value : undefined;
}
