// Gauges that describe workflow state, read from the workflows themselves by
// the watcher process (it holds a Temporal client) when /metrics is scraped:
// the repair queue (queries list and is-enabled), the taint coordinator (its
// status query), the taint/<node> workflows and the weeder windows (a list by
// TendCapability, then each one's query, at most MAX_WORKFLOWS of each).
// They describe the cluster, not this process: every replica's watcher serves
// the same values, so dashboards and alerts read them with `max by`, never
// `sum` (CLUSTER_STATE in registry.ts, docs/metrics.md).
//
// Bounded and cached: one read at a time, at most once per CACHE_MS (a scrape
// within that answers the last values), each list and each query given
// READ_TIMEOUT_MS. A failed read (no worker answers queries, Temporal down)
// keeps the last values, counts tend_state_read_errors_total and lets
// tend_state_read_age_seconds grow: stale gauges are visible as such. Of many
// workflows, one that does not answer (its task queue unpolled) does not fail
// the read: the others are counted, and it in tend_state_unanswered_workflows.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';
import type { Config } from '../config/load.ts';
import { isEnabledQuery, listQuery, REPAIR_QUEUE_WORKFLOW_ID } from '../repair/messages.ts';
import { repairStatuses, type RepairQueueEntry } from '../repair/entry.ts';
import { DETECTED, nodeStatusQuery, REPLACING, SLOTS_WORKFLOW_ID, slotsStatusQuery } from '../taint/messages.ts';
import { queryEach } from '../temporal/query-each.ts';
import { windowQuery } from '../weeder/messages.ts';
import type { WindowSnapshot } from '../weeder/window.ts';
import type { PodStatusRow } from '../taint/node.ts';
import {
  onScrape, repairQueueEnabled, repairQueueEntries, repairQueueItems, stateReadAge, stateReadErrors, stateUnanswered,
  taintBreakerOpen, taintInFlight, taintNodesTainted, taintPods, taintQueued, weederOldestOpen, weederWindows,
} from './registry.ts';

export const CACHE_MS = 10_000;
export const READ_TIMEOUT_MS = 5_000;
export const MAX_WORKFLOWS = 200;

/** Weeder windows by state, and when the oldest open one first opened (undefined when none is), from their window queries. */
export function windowCounts(windows: readonly WindowSnapshot[], now: number): { open: number; armed: number; oldestOpenedAt?: number } {
  let open = 0;
  let armed = 0;
  let oldest: number | undefined;
  for (const w of windows) {
    if (w.stopped || w.failure) continue;
    if (w.armed && w.armed.until > now) armed++;
    else if (w.openedAt !== undefined && w.deadline > now) {
      open++;
      oldest = Math.min(oldest ?? w.openedAt, w.openedAt);
    }
  }
  return { open, armed, ...(oldest !== undefined ? { oldestOpenedAt: oldest } : {}) };
}

/** Weeder windows by state. */
export function windowStates(windows: readonly WindowSnapshot[], now: number): { open: number; armed: number } {
  const { open, armed } = windowCounts(windows, now);
  return { open, armed };
}

/** When the oldest open window (as windowStates counts open ones) first opened; undefined when none is open. */
export const oldestOpenedAt = (windows: readonly WindowSnapshot[], now: number): number | undefined => windowCounts(windows, now).oldestOpenedAt;

/** The operation label of an entry whose operation the configuration does not name. */
export const OTHER_OPERATION = 'other';

/**
 * Repair queue entries by operation and status, as `operation\u0000status` keys: every
 * configured operation with every status (0 when none), and an entry of an operation the
 * configuration does not name under `other` (anyone who may write to the namespace can add
 * any name; a label must not grow with them).
 */
export function entriesByOperation(entries: readonly RepairQueueEntry[], operations: readonly string[]): Map<string, { operation: string; status: string; n: number }> {
  const counts = new Map<string, { operation: string; status: string; n: number }>();
  const known = new Set(operations);
  const add = (operation: string, status: string, n: number) => {
    const key = `${operation}\u0000${status}`;
    const c = counts.get(key);
    if (c) c.n += n;
    else counts.set(key, { operation, status, n });
  };
  for (const operation of known) for (const status of repairStatuses) add(operation, status, 0);
  for (const e of entries) add(known.has(e.operation) ? e.operation : OTHER_OPERATION, e.status, 1);
  return counts;
}

/** Every operation the repair section names, over all its procedures. */
export function configuredOperations(repair: Config['repair']): string[] {
  return [...new Set((repair?.repair_procedures ?? []).flatMap((p) => p.repair_operations.map((o) => o.operation)))];
}

/** Repair queue entries by status (every status present, 0 when none). */
export function itemsByStatus(entries: readonly RepairQueueEntry[]): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(repairStatuses.map((s) => [s, 0]));
  for (const e of entries) counts[e.status] = (counts[e.status] ?? 0) + 1;
  return counts;
}

