// What `tend repair-queue list` and `tend taint status -o json` print, read from the test process,
// for the waits: a tend CLI process costs about a second of CPU, and a wait that starts one every
// 200 ms takes that CPU from the worker it waits for (and, on 2 cores, from every other test). The
// same reads as the CLI's (the same queries, the same JSON); tests whose subject is the CLI still run it.
import type { Client } from '@temporalio/client';
import { listEntries } from '../../src/starters/repair-commands.ts';
import { taintStatusOf, type TaintStatus } from '../../src/starters/taint-commands.ts';
import { ckeListJson, type RepairQueueEntry } from '../../src/repair/entry.ts';
import { connectClient } from '../../src/temporal/connection.ts';
import { sandbox } from './hooks.ts';

let client: Promise<Client> | undefined;

/** One connection for the file's reads (the default namespace, as the tests' configurations). */
function readClient(): Promise<Client> {
  client ??= connectClient({ address: sandbox().temporalAddress, namespace: 'default', taskQueue: 'unused' });
  return client;
}

/** `tend repair-queue list`, parsed (an empty queue is []). */
export async function queueEntries(): Promise<RepairQueueEntry[]> {
  return (JSON.parse(ckeListJson(await listEntries(await readClient()))) as RepairQueueEntry[] | null) ?? [];
}

export async function queueEntry(index: string): Promise<RepairQueueEntry | undefined> {
  return (await queueEntries()).find((e) => e.index === index);
}

/** `tend taint status -o json` for the workflows on `taskQueue`, parsed. */
export async function taintStatusNow(taskQueue: string): Promise<TaintStatus> {
  return JSON.parse(JSON.stringify(await taintStatusOf(await readClient(), taskQueue))) as TaintStatus;
}

/** What `temporal workflow describe --workflow-id ID` says of its status ('RUNNING', 'COMPLETED', ...), or 'NONE'. */
export async function workflowStatus(id: string): Promise<string> {
  return (await readClient()).workflow.getHandle(id).describe().then((d) => d.status.name, () => 'NONE');
}

/** Terminates every running workflow that `query` finds (a list filter: `TendCapability="repair"`); returns their ids. */
export async function terminateRunning(query: string, reason: string): Promise<string[]> {
  const c = await readClient();
  const ids: string[] = [];
  for await (const wf of c.workflow.list({ query: `(${query}) AND ExecutionStatus="Running"` })) ids.push(wf.workflowId);
  for (const id of ids) await c.workflow.getHandle(id).terminate(reason).catch(() => undefined);
  return ids;
}
