// The repair queue's updates, queries and signals: shared by the workflows,
// the `tend repair-queue` CLI and the docs' `temporal workflow update execute`
// lines (the names are the ckecli verbs). Pure.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { RepairConfig, RepairOperation } from '../config/repair.ts';
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

export interface DrainSettings {
  protected_namespaces?: RepairConfig['protected_namespaces'];
  protected_job_pods?: RepairConfig['protected_job_pods'];
  evict_retries: number;
  evict_interval: number;
  eviction_timeout_seconds: number;
}

export interface EntryInput {
  entry: RepairQueueEntry;
  operation: RepairOperation;
  drain: DrainSettings;
  timeScale: number;
  enabled: boolean;
}
