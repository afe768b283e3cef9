// `tend repair-queue`: ckecli's repair-queue verbs, talking to the
// `repair-queue` workflow by updates (synchronous answers, validated by the
// workflow) and queries. Output as ckecli prints it: `list` CKE's JSON (`null`
// when empty), `delete-finished` / `delete-unfinished` the indexes deleted,
// `is-enabled` true/false, `wait` until the queue is empty. Exit codes: 0 ok,
// 1 refused or failed, 2 usage.
import { InvalidArgumentError, type Command } from 'commander';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { WorkflowNotFoundError, type UpdateDefinition } from '@temporalio/common';
import type { Config } from '../config/load.ts';
import { ckeEntryJson, ckeListJson, isFinished, ZERO_TIME, type RepairQueueEntry, type RepairRequest } from '../repair/entry.ts';
import {
  addUpdate, deleteFinishedUpdate, deleteUnfinishedUpdate, deleteUpdate, disableUpdate, enableUpdate, isEnabledQuery, listQuery,
  MAX_INDEX, MAX_REQUESTS_PER_ADD, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId, resetBackoffUpdate,
} from '../repair/messages.ts';
import { readEntryLog, terminalSafe } from '../repair/logs.ts';
import { requestProblems } from '../repair/procedure.ts';
import { indexSchema } from '../repair/validate.ts';
import { parse } from '../checks/shape.ts';
import { preview } from '../checks/preview.ts';
import { connectClient } from '../temporal/connection.ts';
import { carriedQuery, type QueueState } from '../repair/queue.ts';
import { firstFreeIndex, notRunning, queueStartOptions } from '../activities/repair-queue-client.ts';
import { awaitTakeOver, lastPollWords, NoTakeOver, orphaned, pollersOf, pollsWithin, queuePolls, STALE_POLL_MS } from '../workers/singletons.ts';
export { firstFreeIndex, indexAfter } from '../activities/repair-queue-client.ts';
import {
  configOrSandbox, EXIT_FAILURE, OperatorError, positiveInt, readerConfig, taskQueueOption, UsageError, withConfigOptions, type ConfigFlags, type ReadFlags,
} from './cli-support.ts';
import { columns, outputOption, parseOutputFormat, printOutput, type OutputFormat } from './output.ts';

/** The queue refused a request (its validator said why): exit 1 with that message. */
class RefusedError extends Error {}

/**
 * The repair queue's workflow id is one per Temporal namespace. A queue running on another task
 * queue belongs to another tend (its worker runs it, with that tend's repair configuration): a
 * command from this one would reach it only through that worker. Refused, naming both task queues,
 * while a worker polls that task queue; when none has for a while (that tend is gone), a live tend
 * takes the queue over (src/workers/singletons.ts): the command says so and waits for it, bounded.
 * A closed or absent queue is anyone's to start.
 */
export async function checkQueueOwner(client: Client, config: Config, say: (line: string) => void = (l) => console.error(l)): Promise<{ started: boolean }> {
  let description;
  try {
    description = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { started: false };
    throw err;
  }
  // A closed queue still answers queries, through a worker that replays it.
  if (description.status.name !== 'RUNNING' || description.taskQueue === config.temporal.taskQueue) return { started: true };
  const { namespace, taskQueue } = config.temporal;
  const theirs = await queuePolls(client.workflowService, namespace, description.taskQueue, STALE_POLL_MS);
  if (orphaned(theirs) && description.type === 'repairQueueWorkflow') {
    await awaitTakeOver(client, namespace, REPAIR_QUEUE_WORKFLOW_ID, taskQueue, { taskQueue: description.taskQueue, polls: theirs }, say).catch((err: unknown) => {
      throw err instanceof NoTakeOver ? new OperatorError(`repair-queue: ${err.message}`) : err;
    });
    return { started: true };
  }
  throw new OperatorError(
    `the repair queue (workflow ${REPAIR_QUEUE_WORKFLOW_ID}, run ${description.runId}) in namespace ${namespace} ` +
    `runs on task queue "${description.taskQueue}", but this configuration's task queue is "${taskQueue}": ` +
    `use the configuration of the tend whose worker polls "${description.taskQueue}" (temporal.taskQueue), ` +
    'or end that queue first (`temporal workflow terminate --workflow-id repair-queue`) if it is abandoned');
}

