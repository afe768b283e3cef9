// One simulated node's kubelet side of the node contract: register the Node,
// post its status and renew its Lease every heartbeat, and fall silent while
// the Node carries the heartbeat-stopped annotation.
//
// The node lifecycle controller in kube-controller-manager does the rest, for
// real: with the Lease and Ready heartbeat stale for node-monitor-grace-period
// it marks Ready=Unknown and taints the node node.kubernetes.io/unreachable;
// once heartbeats come back it clears both. Taints are the controller's
// business: this code writes spec only for the node's podCIDR, once, at
// registration (what the node IPAM controller would do; nothing else in the
// sandbox allocates node ranges), then only metadata.labels and status.
import * as k8s from '@kubernetes/client-node';
import type { V1Node } from '@kubernetes/client-node';
import type { KubeClients } from '../../kube/client.ts';
import type { Logger } from '../../log.ts';
import { heartbeatStopped } from './annotations.ts';
import { errorMessage, isConflict, isNotFound, mergePatch, olderVersion, strategicMergePatch } from '../../kube/api.ts';
import { FIELD_MANAGER } from './annotations.ts';
import { leaseSpec, NODE_LEASE_NAMESPACE, nodeLabels, nodeStatus, STATUS_REPORT_MS, statusDue } from './node-status.ts';
import type { SimNode } from './node-status.ts';
import { startInformer } from '../../kube/informer.ts';
import type { RunningInformer } from '../../kube/informer.ts';
import { SIM_NODE_LABEL } from './annotations.ts';

export interface NodeAgentOptions {
  clients: KubeClients;
  node: SimNode;
  /** Reported as nodeInfo.kubeletVersion. */
  kubeletVersion: string;
  heartbeatMs: number;
  /** An unchanged status is posted again this often (default STATUS_REPORT_MS); the Lease is renewed every heartbeat. */
  statusReportMs?: number;
  log: Logger;
  /** Heartbeats were stopped (true) or resumed (false) through the Node's annotation. */
  onHeartbeatChange(stopped: boolean): void;
}

export class NodeAgent {
  /** The node, with the podCIDR its Node carries once registered. */
  node: SimNode;
  private readonly opts: NodeAgentOptions;
  private readonly log: Logger;
  private stopped = false;
  private shutdown = false;
  private observed?: V1Node;
  /** Whether this kubelet created the Node (rather than adopting it), and whether its Lease is known to exist. */
  private registered = false;
  private leaseSeen = false;
  /** When the status was last accepted by the API server. */
  private statusPostedAt?: number;
  private timer?: NodeJS.Timeout;
  private beating?: Promise<void>;

  constructor(opts: NodeAgentOptions) {
    this.opts = opts;
    this.node = opts.node;
    this.log = opts.log;
  }

  /** Whether the Node's heartbeats are stopped by its annotation. */
  get heartbeatsStopped(): boolean {
    return this.stopped;
  }

  /**
   * Registers (or adopts) the Node and posts the first heartbeat. The Node's
   * later changes come from the kubelet's one watch of every simulated Node
   * (watchNodes), through nodeChanged and nodeDeleted.
   */
  async start(): Promise<void> {
    await this.register();
    await this.beat();
  }

  async stop(): Promise<void> {
    this.shutdown = true;
    clearTimeout(this.timer);
    await this.beating;
  }

  /** The Node as the watch delivers it. */
  nodeChanged(node: V1Node): void {
    this.observe(node);
  }

  nodeDeleted(): void {
    // Forgetting it makes the next heartbeat post the status, whose 404 registers the node again.
    this.observed = undefined;
    this.log.warn('node was deleted; it is registered again at the next heartbeat');
  }

  private async register(): Promise<void> {
    const { core } = this.opts.clients;
    const labels = nodeLabels(this.node);
    const { podCIDR } = this.node;
    let node: V1Node;
    try {
      node = await core.createNode({
        body: { apiVersion: 'v1', kind: 'Node', metadata: { name: this.node.name, labels }, spec: { podCIDR, podCIDRs: [podCIDR] } },
        fieldManager: FIELD_MANAGER,
      });
      this.registered = true;
      this.leaseSeen = false;
      this.log.info({ podCIDR }, 'node registered');
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Already there from an earlier run: adopt it, making sure of our labels,
      // and giving it a pod range if it has none yet (a Node's podCIDR cannot
      // change once set: one it already has is the one its pods get).
      const existing = await core.readNode({ name: this.node.name });
      const spec = existing.spec?.podCIDR ? {} : { spec: { podCIDR, podCIDRs: [podCIDR] } };
      node = await core.patchNode({ name: this.node.name, body: { metadata: { labels }, ...spec }, fieldManager: FIELD_MANAGER }, mergePatch);
      this.log.info({ podCIDR: node.spec?.podCIDR }, 'node adopted');
    }
    const actual = node.spec?.podCIDR;
    if (actual && actual !== podCIDR) {
      this.log.warn({ podCIDR: actual, expected: podCIDR }, "the Node already has another podCIDR; its pods get addresses from that one");
      this.node = { ...this.node, podCIDR: actual };
    }
    this.observe(node);
  }

