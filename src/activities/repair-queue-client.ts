// Starting the repair queue where it is not running, for every caller that asks it something:
// the CLI (src/starters/repair-commands.ts) and a Node's countdown asking for a repair
// (src/activities/node-repair.ts). A new queue's indexes continue past every earlier queue's.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { parse } from '../checks/shape.ts';
import { MAX_INDEX, REPAIR_QUEUE_WORKFLOW_ID } from '../repair/messages.ts';
import { indexSchema } from '../repair/validate.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';

/**
 * The index a new queue starts from: past every `repair/<index>` workflow an
 * earlier queue left (a queue reset: terminated, started afresh), so a new
 * entry never shares an id, a state file or Events with an old one.
 */
export async function firstFreeIndex(client: Client): Promise<number> {
  const ids: string[] = [];
  for await (const w of client.workflow.list({ query: 'TendCapability="repair"' })) ids.push(w.workflowId);
  return indexAfter(ids);
}

/**
 * One past the highest `repair/<index>` among workflow ids. An id whose index no entry can have
 * (past MAX_INDEX, not a safe integer: planted by hand) is skipped, so it cannot make the new
 * queue's indexes unsafe or use them up; the queue itself refuses an add past MAX_INDEX.
 */
export function indexAfter(workflowIds: Iterable<string>): number {
  let highest = 0;
  for (const id of workflowIds) {
    const m = /^repair\/([1-9]\d*)$/.exec(id);
    if (m && parse(indexSchema, m[1]).ok && Number(m[1]) <= MAX_INDEX) highest = Math.max(highest, Number(m[1]));
  }
  return highest + 1;
}

/** An update or a describe found no running queue. */
export const notRunning = (err: unknown) => err instanceof WorkflowNotFoundError ||
  (err instanceof Error && /not found|already completed/i.test(err.message));

/** How the queue is started (with an update, USE_EXISTING: a queue started meanwhile is used). */
export function queueStartOptions(taskQueue: string, nextIndex: number) {
  return {
    workflowId: REPAIR_QUEUE_WORKFLOW_ID,
    taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    args: [{ entries: [], nextIndex, enabled: true, closing: {} }],
    staticSummary: 'repair queue (CKE): entries, enabled flag; `tend repair-queue list`',
    typedSearchAttributes: [{ key: TendCapability, value: 'repair' }, { key: TendTarget, value: REPAIR_QUEUE_WORKFLOW_ID }],
  };
}
