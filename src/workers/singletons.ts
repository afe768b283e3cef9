// tend's singletons, one per Temporal namespace: `tend-safety` (the pause), `taint-replacements`
// (the taint slots) and `repair-queue`. Each runs on the task queue of the tend that started it;
// when that tend is gone, nothing answers them: no pause or resume, no taint slot granted, no
// repair queue verb. A live tend takes such a singleton over: it finds it on a task queue no
// worker has polled for STALE_POLL_MS (DescribeTaskQueue: an idle live worker polls again at least
// every minute, the server's long poll), reads what it holds, terminates that run, and starts it
// again on its own task queue carrying it. What each carries, and how it is read:
//   - tend-safety: its state (every pause, its revision), from its memo (no worker needed); the
//     new run takes a fresh start's state as pauses (patch safety-takeover-carries).
//   - repair-queue: its entries, enabled flag, next index and deletions in flight (its `carried`
//     query), taken by the new run's input as a continued run's.
//   - taint-replacements: nothing read; a fresh coordinator takes no slot from its input (a forged
//     start could grant any), so every node workflow is asked for the slots it holds
//     (announceSlots), as when the coordinator ended on its own.
// A query needs a worker on the dead task queue: a short-lived Worker in this process polls it,
// with the same workflow code and no activities, just long enough to answer. Two tends taking over
// at once end with one singleton: each terminates the run it read by its run id (only one can),
// and only the one that did starts the new run; a run on a task queue polled meanwhile is left
// alone. A workflow of another type under the id is an impostor, left to the readers' refusals.
// Docs: docs/temporal.md ("When the tend that started a singleton is gone").
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { failureMessage } from '../workflows/failures.ts';
import { log } from '../log.ts';
import { preview } from '../checks/preview.ts';
import { queueStartOptions } from '../activities/repair-queue-client.ts';
import { REPAIR_QUEUE_WORKFLOW_ID } from '../repair/messages.ts';
import { carriedQuery, type QueueState } from '../repair/queue.ts';
import { pauseSignal, pausedOf, SAFETY_WORKFLOW_ID, SAFETY_WORKFLOW_TYPE, type SafetyState } from '../safety/messages.ts';
import { safetyStartOptions, stateOfDescription } from '../safety/pause.ts';
import { announceSlotsSignal, NODE_WORKFLOW_TYPE, SLOTS_WORKFLOW_ID, SLOTS_WORKFLOW_TYPE, slotsStartOptions } from '../taint/messages.ts';

/** A task queue whose newest workflow poll is older than this has no worker (a live one polls again within a minute). */
export const STALE_POLL_MS = 90_000;
/** How often a live tend looks for orphaned singletons. */
export const CHECK_INTERVAL_MS = 15_000;
/** How long the short-lived worker on a dead task queue may take to answer a singleton's query. */
const READ_TIMEOUT_MS = 30_000;
/** The identity of that worker: its polls are not a live tend's (every taker leaves them out). */
export const TAKEOVER_IDENTITY = 'tend-takeover';

/** The repair queue's workflow type (src/workflows/repair-queue.ts). */
const REPAIR_QUEUE_WORKFLOW_TYPE = 'repairQueueWorkflow';

export const SINGLETONS = [
  { id: SAFETY_WORKFLOW_ID, type: SAFETY_WORKFLOW_TYPE },
  { id: SLOTS_WORKFLOW_ID, type: SLOTS_WORKFLOW_TYPE },
  { id: REPAIR_QUEUE_WORKFLOW_ID, type: REPAIR_QUEUE_WORKFLOW_TYPE },
] as const;
export type SingletonId = (typeof SINGLETONS)[number]['id'];

/** The worker's own workflow code: its pre-built bundle, or its sources (bundled by each short-lived worker). */
export type WorkflowCode = { workflowBundle: { codePath: string } | { code: string } } | { workflowsPath: string; bundlerOptions?: { preloadModules?: string[] } };

export interface SingletonsContext {
  connection: NativeConnection;
  client: Client;
  namespace: string;
  /** This tend's own task queue: where a singleton taken over runs from now on. */
  taskQueue: string;
  workflowCode: WorkflowCode;
  signal: AbortSignal;
  intervalMs?: number;
  /** The age of a task queue's newest poll past which it has no worker (STALE_POLL_MS). */
  staleMs?: number;
  /**
   * The singletons this tend can run (default all): tend-safety always; taint-replacements with a
   * taintReplacement section, repair-queue with a repair section (its worker answers their activities).
   */
  serves?: readonly SingletonId[];
}

