// The activities of a Node's countdown (`node/<name>`, src/workflows/node-repair.ts): reading
// the Node against the worker's own nodeRepair section (the workflow is told a name only), and
// recording what the repair queue answered (an Event on the Node, a counter). What the queue
// reads to decide is src/activities/node-repair-queue.ts.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { Counter } from 'prom-client';
import { preview } from '../checks/preview.ts';
import { dns1123SubdomainProblem } from '../config/kube-names.ts';
import type { NodeRepairConfig } from '../config/node-repair.ts';
import { matches, type LabelSelector } from '../config/selector.ts';
import { isNotFound } from '../kube/api.ts';
import type { KubeClients } from '../kube/client.ts';
import { registry } from '../metrics/registry.ts';
import { enqueueDecision, matchReason, unhealthyMatch } from '../noderepair/decide.ts';
import { NODE_REPAIR_REFUSED, requestNodeRepairUpdate, type NodeRepairAnswer, type NodeRepairRefusal } from '../noderepair/messages.ts';
import type { RepairQueueEntry } from '../repair/entry.ts';
import { listQuery, REPAIR_QUEUE_WORKFLOW_ID } from '../repair/messages.ts';
import { impostor } from '../temporal/identity.ts';
import { TendNode } from '../search-attributes.ts';
import { firstFreeIndex, notRunning, queueStartOptions } from './repair-queue-client.ts';
import { nodeViewOf, type KubeNodeLike } from '../noderepair/node.ts';
import { activityOccurrence, noteEvent } from './events.ts';
import { recordWould } from './safety-gate.ts';

/** What a countdown learns of its Node. */
export type NodeReading =
  /** The worker has no nodeRepair section: the countdown ends. */
  | { state: 'off' }
  | { state: 'gone' }
  /** nodeSelector no longer selects it. */
  | { state: 'unselected' }
  | { state: 'healthy' }
  /** It meets `reason` (as configured) since `since`; from `expiresAt` on it is unhealthy (epoch ms). */
  | { state: 'unhealthy'; reason: string; since: number; expiresAt: number };

const DECISIONS = ['enqueued', 'observed', 'refused', 'not-needed'] as const;
const REFUSALS: readonly NodeRepairRefusal[] = ['recent-entry', 'rebooting', 'cluster-limit', 'storm', 'paused', 'unmappable', 'not-configured', 'unavailable'];

export const nodeRepairDecisions = new Counter({
  name: 'tend_node_repair_decisions_total',
  help: 'Answers of the repair queue to Node countdowns whose condition ran out: enqueued, observed (observe mode), refused (by refusal: a limiter, the pause, a Node that maps to no entry), not-needed.',
  labelNames: ['decision', 'refusal'] as const,
  registers: [registry],
});

const refuse = (message: string): never => {
  throw ApplicationFailure.nonRetryable(`node repair: refused: ${message}`, NODE_REPAIR_REFUSED);
};

/** How long an ask waits for the queue's list before it asks by an update anyway. */
const LIST_WAIT_MS = 5000;

/** The namespaces found to have TendNode (a search attribute is not removed while tend runs). */
const nodeAttributeSeen = new Set<string>();

/** The queue's update failed (its read of the cluster did): an answer the countdown asks again after. */
function unavailable(err: WorkflowUpdateFailedError): NodeRepairAnswer {
  return { decision: 'refused', reason: 'unavailable', sentence: `the repair queue could not decide: ${(err.cause?.message ?? err.message).slice(0, 500)}` };
}

/** The node name a workflow passed, checked: a DNS subdomain. */
export function checkedNodeName(node: unknown): string {
  if (typeof node !== 'string' || dns1123SubdomainProblem(node)) return refuse(`${preview(node, 80)} is not a node name`);
  return node;
}

/** What a countdown reads of its Node, as of `now`, by the section (pure: the e2e and unit tests share it). */
export function readingOf(node: KubeNodeLike | undefined, config: NodeRepairConfig | undefined, now: number): NodeReading {
  if (!config) return { state: 'off' };
  if (!node) return { state: 'gone' };
  if (!matches(config.nodeSelector as LabelSelector, node.metadata?.labels ?? {})) return { state: 'unselected' };
  const match = unhealthyMatch(nodeViewOf(node), config.unhealthyConditions, now);
  if (!match) return { state: 'healthy' };
  return { state: 'unhealthy', reason: matchReason(match), since: match.since, expiresAt: match.expiresAt };
}

/**
 * What the queue's list (a query: no history, no update) answers alone, before an update is
 * asked: the entry this Node's earlier ask queued, still unfinished (an ask retried after its
 * answer was lost gets the same entry, not a refusal by it); or a refusal by one recent entry per
 * machine, or by maximumRepairQueueEntries. In a zone outage most countdowns ask a full queue
 * again and again: each such ask is answered here (Temporal allows a workflow ten updates in
 * flight, and 342 asks at once were refused by that limit). Whatever may queue an entry is still
 * decided by the update, against the queue's own state.
 */
export function listAnswer(config: NodeRepairConfig, name: string, node: KubeNodeLike | undefined, entries: readonly RepairQueueEntry[], now: number): NodeRepairAnswer | undefined {
  const address = node?.status?.addresses?.find((a) => a.type === config.address.type && a.address !== '')?.address;
  if (address === undefined) return undefined;
  const own = entries.find((e) => e.address === address && e.nodename === name && !e.deleted && (e.status === 'queued' || e.status === 'processing'));
  if (own) return { decision: 'enqueued', index: own.index, address, operation: own.operation, sentence: `repair entry ${own.index} queued for Node ${name}: ${address} (${own.operation}), as asked before` };
  // As the queue counts them: every entry it lists, those being deleted too.
  const d = enqueueDecision({ address, machineType: '', operation: '' }, {
    recentEntries: entries, newReports: 0, nodes: { selected: 0, healthy: 0 }, now, limits: { ...config.limits, minHealthy: 0 },
  });
  return d.decision === 'refuse' && (d.reason === 'recent-entry' || d.reason === 'cluster-limit') ? { decision: 'refused', reason: d.reason, sentence: d.sentence } : undefined;
}

