// The node repair watch: a Node informer over the Nodes nodeRepair.nodeSelector selects. A Node
// that meets one of the unhealthy conditions gets its countdown, `node/<name>`, started (or told
// it changed); a Node whose countdown runs and that changed otherwise (recovered, deselected,
// deleted) tells it, so its timer is dropped at once. Only what the countdown reads changes a
// Node's key (its condition met, and since when), not each heartbeat. The resync compares the
// running countdowns with the unhealthy Nodes, so that nothing rests on a lost signal.
import type * as k8s from '@kubernetes/client-node';
import { WorkflowNotFoundError } from '@temporalio/client';
import { readingOf, type NodeReading } from '../activities/node-repair.ts';
import type { NodeRepairConfig } from '../config/node-repair.ts';
import { toSelectorString, type LabelSelector } from '../config/selector.ts';
import { errorMessage } from '../kube/api.ts';
import { kubeClients } from '../kube/client.ts';
import { listPages } from '../kube/prepared.ts';
import { log as rootLog } from '../log.ts';
import { startWatchedInformer } from '../metrics/informer.ts';
import { NODE_REPAIR_CAPABILITY, NODE_REPAIR_ID_PREFIX, NODE_REPAIR_WORKFLOW_TYPE, nodeChangedSignal, nodeRepairWorkflowId } from '../noderepair/messages.ts';
import type { KubeNodeLike } from '../noderepair/node.ts';
import { pool } from '../pool.ts';
import { TendCapability, TendNode, TendTarget } from '../search-attributes.ts';
import { lacksNodeAttribute } from './node-commands.ts';
import { listKept } from './taint-watch.ts';
import type { CapabilityWatch, WatchContext } from './watcher.ts';

/** How often the Nodes are relisted and the running countdowns compared with the unhealthy Nodes. */
export const RESYNC_MS = 30_000;
const NODE_LIST_PAGE = 500;
/** Signals in flight at once (a zone outage makes hundreds of Nodes unhealthy together). */
const CONCURRENCY = 16;

const RUNNING_QUERY = `TendCapability="${NODE_REPAIR_CAPABILITY}" AND ExecutionStatus="Running"`;

/** What the watch keeps of a Node: its name, labels (the selector) and conditions' type, status and time. */
export function keptNode(node: k8s.V1Node): k8s.V1Node {
  const m = node.metadata;
  return {
    metadata: { ...(m?.name !== undefined && { name: m.name }), ...(m?.resourceVersion !== undefined && { resourceVersion: m.resourceVersion }), ...(m?.labels && { labels: m.labels }) },
    status: { conditions: (node.status?.conditions ?? []).map((c) => ({ type: c.type, status: c.status, ...(c.lastTransitionTime && { lastTransitionTime: c.lastTransitionTime }) })) },
  };
}

/** What of a reading makes its countdown look again: a change of state, of condition or of its start. */
const keyOf = (r: NodeReading) => (r.state === 'unhealthy' ? `unhealthy|${r.reason}|${r.since}` : r.state);

export function nodeRepairWatch(config: NodeRepairConfig): CapabilityWatch {
  return async (ctx) => {
    await new NodeRepairWatch(config, ctx).run();
  };
}

class NodeRepairWatch {
  private readonly log = rootLog.child({ capability: 'nodeRepair' });
  /** What each Node's countdown was last told (keyOf), for the Nodes that have one running or started. */
  private readonly told = new Map<string, string>();
  private readonly pending = new Map<string, NodeReading>();
  private draining = false;
  /** Whether countdowns are started with TendNode: until the namespace answers that it has no such attribute. */
  private nodeAttribute = true;
  private readonly config: NodeRepairConfig;
  private readonly ctx: WatchContext;

  constructor(config: NodeRepairConfig, ctx: WatchContext) {
    this.config = config;
    this.ctx = ctx;
  }

  async run(): Promise<void> {
    const kube = kubeClients(this.ctx.kc);
    const labelSelector = toSelectorString(this.config.nodeSelector as LabelSelector);
    const nodes = startWatchedInformer<k8s.V1Node>('nodeRepair', 'nodes', {
      kc: this.ctx.kc, path: '/api/v1/nodes', labelSelector, keep: keptNode, log: this.log, resyncMs: RESYNC_MS,
      list: () => listKept(listPages(kube.nodes.list, { labelSelector, limit: NODE_LIST_PAGE }), keptNode),
      onUpsert: (node) => this.changed(node.metadata!.name!, node),
      onDelete: (node) => this.changed(node.metadata!.name!, undefined),
      onResync: (all) => void this.resync(all),
    });
    try {
      // A watcher started while countdowns run (after a crash, say) compares them with the Nodes at once.
      await nodes.synced;
      void this.resync(nodes.cache.list());
      await new Promise<void>((resolve) => (this.ctx.signal.aborted ? resolve() : this.ctx.signal.addEventListener('abort', () => resolve(), { once: true })));
    } finally {
      await nodes.stop();
    }
  }