/** Who polled a task queue for workflow tasks, as DescribeTaskQueue lists them (the server keeps a poller a few minutes). */
export interface QueuePolls {
  /** A poll within staleMs by a worker that is not a taker's short-lived one. */
  live: boolean;
  /** The newest such poll (epoch ms); absent when none is listed. */
  lastPoll?: number;
}

/** The workflow service part DescribeTaskQueue needs (a Client's or a NativeConnection's). */
type TaskQueueService = Pick<Client['workflowService'], 'describeTaskQueue'>;

/** Each worker DescribeTaskQueue lists as polling `taskQueue` for workflow or activity tasks (the server keeps one a few minutes), and its last poll (epoch ms). */
export async function pollersOf(service: TaskQueueService, namespace: string, taskQueue: string, type: 'workflow' | 'activity' = 'workflow'): Promise<{ identity: string; lastPoll: number }[]> {
  const r = await service.describeTaskQueue({
    namespace,
    // temporal.api.enums.v1: TASK_QUEUE_KIND_NORMAL; TASK_QUEUE_TYPE_WORKFLOW / _ACTIVITY (@temporalio/proto's enums are not ESM exports).
    taskQueue: { name: taskQueue, kind: 1 },
    taskQueueType: type === 'workflow' ? 1 : 2,
  });
  return (r.pollers ?? []).map((p) => ({
    identity: p.identity ?? '',
    lastPoll: Number(p.lastAccessTime?.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime?.nanos ?? 0) / 1e6),
  }));
}

/** Whether a worker (other than a taker's) polled `taskQueue` for workflow tasks within `staleMs`, and when last. */
export async function queuePolls(service: TaskQueueService, namespace: string, taskQueue: string, staleMs = STALE_POLL_MS, now = Date.now()): Promise<QueuePolls> {
  const polls = (await pollersOf(service, namespace, taskQueue)).filter((p) => !p.identity.startsWith(TAKEOVER_IDENTITY)).map((p) => p.lastPoll);
  const lastPoll = polls.length > 0 ? Math.max(...polls) : undefined;
  return { live: lastPoll !== undefined && now - lastPoll < staleMs, ...(lastPoll !== undefined ? { lastPoll } : {}) };
}

/**
 * queuePolls of `taskQueue`, waiting up to `graceMs` while no poll is listed at all (a worker
 * started a moment ago has not polled yet); a queue whose pollers are listed but stale is answered at once.
 */
export async function pollsWithin(service: TaskQueueService, namespace: string, taskQueue: string, staleMs: number, graceMs: number): Promise<QueuePolls> {
  const deadline = Date.now() + graceMs;
  let polls = await queuePolls(service, namespace, taskQueue, staleMs);
  while (!polls.live && polls.lastPoll === undefined && Date.now() < deadline) {
    await sleep(500);
    polls = await queuePolls(service, namespace, taskQueue, staleMs);
  }
  return polls;
}

/**
 * What the commands take for a singleton whose tend is gone: a worker polled its task queue, and
 * none has for staleMs. A task queue with no poll listed at all (never polled, or not for the
 * server's few minutes) they leave to the impostor refusal: a live tend takes such a singleton
 * over within a check of its start, so a command meets one only when no live tend takes over.
 */
export const orphaned = (p: QueuePolls): boolean => !p.live && p.lastPoll !== undefined;

/** "at <time> (<n> s ago)", or that none is listed. */
export function lastPollWords(p: QueuePolls, now = Date.now()): string {
  return p.lastPoll === undefined ? 'no poll in the last few minutes'
    : `last polled at ${new Date(p.lastPoll).toISOString()} (${Math.round((now - p.lastPoll) / 1000)} s ago)`;
}

/** A singleton's run as a describe finds it. */
interface Found {
  runId: string;
  type: string;
  taskQueue: string;
}

