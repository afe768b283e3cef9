// Who runs under a well-known workflow id. Anyone with write access to the
// namespace can start a workflow of any type, on any task queue, under an id
// tend uses (`tend-safety`, `repair-queue`, `taint-replacements`, ...); a reader
// that finds one checks that it is tend's before it believes it, and fails
// closed, naming the impostor, when it is not.
import { preview } from '../checks/preview.ts';

/** What a describe of the execution says (a client's WorkflowExecutionDescription, or the raw proto's fields). */
export interface Found {
  type?: string | null;
  taskQueue?: string | null;
}

export interface Expected {
  /** The workflow function's name. */
  type: string;
  /** The task queues tend's workers poll for it; absent: any. */
  taskQueues?: readonly string[];
}

/**
 * Why the workflow found under `workflowId` is not tend's, or undefined when it is. The
 * reason names the id, the type and the task queue found (each cut short: they are untrusted).
 */
export function impostor(workflowId: string, found: Found, expected: Expected): string | undefined {
  const type = found.type ?? '';
  const queue = found.taskQueue ?? '';
  if (type !== expected.type) {
    return `workflow ${workflowId} is of type ${preview(type, 80)}, not ${expected.type}: not tend's (an impostor under its id?)`;
  }
  if (expected.taskQueues && !expected.taskQueues.includes(queue)) {
    return `workflow ${workflowId} runs on task queue ${preview(queue, 80)}, not on ${expected.taskQueues.map((q) => JSON.stringify(q)).join(' or ')}: not tend's (an impostor under its id?)`;
  }
  return undefined;
}

/** The raw describe response's type and task queue (DescribeWorkflowExecution). */
export function foundOfDescription(r: { workflowExecutionInfo?: { type?: { name?: string | null } | null; taskQueue?: string | null } | null }): Found {
  return { type: r.workflowExecutionInfo?.type?.name ?? undefined, taskQueue: r.workflowExecutionInfo?.taskQueue ?? undefined };
}
