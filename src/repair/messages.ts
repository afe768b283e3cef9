// The repair queue's updates, queries and signals: shared by the workflows,
// the `tend repair-queue` CLI and the docs' `temporal workflow update execute`
// lines (the names are the ckecli verbs). Pure.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { RepairQueueEntry, RepairRequest } from './entry.ts';

export const REPAIR_QUEUE_WORKFLOW_ID = 'repair-queue';
export const repairEntryWorkflowId = (index: string) => `repair/${index}`;

export interface AddInput {
  requests: RepairRequest[];
}

export const addUpdate = defineUpdate<RepairQueueEntry[], [AddInput]>('add');
export const deleteUpdate = defineUpdate<RepairQueueEntry, [{ index: string }]>('delete');
export const deleteFinishedUpdate = defineUpdate<string[], []>('delete-finished');
export const deleteUnfinishedUpdate = defineUpdate<string[], []>('delete-unfinished');
export const enableUpdate = defineUpdate<boolean, []>('enable');
export const disableUpdate = defineUpdate<boolean, []>('disable');
export const resetBackoffUpdate = defineUpdate<number, []>('reset-backoff');

export const listQuery = defineQuery<RepairQueueEntry[]>('list');
export const isEnabledQuery = defineQuery<boolean>('is-enabled');

/** From an entry's workflow to the queue: its new fields, or that it is gone (deleted or cancelled). */
export interface EntryReport {
  index: string;
  fields?: Partial<RepairQueueEntry>;
  removed?: boolean;
}
export const entryReportSignal = defineSignal<[EntryReport]>('entry-report');

/** From the queue to a running entry. */
export const setEnabledSignal = defineSignal<[boolean]>('set-enabled');
export const resetEntryBackoffSignal = defineSignal<[]>('reset-backoff');

/**
 * What the queue starts an entry's workflow with: keys only. The commands,
 * drain settings and timings are looked up by (machine type, operation, step)
 * in the worker's own configuration when an activity runs
 * (src/repair/validate.ts checks every field; docs/repair.md, "Trust").
 */
export interface EntryInput {
  index: string;
  address: string;
  machine_type: string;
  operation: string;
  serial?: string;
  enabled: boolean;
}
