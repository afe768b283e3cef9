// The taint replacement watch: a Node informer turns changes in a node's
// configured taints into a signal (starting the workflow when needed) to
// `taint/<node>`; a pod informer on managed pods tells that workflow when a
// managed pod lands on a tainted node, so pods scheduled later get their
// conditions too. Disabled, it cancels every taint workflow (which clears
// their conditions) and watches nothing.
import * as k8s from '@kubernetes/client-node';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { breakerFromFaultDomains, taintReplacementActive, type TaintReplacementConfig } from '../config/taint-replacement.ts';
import { toSelectorString } from '../config/label-selector.ts';
import { errorMessage } from '../kube/api.ts';
import { kubeClients, type KubeClients } from '../kube/client.ts';
import { listPages, type ListPage } from '../kube/prepared.ts';
import type { RunningInformer } from '../kube/informer.ts';
import { log as rootLog } from '../log.ts';
import { LatestSender } from '../latest.ts';
import { drainKeyed } from '../pool.ts';
import { startWatchedInformer } from '../metrics/informer.ts';
import { TendCapability, TendNode, TendTarget } from '../search-attributes.ts';
import { lacksNodeAttribute } from './node-commands.ts';
import { matchingTaints, sameTaints, taintId, type MatchedTaint } from '../taint/match.ts';
import { runningTaintWorkflows } from '../taint/running.ts';
import {
  announceSlotsSignal, DETECTED, NODE_WORKFLOW_TYPE, nodeCountsSignal, nodeTaintsSignal, nodeWorkflowId, podsChangedSignal, SLOTS_WORKFLOW_ID,
  SLOTS_WORKFLOW_TYPE, slotSettingsSignal, slotsStartOptions, TAINT_CAPABILITY, type SlotSettings,
} from '../taint/messages.ts';
import { impostor } from '../temporal/identity.ts';
import type { CapabilityWatch, WatchContext } from './watcher.ts';

const CONCURRENCY = 16;
/**
 * How often the Node informer relists, and the running taint workflows are
 * compared with the tainted Nodes: a tainted node whose workflow ended
 * (terminated, failed, timed out) gets a new one, a workflow whose node lost
 * its taints meanwhile is told, and a coordinator that ended is started again.
 */
export const RESYNC_MS = 30_000;
/** Pods a page when the pod informer lists (and relists, every RESYNC_MS): each page trimmed as it comes. */
export const POD_LIST_PAGE = 500;
/** Nodes a page when the Node informer lists: a Node read whole is kilobytes (its images, its conditions). */
export const NODE_LIST_PAGE = 500;

/**
 * What the taint watch reads of a pod (podChanged: its node, its deletion, whether it is marked), all
 * its informer keeps of one: a managed pod of a large cluster is kilobytes (its managedFields among them).
 */
export function keptPod(pod: k8s.V1Pod): k8s.V1Pod {
  const m = pod.metadata;
  const detected = pod.status?.conditions?.filter((c) => c.type === DETECTED);
  return {
    metadata: {
      ...(m?.name !== undefined && { name: m.name }), ...(m?.namespace !== undefined && { namespace: m.namespace }),
      ...(m?.uid !== undefined && { uid: m.uid }), ...(m?.resourceVersion !== undefined && { resourceVersion: m.resourceVersion }),
      ...(m?.deletionTimestamp && { deletionTimestamp: m.deletionTimestamp }),
    },
    spec: { ...(pod.spec?.nodeName !== undefined && { nodeName: pod.spec.nodeName }), containers: [] },
    ...(detected?.length ? { status: { conditions: detected } } : {}),
  };
}

/** What the taint watch reads of a Node (its taints), all its informer keeps of one. */
export function keptNode(node: k8s.V1Node): k8s.V1Node {
  const m = node.metadata;
  return {
    metadata: { ...(m?.name !== undefined && { name: m.name }), ...(m?.resourceVersion !== undefined && { resourceVersion: m.resourceVersion }) },
    ...(node.spec?.taints && { spec: { taints: node.spec.taints } }),
  };
}

