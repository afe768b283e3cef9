// The signals and queries of the taint workflows, shared by the workflows, the
// watcher and the CLI. Workflow ids: `taint/<node>` per node, and
// `taint-replacements` for the cluster-wide slots.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { MatchedTaint } from './match.ts';
import type { NodeLimit } from './breaker.ts';
import type { PodStatusRow } from './node.ts';
import type { Grant, SlotRequest } from './slots.ts';

export const TAINT_CAPABILITY = 'taint';
export const SLOTS_WORKFLOW_ID = 'taint-replacements';
export const nodeWorkflowId = (node: string) => `taint/${node}`;

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

// --- taint-replacements -----------------------------------------------------

export interface SlotSettings {
  maxConcurrentReplacements: number;
  maxTaintedNodes: NodeLimit;
  /** How often a grant's holder is checked (slots.ts GRANT_CHECK_SECONDS); set by the worker only. */
  grantCheckSeconds?: number;
}
/** "The settings may have changed": the coordinator reads them from the worker's configuration (the payload is not used). */
export const slotSettingsSignal = defineSignal<[SlotSettings?]>('settings');
/** "Node taints changed": the coordinator counts the Nodes itself (the payload is not used). */
export const nodeCountsSignal = defineSignal<[{ taintedNodes: number; totalNodes: number }?]>('nodeCounts');
/** A node's pods that are due: one signal for all of them. */
export const requestReplacementSignal = defineSignal<[{ node: string; requests: SlotRequest[] }]>('requestReplacements');
/** Replacements that ended, or requests taken back. */
export const releaseReplacementSignal = defineSignal<[{ uids: string[] }]>('releaseReplacements');
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
  queue: SlotRequest[];
  inFlight: Grant[];
  granted: number;
  peakInFlight: number;
}
export const slotsStatusQuery = defineQuery<SlotsStatus>('status');
