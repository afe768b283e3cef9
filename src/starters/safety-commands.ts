// `tend pause`, `tend resume` and `tend pause status`: the durable,
// cluster-wide pause of destructive actions, kept by the `tend-safety`
// workflow (src/workflows/safety.ts). pause and resume are updates, so the
// command learns that the change was applied and its revision; pause then
// waits out the readers' freshness bound (1 s, src/safety/pause.ts) before it
// says every worker has stopped. status reads the workflow's memo, so it
// needs no worker. Each checks first that what runs under `tend-safety` is
// tend's (its type, and this configuration's task queue) and refuses, naming
// it, when it is not: nothing is sent to an impostor, and pause reads the
// memo again once applied, so it never reports a pause that an impostor
// took. Exit codes: 0 ok, 1 refused or Temporal unreachable, 2 usage.
import type { Command } from 'commander';
import { hostname, userInfo } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Config } from '../config/load.ts';
import {
  check, emptySafetyState, PAUSABLE, pausedOf, pauseInputSchema, pauseUpdate, resumeUpdate, SAFETY_WORKFLOW_ID, SAFETY_WORKFLOW_TYPE, targets,
  type PausableCapability, type SafetyState,
} from '../safety/messages.ts';
import { FRESH_MS, safetyImpostor, safetyStartOptions, stateOfDescription } from '../safety/pause.ts';
import { awaitTakeOver, lastPollWords, NoTakeOver, orphaned, pollsWithin, queuePolls, STALE_POLL_MS, type QueuePolls } from '../workers/singletons.ts';
import { answeredWithin, LIVE_POLLER_SECONDS } from './repair-commands.ts';
import { configOrSandbox, OperatorError, readerConfig, taskQueueOption, UsageError, withConfigOptions, type ConfigFlags, type ReadFlags } from './cli-support.ts';
import { columns, outputOption, printOutput, type OutputFormat } from './output.ts';

/** Capability names as typed, checked before connecting: an unknown one exits 2 naming it and the known ones. */
export function parseCapabilityArgs(names: string[]): PausableCapability[] {
  const unknown = names.filter((n) => !(PAUSABLE as readonly string[]).includes(n));
  if (unknown.length > 0) {
    throw new UsageError(`unknown capability ${unknown.map((n) => JSON.stringify(n)).join(', ')} (known: ${PAUSABLE.join(', ')}; none named: all)`);
  }
  return [...new Set(names as PausableCapability[])];
}

/** Who asks, as the workflow records it: user@host (declared by this command, not authenticated). */
export function requester(): string {
  let user = process.env.USER ?? 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (a container with an arbitrary uid).
  }
  return `${user}@${hostname()}`.slice(0, 200);
}

const describeTarget = (names: PausableCapability[]) => targets(names).join(', ');

export interface PauseStatus {
  /** Whether tend-safety runs; when it does not, nothing is paused. */
  running: boolean;
  runId?: string;
  revision: number;
  changedAt?: string;
  capabilities: SafetyState['capabilities'];
}

/** What to do about an impostor: said by every command that finds one. */
const IMPOSTOR_HELP = 'every worker holds destructive actions while it runs (the pause state is unknown); ' +
  `look at it (temporal workflow describe --workflow-id ${SAFETY_WORKFLOW_ID}), terminate it, then \`tend pause\` again if a pause is wanted`;

/** The raw description of what runs under tend-safety, or undefined when nothing ever did. */
/** tend-safety's description, as DescribeWorkflowExecution answers. */
type SafetyDescription = Parameters<typeof stateOfDescription>[0];

