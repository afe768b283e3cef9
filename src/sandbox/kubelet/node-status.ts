// What a simulated node looks like to the API: its identity, the status a
// kubelet reports for it, and its heartbeat Lease. Pure.
import { createHash } from 'node:crypto';
import { SIM_NODE_LABEL } from './annotations.ts';
import { microTime, rfc3339 } from './time.ts';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
/** The kubelet's nodeLeaseDurationSeconds default. */
export const LEASE_DURATION_SECONDS = 40;
export const ZONES = ['zone-a', 'zone-b', 'zone-c'] as const;
export const REGION = 'sim';

export interface SimNode {
  name: string;
  /** 1-based; picks the node's addresses. */
  index: number;
  zone: string;
  internalIP: string;
}

export function simNode(namePrefix: string, index: number): SimNode {
  return {
    name: `${namePrefix}${index}`,
    index,
    zone: ZONES[(index - 1) % ZONES.length],
    internalIP: `10.88.0.${index}`,
  };
}

export function nodeLabels(n: SimNode): Record<string, string> {
  return {
    'kubernetes.io/hostname': n.name,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'topology.kubernetes.io/zone': n.zone,
    'topology.kubernetes.io/region': REGION,
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

const RESOURCES = { cpu: '8', memory: '32Gi', pods: '110', 'ephemeral-storage': '100Gi' };

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
  return {
    capacity: RESOURCES,
    allocatable: RESOURCES,
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