/**
 * Connects, checks the queue is this tend's, and that a worker answers for it: every verb but
 * `list`, `is-enabled` and `wait` on a queue never started goes through the queue's worker
 * (an update, a query), which with no worker would wait until one returns (an update, applied
 * then) or fail after half a minute (a query). Refused at once instead, nothing sent, naming the
 * task queue and its last poll: when the only pollers listed have not polled for
 * LIVE_POLLER_SECONDS (a live worker polls again within a minute); when none is listed at all,
 * after WORKER_GRACE_MS (a worker started a moment ago has not polled yet).
 */
/** How long a verb waits for a worker's first poll before saying none serves the queue. */
const WORKER_GRACE_MS = 10_000;

async function connect(config: Config, needsWorker: 'always' | 'when-started'): Promise<Client> {
  const client = await connectClient(config.temporal);
  try {
    const { started } = await checkQueueOwner(client, config);
    if (needsWorker === 'always' || started) await needWorker(client, config);
  } catch (err) {
    await client.connection.close();
    throw err;
  }
  return client;
}

async function needWorker(client: Client, config: Config): Promise<void> {
  const { namespace, taskQueue } = config.temporal;
  const polls = await pollsWithin(client.workflowService, namespace, taskQueue, LIVE_POLLER_SECONDS * 1000, WORKER_GRACE_MS);
  if (polls.live) return;
  throw new OperatorError(`no worker has polled task queue "${taskQueue}" (temporal.taskQueue) in the last ${LIVE_POLLER_SECONDS}s (${lastPollWords(polls)}), ` +
    'so the repair queue cannot answer; nothing was sent: start `tend run` or `tend worker` with this configuration');
}

/** Runs an update on the queue, starting the queue if it is not running (its indexes continuing past earlier queues'). */
export async function queueUpdate<Ret, Args extends unknown[]>(client: Client, config: Config, def: UpdateDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
  return (await sendUpdate(client, config, def, args)).value;
}

/**
 * queueUpdate with the update's options: its id, and the run it goes to first (`runId`). `sameRun`
 * says whether that run answered; a run started since (after a termination, or a continue-as-new)
 * answers otherwise.
 *
 * An update always goes to a running run, named by its run id. Temporal answers an update to a
 * closed workflow (and an update-with-start whose workflow is closed) with the outcome of an
 * update of the same id in that closed run, starting nothing: an add sent to the queue's id after
 * a reset would get back an entry the ended run took (maybe long finished), and add nothing.
 */
async function sendUpdate<Ret, Args extends unknown[]>(
  client: Client, config: Config, def: UpdateDefinition<Ret, Args>, args: Args, opts: { updateId?: string; runId?: string } = {},
): Promise<{ value: Ret; sameRun: boolean }> {
  const { runId: first, ...options } = opts;
  const send = async (runId: string) => {
    try {
      return await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID, runId)
        .executeUpdate(def as unknown as UpdateDefinition<Ret, [unknown]>, { args, ...options } as unknown as { args: [unknown] });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw new RefusedError(err.cause?.message ?? err.message);
      throw err;
    }
  };
  if (first !== undefined) {
    try {
      return { value: await send(first), sameRun: true };
    } catch (err) {
      if (!notRunning(err)) throw err;
    }
  }
  // The run ended, or none was named: the running queue's run, started when there is none.
  for (let tries = 0; ; tries++) {
    const runId = await runningQueueRun(client, config);
    try {
      return { value: await send(runId), sameRun: false };
    } catch (err) {
      // Ended between the start and the update (a reset, a take-over): once more.
      if (!notRunning(err) || tries === 2) throw err;
    }
  }
}

/** The running queue's run id; a queue is started (its indexes continuing past earlier queues') when none runs. */
async function runningQueueRun(client: Client, config: Config): Promise<string> {
  try {
    const d = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).describe();
    if (d.status.name === 'RUNNING') return d.runId;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  // USE_EXISTING: a queue started meanwhile is the one answered.
  const started = await client.workflow.start('repairQueueWorkflow', queueStartOptions(config.temporal.taskQueue, await firstFreeIndex(client)));
  return started.firstExecutionRunId;
}

