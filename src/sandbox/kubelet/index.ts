// The simulated kubelet: plays the kubelet for N fake nodes against a real
// control plane, since this machine has no container runtime. See README.md,
// "The simulated kubelet".
//
// Each node is two halves, as in a real kubelet: NodeAgent keeps the Node and
// its Lease alive, PodRunner plays the pods bound to it. The watches are shared
// by all nodes, unlike a real kubelet's: one of the simulated Nodes, one of the
// pods bound to nodes, and one of EndpointSlices, which tells pods whether the
// Services they depend on are ready. At 1,000 nodes that is three watches
// instead of 2,001 for kube-apiserver to feed.
import * as k8s from '@kubernetes/client-node';
import { pool } from '../../pool.ts';
import type { KubernetesObject } from '@kubernetes/client-node';
import { kubeClients, loadKubeConfig } from '../../kube/client.ts';
import { log } from '../../log.ts';
import { errorMessage } from '../../kube/api.ts';
import { ServiceReadiness } from './endpoints.ts';
import { kubeletTiming } from './lifecycle.ts';
import { MAX_NODES } from './ipam.ts';
import { simNode } from './node-status.ts';
import { NodeAgent, watchNodes } from './nodes.ts';
import { PodRunner, watchPods } from './pods.ts';
import type { RunningInformer } from '../../kube/informer.ts';
import type { KubeClients } from '../../kube/client.ts';
import type { Logger } from '../../log.ts';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Podman } from './podman.ts';
import type { PodmanRuntime } from './podman-pod.ts';
import { kubeletLabel, removeKubeletContainers } from './podman-leftovers.ts';

export { startHeartbeats, stopHeartbeats } from './heartbeat.ts';
export {
  CRASH_AFTER_ANNOTATION,
  DEPENDS_ON_ANNOTATION,
  EXIT_AFTER_ANNOTATION,
  FAIL_ANNOTATION,
  HEARTBEAT_ANNOTATION,
  HEARTBEAT_STOPPED,
  SIM_NODE_LABEL,
} from './annotations.ts';

export interface KubeletOptions {
  /** Path to the kubeconfig of the API server to register with. */
  kubeconfig: string;
  /** How many nodes: `${namePrefix}1` … `${namePrefix}N`. Default 3. */
  nodes?: number;
  /** Default `sim-`. */
  namePrefix?: string;
  /** Multiplies every kubelet duration (back-off, crash, exit, readiness delays): 0.1 is ten times faster. Default 1. */
  timeScale?: number;
  /** Node status and Lease renewal period, in real seconds (not scaled). Default 10. */
  heartbeatSeconds?: number;
  /**
   * Image prefixes (`localhost/tend`): a pod whose every container image starts with one of them
   * runs for real, with podman, on the host network (podman-pod.ts). Default none: every pod is simulated.
   */
  runImages?: string[];
  /** Where the pods run for real keep their files (volumes, env files). Required with runImages. */
  podsDir?: string;
}

export interface Kubelet {
  /** The node names, in order. */
  nodes: string[];
  /** Stops watching and writing; the Nodes stay and, without heartbeats, go NotReady in time. */
  stop(): Promise<void>;
}