/** A Node read fresh; undefined when it is gone. */
export async function readNodeOrGone(kube: KubeClients, name: string): Promise<KubeNodeLike | undefined> {
  try {
    return await kube.core.readNode({ name }) as KubeNodeLike;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The Event a queue's answer leaves on the Node: reason and type (observe's record is recordWould's). */
function eventOf(answer: NodeRepairAnswer): { reason: string; type: 'Normal' | 'Warning' } | undefined {
  switch (answer.decision) {
    case 'enqueued': return { reason: 'NodeRepairQueued', type: 'Normal' };
    case 'refused': return { reason: 'NodeRepairRefused', type: 'Warning' };
    default: return undefined;
  }
}

export function createNodeRepairActivities(kube: KubeClients | undefined, config: NodeRepairConfig | undefined) {
  return {
    /** The Node read fresh, and what it means for its countdown. */
    async nodeRepairRead(input: { node: string }): Promise<NodeReading> {
      const name = checkedNodeName(input?.node);
      if (!config) return { state: 'off' };
      if (!kube) return refuse('no Kubernetes connection');
      return readingOf(await readNodeOrGone(kube, name), config, Date.now());
    },

    /**
     * Asks the repair queue (request-node-repair) for the Node's entry, starting the queue on this
     * worker's task queue when none runs. A queue that is not tend's (another type, or another
     * tend's task queue) is not asked: the answer says why. The queue's list is read first
     * (answeredByList): what it answers alone costs no update.
     */
    async nodeRepairAsk(input: { node: string }): Promise<NodeRepairAnswer> {
      const node = checkedNodeName(input?.node);
      const { client, info } = Context.current();
      // The queue starts the entry with TendNode: on a namespace without it the server would fail
      // the queue's workflow task at every try, holding the whole queue. Asked until it is there.
      const namespace = info.workflowNamespace ?? client.options.namespace;
      if (!nodeAttributeSeen.has(namespace)) {
        const { customAttributes } = await client.connection.operatorService.listSearchAttributes({ namespace });
        if (!customAttributes?.[TendNode.name]) {
          return { decision: 'refused', reason: 'not-configured', sentence: `the Temporal namespace ${namespace} has no search attribute ${TendNode.name}, which an entry queued for a Node carries: run \`tend setup temporal\`` };
        }
        nodeAttributeSeen.add(namespace);
      }
      const handle = client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID);
      try {
        const d = await handle.describe();
        const found = d.status.name === 'RUNNING' ? impostor(REPAIR_QUEUE_WORKFLOW_ID, { type: d.type, taskQueue: d.taskQueue }, { type: 'repairQueueWorkflow', taskQueues: [info.taskQueue] }) : undefined;
        if (found) return { decision: 'refused', reason: 'not-configured', sentence: found };
        if (d.status.name === 'RUNNING') {
          // A list the queue does not answer soon (its worker busy, as in an outage) is no answer: the update decides.
          const listed = await Promise.race([handle.query(listQuery), new Promise<undefined>((r) => setTimeout(() => r(undefined), LIST_WAIT_MS).unref())]).catch(() => undefined);
          const early = config && kube && listed ? listAnswer(config, node, await readNodeOrGone(kube, node), listed, Date.now()) : undefined;
          if (early) return early;
          return await handle.executeUpdate(requestNodeRepairUpdate, { args: [{ node }] });
        }
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError) return unavailable(err);
        if (!notRunning(err)) throw err;
      }
      try {
        return await client.workflow.executeUpdateWithStart(requestNodeRepairUpdate, {
          args: [{ node }],
          startWorkflowOperation: new WithStartWorkflowOperation('repairQueueWorkflow', queueStartOptions(info.taskQueue, await firstFreeIndex(client))),
        });
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError) return unavailable(err);
        throw err;
      }
    },

    /**
     * What the repair queue answered, recorded: an Event on the Node (NodeRepairQueued,
     * NodeRepairRefused; observe mode's WouldEnqueue), and tend_node_repair_decisions_total.
     * The answer is the queue's: only its fixed fields become labels, its sentence a bounded note.
     */
    async nodeRepairRecord(input: { node: string; answer: NodeRepairAnswer }): Promise<void> {
      const node = checkedNodeName(input?.node);
      const answer = input?.answer;
      const decision = (DECISIONS as readonly string[]).includes(answer?.decision) ? answer.decision : 'other';
      const refusal = answer?.decision === 'refused' && REFUSALS.includes(answer.reason) ? answer.reason : '';
      nodeRepairDecisions.inc({ decision, refusal });
      if (!answer || typeof answer.sentence !== 'string') return;
      // Worded by the queue (names in it through shown()); bounded all the same.
      const note = answer.sentence.slice(0, 900);
      const regarding = { apiVersion: 'v1', kind: 'Node', name: node };
      if (answer.decision === 'observed') {
        await recordWould(kube, { capability: 'repair', action: 'enqueue', regarding, note, dedupKey: activityOccurrence(), kind: 'Node' });
        return;
      }
      const e = eventOf(answer);
      if (e) await noteEvent(kube, { regarding, reason: e.reason, type: e.type, action: answer.decision === 'enqueued' ? 'Enqueue' : 'Refuse', note, dedupKey: activityOccurrence() });
    },
  };
}
