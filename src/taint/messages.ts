// The signals and queries of the taint workflows, shared by the workflows, the
// watcher and the CLI. Workflow ids: `taint/<node>` per node, and
// `taint-replacements` for the cluster-wide slots.
import { TendCapability, TendTarget } from '../search-attributes.ts';
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { MatchedTaint } from './match.ts';
import { pastLimits } from '../checks/limits.ts';
import { checkMessage } from '../checks/message.ts';
import { anyValue, array, maxItems, maxLength, minLength, number, object, optional, parse, string } from '../checks/shape.ts';
import type { NodeLimit } from './breaker.ts';
import type { Grant, SlotRequest } from './slots.ts';

export const TAINT_CAPABILITY = 'taint';
export const SLOTS_WORKFLOW_ID = 'taint-replacements';
export const nodeWorkflowId = (node: string) => `taint/${node}`;
/** The workflow types (their functions' names), as readers check what runs under the ids above. */
export const NODE_WORKFLOW_TYPE = 'taintNodeWorkflow';
export const SLOTS_WORKFLOW_TYPE = 'taintReplacementsWorkflow';

/** The failure type of every taint replacement refusal (non-retryable: the input or the node is not acceptable). */
export const TAINT_REFUSED = 'TaintRefused';
/** The pod conditions taint replacement sets. */
export const DETECTED = 'NodeTaintDetected';
export const REPLACING = 'NodeTaintReplacing';

/** A pod's state in its node's workflow (src/taint/node.ts tells how it moves). */
export const podStates = ['Detected', 'Replacing', 'Queued', 'NoController', 'Refused', 'Evicting', 'Blocked', 'Evicted', 'Replaced'] as const;
export type PodState = (typeof podStates)[number];

/** A row of a node workflow's status query (`tend taint status`, the metrics). */
export interface PodStatusRow {
  node: string;
  namespace: string;
  pod: string;
  taint: string;
  condition: typeof DETECTED | typeof REPLACING | '';
  since: string;
  /** When it will be (or was) replaced: ISO time, or a reason it will not be. */
  replaceAt: string;
  state: PodState;
  attempts: number;
  lastError?: string;
}

/**
 * Bounds on what a node's workflow takes from a message: the taints a signal may name
 * (a Node carries a handful), the uids of one grant (a node's pods), each string's length.
 */
export const NODE_MESSAGE_BOUNDS = Object.freeze({ taints: 64, uids: 1000, uidChars: 128, keyChars: 317 });

// --- taint/<node> ---------------------------------------------------------

/**
 * The watcher's view of the node: its matching taints (empty: none left). The
 * workflow takes it as "look again": it reads the Node's taints and the
 * settings itself; only each taint's seenAt (for taints without timeAdded) is
 * used, and only back to a few minutes ago.
 */
export interface NodeTaintsMessage {
  taints: MatchedTaint[];
}
export const nodeTaintsSignal = defineSignal<[NodeTaintsMessage]>('nodeTaints');

/** A managed pod was scheduled on the node (or changed): list the node's pods again. */
export const podsChangedSignal = defineSignal('podsChanged');

/** From the coordinator: these pods (by UID) may be replaced now. */
export const replacementGrantedSignal = defineSignal<[{ uids: string[] }]>('replacementsGranted');

export const nodeStatusQuery = defineQuery<PodStatusRow[]>('status');

/**
 * The slots a node's workflow holds (granted, or being used) and asks for, as its own state
 * says: what the coordinator believes when something tells it that a node gave slots back.
 * Both empty once the workflow is ending.
 */
export interface NodeSlots {
  held: string[];
  asking: string[];
  /**
   * Of those held, the slots the pod's eviction found granted at the coordinator itself: only
   * these may a coordinator adopt (a grant is a signal anyone may forge). Absent from older workers.
   */
  confirmed?: { uid: string; pod: string }[];
}
export const nodeSlotsQuery = defineQuery<NodeSlots>('slots');

// --- taint-replacements -----------------------------------------------------

export interface SlotSettings {
  maxConcurrentReplacements: number;
  maxTaintedNodes: NodeLimit;
  /** The limit is FDB's maxFaultDomainsWithTaintedProcessGroups (breaker.ts faultDomainLimit); the counts are of nodes holding managed pods. */
  faultDomains?: boolean;
  /** How often a grant's holder is checked (slots.ts GRANT_CHECK_SECONDS); set by the worker only. */
  grantCheckSeconds?: number;
}
/** "The settings may have changed": the coordinator reads them from the worker's configuration (the payload is not used). */
export const slotSettingsSignal = defineSignal<[SlotSettings?]>('settings');
/** "Node taints changed": the coordinator counts the Nodes itself (the payload is not used). */
export const nodeCountsSignal = defineSignal<[{ taintedNodes: number; totalNodes: number }?]>('nodeCounts');
/** A node's pods that are due: one signal for all of them. */
export const requestReplacementSignal = defineSignal<[{ node: string; requests: SlotRequest[] }]>('requestReplacements');
/**
 * Replacements that ended, or requests taken back, by the node's workflow. A hint: the
 * coordinator frees only what the node's workflow, asked itself (nodeSlotsQuery, or a
 * describe when it has ended), no longer holds or asks for.
 */