/** How long `add` and `add-file` wait for the queue's answer by default (a worker answers in well under a second). */
export const ADD_WITHIN_SECONDS = 30;
/** How long an add waits for the queue's state before it sends (a live worker answers at once). */
const CARRIED_READ_MS = 3000;

/**
 * The update id of an add: the requests' own words, so that Temporal takes a retry of the same add
 * as the same update (one entry, the first answer) while the queue's run remembers it. `after` is
 * the last entry an earlier add of the same requests made, once that one has finished or been
 * deleted: the same requests added again then are a new repair, under an id of their own.
 */
export function addUpdateId(requests: readonly RepairRequest[], after?: string): string {
  const words = requests.map((r) => [r.operation, r.machine_type, r.address, r.serial ?? '']);
  const digest = createHash('sha256').update(JSON.stringify(words)).digest('hex').slice(0, 32);
  return `add-${digest}${after !== undefined ? `-after-${after}` : ''}`;
}

/** An earlier add of the same requests whose entries are still queued or processing: what a retry gets back. */
const stillOpen = (state: { entries: readonly RepairQueueEntry[] }, added: readonly RepairQueueEntry[]) =>
  added.every((a) => state.entries.some((e) => e.index === a.index && !isFinished(e)));

/**
 * Adds `requests` once: under addUpdateId, so that a retry of an add that timed out (applied, or
 * still waiting for a worker) is not a second entry; the queue then answers the first add's
 * entries, said on stderr. Waits `withinMs` at most; then says the request may still be applied
 * when a worker returns, and how to check, and exits 1.
 */
export async function addOnce(client: Client, config: Config, requests: RepairRequest[], withinMs: number): Promise<RepairQueueEntry[]> {
  const deadline = Date.now() + withinMs;
  const bounded = <T>(what: () => Promise<T>) => withinDeadline(client, config, what, deadline, withinMs);
  // The running queue's next index before sending: an answer from that run with entries below it
  // is an earlier add's (Temporal's answer to a retry). Read from the running run only: a closed
  // one answers queries too, and a queue started after it may number from below its next index
  // (from the entries' workflows), where an add's new entry would look like an earlier add's. A
  // worker that does not answer at once (gone a moment ago) leaves it unknown: the add is sent all
  // the same, and its answer taken as it is.
  const before = await withinDeadline(client, config, () => carriedOfRunning(client), Math.min(deadline, Date.now() + CARRIED_READ_MS), withinMs)
    .catch(() => undefined);
  let after: string | undefined;
  // Each hop skips an earlier add of the same requests that has finished; bounded by the entries a queue holds.
  for (let hop = 0; hop <= 1000; hop++) {
    const { value: added, sameRun } = await bounded(() =>
      sendUpdate(client, config, addUpdate, [{ requests }], { updateId: addUpdateId(requests, after), ...(before ? { runId: before.runId } : {}) }));
    const first = added[0];
    // Answered by another run than the one read (started since): an earlier add's entries are in the run that took it.
    if (!before || !sameRun || !first || Number(first.index) >= before.state.nextIndex) return added;
    if (stillOpen(before.state, added)) {
      console.error(`tend: repair-queue: the same request was added before (a retry?): its entr${added.length === 1 ? 'y is' : 'ies are'} ` +
        `${added.map((e) => e.index).join(', ')}, still ${added.map((e) => e.status).join(', ')}; nothing added`);
      return added;
    }
    after = added[added.length - 1]!.index;
  }
  throw new RefusedError('add: the same request was added too many times in this run of the queue');
}

/** The running queue's run and the state it carries; undefined when no queue runs. */
async function carriedOfRunning(client: Client): Promise<{ runId: string; state: QueueState } | undefined> {
  const d = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).describe();
  if (d.status.name !== 'RUNNING') return undefined;
  return { runId: d.runId, state: await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID, d.runId).query(carriedQuery) };
}

/**
 * `what`'s answer, or 'late' once `withinMs` has passed without one: the call is then aborted (an
 * update with start retried later could start a run of its own), not the request it made, which a
 * worker may still take.
 */
export async function answeredWithin<T>(client: Client, what: () => Promise<T>, withinMs: number): Promise<T | 'late'> {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), Math.max(0, withinMs));
  });
  const call = client.withAbortSignal(abort.signal, what);
  try {
    const r = await Promise.race([call, late]);
    if (r !== 'late') return r;
  } finally {
    clearTimeout(timer);
  }
  abort.abort();
  call.catch(() => undefined);
  return 'late';
}

