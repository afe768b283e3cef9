// What the repair queue reads before it answers a Node's countdown (request-node-repair,
// src/workflows/repair-queue.ts): the countdown tells it a Node's name and nothing else, so this
// activity reads the rest from the worker's own configuration and the cluster, fresh: the Node,
// whether it still meets an unhealthy condition whose duration has run out, the repair entry it
// maps to, the counts the storm limit needs, a planned reboot, and the gates. The queue then
// decides (src/noderepair/decide.ts) against its own entries, with no await between the decision
// and the add. A forged ask can make it look again, never make it queue what the configuration
// and the cluster do not call for.
import { ApplicationFailure } from '@temporalio/activity';
import type * as k8s from '@kubernetes/client-node';
import type { NodeRepairConfig, NodeRepairLimits } from '../config/node-repair.ts';
import type { RepairConfig } from '../config/repair.ts';
import { matches, toSelectorString, type LabelSelector } from '../config/selector.ts';
import { readNodeOrGone } from './node-repair.ts';
import type { KubeClients } from '../kube/client.ts';
import { listPages, type ListPage } from '../kube/prepared.ts';
import { matchReason, unhealthyMatch } from '../noderepair/decide.ts';
import { NODE_REPAIR_REFUSED, type NodeRepairAnswer } from '../noderepair/messages.ts';
import { inPlannedReboot, nodeViewOf, repairRequestOf, shown, type KubeNodeLike, type RepairRequest } from '../noderepair/node.ts';
import { addressProblem } from '../repair/entry.ts';
import { check, nodeRepairAskSchema } from '../repair/validate.ts';
import { writeHold, type SafetyGates } from './safety-gate.ts';

/** Nodes per page of the count's LIST (as the taint watch lists them). */
export const NODE_COUNT_PAGE = 500;

/** An answer the queue gives as it is: nothing to decide. */
export type FinalAnswer = Extract<NodeRepairAnswer, { decision: 'refused' | 'not-needed' }>;

/** What the queue decides with, when the Node calls for an entry. Plain JSON: it is the activity's result. */
export interface NodeRepairCase {
  node: string;
  request: RepairRequest;
  /** matchReason: `Ready=Unknown for 5m`. */
  reason: string;
  /** Set when the Node is in a planned reboot: since when it has met the condition (epoch ms). */
  rebootingSince?: number;
  /** The Nodes nodeSelector selects, and those of them meeting no unhealthy condition. */
  nodes: { selected: number; healthy: number };
  limits: Pick<NodeRepairLimits, 'maximumRepairQueueEntries' | 'waitSecondsToRepairRebooting' | 'minHealthy'>;
  /** nodeRepair is in observe mode: the queue answers what it would do and adds nothing. */
  observe: boolean;
}

export type NodeRepairAssessment = { answer: FinalAnswer } | NodeRepairCase;

const notNeeded = (sentence: string): { answer: FinalAnswer } => ({ answer: { decision: 'not-needed', sentence } });
const refused = (reason: 'unmappable' | 'not-configured' | 'paused', sentence: string): { answer: FinalAnswer } =>
  ({ answer: { decision: 'refused', reason, sentence } });

const iso = (ms: number) => new Date(ms).toISOString();

const NO_SECTION = refused('not-configured', 'this worker\'s configuration has no nodeRepair section: it queues no repair for a Node');

/** The part of the worker's configuration the queue reads. */
export interface NodeRepairQueueConfig {
  nodeRepair?: NodeRepairConfig | undefined;
  repair?: Pick<RepairConfig, 'repair_procedures'> | undefined;
}

/**
 * What one Node calls for, as of `now`, by the worker's sections (pure): a final answer (it is
 * gone, not selected, healthy, not unhealthy long enough, maps to no entry, or to one the repair
 * section cannot carry out), or the request with the condition it meets.
 */
export function nodeCase(name: string, node: KubeNodeLike | undefined, config: NodeRepairQueueConfig, now: number):
  { answer: FinalAnswer } | { request: RepairRequest; reason: string; since: number; rebooting: boolean } {
  const section = config.nodeRepair;
  if (!section) return NO_SECTION;
  if (!node) return notNeeded(`Node ${name} is gone: nothing to repair`);
  if (!matches(section.nodeSelector as LabelSelector, node.metadata?.labels ?? {})) {
    return notNeeded(`Node ${name} is not selected by nodeRepair.nodeSelector (any more): it is not repaired`);
  }
  const view = nodeViewOf(node);
  const match = unhealthyMatch(view, section.unhealthyConditions, now);
  if (!match) return notNeeded(`Node ${name} meets no unhealthy condition of nodeRepair: it is healthy again`);
  const reason = matchReason(match);
  if (!match.expired) {
    return notNeeded(`Node ${name} meets ${match.condition.type}=${match.condition.status} since ${iso(match.since)}, ` +
      `not yet for ${match.condition.duration.text}: it is unhealthy from ${iso(match.expiresAt)} on`);
  }
  const mapped = repairRequestOf(view, match.condition, section);
  if ('problem' in mapped) return refused('unmappable', mapped.sentence);
  const { request } = mapped;
  const badAddress = addressProblem(request.address);
  if (badAddress) return refused('unmappable', `Node ${name}'s ${section.address.type} address cannot be a repair entry's: ${badAddress}`);
  if (!config.repair) return refused('not-configured', 'this worker\'s configuration has no repair section: nodeRepair queues repair entries, and their steps are its procedures\'');
  const procedures = config.repair.repair_procedures;
  const procedure = procedures.find((p) => p.machine_types.includes(request.machineType));
  if (!procedure?.repair_operations.some((o) => o.operation === request.operation)) {
    const types = procedures.filter((p) => p.repair_operations.some((o) => o.operation === request.operation)).flatMap((p) => p.machine_types);
    return refused('not-configured', `Node ${name}'s machine type ${shown(request.machineType)} (label ${section.machineTypeLabel}) has no repair operation ` +
      `${shown(request.operation)} in the repair section (machine types with it: ${types.length > 0 ? types.join(', ') : 'none'})`);
  }
  return { request, reason, since: match.since, rebooting: inPlannedReboot(view, section.limits) };
}