/** Registers the nodes and starts playing their pods. Resolves once every node is registered and every watch has synced. */
export async function startKubelet(opts: KubeletOptions): Promise<Kubelet> {
  const count = opts.nodes ?? 3;
  const namePrefix = opts.namePrefix ?? 'sim-';
  const timeScale = opts.timeScale ?? 1;
  const heartbeatSeconds = opts.heartbeatSeconds ?? 10;
  if (!Number.isInteger(count) || count < 1 || count > MAX_NODES) throw new RangeError(`nodes must be 1..${MAX_NODES}, not ${count}`);
  if (!(timeScale > 0)) throw new RangeError(`timeScale must be positive, not ${timeScale}`);
  if (!(heartbeatSeconds > 0)) throw new RangeError(`heartbeatSeconds must be positive, not ${heartbeatSeconds}`);

  const clients = kubeClients(loadKubeConfig({ kubeconfig: opts.kubeconfig }));
  const klog = log.child({ component: 'sim-kubelet' });
  const kubeletVersion = await serverVersion(clients.kc);
  const timing = kubeletTiming(timeScale);
  const podman = opts.runImages && opts.runImages.length > 0 ? await podmanRuntime(clients, opts.runImages, opts.podsDir, klog) : undefined;

  const readiness = new ServiceReadiness(clients, klog);
  const agents = new Map<string, NodeAgent>();
  const runners = new Map<string, PodRunner>();
  const watches: RunningInformer<KubernetesObject>[] = [];
  const stop = async () => {
    await Promise.allSettled(watches.map((w) => w.stop()));
    await Promise.allSettled([...[...runners.values()].map((r) => r.stop()), ...[...agents.values()].map((a) => a.stop()), readiness.stop()]);
  };

  try {
    // The slices are listed while the nodes register, but pods are only taken
    // on once they are known: a dependant admitted before that would crash for
    // nothing.
    const readinessSynced = readiness.start();
    const nodes = Array.from({ length: count }, (_, i) => simNode(namePrefix, i + 1));
    for (const node of nodes) {
      agents.set(node.name, new NodeAgent({
        clients,
        node,
        kubeletVersion,
        heartbeatMs: heartbeatSeconds * 1000,
        log: klog.child({ node: node.name }),
        onHeartbeatChange: (stopped) => {
          const runner = runners.get(node.name);
          if (stopped) runner?.freeze();
          else runner?.thaw();
        },
      }));
    }
    await pool([...agents.values()], START_CONCURRENCY, (agent) => agent.start());
    const nodeWatch = watchNodes(clients, agents, klog);
    watches.push(nodeWatch);
    await Promise.all([nodeWatch.synced, readinessSynced]);
    for (const agent of agents.values()) {
      runners.set(agent.node.name, new PodRunner({
        clients,
        node: agent.node,
        timing,
        readiness,
        log: klog.child({ node: agent.node.name }),
        frozen: agent.heartbeatsStopped,
        podman,
      }));
    }
    const podWatch = watchPods(clients, runners, klog);
    watches.push(podWatch);
    await podWatch.synced;
  } catch (err) {
    await stop();
    throw err;
  }
  return { nodes: [...agents.keys()].sort(byNumber), stop };
}

/** The API server's version, reported as the nodes' kubelet version so that nothing sees skew. */
async function serverVersion(kc: k8s.KubeConfig): Promise<string> {
  try {
    return (await kc.makeApiClient(k8s.VersionApi).getCode()).gitVersion;
  } catch (err) {
    log.warn({ err: errorMessage(err) }, 'cannot read the API server version');
    return 'v0.0.0-sim';
  }
}

/**
 * The podman runtime's shared part. Containers a previous run of this kubelet
 * left (it was killed) are removed first: their pods start again from scratch.
 */
async function podmanRuntime(clients: KubeClients, prefixes: string[], podsDir: string | undefined, klog: Logger): Promise<PodmanRuntime> {
  if (!podsDir) throw new RangeError('runImages needs podsDir: where the pods keep their files');
  const cluster = clients.kc.getCurrentCluster();
  if (!cluster) throw new RangeError('the kubeconfig names no cluster');
  const server = new URL(cluster.server);
  const caCert = cluster.caData ? Buffer.from(cluster.caData, 'base64').toString('utf8') : cluster.caFile ? await readFile(cluster.caFile, 'utf8') : '';
  const podman = new Podman();
  const left = await removeKubeletContainers(podsDir, podman);
  if (left > 0) klog.info({ containers: left }, 'podman runtime: removed the containers a previous run left');
  await rm(podsDir, { recursive: true, force: true });
  await mkdir(podsDir, { recursive: true, mode: 0o700 });
  klog.info({ prefixes }, 'podman runtime: pods whose images start with these run for real');
  return {
    prefixes, podman, clients, podsDir: resolve(podsDir), caCert, kubeletLabel: kubeletLabel(podsDir),
    apiserver: { apiserverHost: server.hostname, apiserverPort: Number(server.port || 443) },
  };
}

/**
 * Nodes registering at once: enough to keep kube-apiserver busy, few enough
 * that 1,000 registrations do not queue thousands of requests (and their
 * timeouts) on a small machine.
 */
const START_CONCURRENCY = 50;

function byNumber(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}