/**
 * `what`, or once `deadline` has passed an error saying the request may still be applied when a
 * worker returns and how to check before retrying.
 */
async function withinDeadline<T>(client: Client, config: Config, what: () => Promise<T>, deadline: number, withinMs: number): Promise<T> {
  const r = await answeredWithin(client, what, deadline - Date.now());
  if (r !== 'late') return r;
  const polls = await queuePolls(client.workflowService, config.temporal.namespace, config.temporal.taskQueue, LIVE_POLLER_SECONDS * 1000).catch(() => undefined);
  throw new OperatorError(`the repair queue did not answer within ${withinMs / 1000} s` +
    (polls ? ` (task queue "${config.temporal.taskQueue}": ${lastPollWords(polls)})` : '') +
    ': no worker took the request, which may still be applied when one returns; check with `tend repair-queue list` before retrying ' +
    '(a retry of the same add is not added twice while this run of the queue remembers it)');
}

/**
 * How recently a poller must have polled to count as live (an idle worker polls again when the
 * server's long poll of a minute ends): 70 s, or TEND_LIVE_POLLER_SECONDS (whole seconds, read
 * once when the command starts; docs/repair-cli.md), which lets a test see a queue without a worker
 * without waiting the minute out.
 */
export const LIVE_POLLER_SECONDS = livePollerSeconds(process.env.TEND_LIVE_POLLER_SECONDS);

function livePollerSeconds(value: string | undefined): number {
  if (value === undefined || value === '') return 70;
  if (!/^[1-9]\d{0,3}$/.test(value)) throw new OperatorError(`TEND_LIVE_POLLER_SECONDS must be a whole number of seconds from 1 to 9999 (got ${preview(value, 20)})`);
  return Number(value);
}

/**
 * The identities of the workers that polled `taskQueue` for workflow or activity tasks in the last
 * LIVE_POLLER_SECONDS (Temporal's DescribeTaskQueue lists a poller for a few minutes after its last poll).
 */
export async function livePollers(client: Client, namespace: string, taskQueue: string, type: 'workflow' | 'activity', now = Date.now()): Promise<string[]> {
  return (await pollersOf(client.workflowService, namespace, taskQueue, type))
    .filter((p) => now - p.lastPoll < LIVE_POLLER_SECONDS * 1000)
    .map((p) => p.identity)
    .sort();
}

/** With repair.taskQueue set: the live workers polling it for the command activities; undefined when the setting is absent. */
export async function commandQueuePollers(client: Client, config: Config, now = Date.now()): Promise<string[] | undefined> {
  const name = config.repair?.taskQueue;
  return name ? livePollers(client, config.temporal.namespace, name, 'activity', now) : undefined;
}

/** The line an operator sees when the commands' task queue has no worker: entries wait on it. */
export function noCommandWorkerWarning(config: Config): string {
  return `tend: repair-queue: no worker polls the repair commands' task queue "${config.repair?.taskQueue}" (repair.taskQueue): ` +
    'entries wait before their first health check or command until one does; start `tend worker --capabilities repair` ' +
    'with this repair section on the host that runs the commands';
}

async function warnWithoutCommandWorker(client: Client, config: Config): Promise<void> {
  const pollers = await commandQueuePollers(client, config).catch((err: unknown) => {
    console.error(`tend: repair-queue: could not describe the repair commands' task queue: ${(err as Error)?.message ?? String(err)}`);
    return undefined;
  });
  if (pollers?.length === 0) console.error(noCommandWorkerWarning(config));
}

/** The queue's entries; empty when no queue has been started yet. */
export async function listEntries(client: Client): Promise<RepairQueueEntry[]> {
  try {
    return await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(listQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return [];
    // A closed queue answers through a worker that replays it, on the task queue it ran on.
    if (err instanceof Error && /failed to query/i.test(err.message)) {
      const d = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).describe().catch(() => undefined);
      const closed = d !== undefined && d.status.name !== 'RUNNING';
      const cause = (err.cause as Error | undefined)?.message;
      // The server gives a query a deadline; a worker busy with other tasks can miss it.
      const timedOut = cause !== undefined && /DEADLINE_EXCEEDED|timed out/i.test(cause);
      throw new OperatorError(`the repair queue (workflow ${REPAIR_QUEUE_WORKFLOW_ID}${d ? `, ${d.status.name.toLowerCase()}, task queue "${d.taskQueue}"` : ''}) ` +
        `did not answer the query for its entries: ${err.message}${cause ? ` (${cause})` : ''}; ` +
        (closed ? `a closed queue answers only through a worker polling the task queue it ran on; \`tend repair-queue add\` starts a new queue`
          : timedOut ? 'its worker did not answer in time (a busy worker can miss the deadline): ask again'
            : 'is a tend worker polling its task queue?'));
    }
    throw err;
  }
}