async function describeSafety(client: Client) {
  try {
    return await client.workflowService.describeWorkflowExecution({ namespace: client.options.namespace, execution: { workflowId: SAFETY_WORKFLOW_ID } });
  } catch (err) {
    if ((err as { code?: number })?.code === 5 || err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/** The state in a description, checked to be tend's own on `taskQueue`: an impostor or a bad memo is refused (exit 1), naming it. */
function stateOrRefuse(d: Parameters<typeof stateOfDescription>[0], taskQueue: string, doing: string): SafetyState | undefined {
  try {
    return stateOfDescription(d, { taskQueue });
  } catch (err) {
    const why = (err as Error).message;
    throw new OperatorError(`${doing}: refused: ${why}${safetyImpostor(d, { taskQueue }) !== undefined ? `; ${IMPOSTOR_HELP}` : ''}`);
  }
}

/**
 * tend's own tend-safety on a task queue other than `taskQueue` that no worker polls (the tend that
 * started it is gone): where it runs, and its last poll; undefined otherwise (this tend's, a live
 * tend's, or an impostor, which the callers refuse).
 */
async function orphanedSafety(client: Client, d: SafetyDescription, taskQueue: string): Promise<{ taskQueue: string; polls: QueuePolls } | undefined> {
  if (safetyImpostor(d) !== undefined || safetyImpostor(d, { taskQueue }) === undefined) return undefined;
  const theirs = d.workflowExecutionInfo?.taskQueue ?? '';
  const polls = await queuePolls(client.workflowService, client.options.namespace, theirs, STALE_POLL_MS);
  return orphaned(polls) ? { taskQueue: theirs, polls } : undefined;
}

/** The pause as tend-safety's memo says (DescribeWorkflowExecution: no worker needed), refused when what runs there is not tend's on `taskQueue`. */
export async function pauseStatus(client: Client, taskQueue: string): Promise<PauseStatus> {
  const d = await describeSafety(client);
  if (!d) return { running: false, ...emptySafetyState() };
  // tend's own on the task queue of a tend that is gone: its state, said where it runs (a live tend takes it over).
  const dead = await orphanedSafety(client, d, taskQueue);
  if (dead) {
    console.error(`tend: pause status: ${SAFETY_WORKFLOW_ID} runs on task queue "${dead.taskQueue}", not this configuration's "${taskQueue}", ` +
      'and no worker polls it: a live tend takes it over, carrying this state');
  }
  const s = stateOrRefuse(d, dead?.taskQueue ?? taskQueue, 'pause status');
  const runId = d.workflowExecutionInfo?.execution?.runId ?? undefined;
  if (!s) return { running: false, ...(runId ? { runId } : {}), ...emptySafetyState() };
  return { running: true, ...(runId ? { runId } : {}), ...s };
}

export function formatPauseStatus(st: PauseStatus): string {
  const rows = [['CAPABILITY', 'STATE', 'SINCE', 'BY', 'REASON']].concat(PAUSABLE.map((c) => {
    const p = st.capabilities[c];
    return p.paused ? [c, 'paused', p.since ?? '-', p.by ?? '-', p.reason ?? ''] : [c, 'acting', '-', '-', '-'];
  }));
  const lines = [columns(rows[0]!, rows.slice(1))];
  lines.push(st.running
    ? `revision ${st.revision}${st.changedAt ? `, last change ${st.changedAt}` : ''} (workflow ${SAFETY_WORKFLOW_ID}, run ${st.runId})`
    : `workflow ${SAFETY_WORKFLOW_ID} is not running: nothing is paused`);
  return lines.join('\n');
}

/** How long pause and resume wait for a worker's first poll (one started a moment ago) before saying none serves tend-safety. */
const WORKER_GRACE_MS = 10_000;

/**
 * An update reaches tend-safety only through a worker polling its task queue: with none, it would
 * wait for ever. Refused at once instead, naming the task queue.
 */
async function needWorker(client: Client, config: Config, taskQueue: string): Promise<void> {
  const polls = await pollsWithin(client.workflowService, config.temporal.namespace, taskQueue, LIVE_POLLER_SECONDS * 1000, WORKER_GRACE_MS);
  if (polls.live) return;
  throw new OperatorError(`no worker has polled task queue "${taskQueue}" in the last ${LIVE_POLLER_SECONDS}s (${lastPollWords(polls)}), so ${SAFETY_WORKFLOW_ID} cannot take the change: ` +
    'start `tend run` or `tend worker` with this configuration (a pause needs no worker to hold: nothing acts without one)');
}

/**
 * Whether tend's tend-safety runs on this configuration's task queue. What runs under the id
 * and is not tend's (another type, another task queue) is refused before anything is sent to it.
 */
async function safetyRunning(client: Client, config: Config, doing: string): Promise<boolean> {
  const d = await describeSafety(client);
  if (!d || Number(d.workflowExecutionInfo?.status) !== 1) return false;
  const { namespace, taskQueue } = config.temporal;
  const notOurs = safetyImpostor(d, { taskQueue });
  if (notOurs === undefined) return true;
  // tend's own, on the task queue of a tend that is gone: a live tend takes it over, carrying every pause.
  const dead = await orphanedSafety(client, d, taskQueue);
  if (dead) {
    await awaitTakeOver(client, namespace, SAFETY_WORKFLOW_ID, taskQueue, dead, (line) => console.error(line)).catch((err: unknown) => {
      throw err instanceof NoTakeOver ? new OperatorError(`${doing}: refused: ${err.message}`) : err;
    });
    return true;
  }
  throw new OperatorError(`${doing}: refused, nothing sent: ${notOurs}; ${IMPOSTOR_HELP}`);
}

/**
 * After a change was answered: the memo every worker reads is tend's, and has the answered
 * revision (or a later one). An impostor started under the id meanwhile would have taken the
 * change in place of tend-safety: refused, naming it, rather than reported as done.
 */
export async function confirmApplied(client: Client, config: Config, answered: SafetyState, doing: string): Promise<SafetyState> {
  const d = await describeSafety(client);
  const s = d && stateOrRefuse(d, config.temporal.taskQueue, doing);
  if (!s) throw new OperatorError(`${doing}: refused: ${SAFETY_WORKFLOW_ID} answered revision ${answered.revision} but no longer runs: nothing is paused`);
  if (s.revision < answered.revision) {
    throw new OperatorError(`${doing}: refused: ${SAFETY_WORKFLOW_ID} answered revision ${answered.revision} but its memo, which the workers read, says ${s.revision}`);
  }
  return s;
}

/** How long pause and resume wait for tend-safety to answer a change (a worker answers in well under a second). */
export const ANSWER_WITHIN_MS = 30_000;

/**
 * The change's answer, or a refusal once `withinMs` has passed without one: what took the change
 * may be an impostor that never answers (started under the id after the check), or tend-safety
 * without a worker; a describe names an impostor. The change's calls are aborted then (an update
 * with start retried later could start a run of its own); it may still be applied: said.
 */
async function answered<T>(client: Client, config: Config, change: () => Promise<T>, doing: string, withinMs: number): Promise<T> {
  const r = await answeredWithin(client, change, withinMs);
  if (r !== 'late') return r;
  await safetyRunning(client, config, doing);
  throw new OperatorError(`${doing}: refused: ${SAFETY_WORKFLOW_ID} has not answered within ${withinMs / 1000} s; the change may still be applied ` +
    `when a worker takes it: see \`tend pause status\``);
}

const refused = (err: unknown): never => {
  if (err instanceof WorkflowUpdateFailedError) throw new OperatorError(`${SAFETY_WORKFLOW_ID} refused the change: ${err.cause?.message ?? err.message}`);
  throw err;
};

async function withClient<T>(config: Config, fn: (client: Client) => Promise<T>): Promise<T> {
  const { connectClient } = await import('../temporal/connection.ts');
  const client = await connectClient(config.temporal);
  try {
    return await fn(client);
  } finally {
    await client.connection.close();
  }
}

/** Pauses: starts tend-safety when it is not running, then the pause update; answers the state it applied. */
export async function pause(
  client: Client, config: Config, capabilities: PausableCapability[], reason: string, answerWithinMs = ANSWER_WITHIN_MS,
): Promise<SafetyState> {
  await safetyRunning(client, config, 'pause');
  const taskQueue = config.temporal.taskQueue;
  await needWorker(client, config, taskQueue);
  const input = { ...(capabilities.length ? { capabilities } : {}), reason, by: requester() };
  return answered(client, config, () => client.workflow.executeUpdateWithStart(pauseUpdate, {
    args: [input],
    startWorkflowOperation: new WithStartWorkflowOperation(SAFETY_WORKFLOW_TYPE, { ...safetyStartOptions(taskQueue), workflowIdConflictPolicy: 'USE_EXISTING' }),
  }).catch(refused), 'pause', answerWithinMs);
}

/** Resumes; undefined when tend-safety is not running (nothing was paused). */
export async function resume(
  client: Client, config: Config, capabilities: PausableCapability[], answerWithinMs = ANSWER_WITHIN_MS,
): Promise<SafetyState | undefined> {
  if (!await safetyRunning(client, config, 'resume')) return undefined;
  await needWorker(client, config, config.temporal.taskQueue);
  const input = { ...(capabilities.length ? { capabilities } : {}), by: requester() };
  const s = await answered(client, config, () => client.workflow.getHandle(SAFETY_WORKFLOW_ID).executeUpdate(resumeUpdate, { args: [input] }).catch(refused),
    'resume', answerWithinMs);
  await confirmApplied(client, config, s, 'resume');
  return s;
}

export function registerSafetyCommands(program: Command): void {
  const pauseCmd = withConfigOptions(program
    .command('pause')
    .description(`stop every destructive action of the named capabilities (${PAUSABLE.join(', ')}; all when none), cluster-wide, until \`tend resume\`; durable (kept by the ${SAFETY_WORKFLOW_ID} workflow)`)
    .argument('[capability...]', `capabilities to pause (${PAUSABLE.join(', ')}); all when none`)
    .option('--reason <text>', 'why (required; up to 500 characters): shown by `tend pause status`, in the Web UI and in logs'))
    .action(async (names: string[], flags: ConfigFlags & { reason?: string }) => {
      const capabilities = parseCapabilityArgs(names);
      if (flags.reason === undefined) throw new UsageError('--reason TEXT is required: say why (it is shown to every operator who looks)');
      const c = check(pauseInputSchema, { reason: flags.reason }, '--reason');
      if (!c.ok) throw new UsageError(c.reason.replace(/reason: /, ''));
      const config = await configOrSandbox(flags, { orEnvironment: true });
      const s = await withClient(config, async (client) => {
        const applied = await pause(client, config, capabilities, flags.reason!);
        // Every reader's state is at most FRESH_MS old, or it refuses to act: after this, no worker acts on the old state.
        await sleep(FRESH_MS);
        await confirmApplied(client, config, applied, 'pause');
        return applied;
      });
      console.log(`paused: ${describeTarget(capabilities)} (reason ${flags.reason}), revision ${s.revision}; ` +
        'every worker stops destructive actions of these capabilities from now on');
    });

  withConfigOptions(pauseCmd
    .command('status')
    .description('each capability: paused or acting, since when, by whom, why'))
    .addOption(taskQueueOption())
    .addOption(outputOption())
    .action(async (own: ReadFlags & { output: OutputFormat }, cmd: Command) => {
      // --config before `status` is the parent's (tend pause --config F status): both count.
      const flags = { ...cmd.parent?.opts(), ...Object.fromEntries(Object.entries(own).filter(([, v]) => v !== undefined)) } as ReadFlags & { output: OutputFormat };
      const { config } = await readerConfig(flags);
      const st = await withClient(config, (client) => pauseStatus(client, config.temporal.taskQueue));
      // wide: the same columns (a pause has no more to show); -o name: the paused capabilities, one per line.
      await printOutput(flags.output, st, () => formatPauseStatus(st), (s) => pausedOf(s).map((c) => `capability/${c}`));
    });

  withConfigOptions(program
    .command('resume')
    .description('let paused capabilities act again (all when none named); what fell due while paused acts at once')
    .argument('[capability...]', `capabilities to resume (${PAUSABLE.join(', ')}); all when none`))
    .action(async (names: string[], flags: ConfigFlags) => {
      const capabilities = parseCapabilityArgs(names);
      const config = await configOrSandbox(flags, { orEnvironment: true });
      const s = await withClient(config, (client) => resume(client, config, capabilities));
      if (!s) {
        console.log(`resumed: nothing was paused (workflow ${SAFETY_WORKFLOW_ID} is not running)`);
        return;
      }
      const still = PAUSABLE.filter((c) => s.capabilities[c].paused);
      console.log(`resumed: ${describeTarget(capabilities)}, revision ${s.revision}; workers act again within 1 s` +
        (still.length ? `; still paused: ${still.join(', ')}` : ''));
    });
}