/**
 * Every object of one LIST, page by page (the first page's snapshot), each trimmed by `keep` as its
 * page comes, so that a relist of a large cluster never holds every object whole.
 */
export async function listKept<T>(pages: AsyncIterable<ListPage<T>>, keep: (o: T) => T): Promise<{ items: T[]; metadata: { resourceVersion?: string } }> {
  const items: T[] = [];
  let resourceVersion: string | undefined;
  for await (const page of pages) {
    for (const o of page.items) items.push(keep(o));
    // Every page of one list is of the first page's snapshot.
    resourceVersion ??= page.metadata?.resourceVersion;
  }
  return { items, metadata: { ...(resourceVersion !== undefined && { resourceVersion }) } };
}

/**
 * The managed pods, POD_LIST_PAGE at a time, read as plain JSON (not client-node's models) and
 * trimmed (keptPod). Each list is a consistent read, paged: with resourceVersion 0 (client-go's
 * way) the API server answered in one page of every pod, and the watcher peaked at 413 MiB in a
 * zone outage of 10,000 pods instead of 234 (docs/taint.md).
 */
export function listKeptPods(kube: Pick<KubeClients, 'pods'>, query: { namespace?: string; labelSelector: string; fieldSelector: string }): Promise<k8s.V1PodList> {
  return listKept(listPages(kube.pods.list, { ...query, limit: POD_LIST_PAGE }), keptPod);
}

/** Every Node, NODE_LIST_PAGE at a time, read as plain JSON and trimmed (keptNode), as listKeptPods. */
export function listKeptNodes(kube: Pick<KubeClients, 'nodes'>): Promise<k8s.V1NodeList> {
  return listKept(listPages(kube.nodes.list, { limit: NODE_LIST_PAGE }), keptNode);
}
/** How long after a failed signal it is tried again (for every node that failed, each with its latest state). */
const RETRY_MS = 2000;

export function taintWatch(config: TaintReplacementConfig): CapabilityWatch {
  return async (ctx) => {
    if (!taintReplacementActive(config)) {
      await disable(ctx.client);
      return;
    }
    await new TaintWatch(config, ctx).run();
  };
}