/** `list -o table|wide`: one line per entry; wide adds the serial, the back-off and the last transition. */
export function formatEntries(entries: readonly RepairQueueEntry[], wide: boolean): string {
  if (entries.length === 0) return 'no entries';
  const header = ['INDEX', 'ADDRESS', 'NODE', 'MACHINE TYPE', 'OPERATION', 'STATUS', 'STEP', 'STEP STATUS',
    ...(wide ? ['SERIAL', 'BACKOFF', 'BACKOFF EXPIRE', 'LAST TRANSITION'] : [])];
  return columns(header, entries.map((e) => [
    e.index, e.address, e.nodename || '-', e.machine_type, e.operation, e.deleted ? `${e.status} (deleted)` : e.status, String(e.step), e.step_status,
    ...(wide ? [e.serial || '-', String(e.drain_backoff_count), e.drain_backoff_expire === ZERO_TIME ? '-' : e.drain_backoff_expire, e.last_transition_time ?? '-'] : []),
  ]));
}

function parseRequest(words: string[], where: string): RepairRequest {
  if (words.length < 3 || words.length > 4) throw new UsageError(`${where}: expected OPERATION MACHINE_TYPE ADDRESS [SERIAL], got ${words.length} word(s)`);
  const [operation, machine_type, address, serial] = words as [string, string, string, string?];
  return { operation, machine_type, address, ...(serial !== undefined ? { serial } : {}) };
}

/** Checks requests against this CLI's own configuration first, so bad input changes nothing and exits 2. */
function checkRequests(config: Config, requests: { r: RepairRequest; where: string }[]) {
  const problems = requests.flatMap(({ r, where }) => requestProblems(config.repair, r).map((p) => `${where}: ${p}`));
  if (problems.length > 0) throw new UsageError(problems.join('\n  '));
}

/** `add-file` input: one `OPERATION MACHINE_TYPE ADDRESS [SERIAL]` per line; blank lines and `#` comments are skipped. */
export function parseRepairFile(text: string, file: string): { r: RepairRequest; where: string }[] {
  const out: { r: RepairRequest; where: string }[] = [];
  text.split('\n').forEach((line, i) => {
    const words = line.replace(/#.*/, '').trim().split(/\s+/).filter((w) => w !== '');
    if (words.length === 0) return;
    const where = `${file}:${i + 1}`;
    out.push({ r: parseRequest(words, where), where });
  });
  return out;
}

/** INDEX: an entry's index as the queue writes it (1 to MAX_INDEX, no leading zero); leading zeros are dropped. */
export function index(v: string): string {
  const digits = /^\d+$/.test(v) ? v.replace(/^0+(?=\d)/, '') : undefined;
  if (digits === undefined || !parse(indexSchema, digits).ok || Number(digits) > MAX_INDEX) {
    throw new InvalidArgumentError(`INDEX must be an entry's index, a whole number from 1 to ${MAX_INDEX} (got ${preview(v, 40)})`);
  }
  return digits;
}

type Flags = ReadFlags & { output?: string };

/** A whole number of seconds, 0 or more (ckecli's --timeout-seconds: 0 checks once). */
function nonNegativeInt(name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new InvalidArgumentError(`${name} must be a whole number of seconds, 0 or more (got "${v}")`);
    return Number(v);
  };
}

/** What `wait` still waits for: the count, and each entry's index with its status (and step status while processing). */
export function waitingFor(left: readonly RepairQueueEntry[]): string {
  const shown = left.slice(0, 20).map((e) =>
    `${e.index} ${e.deleted ? 'deleted, cleaning up' : e.status === 'processing' ? `processing/${e.step_status}` : e.status}`);
  return `${left.length} entr${left.length === 1 ? 'y' : 'ies'} (${shown.join(', ')}${left.length > shown.length ? ', ...' : ''})`;
}