/** Taint pod rows by the condition they carry now. */
export function podsByCondition(rows: readonly PodStatusRow[]): Record<string, number> {
  const counts: Record<string, number> = { [DETECTED]: 0, [REPLACING]: 0 };
  for (const r of rows) if (r.condition) counts[r.condition] = (counts[r.condition] ?? 0) + 1;
  return counts;
}

type Sections = Pick<Config, 'repair' | 'taintReplacement' | 'weeder'>;

/** Starts reading workflow state at scrape time; returns a function that stops it. */
export function startStateGauges(client: Client, config: Sections): () => void {
  const operations = configuredOperations(config.repair);
  const lastOk = new Map<string, number>();
  let running: Promise<void> | undefined;
  let readAt = 0;
  /** When the oldest open weeder window opened, as of the last read: its age is reckoned at each scrape. */
  let oldestOpen: number | undefined;

  const timed = <T>(fn: () => Promise<T>) => client.withDeadline(Date.now() + READ_TIMEOUT_MS, fn);
  const read = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
      lastOk.set(what, Date.now());
    } catch {
      stateReadErrors.inc({ what });
    }
  };
  /** Each running workflow's answer to `query`: the list under one deadline, each query under its own. */
  const askRunning = async <T>(what: string, capability: string, prefix: string | undefined, query: QueryDefinition<T, []>): Promise<T[]> => {
    const runs = await timed(async () => {
      const found: { workflowId: string; runId: string }[] = [];
      const q = `TendCapability = '${capability}' AND ExecutionStatus = 'Running'`;
      for await (const wf of client.workflow.list({ query: q, pageSize: 100 })) {
        if (!prefix || wf.workflowId.startsWith(prefix)) found.push({ workflowId: wf.workflowId, runId: wf.runId });
        if (found.length >= MAX_WORKFLOWS) break;
      }
      return found;
    });
    const { answers, unanswered } = await queryEach(client, runs, query, { timeoutMs: READ_TIMEOUT_MS, atOnce: MAX_WORKFLOWS });
    stateUnanswered.set({ what }, unanswered.length);
    // None answered: no worker serves these queries, so there is nothing true to show.
    if (answers.length === 0 && unanswered.length > 0) throw new Error(`no ${capability} workflow answered its query`);
    return answers.map((a) => a.value);
  };

  const refresh = async () => {
    const reads: Promise<void>[] = [];
    if (config.repair) {
      reads.push(read('repair', async () => {
        const handle = client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID);
        let entries: RepairQueueEntry[];
        let enabled: boolean;
        try {
          [entries, enabled] = await timed(() => Promise.all([handle.query(listQuery), handle.query(isEnabledQuery)]));
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
          // No queue has been started: nothing to show.
          repairQueueEnabled.reset();
          repairQueueItems.reset();
          repairQueueEntries.reset();
          return;
        }
        repairQueueEnabled.set(enabled ? 1 : 0);
        for (const [status, n] of Object.entries(itemsByStatus(entries))) repairQueueItems.set({ status }, n);
        repairQueueEntries.reset();
        for (const { operation, status, n } of entriesByOperation(entries, operations).values()) repairQueueEntries.set({ operation, status }, n);
      }));
    }
    if (config.taintReplacement) {
      reads.push(read('taint-replacements', async () => {
        try {
          const s = await timed(() => client.workflow.getHandle(SLOTS_WORKFLOW_ID).query(slotsStatusQuery));
          taintInFlight.set(s.inFlight.length);
          taintQueued.set(s.queue.length);
          taintBreakerOpen.set(s.breakerOpen ? 1 : 0);
          taintNodesTainted.set(s.taintedNodes);
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
          for (const g of [taintInFlight, taintQueued, taintBreakerOpen, taintNodesTainted]) g.set(0);
        }
      }));
      reads.push(read('taint-nodes', async () => {
        const rows = (await askRunning('taint-nodes', 'taint', 'taint/', nodeStatusQuery)).flat();
        for (const [condition, n] of Object.entries(podsByCondition(rows))) taintPods.set({ condition }, n);
      }));
    }
    if (config.weeder) {
      reads.push(read('weeder', async () => {
        const windows: WindowSnapshot[] = await askRunning('weeder', 'weeder', undefined, windowQuery);
        const now = Date.now();
        const counts = windowCounts(windows, now);
        weederWindows.set({ state: 'open' }, counts.open);
        weederWindows.set({ state: 'armed' }, counts.armed);
        oldestOpen = counts.oldestOpenedAt;
      }));
    }
    await Promise.all(reads);
  };

  return onScrape(async () => {
    if (!running && Date.now() - readAt >= CACHE_MS) {
      running = refresh().finally(() => {
        readAt = Date.now();
        running = undefined;
      });
    }
    if (running) await running;
    // As of this scrape, also when it answers cached values: the age grows between reads.
    const now = Date.now();
    for (const [what, at] of lastOk) stateReadAge.set({ what }, (now - at) / 1000);
    if (lastOk.has('weeder')) weederOldestOpen.set(oldestOpen === undefined ? 0 : Math.max(0, now - oldestOpen) / 1000);
  });
}