  /** A Node was listed, changed or deleted: its countdown is started or told when what it reads changed. */
  private changed(name: string, node: k8s.V1Node | undefined): void {
    const reading = readingOf(node as KubeNodeLike | undefined, this.config, Date.now());
    const told = this.told.get(name);
    if (told === keyOf(reading)) return;
    // A healthy Node without a countdown: nothing to tell.
    if (reading.state !== 'unhealthy' && told === undefined) return;
    this.pending.set(name, reading);
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.pending.size > 0 && !this.ctx.signal.aborted) {
        const batch = [...this.pending];
        this.pending.clear();
        await pool(batch, CONCURRENCY, ([name, reading]) => this.tell(name, reading));
      }
    } finally {
      this.draining = false;
    }
  }

  /** Starts the countdown (or signals it) for an unhealthy Node; tells a running one its Node changed. */
  private async tell(name: string, reading: NodeReading): Promise<void> {
    const { client, temporal } = this.ctx;
    const workflowId = nodeRepairWorkflowId(name);
    try {
      if (reading.state === 'unhealthy') {
        const start = (withNode: boolean) => client.workflow.signalWithStart(NODE_REPAIR_WORKFLOW_TYPE, {
          workflowId, taskQueue: temporal.taskQueue, args: [{ node: name }], signal: nodeChangedSignal, signalArgs: [],
          staticSummary: `node repair: Node ${name}'s countdown (${reading.reason}), then a repair queue entry`,
          typedSearchAttributes: [{ key: TendCapability, value: NODE_REPAIR_CAPABILITY }, { key: TendTarget, value: name }, ...(withNode ? [{ key: TendNode, value: name }] : [])],
        });
        await start(this.nodeAttribute).catch(async (err: unknown) => {
          // A namespace set up before TendNode: the countdown runs without it, and the operator is told once.
          if (!this.nodeAttribute || !lacksNodeAttribute(err)) throw err;
          this.nodeAttribute = false;
          this.log.warn({ node: name }, 'the Temporal namespace has no search attribute TendNode: node repair countdowns start without it; run `tend setup temporal`');
          await start(false);
        });
        this.told.set(name, keyOf(reading));
        return;
      }
      await client.workflow.getHandle(workflowId).signal(nodeChangedSignal).catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
      this.told.delete(name);
    } catch (err) {
      // Not recorded as told: the next change or resync tries again.
      this.told.delete(name);
      this.log.warn({ node: name, err: errorMessage(err) }, 'telling a Node\'s countdown failed; the next resync tries again');
    }
  }

  /**
   * After the first list and each relist: every unhealthy Node without a running countdown (one
   * that ended, was terminated, or whose start failed) gets one; a countdown whose Node is healthy
   * and was not told so by this watcher, or is no longer listed, is told.
   */
  private async resync(all: k8s.V1Node[]): Promise<void> {
    let running: Set<string>;
    try {
      running = new Set<string>();
      for await (const wf of this.ctx.client.workflow.list({ query: RUNNING_QUERY })) running.add(wf.workflowId);
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'listing the running countdowns failed; the next resync tries again');
      return;
    }
    const now = Date.now();
    const listed = new Set<string>();
    for (const node of all) {
      const name = node.metadata!.name!;
      listed.add(name);
      const reading = readingOf(node as KubeNodeLike, this.config, now);
      const runs = running.has(nodeRepairWorkflowId(name));
      if (this.pending.has(name)) continue;
      // An unhealthy Node without its countdown gets one; a countdown whose Node is healthy (or
      // deselected) that this watcher never told, as after a restart, is told.
      if (reading.state === 'unhealthy' ? !runs : runs && !this.told.has(name)) {
        this.told.delete(name);
        this.pending.set(name, reading);
      }
    }
    for (const id of running) {
      const name = id.slice(NODE_REPAIR_ID_PREFIX.length);
      if (!listed.has(name)) this.pending.set(name, { state: 'gone' });
    }
    void this.drain();
  }
}