async function runningRun(client: Client, id: string): Promise<Found | undefined> {
  try {
    const d = await client.workflow.getHandle(id).describe();
    return d.status.name === 'RUNNING' ? { runId: d.runId, type: d.type, taskQueue: d.taskQueue } : undefined;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

export type TakeOver =
  | { outcome: 'absent' | 'ours' }
  /** Another type under the id: left to the readers' refusals. */
  | { outcome: 'impostor'; type: string }
  /** On another task queue that a worker polls: another live tend's. */
  | { outcome: 'live'; taskQueue: string }
  /** Orphaned, but what it holds could not be read: left as it is (said). */
  | { outcome: 'unread'; taskQueue: string; reason: string }
  /** Another tend took it first (its run was gone or terminated before ours could be). */
  | { outcome: 'lost'; taskQueue: string }
  | { outcome: 'taken over'; from: string; lastPoll?: number; runId: string; carried: string };

/** What was carried, in words, for the log. */
function safetyCarried(s: SafetyState): string {
  const paused = pausedOf(s);
  return `revision ${s.revision}, ${paused.length ? `paused: ${paused.join(', ')}` : 'nothing paused'}`;
}
function queueCarried(s: QueueState): string {
  return `${s.entries.length} entr${s.entries.length === 1 ? 'y' : 'ies'}${s.entries.length ? ` (${s.entries.slice(0, 20).map((e) => `${e.index} ${e.status}`).join(', ')}${s.entries.length > 20 ? ', ...' : ''})` : ''}, ` +
    `${s.enabled ? 'enabled' : 'disabled'}, next index ${s.nextIndex}${Object.keys(s.closing).length ? `, ${Object.keys(s.closing).length} deletion(s) in flight` : ''}`;
}
function slotsCarried(announced: number): string {
  return `${announced} node workflow(s) asked to tell the new coordinator the slots they hold and ask again for the ones they wait for`;
}

/**
 * `read` answered by a worker polling the dead `taskQueue` in this process for as long as it takes
 * (READ_TIMEOUT_MS at most): the same workflow code, no activities, an identity of its own
 * (TAKEOVER_IDENTITY) that no taker counts as a live tend's.
 */
export async function throughWorkerOn<T>(ctx: SingletonsContext, taskQueue: string, read: () => Promise<T>): Promise<T> {
  const { Worker } = await import('@temporalio/worker');
  const worker = await Worker.create({
    connection: ctx.connection,
    namespace: ctx.namespace,
    taskQueue,
    ...ctx.workflowCode,
    identity: `${TAKEOVER_IDENTITY} ${process.pid}@${hostname()}`,
    maxCachedWorkflows: 10,
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${READ_TIMEOUT_MS / 1000} s through a worker on task queue "${taskQueue}"`)), READ_TIMEOUT_MS);
  });
  try {
    return await worker.runUntil(() => Promise.race([read(), late]));
  } finally {
    clearTimeout(timer);
  }
}

/** Signals announceSlots to every running node workflow of taint replacement: they tell a fresh coordinator what they hold. */
async function announceSlots(client: Client): Promise<number> {
  let n = 0;
  for await (const w of client.workflow.list({ query: `WorkflowType="${NODE_WORKFLOW_TYPE}" AND ExecutionStatus="Running"` })) {
    await client.workflow.getHandle(w.workflowId).signal(announceSlotsSignal).then(() => n++, (err: unknown) => {
      log.warn({ workflowId: w.workflowId, err: failureMessage(err) }, 'singleton take-over: could not ask a node workflow for its slots');
    });
  }
  return n;
}

/** What a singleton holds, read from its run on the dead task queue, and how to start it again with it. */
interface Reading {
  carried: string;
  start(): Promise<string | void>;
}

async function readSingleton(ctx: SingletonsContext, id: SingletonId, found: Found): Promise<Reading> {
  const { client, taskQueue } = ctx;
  const handle = client.workflow.getHandle(id, found.runId);
  if (id === SAFETY_WORKFLOW_ID) {
    const raw = await client.workflowService.describeWorkflowExecution({ namespace: ctx.namespace, execution: { workflowId: id, runId: found.runId } });
    const state = stateOfDescription(raw, { taskQueue: found.taskQueue });
    if (!state) throw new Error('its run has ended meanwhile');
    return {
      carried: safetyCarried(state),
      start: async () => {
        try {
          await client.workflow.start(SAFETY_WORKFLOW_TYPE, { ...safetyStartOptions(taskQueue, state), workflowIdConflictPolicy: 'FAIL' });
        } catch (err) {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          // Started meanwhile (`tend pause` finding nothing running): its pauses are given to that run.
          for (const c of pausedOf(state)) {
            const p = state.capabilities[c];
            await client.workflow.getHandle(SAFETY_WORKFLOW_ID).signal(pauseSignal, { capabilities: [c], reason: p.reason || 'carried from an earlier tend-safety', ...(p.by ? { by: p.by } : {}) });
          }
          return `a run started meanwhile; its pauses signalled to it (${pausedOf(state).join(', ') || 'none'})`;
        }
      },
    };
  }
  if (id === REPAIR_QUEUE_WORKFLOW_ID) {
    const state = await throughWorkerOn(ctx, found.taskQueue, () => handle.query(carriedQuery));
    return {
      carried: queueCarried(state),
      start: async () => {
        await client.workflow.start(REPAIR_QUEUE_WORKFLOW_TYPE, { ...queueStartOptions(taskQueue, state.nextIndex), args: [state], workflowIdConflictPolicy: 'FAIL' });
      },
    };
  }
  // Nothing is read from the coordinator: a fresh one takes no slot from its input (a forged start
  // could grant any), and its node workflows tell it what they hold.
  return {
    carried: '',
    start: async () => {
      await client.workflow.start(SLOTS_WORKFLOW_TYPE, {
        ...slotsStartOptions(taskQueue, 'taint replacement: cluster-wide slots (taken over from a task queue no worker polled)'), workflowIdConflictPolicy: 'FAIL',
      });
      return slotsCarried(await announceSlots(client));
    },
  };
}

/**
 * Takes singleton `id` over when it runs (tend's own type) on a task queue that no worker has
 * polled for staleMs: reads what it holds, terminates that run (by its run id), and starts it again
 * on ctx.taskQueue carrying it. Says (warn) what it carried. Throws when Temporal cannot be asked.
 */
export async function takeOverIfOrphaned(ctx: SingletonsContext, id: SingletonId): Promise<TakeOver> {
  const { client } = ctx;
  const expected = SINGLETONS.find((s) => s.id === id)!;
  const found = await runningRun(client, id);
  if (!found) return { outcome: 'absent' };
  if (found.type !== expected.type) return { outcome: 'impostor', type: found.type };
  if (found.taskQueue === ctx.taskQueue) return { outcome: 'ours' };
  const staleMs = ctx.staleMs ?? STALE_POLL_MS;
  const service = client.workflowService;
  if ((await queuePolls(service, ctx.namespace, found.taskQueue, staleMs)).live) return { outcome: 'live', taskQueue: found.taskQueue };
  let reading: Reading;
  try {
    reading = await readSingleton(ctx, id, found);
  } catch (err) {
    const reason = failureMessage(err);
    log.error({ workflowId: id, runId: found.runId, taskQueue: found.taskQueue, err: reason },
      `singleton take-over: ${id} runs on task queue "${preview(found.taskQueue, 80)}", which no worker polls, but what it holds could not be read: left as it is`);
    return { outcome: 'unread', taskQueue: found.taskQueue, reason };
  }
  // Once more, right before: a tend that came back meanwhile keeps its singleton, and a run
  // another taker replaced is not this one's.
  const polls = await queuePolls(service, ctx.namespace, found.taskQueue, staleMs);
  if (polls.live) return { outcome: 'live', taskQueue: found.taskQueue };
  if ((await runningRun(client, id))?.runId !== found.runId) return { outcome: 'lost', taskQueue: found.taskQueue };
  const reason = `taken over by a live tend: no worker polls task queue "${found.taskQueue}" (${lastPollWords(polls)}); ` +
    `started again on task queue "${ctx.taskQueue}" with what it held`;
  try {
    await client.workflow.getHandle(id, found.runId).terminate(reason);
  } catch (err) {
    // Another taker terminated it first (it starts the new run), or it ended.
    if (err instanceof WorkflowNotFoundError || /already completed|not found/i.test(failureMessage(err))) return { outcome: 'lost', taskQueue: found.taskQueue };
    throw err;
  }
  let said: string | void;
  try {
    said = await reading.start();
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    said = 'a run was started meanwhile by another tend: it is kept';
  }
  const carried = [reading.carried, said].filter(Boolean).join('; ');
  log.warn({
    workflowId: id, from: found.taskQueue, to: ctx.taskQueue, terminatedRunId: found.runId,
    ...(polls.lastPoll !== undefined ? { lastPoll: new Date(polls.lastPoll).toISOString() } : {}), carried,
  }, `singleton take-over: ${id} ran on task queue "${found.taskQueue}", which no worker has polled (${lastPollWords(polls)}): ` +
    `terminated, and started again on "${ctx.taskQueue}" carrying ${carried}`);
  return { outcome: 'taken over', from: found.taskQueue, ...(polls.lastPoll !== undefined ? { lastPoll: polls.lastPoll } : {}), runId: found.runId, carried };
}

/**
 * Looks for orphaned singletons at once and then every intervalMs until ctx.signal aborts, taking
 * each over (takeOverIfOrphaned). Never throws: a check that fails is logged, and the next one tries again.
 */
export async function keepSingletons(ctx: SingletonsContext): Promise<void> {
  const interval = ctx.intervalMs ?? CHECK_INTERVAL_MS;
  const said = new Map<string, string>();
  while (!ctx.signal.aborted) {
    for (const { id } of SINGLETONS) {
      if (ctx.signal.aborted) break;
      if (ctx.serves && !ctx.serves.includes(id)) continue;
      try {
        const r = await takeOverIfOrphaned(ctx, id);
        // A singleton on another live tend's task queue: said once, not at every check.
        const note = r.outcome === 'live' ? r.taskQueue : '';
        if (note && said.get(id) !== note) {
          log.info({ workflowId: id, taskQueue: note, ours: ctx.taskQueue }, `${id} runs on task queue "${note}", which a worker polls: left to that tend`);
        }
        said.set(id, note);
      } catch (err) {
        if (!ctx.signal.aborted) log.warn({ workflowId: id, err: failureMessage(err) }, 'singleton take-over: the check failed; the next one tries again');
      }
    }
    await sleep(interval, undefined, { signal: ctx.signal }).catch(() => undefined);
  }
}

/** A command found a singleton on a dead task queue, and no live tend took it over in time (or none can). */
export class NoTakeOver extends Error {}

/**
 * For the commands that find singleton `id` on a task queue no worker polls (`dead`): says so and
 * waits until it runs on `ours` (a live tend took it over), no longer than a take-over can take (the
 * dead queue's last poll plus STALE_POLL_MS, two checks and a read). Refuses at once when no worker
 * polls `ours` either: nothing there would take it over.
 */
export async function awaitTakeOver(
  client: Client, namespace: string, id: SingletonId, ours: string, dead: { taskQueue: string; polls: QueuePolls }, say: (line: string) => void,
): Promise<void> {
  const gone = `${id} runs on task queue "${dead.taskQueue}", which no worker has polled (${lastPollWords(dead.polls)}): the tend that started it is gone`;
  const mine = await queuePolls(client.workflowService, namespace, ours, STALE_POLL_MS);
  if (!mine.live) {
    throw new NoTakeOver(`${gone}, and no worker polls this configuration's task queue "${ours}" either (${lastPollWords(mine)}) to take it over: ` +
      'start `tend run` with this configuration; nothing was sent');
  }
  const now = Date.now();
  const withinMs = Math.max(0, (dead.polls.lastPoll ?? now) + STALE_POLL_MS - now) + 2 * CHECK_INTERVAL_MS + READ_TIMEOUT_MS;
  say(`tend: ${gone}; waiting up to ${Math.ceil(withinMs / 1000)} s for the live tend on task queue "${ours}" to take it over`);
  const deadline = now + withinMs;
  for (;;) {
    const found = await runningRun(client, id);
    if (found?.taskQueue === ours) {
      say(`tend: ${id} was taken over: it runs on task queue "${ours}" (run ${found.runId})`);
      return;
    }
    if (Date.now() >= deadline) {
      throw new NoTakeOver(`${gone}, and no tend took it over within ${Math.ceil(withinMs / 1000)} s ` +
        `(${found ? `it still runs on task queue "${found.taskQueue}"` : 'it is not running'}): does the tend polling "${ours}" take singletons over (\`tend run\` logs "singleton take-over")? nothing was sent`);
    }
    await sleep(1000);
  }
}