export const releaseReplacementSignal = defineSignal<[{ node: string; uids: string[] }]>('releaseReplacements');
/** The node's workflow is ending: a hint, checked as releaseReplacements is. */
export const withdrawNodeSignal = defineSignal<[{ node: string }]>('withdrawNode');
/**
 * To taint/<node>, from the watcher after it started a fresh coordinator (the
 * previous one ended, with whatever it knew): tell it which slots you hold,
 * and ask again for the ones you wait for.
 */
export const announceSlotsSignal = defineSignal('announceSlots');
/** To the coordinator: slots a node's workflow holds (answering announceSlots); counted in flight. */
export const slotsHeldSignal = defineSignal<[{ node: string; held: SlotRequest[] }]>('slotsHeld');

export interface SlotsStatus {
  maxConcurrentReplacements: number;
  maxTaintedNodes: NodeLimit;
  taintedNodes: number;
  totalNodes: number;
  breakerOpen: boolean;
  /** The counts are of nodes holding managed pods, the limit FDB's (SlotSettings.faultDomains). */
  faultDomains?: boolean;
  queue: SlotRequest[];
  inFlight: Grant[];
  granted: number;
  peakInFlight: number;
}
export const slotsStatusQuery = defineQuery<SlotsStatus>('status');

/** How tend starts the coordinator on `taskQueue` (the watcher, or a live tend taking it over): its id, empty input, summary and search attributes. */
export function slotsStartOptions(taskQueue: string, staticSummary: string) {
  return {
    workflowId: SLOTS_WORKFLOW_ID, taskQueue, args: [{}] as [Record<string, never>], staticSummary,
    typedSearchAttributes: [{ key: TendCapability, value: TAINT_CAPABILITY }, { key: TendTarget, value: SLOTS_WORKFLOW_ID }],
  };
}

// --- reading messages from outside --------------------------------------------------------
// Anyone with write access to the namespace can send these: each reader takes any JSON value,
// checks it with src/checks/message.ts (measured first, then field by field), never throws, and
// returns what it could take and, when it refused something, why (a reason, never the value).

/** A field of a message that may be anything. */
export function fieldOf(m: unknown, field: string): unknown {
  return typeof m === 'object' && m !== null && !Array.isArray(m) ? (m as Record<string, unknown>)[field] : undefined;
}

/** Why an item of a node's message names another node than the message does. */
export function sameNode(item: unknown, node: unknown): string | undefined {
  return fieldOf(item, 'node') === node ? undefined : 'an item names another node than its message';
}

/**
 * Hands each item of `m[field]` (at most `max`) to `take`, with the message's node; a message
 * past the bounds is refused whole. Why anything was refused (the items counted), or undefined.
 */
export function takeEach(m: unknown, field: string, max: number, take: (item: unknown, node: unknown) => string | undefined): string | undefined {
  const why = pastLimits(m);
  const list = fieldOf(m, field);
  if (why) return why;
  if (!Array.isArray(list)) return `its ${field} is not a list`;
  if (list.length > max) return `more than ${max} in ${field}`;
  const node = fieldOf(m, 'node');
  let refused = 0;
  let first: string | undefined;
  for (const item of list) {
    const no = take(item, node);
    if (no) {
      refused++;
      first ??= no;
    }
  }
  return first && `${refused} of ${list.length} (${first})`;
}

/** A grant from the coordinator: at most NODE_MESSAGE_BOUNDS.uids pod uids (an item that is none is skipped). */
const grantShape = object({
  uids: array(anyValue, 'its uids are not a list', maxItems(NODE_MESSAGE_BOUNDS.uids, `more than ${NODE_MESSAGE_BOUNDS.uids} uids`)),
});
const uidShape = string(undefined, minLength(1), maxLength(NODE_MESSAGE_BOUNDS.uidChars));

/** The uids of a grant (any value); none, and why, when the message is refused. */
export function grantedUids(m: unknown): { uids: string[]; why?: string } {
  const c = checkMessage(grantShape, m, 'a grant');
  if (!c.ok) return { uids: [], why: c.reason };
  return { uids: c.value.uids.filter((u): u is string => parse(uidShape, u).ok) };
}

/** The watcher's message: the node's configured taints as it sees them (match.ts MatchedTaint), each with its first sight. */
const hintsShape = object({ taints: optional(array(anyValue, 'its taints are not a list')) });
const key = string(undefined, maxLength(NODE_MESSAGE_BOUNDS.keyChars));
/** What a hint needs of a taint (the other fields of match.ts MatchedTaint are the node's to read). */
const hintShape = object({ key, effect: key, seenAt: number() });

/**
 * The watcher's first sights of a node's taints (any value): the first NODE_MESSAGE_BOUNDS.taints,
 * those well formed; none, and why, when the message is refused. No payload is a plain "look again".
 */
export function taintHints(m: unknown): { taints: { key: string; effect: string; seenAt: number }[]; why?: string } {
  if (m === undefined) return { taints: [] };
  const c = checkMessage(hintsShape, m, 'the taints');
  if (!c.ok) return { taints: [], why: c.reason };
  return {
    taints: (c.value.taints ?? []).slice(0, NODE_MESSAGE_BOUNDS.taints).flatMap((t) => {
      const h = parse(hintShape, t);
      return h.ok ? [h.value] : [];
    }),
  };
}
