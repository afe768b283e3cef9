// The simulated kubelet: plays the kubelet for N fake nodes against a real
// control plane, since this machine has no container runtime. See DESIGN.md,
// "The real parts, and the sandbox".
//
// Each node is two halves, as in a real kubelet: NodeAgent keeps the Node and
// its Lease alive, PodRunner plays the pods bound to it. One EndpointSlice
// watch, shared, tells pods whether the Services they depend on are ready.
import * as k8s from '@kubernetes/client-node';
import { kubeClients, loadKubeConfig } from '../../kube/client.ts';
import { log } from '../../log.ts';
import { errorMessage } from '../../kube/api.ts';
import { ServiceReadiness } from './endpoints.ts';
import { kubeletTiming } from './lifecycle.ts';
import { simNode } from './node-status.ts';
import { NodeAgent } from './nodes.ts';
import { PodRunner } from './pods.ts';

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
  if (!Number.isInteger(count) || count < 1 || count > 254) throw new RangeError(`nodes must be 1..254, not ${count}`);
  if (!(timeScale > 0)) throw new RangeError(`timeScale must be positive, not ${timeScale}`);
  if (!(heartbeatSeconds > 0)) throw new RangeError(`heartbeatSeconds must be positive, not ${heartbeatSeconds}`);

  const clients = kubeClients(loadKubeConfig({ kubeconfig: opts.kubeconfig }));
  const klog = log.child({ component: 'sim-kubelet' });
  const kubeletVersion = await serverVersion(clients.kc);
  const timing = kubeletTiming(timeScale);

  const readiness = new ServiceReadiness(clients, klog);
  const agents: NodeAgent[] = [];
  const runners: PodRunner[] = [];
  const stop = async () => {
    await Promise.allSettled([...runners.map((r) => r.stop()), ...agents.map((a) => a.stop()), readiness.stop()]);
  };

  try {
    // The slices are listed while the nodes register, but pods are only taken
    // on once they are known: a dependant admitted before that would crash for
    // nothing.
    const readinessSynced = readiness.start();
    const nodes = Array.from({ length: count }, (_, i) => simNode(namePrefix, i + 1));
    await Promise.all(
      nodes.map(async (node) => {
        const nlog = klog.child({ node: node.name });
        const agent = new NodeAgent({
          clients,
          node,
          kubeletVersion,
          heartbeatMs: heartbeatSeconds * 1000,
          log: nlog,
          onHeartbeatChange: (stopped) => {
            const runner = runners.find((r) => r.node === node);
            if (stopped) runner?.freeze();
            else runner?.thaw();
          },
        });
        agents.push(agent);
        await agent.start();
      }),
    );
    await readinessSynced;
    await Promise.all(
      agents.map(async (agent) => {
        const runner = new PodRunner({
          clients,
          node: agent.node,
          timing,
          readiness,
          log: klog.child({ node: agent.node.name }),
          frozen: agent.heartbeatsStopped,
        });
        runners.push(runner);
        await runner.start();
      }),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { nodes: agents.map((a) => a.node.name).sort(byNumber), stop };
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

function byNumber(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}
