// The messages of node repair, shared by the `node/<name>` countdown, the repair queue's
// `request-node-repair` update, the watcher and the CLI. A countdown tells the queue only a
// Node's name: the queue reads everything else (the Node, the worker's nodeRepair section, the
// counts its limiters need) in an activity of its own, so a forged ask can make it look again,
// never make it queue what the configuration and the cluster do not call for.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { RefuseReason } from './decide.ts';

/** The TendCapability value of `node/<name>`. */
export const NODE_REPAIR_CAPABILITY = 'node';
/** The countdown's workflow type (its function's name), as readers check what runs under its id. */
export const NODE_REPAIR_WORKFLOW_TYPE = 'nodeRepairWorkflow';
export const NODE_REPAIR_ID_PREFIX = 'node/';
export const nodeRepairWorkflowId = (node: string) => `${NODE_REPAIR_ID_PREFIX}${node}`;
/** The failure type of a node repair refusal (non-retryable: the input is not acceptable). */
export const NODE_REPAIR_REFUSED = 'NodeRepairRefused';
/** The longest Node name: a DNS subdomain. */
export const NODE_NAME_MAX = 253;

/** What `node/<name>` starts with: the Node's name and, continued as new, where it was. */
export interface NodeRepairInput {
  node: string;
  carried?: NodeRepairCarried;
}

/** What a countdown carries across continue-as-new (numbers and short strings only). */
export interface NodeRepairCarried {
  /** The entry it queued, once queued: it then waits for the Node to recover. */
  queued?: { index: string; address: string; operation: string };
  /** Observe mode answered: what would have been queued is recorded; it waits for the Node to recover. */
  observed?: boolean;
  /** Asks refused so far (for the Web UI). */
  refusals: number;
  /** Epoch ms: no ask before (after a refusal). */
  askAt?: number;
}

/** The Node changed (the watcher saw it): read it again. No payload: nothing in it is trusted. */
export const nodeChangedSignal = defineSignal<[]>('nodeChanged');

export const nodeRepairPhases = ['counting', 'asking', 'waiting', 'queued', 'observed', 'recovered'] as const;
export type NodeRepairPhase = (typeof nodeRepairPhases)[number];

/** What `node/<name>` answers to its status query (`tend node describe`, the Web UI). */
export interface NodeRepairStatus {
  node: string;
  phase: NodeRepairPhase;
  /** The condition met, as configured: `Ready=Unknown for 5m`. */
  reason?: string;
  /** Epoch ms: when the condition's duration runs out (counting), or the next ask (waiting). */
  until?: number;
  /** The queue's last answer. */
  answer?: NodeRepairAnswer;
  refusals: number;
}

/** What the countdown asks the repair queue: the Node's name, nothing else. */
export interface NodeRepairAsk {
  node: string;
}

/**
 * Why the queue did not queue an entry: a limiter (decide.ts), the durable pause, a Node that maps
 * to no entry, or a queue that could not decide (`unavailable`: its read of the cluster failed).
 */
export type NodeRepairRefusal = RefuseReason | 'paused' | 'unmappable' | 'not-configured' | 'unavailable';

/** The queue's answer to request-node-repair. */
export type NodeRepairAnswer =
  | { decision: 'enqueued'; index: string; address: string; operation: string; sentence: string }
  /** Observe mode: the entry that would have been queued, none queued. */
  | { decision: 'observed'; address: string; operation: string; sentence: string }
  /** retryAt (epoch ms): when the same ask could be accepted (a planned reboot's wait). */
  | { decision: 'refused'; reason: NodeRepairRefusal; sentence: string; retryAt?: number }
  /** The Node is healthy again, gone, or no longer selected: nothing to repair. */
  | { decision: 'not-needed'; sentence: string };

export const requestNodeRepairUpdate = defineUpdate<NodeRepairAnswer, [NodeRepairAsk]>('request-node-repair');
export const nodeRepairStatusQuery = defineQuery<NodeRepairStatus>('status');