  /**
   * Takes in the Node as last seen (from the watch or a write's response) and
   * reacts to the heartbeat annotation. Older versions arriving late are
   * ignored, so a watch event cannot undo what a newer response showed.
   */
  private observe(node: V1Node): void {
    if (this.observed && node.metadata?.uid === this.observed.metadata?.uid && olderVersion(node.metadata, this.observed.metadata)) return;
    this.observed = node;
    const stopped = heartbeatStopped(node.metadata);
    if (stopped === this.stopped) return;
    this.stopped = stopped;
    if (stopped) {
      clearTimeout(this.timer);
      this.log.info('heartbeats stopped');
    } else {
      this.log.info('heartbeats resumed');
    }
    this.opts.onHeartbeatChange(stopped);
    if (!stopped) void this.beat();
  }

  /** One heartbeat now, then the next one a period later. Never overlaps itself. */
  private beat(): Promise<void> {
    if (this.shutdown || this.stopped) return Promise.resolve();
    if (this.beating) return this.beating;
    clearTimeout(this.timer);
    this.beating = (async () => {
      try {
        const reportMs = this.opts.statusReportMs ?? STATUS_REPORT_MS;
        if (statusDue(this.node, this.opts.kubeletVersion, this.observed?.status, this.statusPostedAt, Date.now(), reportMs)) await this.postStatus();
        await this.renewLease();
      } catch (err) {
        this.log.warn({ err: errorMessage(err) }, 'heartbeat failed');
      }
    })().finally(() => {
      this.beating = undefined;
      if (!this.shutdown && !this.stopped) this.timer = setTimeout(() => void this.beat(), this.opts.heartbeatMs);
    });
    return this.beating;
  }

  private async postStatus(): Promise<void> {
    const { core } = this.opts.clients;
    const patch = () =>
      core.patchNodeStatus(
        {
          name: this.node.name,
          body: { status: nodeStatus(this.node, this.opts.kubeletVersion, Date.now(), this.observed?.status?.conditions ?? []) },
          fieldManager: FIELD_MANAGER,
        },
        strategicMergePatch,
      );
    try {
      this.observe(await patch());
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.log.warn('node is gone; registering it again');
      this.observed = undefined;
      await this.register();
      this.observe(await patch());
    }
    this.statusPostedAt = Date.now();
  }

  private async renewLease(): Promise<void> {
    const { coordination } = this.opts.clients;
    const { name } = this.node;
    const spec = leaseSpec(this.node, Date.now());
    // A node this kubelet just registered has no Lease yet: create it at once
    // rather than learn that from a failed patch (a call less per node at start).
    if (this.registered && !this.leaseSeen) {
      this.leaseSeen = await this.createLease().then(() => true, (err: unknown) => {
        if (isConflict(err)) return false;
        throw err;
      });
      if (this.leaseSeen) return;
    }
    try {
      await coordination.patchNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE, body: { spec }, fieldManager: FIELD_MANAGER }, mergePatch);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.createLease();
    }
    this.leaseSeen = true;
  }

  /** Owned by the Node, as the kubelet does it, so deleting the Node deletes its Lease. */
  private async createLease(): Promise<void> {
    const { name } = this.node;
    const uid = this.observed?.metadata?.uid;
    await this.opts.clients.coordination.createNamespacedLease({
      namespace: NODE_LEASE_NAMESPACE,
      body: {
        metadata: {
          name,
          namespace: NODE_LEASE_NAMESPACE,
          ownerReferences: uid ? [{ apiVersion: 'v1', kind: 'Node', name, uid }] : undefined,
        },
        spec: { ...leaseSpec(this.node, Date.now()), renewTime: new k8s.V1MicroTime(Date.now()) },
      },
      fieldManager: FIELD_MANAGER,
    });
  }
}

/**
 * One watch of every simulated Node for all the agents, rather than one per
 * node: at 1,000 nodes that is 1,000 fewer watches for kube-apiserver to feed
 * and 1,000 fewer lists at start. Each Node goes to its agent by name; Nodes
 * of no agent here (left from a bigger sandbox) are ignored.
 */
export function watchNodes(clients: KubeClients, agents: ReadonlyMap<string, NodeAgent>, log: Logger): RunningInformer<V1Node> {
  const labelSelector = `${SIM_NODE_LABEL}=true`;
  return startInformer<V1Node>({
    kc: clients.kc,
    path: '/api/v1/nodes',
    labelSelector,
    list: () => clients.core.listNode({ labelSelector }),
    log,
    onUpsert: (node) => agents.get(node.metadata?.name ?? '')?.nodeChanged(node),
    onDelete: (node) => agents.get(node.metadata?.name ?? '')?.nodeDeleted(),
  });
}