/**
 * A verb's arguments and options as typed. After "--" everything is an argument to commander, so
 * `add OP TYPE -- -ADDRESS --config F` would give --config as SERIAL: an option of the verb found
 * among the arguments (it can only have come after "--", and no address or serial looks like one)
 * is taken as that option, with its value. Arguments past the verb's own are named, exit 2.
 */
export function argumentsAndOptions(cmd: Command): { args: string[]; options: Record<string, string | boolean> } {
  const options: Record<string, string | boolean> = {};
  const args: string[] = [];
  const words = [...cmd.args];
  while (words.length > 0) {
    const word = words.shift()!;
    const [name, inline] = word.startsWith('--') ? [word.split('=')[0]!, word.includes('=') ? word.slice(word.indexOf('=') + 1) : undefined] : [word, undefined];
    const option = cmd.options.find((o) => o.long === name || o.short === name);
    if (!option) {
      args.push(word);
      continue;
    }
    if (!option.required && !option.optional) options[option.attributeName()] = true;
    else {
      const value = inline ?? words.shift();
      if (value === undefined) throw new UsageError(`${cmd.name()}: option ${name} needs a value`);
      options[option.attributeName()] = value;
    }
  }
  const declared = cmd.registeredArguments;
  if (args.length > declared.length) {
    const usage = `${cmd.name()} ${declared.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`)).join(' ')}`.trim();
    const extra = args.slice(declared.length);
    throw new UsageError(`${cmd.name()}: unexpected argument${extra.length > 1 ? 's' : ''} ${extra.map((a) => JSON.stringify(a)).join(' ')} (usage: ${usage})`);
  }
  const missing = declared.slice(args.length).find((a) => a.required);
  if (missing) throw new UsageError(`${cmd.name()}: missing argument ${missing.name()}`);
  return { args, options };
}

export function registerRepairCommands(program: Command): void {
  const rq = program.command('repair-queue').description("CKE's repair queue: machine repairs as durable workflows (ckecli repair-queue verbs)");

  // Every verb: resolve the configuration, check its own input (exit 2, before connecting), connect,
  // act; a refusal is exit 1 with the queue's reason.
  // Excess arguments are let through to act, which names them (and says where options go).
  const verb = (name: string, description: string) => withConfigOptions(rq.command(name).description(description)).allowExcessArguments();
  const act = <A extends unknown[], P = undefined>(
    fn: (client: Client, config: Config, prepared: P, ...args: A) => Promise<void>,
    // `prepare` checks the verb's own input (its options too) before anything connects.
    // `reader`: a read, which runs without a configuration too (readerConfig).
    opts: { needsWorker?: 'always' | 'when-started'; reader?: true; prepare?: (config: Config, flags: Flags, ...args: A) => P | Promise<P> } = {},
  ) =>
    async (...args: unknown[]) => {
      const cmd = args[args.length - 1] as Command;
      const typed = argumentsAndOptions(cmd);
      const flags = { ...(args[args.length - 2] as Flags), ...typed.options } as Flags;
      const config = opts.reader ? (await readerConfig(flags)).config : await configOrSandbox(flags);
      // Each argument through its own parser (INDEX), as commander does.
      const own = cmd.registeredArguments.map((a, i) => {
        const v = typed.args[i];
        try {
          return v !== undefined && a.parseArg ? a.parseArg(v, undefined) : v;
        } catch (err) {
          throw new UsageError(`${cmd.name()}: ${(err as Error).message}`);
        }
      }) as A;
      const prepared = (await opts.prepare?.(config, flags, ...own)) as P;
      const client = await connect(config, opts.needsWorker ?? 'always');
      try {
        await fn(client, config, prepared, ...own);
      } catch (err) {
        if (!(err instanceof RefusedError)) throw err;
        console.error(`tend: repair-queue: ${err.message}`);
        process.exitCode = EXIT_FAILURE;
      } finally {
        await client.connection.close();
      }
    };

  const withinOption = (c: Command) => c.option('--timeout-seconds <n>',
    'wait this long for the queue\'s answer; past it, exit 1 saying the request may still be applied when a worker returns (tend\'s addition)',
    positiveInt('--timeout-seconds'), ADD_WITHIN_SECONDS);
  const withinOf = (flags: Flags) => {
    const v = (flags as { timeoutSeconds?: unknown }).timeoutSeconds;
    // An option given after "--" arrives as typed: read as commander would.
    return (typeof v === 'string' ? positiveInt('--timeout-seconds')(v) : typeof v === 'number' ? v : ADD_WITHIN_SECONDS) * 1000;
  };

  withinOption(verb('add', 'append a repair request; prints the new entry (a retry of the same request gets the same entry back while it is queued or processing)')
    .argument('<OPERATION>').argument('<MACHINE_TYPE>').argument('<ADDRESS>').argument('[SERIAL]'))
    .action(act<[string, string, string, string?], { r: RepairRequest; withinMs: number }>(async (client, config, { r, withinMs }) => {
      const [entry] = await addOnce(client, config, [r], withinMs);
      console.log(JSON.stringify(entry, null, 2));
    }, {
      prepare: (config, flags, operation, machineType, address, serial) => {
        const r = parseRequest([operation, machineType, address, ...(serial !== undefined ? [serial] : [])], 'add');
        checkRequests(config, [{ r, where: 'add' }]);
        return { r, withinMs: withinOf(flags) };
      },
    }));

  withinOption(verb('add-file', `append every request of a file (OPERATION MACHINE_TYPE ADDRESS [SERIAL] per line), all or none; at most ${MAX_REQUESTS_PER_ADD} requests`)
    .argument('<FILE>'))
    .action(act<[string], { requests: RepairRequest[]; withinMs: number }>(async (client, config, { requests, withinMs }) => {
      const added = await addOnce(client, config, requests, withinMs);
      console.log(`added ${added.length} entr${added.length === 1 ? 'y' : 'ies'}: ${added[0]!.index}..${added[added.length - 1]!.index}`);
    }, {
      prepare: async (config, flags, file) => {
        const text = await readFile(file, 'utf8').catch((err: Error) => {
          throw new UsageError(`cannot read ${file}: ${err.message}`);
        });
        const requests = parseRepairFile(text, file);
        if (requests.length === 0) throw new UsageError(`${file}: no requests in it`);
        checkRequests(config, requests);
        // One update, so all or none: a file past what one add takes is refused whole rather than queued in part.
        if (requests.length > MAX_REQUESTS_PER_ADD) {
          throw new UsageError(`${file}: ${requests.length} requests, and the repair queue takes at most ${MAX_REQUESTS_PER_ADD} per add: ` +
            `nothing was added; split the file into files of at most ${MAX_REQUESTS_PER_ADD} requests and add each`);
        }
        return { requests: requests.map((x) => x.r), withinMs: withinOf(flags) };
      },
    }));

  verb('list', "print the queue entries: as ckecli does (CKE's JSON, null when empty) unless -o says otherwise; on stderr, a warning when no worker polls repair.taskQueue")
    .addOption(taskQueueOption())
    .addOption(outputOption('json'))
    .action(act(async (client, config, format: OutputFormat) => {
      const entries = await listEntries(client);
      if (format === 'json') console.log(ckeListJson(entries));
      // -o name: each entry's workflow id.
      else await printOutput(format, entries.length === 0 ? null : entries.map(ckeEntryJson), (wide) => formatEntries(entries, wide), () => entries.map((e) => repairEntryWorkflowId(e.index)));
      await warnWithoutCommandWorker(client, config);
    }, {
      needsWorker: 'when-started',
      reader: true,
      // Checked before connecting (an -o after "--" is not seen by the option parser).
      prepare: (_config, flags) => {
        return parseOutputFormat(String(flags.output ?? 'json'), (m) => new UsageError(`list: -o/--output: ${m}`));
      },
    }));

  verb('delete', 'delete an entry; a running one is cancelled (its node uncordoned)')
    .argument('<INDEX>', 'entry index', index)
    .action(act(async (client, config, _: undefined, i: string) => {
      await queueUpdate(client, config, deleteUpdate, { index: i });
    }));

  for (const [name, def, what] of [
    ['delete-finished', deleteFinishedUpdate, 'delete every succeeded or failed entry'],
    ['delete-unfinished', deleteUnfinishedUpdate, 'delete every queued or processing entry (running ones are cancelled)'],
  ] as const) {
    verb(name, `${what}; prints their indexes, one per line`).action(act(async (client, config) => {
      for (const i of await queueUpdate(client, config, def)) console.log(i);
    }));
  }

  verb('enable', 'enable the queue').action(act(async (client, config) => {
    await queueUpdate(client, config, enableUpdate);
  }));
  verb('disable', 'disable the queue: no new drain or repair command, ongoing drains abandoned; health checks and deletes go on')
    .action(act(async (client, config) => {
      await queueUpdate(client, config, disableUpdate);
    }));
  verb('is-enabled', 'print true or false').action(act(async (client) => {
    let enabled = true;
    try {
      enabled = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(isEnabledQuery);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    console.log(String(enabled));
  }, { needsWorker: 'when-started' }));
  verb('reset-backoff', 'reset every entry\'s drain back-off').action(act(async (client, config) => {
    await queueUpdate(client, config, resetBackoffUpdate);
  }));

  // Read here, on this host: the commands' argv and output never go through Temporal (docs/repair.md).
  withConfigOptions(rq.command('logs').description("print an entry's command runs (argv, output, exit code) from the log file on this host: run it where the entry's commands ran"))
    .argument('<INDEX>', 'entry index', index)
    .option('--raw', 'print the file as it is (control characters included), for a file or a pager that expects them')
    .action(async (i: string, flags: ConfigFlags & { raw?: boolean }) => {
      const config = await configOrSandbox(flags);
      const found = readEntryLog(config.repair?.state_dir, i);
      if ('looked' in found) {
        console.error(`tend: repair-queue logs: no log of entry ${i} on this host (looked in ${found.looked.join(', ')}); ` +
          'the log is on the host of the worker that ran the entry\'s commands (repair.state_dir there)');
        process.exitCode = EXIT_FAILURE;
        return;
      }
      process.stdout.write(flags.raw ? found.text : terminalSafe(found.text));
    });

  verb('wait', 'wait until the queue is empty (ckecli); with --finished, until every entry has finished; exit 1 on timeout')
    .option('--timeout-seconds <n>', 'give up after this long; 0 checks once without waiting', nonNegativeInt('--timeout-seconds'), 30)
    .option('--interval-seconds <n>', 'seconds between checks', positiveInt('--interval-seconds'), 1)
    .option('--finished', "tend's addition: wait until every entry has finished (succeeded or failed) instead; entries stay until deleted")
    .action(async (flags: Flags & { timeoutSeconds: number; intervalSeconds: number; finished?: boolean }) => {
      const config = await configOrSandbox(flags);
      const client = await connect(config, 'when-started');
      try {
        const goal = flags.finished ? 'every entry finished' : 'the repair queue to be empty';
        const started = Date.now();
        const deadline = started + flags.timeoutSeconds * 1000;
        let said = '';
        let saidAt = 0;
        for (;;) {
          const all = await listEntries(client);
          const left = flags.finished ? all.filter((e) => !isFinished(e)) : all;
          if (left.length === 0) {
            if (!flags.finished) console.log('repair queue is empty');
            return;
          }
          const what = waitingFor(left);
          const elapsed = Math.round((Date.now() - started) / 1000);
          if (flags.timeoutSeconds === 0 || Date.now() >= deadline) {
            console.error(flags.timeoutSeconds === 0
              ? `tend: repair-queue wait: repair queue is not ${flags.finished ? 'finished' : 'empty'}: ${what}`
              : `tend: repair-queue wait: timed out waiting for ${goal} after ${flags.timeoutSeconds}s: ${what}`);
            if (left.some((e) => e.status !== 'succeeded' && e.status !== 'failed')) await warnWithoutCommandWorker(client, config);
            process.exitCode = EXIT_FAILURE;
            return;
          }
          // Progress on stderr (stdout stays ckecli's): what is waited for, and for how long so far; when it changes, else every 10 s.
          if (what !== said || Date.now() - saidAt >= 10_000) {
            console.error(`tend: repair-queue wait: waiting for ${goal}: ${what}; ${elapsed}s so far (timeout ${flags.timeoutSeconds}s)`);
            said = what;
            saidAt = Date.now();
          }
          await sleep(Math.min(flags.intervalSeconds * 1000, Math.max(0, deadline - Date.now())));
        }
      } finally {
        await client.connection.close();
      }
    });
}