/** Feature off: cancel every taint workflow; each clears its pods' conditions as it goes. */
async function disable(client: Client): Promise<void> {
  const log = rootLog.child({ capability: 'taint' });
  const ids = await runningTaintWorkflows(client);
  const nodes = ids.filter((id) => id !== SLOTS_WORKFLOW_ID);
  for (const id of [...nodes, ...ids.filter((id) => id === SLOTS_WORKFLOW_ID)]) {
    try {
      await client.workflow.getHandle(id).cancel();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  log.info({ cancelled: ids }, 'taint replacement is disabled: cancelled its workflows (their conditions are cleared)');
}

class TaintWatch {
  private readonly log = rootLog.child({ capability: 'taint' });
  private readonly slotSettings: SlotSettings;
  private readonly taskQueue: string;
  /** What each node's workflow was last told: its matching taints. */
  private readonly sent = new Map<string, MatchedTaint[]>();
  /** Pods already reported to their node's workflow (uid), per node. */
  private readonly podsReported = new Map<string, Set<string>>();
  private readonly pendingNodes = new Set<string>();
  /** node|taintId -> when this watcher first saw that taint (ms). */
  private readonly seenAt = new Map<string, number>();
  /** The nodes that carry a configured taint, as the Node informer last told (the breaker's count). */
  private readonly tainted = new Set<string>();
  private readonly pendingPods = new Set<string>();
  /** When each node's workflow was last started or signalled (ms): the resync leaves recent ones alone (visibility lags). */
  private readonly sentAt = new Map<string, number>();
  /** Nodes (and pod notices) whose signal failed, waiting for the retry timer; none is ever dropped. */
  private readonly retryNodes = new Set<string>();
  private readonly retryPods = new Set<string>();
  /** The breaker's inputs (how many nodes carry a configured taint, out of how many), as the coordinator last got them. */
  private readonly counts = new LatestSender(
    () => ({ taintedNodes: this.tainted.size, totalNodes: this.nodes.cache.list().length }),
    async (counts) => {
      try {
        await this.ctx.client.workflow.getHandle(SLOTS_WORKFLOW_ID).signal(nodeCountsSignal, counts);
      } catch (err) {
        this.log.warn({ err: errorMessage(err) }, 'sending node counts to the coordinator failed; will retry');
        throw err;
      }
    });
  private synced = false;
  private draining = false;
  private retry: NodeJS.Timeout | undefined;
  private resyncing = false;
  /** Why what runs under the coordinator's id is not tend's, as the last resync found: nothing is sent meanwhile. */
  private impostor: string | undefined;
  /**
   * Whether taint/<node> is started with TendNode: until the namespace answers that it has no
   * such attribute (set up by an older tend, `tend setup temporal` not run again since), after
   * which runs start without it rather than not at all.
   */
  private nodeAttribute = true;
  private nodes!: RunningInformer<k8s.V1Node>;

  private readonly config: TaintReplacementConfig;
  private readonly ctx: WatchContext;

  constructor(config: TaintReplacementConfig, ctx: WatchContext) {
    this.config = config;
    this.ctx = ctx;
    this.slotSettings = {
      maxConcurrentReplacements: config.maxConcurrentReplacements, maxTaintedNodes: config.breaker.maxTaintedNodes,
      ...(breakerFromFaultDomains(config) ? { faultDomains: true } : {}),
    };
    this.taskQueue = ctx.temporal.taskQueue;
  }

  async run(): Promise<void> {
    const { kc, signal, client } = this.ctx;
    // The coordinator first: node workflows ask it for slots (none while an impostor holds its id; each resync looks again).
    this.impostor = await this.coordinatorFound();
    if (!this.impostor) await this.startCoordinator();
    const kube = kubeClients(kc);
    this.nodes = startWatchedInformer<k8s.V1Node>('taint', 'nodes', {
      kc, path: '/api/v1/nodes', list: () => listKeptNodes(kube), keep: keptNode, log: this.log,
      resyncMs: RESYNC_MS,
      onUpsert: (node) => this.nodeChanged(node.metadata!.name!, node),
      onDelete: (node) => this.nodeChanged(node.metadata!.name!, undefined),
      onResync: () => void this.resync(),
    });
    const labelSelector = toSelectorString(this.config.podSelector);
    const fieldSelector = 'spec.nodeName!=';
    const pods = startWatchedInformer<k8s.V1Pod>('taint', 'pods', {
      kc,
      path: '/api/v1/pods',
      ...(this.config.namespaces ? { namespaces: this.config.namespaces } : {}),
      list: (namespace) => listKeptPods(kube, { ...(namespace ? { namespace } : {}), labelSelector, fieldSelector }),
      keep: keptPod,
      labelSelector, fieldSelector, log: this.log,
      resyncMs: RESYNC_MS,
      onUpsert: (pod) => this.podChanged(pod),
      onDelete: () => undefined,
    });
    try {
      await this.nodes.synced;
      const running = await runningTaintWorkflows(client);
      if (!this.impostor) {
        // The coordinator may have just been started fresh (nothing told us
        // otherwise): every node workflow tells it the slots it holds.
        await this.announceSlots(running);
        await this.reconcileRunning(running);
      }
      this.synced = true;
      this.log.info({ nodes: this.nodes.cache.list().length }, 'taint watch synced');
      this.kick();
      await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    } finally {
      clearTimeout(this.retry);
      await Promise.all([this.nodes.stop(), pods.stop()]);
    }
  }

  /**
   * Why what runs under the coordinator's id is not this tend's coordinator (said in the log),
   * or undefined (it is, or nothing runs there). An impostor would take every node's requests
   * and could grant as it likes: while one is there, nothing is started or told (fails closed).
   */
  private async coordinatorFound(): Promise<string | undefined> {
    const found = await this.ctx.client.workflow.getHandle(SLOTS_WORKFLOW_ID).describe().catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
    return found?.status.name === 'RUNNING' ? this.checkCoordinator({ type: found.type, taskQueue: found.taskQueue }) : undefined;
  }

  /** Starts the coordinator, or signals the one running. */
  private async startCoordinator(): Promise<void> {
    await this.ctx.client.workflow.signalWithStart(SLOTS_WORKFLOW_TYPE, {
      ...slotsStartOptions(this.taskQueue, `taint replacement: cluster-wide slots, at most ${this.config.maxConcurrentReplacements} in flight; ` +
        (breakerFromFaultDomains(this.config)
          ? `breaker above ${this.config.breaker.maxTaintedNodes} (at least 1) of the nodes holding managed pods tainted`
          : `breaker above ${this.config.breaker.maxTaintedNodes} tainted nodes`)),
      signal: slotSettingsSignal,
      signalArgs: [this.slotSettings],
    });
  }

  /**
   * The periodic resync (after each relist of the Nodes): compares the running
   * taint workflows with the tainted Nodes, so that nothing depends on a
   * signal that was lost or a workflow that ended on its own.
   */
  private async resync(): Promise<void> {
    if (!this.synced || this.resyncing || this.ctx.signal.aborted) return;
    this.resyncing = true;
    try {
      const running = await runningTaintWorkflows(this.ctx.client);
      // Described, not only listed: an impostor need not carry tend's search attributes.
      this.impostor = await this.coordinatorFound();
      // Fails closed: no node workflow is started or told anything while an impostor holds the coordinator's id.
      if (this.impostor) return;
      if (!running.includes(SLOTS_WORKFLOW_ID)) {
        this.log.warn('the taint coordinator is not running; starting it again');
        await this.startCoordinator();
        await this.announceSlots(running);
        this.counts.forget();
      }
      await this.reconcileRunning(running);
      this.kick();
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'taint resync failed; the next one retries');
    } finally {
      this.resyncing = false;
    }
  }

  /**
   * Asks every running node workflow to tell the coordinator which slots it
   * holds (and to ask again for those it waits for): a coordinator started
   * fresh knows nothing of the grants of the one before it, and would grant
   * beyond the limit. Harmless to one that knows them already.
   */
  private async announceSlots(running: readonly string[]): Promise<void> {
    const nodes = running.filter((id) => id !== SLOTS_WORKFLOW_ID);
    for (let i = 0; i < nodes.length; i += CONCURRENCY) {
      await Promise.all(nodes.slice(i, i + CONCURRENCY).map(async (id) => {
        try {
          await this.ctx.client.workflow.getHandle(id).signal(announceSlotsSignal);
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) this.log.warn({ workflowId: id, err: errorMessage(err) }, 'asking a node workflow for its slots failed');
        }
      }));
    }
  }

  /**
   * Why what runs under the coordinator's id is not this tend's coordinator (another type, or
   * another task queue: an impostor, or an earlier tend with another `temporal.taskQueue`, which
   * this worker never serves, so no slot would ever be granted), or undefined.
   */
  private coordinatorImpostor(found: { type?: string | null; taskQueue?: string | null }): string | undefined {
    const who = impostor(SLOTS_WORKFLOW_ID, found, { type: SLOTS_WORKFLOW_TYPE, taskQueues: [this.taskQueue] });
    return who && `${who}; taint replacement starts and tells no node workflow until it ends ` +
      `(temporal workflow terminate --workflow-id ${SLOTS_WORKFLOW_ID})`;
  }

  /** The coordinator's run as a describe finds it: said at start and at every resync while it is not tend's. */
  private checkCoordinator(run: { type: string; taskQueue: string }): string | undefined {
    const who = this.coordinatorImpostor(run);
    if (who) this.log.error({ workflowId: SLOTS_WORKFLOW_ID, type: run.type, taskQueue: run.taskQueue, ours: this.taskQueue }, who);
    return who;
  }

  /** Workflows of nodes that lost their taints (or vanished) while the watcher was away are told so. */
  private async reconcileRunning(running: readonly string[]): Promise<void> {
    const now = Date.now();
    const recent = (node: string) => now - (this.sentAt.get(node) ?? 0) < RESYNC_MS;
    const runningNodes = new Set(running.filter((id) => id.startsWith('taint/')).map((id) => id.slice('taint/'.length)));
    for (const node of runningNodes) {
      const tainted = matchingTaints(this.nodes.cache.get(node)?.spec?.taints, this.config.taintReplacementOptions).length > 0;
      // An untainted node whose workflow still runs: "sent" says tainted, so syncNode tells it.
      if (!tainted && !recent(node)) this.sent.set(node, [{ key: '?', effect: '', durationInSeconds: 0, matchedBy: '?' }]);
    }
    for (const [node, taints] of this.sent) {
      // A tainted node whose workflow is not running (it ended, or never started): start it again.
      if (taints.length > 0 && !runningNodes.has(node) && !recent(node)) {
        this.sent.delete(node);
        this.podsReported.delete(node);
      }
    }
    for (const node of this.nodes.cache.list()) this.pendingNodes.add(node.metadata!.name!);
    for (const node of this.sent.keys()) this.pendingNodes.add(node);
  }

  /** When a node's taint was first seen by this watcher (noted on the informer event, before any queueing). */
  private firstSeen(node: string, t: MatchedTaint): number {
    return this.seenAt.get(`${node}|${taintId(t)}`) ?? Date.now();
  }

  private noteTaints(name: string, node: k8s.V1Node | undefined): void {
    const now = Date.now();
    const current = new Set<string>();
    for (const t of matchingTaints(node?.spec?.taints, this.config.taintReplacementOptions)) {
      const key = `${name}|${taintId(t)}`;
      current.add(key);
      if (!this.seenAt.has(key)) this.seenAt.set(key, now);
    }
    for (const key of this.seenAt.keys()) if (key.startsWith(`${name}|`) && !current.has(key)) this.seenAt.delete(key);
    if (current.size > 0) this.tainted.add(name);
    else this.tainted.delete(name);
    this.counts.changed();
  }

  private nodeChanged(name: string, node: k8s.V1Node | undefined): void {
    this.noteTaints(name, node);
    this.pendingNodes.add(name);
    this.kick();
  }

  private podChanged(pod: k8s.V1Pod): void {
    const node = pod.spec?.nodeName;
    const uid = pod.metadata?.uid;
    if (!node || !uid || pod.metadata?.deletionTimestamp) return;
    if (!(this.sent.get(node)?.length)) return;
    if (pod.status?.conditions?.some((c) => c.type === DETECTED && c.status === 'True')) return;
    const reported = this.podsReported.get(node) ?? new Set<string>();
    if (reported.has(uid)) return;
    reported.add(uid);
    this.podsReported.set(node, reported);
    this.pendingPods.add(node);
    this.kick();
  }

  /** Works through pending nodes, a few at a time; a failure puts the node back and retries shortly. */
  private kick(): void {
    if (!this.synced || this.draining || this.impostor || this.ctx.signal.aborted) return;
    this.draining = true;
    void this.drain().finally(() => {
      this.draining = false;
      if (this.pendingNodes.size > 0 || this.pendingPods.size > 0) this.kick();
    });
  }

  /**
   * The pending nodes, then the nodes with new pods, CONCURRENCY at once (drainKeyed:
   * no lane waits for another's slowest, and a node is never signalled by two at once).
   * The breaker's inputs go to the coordinator before any node workflow is started; when
   * they cannot be delivered (Temporal down), the nodes are not held back for them: their
   * own signals fail or not, and are retried.
   */
  private async drain(): Promise<void> {
    let counted = await this.counts.deliver();
    await drainKeyed([
      {
        pending: this.pendingNodes,
        run: async (node) => {
          if (counted) counted = await this.counts.deliver();
          await this.syncNode(node);
        },
      },
      { pending: this.pendingPods, run: (node) => this.tellPods(node) },
    ], CONCURRENCY);
  }

  /**
   * A signal failed: the node waits for the retry timer with every other node
   * that failed (a batch that fails together, as when Temporal restarts, is
   * retried whole). A retry sends the node's state as it is then, not as it was.
   */
  private later(pods: boolean, node: string, err: unknown, what: string): void {
    this.log.warn({ node, err: errorMessage(err) }, `${what} failed; retrying in ${RETRY_MS / 1000} s`);
    (pods ? this.retryPods : this.retryNodes).add(node);
    if (this.retry || this.ctx.signal.aborted) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      for (const n of this.retryNodes) this.pendingNodes.add(n);
      for (const n of this.retryPods) this.pendingPods.add(n);
      this.retryNodes.clear();
      this.retryPods.clear();
      this.kick();
    }, RETRY_MS);
  }

  private async syncNode(name: string): Promise<void> {
    const node = this.nodes.cache.get(name);
    const taints = node ? matchingTaints(node.spec?.taints, this.config.taintReplacementOptions) : [];
    const prev = this.sent.get(name);
    // Ages count from when this watcher first saw each taint, not from when a worker got to it.
    const seen = new Map((prev ?? []).map((t) => [taintId(t), t.seenAt]));
    for (const t of taints) t.seenAt = seen.get(taintId(t)) ?? this.firstSeen(name, t);
    if (prev && sameTaints(prev, taints)) return;
    if (!prev && taints.length === 0) {
      this.sent.set(name, taints);
      return;
    }
    const message = { taints };
    try {
      if (taints.length > 0) {
        const start = () => this.ctx.client.workflow.signalWithStart(NODE_WORKFLOW_TYPE, {
          workflowId: nodeWorkflowId(name),
          taskQueue: this.taskQueue,
          args: [{ node: name }],
          signal: nodeTaintsSignal,
          signalArgs: [message],
          staticSummary: `taint replacement on node ${name}: ${taints.map((t) => `${t.key}:${t.effect}`).join(', ')}`,
          // TendNode gathers every run for this Node (`tend node describe`); continue-as-new keeps it.
          typedSearchAttributes: [
            { key: TendCapability, value: TAINT_CAPABILITY }, { key: TendTarget, value: name },
            ...(this.nodeAttribute ? [{ key: TendNode, value: name }] : []),
          ],
        });
        await start().catch(async (err: unknown) => {
          if (!this.nodeAttribute || !lacksNodeAttribute(err)) throw err;
          this.nodeAttribute = false;
          this.log.warn({ node: name }, 'the Temporal namespace has no search attribute TendNode: taint workflows start without it; run `tend setup temporal`');
          await start();
        });
      } else {
        this.podsReported.delete(name);
        try {
          await this.ctx.client.workflow.getHandle(nodeWorkflowId(name)).signal(nodeTaintsSignal, message);
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
      }
      this.sent.set(name, taints);
      this.sentAt.set(name, Date.now());
      this.log.info({ node: name, taints: taints.map((t) => `${t.key}:${t.effect}`) }, 'node taints changed');
    } catch (err) {
      this.later(false, name, err, 'signalling the node workflow');
    }
  }

  private async tellPods(node: string): Promise<void> {
    if (!(this.sent.get(node)?.length)) return;
    try {
      await this.ctx.client.workflow.getHandle(nodeWorkflowId(node)).signal(podsChangedSignal);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return;
      this.later(true, node, err, 'telling the node workflow about new pods');
    }
  }

}