/** The count the storm limit needs, of one page of selected Nodes, as of `now`: how many, and how many meet no unhealthy condition. */
export function countNodes(nodes: readonly KubeNodeLike[], section: Pick<NodeRepairConfig, 'nodeSelector' | 'unhealthyConditions'>, now: number): { selected: number; healthy: number } {
  let selected = 0;
  let healthy = 0;
  for (const node of nodes) {
    // The API server selected them already; a Node it answered otherwise is not counted.
    if (!matches(section.nodeSelector as LabelSelector, node.metadata?.labels ?? {})) continue;
    selected++;
    // NHC's healthy: a Node whose duration is still running is not.
    if (!unhealthyMatch(nodeViewOf(node), section.unhealthyConditions, now)) healthy++;
  }
  return { selected, healthy };
}

/** How long one count of the selected Nodes serves the asks that come after it. */
export const COUNT_REUSE_MS = 2000;

/** `pageSize`: Nodes per page of the count's LIST (NODE_COUNT_PAGE; smaller in tests, to read several pages). */
export function createNodeRepairQueueActivities(kube: KubeClients | undefined, config: NodeRepairQueueConfig, gates?: SafetyGates, opts: { pageSize?: number } = {}) {
  /**
   * The counts, shared by the asks of a burst: in a zone outage hundreds of countdowns run out
   * together, and each ask reading every selected Node drew 429s from the API server (1,024
   * Nodes, 342 down). A count is reused for COUNT_REUSE_MS, as Node Health Check reads its
   * informer's cache; a failed one is not kept.
   */
  let shared: { at: number; counts: Promise<{ selected: number; healthy: number }> } | undefined;
  function sharedCount(k: KubeClients, section: NodeRepairConfig): Promise<{ selected: number; healthy: number }> {
    const now = Date.now();
    if (shared && now - shared.at < COUNT_REUSE_MS) return shared.counts;
    const counts = countSelected(k, section, now);
    const mine = { at: now, counts };
    shared = mine;
    counts.catch(() => {
      if (shared === mine) shared = undefined;
    });
    return counts;
  }

  /** Every Node nodeSelector selects, page by page: only the counts are kept. */
  async function countSelected(k: KubeClients, section: NodeRepairConfig, now: number): Promise<{ selected: number; healthy: number }> {
    const counts = { selected: 0, healthy: 0 };
    const pages: AsyncIterable<ListPage<k8s.V1Node>> = listPages(k.nodes.list, { labelSelector: toSelectorString(section.nodeSelector as LabelSelector), limit: opts.pageSize ?? NODE_COUNT_PAGE });
    for await (const page of pages) {
      const c = countNodes(page.items as KubeNodeLike[], section, now);
      counts.selected += c.selected;
      counts.healthy += c.healthy;
    }
    return counts;
  }

  return {
    /**
     * For request-node-repair: what the Node calls for, read fresh from the cluster against the
     * worker's own nodeRepair and repair sections. The ask is a Node's name only, checked.
     */
    async nodeRepairAssess(input: { node: string }): Promise<NodeRepairAssessment> {
      const c = check(nodeRepairAskSchema, input, 'nodeRepairAssess');
      if (!c.ok) throw ApplicationFailure.nonRetryable(`node repair: refused: ${c.reason}`, NODE_REPAIR_REFUSED);
      const name = c.value.node;
      const section = config.nodeRepair;
      if (!section) return NO_SECTION;
      if (!kube) return refused('not-configured', 'this worker has no Kubernetes connection: it cannot read the Node');
      const node = await readNodeOrGone(kube, name);
      const found = nodeCase(name, node, config, Date.now());
      if ('answer' in found) return found;
      const nodes = await sharedCount(kube, section);
      const observe = (gates?.modes?.mode('nodeRepair') ?? section.mode) === 'observe';
      // Observe is asked first, as for every write: it adds nothing, so a pause has nothing to stop.
      if (!observe) {
        const hold = writeHold(gates, 'repair');
        if (hold?.kind === 'paused') return refused('paused', `no repair entry is queued while repair is paused: ${hold.message}`);
      }
      const { maximumRepairQueueEntries, waitSecondsToRepairRebooting, minHealthy } = section.limits;
      return {
        node: name, request: found.request, reason: found.reason,
        ...(found.rebooting && { rebootingSince: found.since }),
        nodes, limits: { maximumRepairQueueEntries, waitSecondsToRepairRebooting, minHealthy }, observe,
      };
    },
  };
}
