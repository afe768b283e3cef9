// One query asked of many workflows, each under its own deadline: a run whose
// task queue no worker polls (a stopped worker, a window left by another
// deployment) holds a query for the server's query timeout, so one such run
// must cost the caller at most `timeoutMs`, and must not hide the others'
// answers. Used by `tend weeder list` and by the watcher's state gauges.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';

export interface Run {
  workflowId: string;
  runId?: string;
}

export interface QueryEachResult<T> {
  /** The runs that answered, in the order given. */
  answers: { run: Run; value: T }[];
  /** The ids of the runs that did not answer in time (or failed the query), sorted. */
  unanswered: string[];
}

export interface QueryEachOptions {
  /** How long one run's answer is waited for. */
  timeoutMs: number;
  /** Runs asked at once (the rest wait their turn). */
  atOnce: number;
}

/** Asks each run `query`; runs gone since they were listed are left out, runs that do not answer are named. */
export async function queryEach<T>(client: Client, runs: readonly Run[], query: QueryDefinition<T, []>,
  { timeoutMs, atOnce }: QueryEachOptions): Promise<QueryEachResult<T>> {
  const results: (QueryEachResult<T>['answers'][number] | undefined)[] = new Array(runs.length);
  const unanswered: string[] = [];
  const ask = async (i: number) => {
    const run = runs[i]!;
    try {
      results[i] = { run, value: await client.withDeadline(Date.now() + timeoutMs, () => client.workflow.getHandle(run.workflowId, run.runId).query(query)) };
    } catch (err) {
      // Ended between the list and the query: nothing to show. Anything else: no answer.
      if (!(err instanceof WorkflowNotFoundError)) unanswered.push(run.workflowId);
    }
  };
  for (let i = 0; i < runs.length; i += atOnce) {
    await Promise.all(runs.slice(i, i + atOnce).map((_, j) => ask(i + j)));
  }
  const answers = results.filter((r) => r !== undefined);
  return { answers, unanswered: unanswered.sort() };
}
