// Stub activities for the repair workflows: an in-memory world of Nodes and
// machines the tests steer. Each activity records its calls; the behaviour of
// each can be replaced per operation (the entry's key), e.g. to block until
// the test says so, to fail, or to refuse. And the set-up the repair workflow
// test files share (repairSuite).
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';
import type { Config } from '../../src/config/load.ts';
import {
  addUpdate, deleteUpdate, disableUpdate, enableUpdate, listQuery, REFUSAL, REPAIR_QUEUE_WORKFLOW_ID,
} from '../../src/repair/messages.ts';
import { queueUpdate } from '../../src/starters/repair-commands.ts';
import type { RepairPlan } from '../../src/repair/procedure.ts';
import { waitFor } from '../harness/wait.ts';
import { startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';

export const SCALE = 0.01;

/** Numbers only, as repairInspect returns them: one step with a drain, a success command. */
export function plan(more: Partial<RepairPlan> = {}): RepairPlan {
  return {
    steps: [{ need_drain: true, watch_seconds: 600, command_timeout_seconds: 30, command_retries: 0, command_interval: 0 }],
    command_timeout_seconds: 30,
    success_command_timeout: 30,
    eviction_timeout_seconds: 600,
    time_scale: SCALE,
    ...more,
  };
}

export type Name = 'repairInspect' | 'repairLocate' | 'repairDrain' | 'repairRunCommand' | 'repairWatchHealth' | 'repairUncordon';
type Fn = (input: Record<string, unknown>) => Promise<unknown>;

/** taskQueue: the task queue of the worker that ran the call. */
export interface Call { name: string; input: Record<string, unknown>; attempt: number; taskQueue: string }

/** A promise the test resolves. */
export function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

/**
 * Waits while heartbeating (so that a cancellation reaches the stub) until
 * the activity is cancelled, or `release` resolves. On cancellation, `honour`
 * rethrows it (the activity ends cancelled); otherwise the stub completes
 * normally anyway, as an activity whose work finished at that moment would.
 * Returns whether it was cancelled.
 */
export async function block(honour: boolean, release: Promise<void> = new Promise(() => undefined)): Promise<boolean> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), 100);
  try {
    await Promise.race([release, ctx.cancelled]);
    return false;
  } catch (err) {
    if (honour) throw err;
    return true;
  } finally {
    clearInterval(timer);
  }
}

export class World {
  calls: Call[] = [];
  /** Node name -> the entry index that cordoned it. */
  cordons = new Map<string, string>();
  maxConcurrent = 1;
  /** Per operation: activities replaced. */
  ops: Record<string, Partial<Record<Name, Fn>>> = {};
  plans: Record<string, RepairPlan> = {};
  /** repair.taskQueue as the worker's configuration says it (repairCommandQueue); absent: none. */
  commandQueue?: string;

  nodeOf(address: string) {
    return address.startsWith('10.') ? `node-${address.split('.').pop()}` : '';
  }

  called(name: Name, index?: string) {
    return this.calls.filter((c) => c.name === name && (index === undefined || c.input.index === index));
  }

  activities() {
    const record = (name: string, input: Record<string, unknown>) =>
      this.calls.push({ name, input, attempt: Context.current().info.attempt, taskQueue: Context.current().info.taskQueue });
    const own = (name: Name, fallback: Fn): Fn => async (input) => {
      record(name, input);
      // repairUncordon is asked by index alone: its operation is the one an earlier call of the entry named.
      const operation = input.operation ?? this.calls.find((c) => c.input.index === input.index && c.input.operation !== undefined)?.input.operation;
      const f = this.ops[String(operation)]?.[name];
      return f ? f(input) : fallback(input);
    };
    return {
      repairQueueSettings: async (input: { entries: { index: string }[] }) => {
        record('repairQueueSettings', input as unknown as Record<string, unknown>);
        return { max_concurrent_repairs: this.maxConcurrent, problems: {}, time_scale: SCALE };
      },
      repairCheckRequests: async () => [],
      repairCommandQueue: async () => {
        record('repairCommandQueue', {});
        return this.commandQueue ? { taskQueue: this.commandQueue } : {};
      },
      repairLocate: own('repairLocate', async (k) => ({
        nodename: this.nodeOf(String(k.address)), plan: this.plans[String(k.operation)] ?? plan(),
      })),
      repairInspect: own('repairInspect', async (k) => ({
        nodename: this.nodeOf(String(k.address)), healthy: false, plan: this.plans[String(k.operation)] ?? plan(),
      })),
      repairDrain: own('repairDrain', async (k) => {
        const node = this.nodeOf(String(k.address));
        if (node && !this.cordons.has(node)) this.cordons.set(node, String(k.index));
        return { ok: true, evicted: 0, deleted: 0 };
      }),
      repairRunCommand: own('repairRunCommand', async () => ({ ok: true, output: '', attempts: 1 })),
      // The first look (until 0, when repairInspect's health check runs on the commands' queue) finds the machine broken, as repairInspect does.
      repairWatchHealth: own('repairWatchHealth', async (k) => ({ healthy: k.until !== 0, checks: 1 })),
      repairUncordon: own('repairUncordon', async (k) => {
        const node = this.nodeOf(String(k.address));
        if (this.cordons.get(node) === String(k.index)) {
          this.cordons.delete(node);
          return 'changed';
        }
        return 'unchanged';
      }),
    };
  }

  /** The activities the worker polling repair.taskQueue registers (the same stubs, recording that queue). */
  commandActivities() {
    const all = this.activities();
    return { repairRunCommand: all.repairRunCommand, repairWatchHealth: all.repairWatchHealth };
  }

  /** The drain's cordon, as the real activity sets it, for replaced drains. */
  cordon(k: Record<string, unknown>) {
    const node = this.nodeOf(String(k.address));
    if (node && !this.cordons.has(node)) this.cordons.set(node, String(k.index));
  }
}

export function refuse(message: string, type: string = REFUSAL.drainRefused): never {
  throw ApplicationFailure.nonRetryable(message, type);
}

/** Terminates every running workflow: the next test starts with no queue (its indexes continue past the old ones). */
export async function resetAll(client: Client): Promise<void> {
  // The queue by its id first: its current run, which visibility may not list yet when it has just
  // continued as new.
  await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).terminate('test reset').catch(() => undefined);
  for await (const w of client.workflow.list({ query: 'ExecutionStatus="Running"' })) {
    await client.workflow.getHandle(w.workflowId).terminate('test reset').catch(() => undefined);
  }
}

/** The queue's updates and query, through the CLI's own queueUpdate (which starts the queue when it is not running). */
export function queueClient(client: Client, taskQueue: string) {
  const config = { temporal: { taskQueue } } as Config;
  const h = () => client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID);
  return {
    add: async (operation: string, address: string): Promise<RepairQueueEntry> =>
      (await queueUpdate(client, config, addUpdate, { requests: [{ operation, machine_type: 'sim', address }] }))[0]!,
    list: () => h().query(listQuery),
    entry: async (index: string) => (await h().query(listQuery)).find((e) => e.index === index),
    delete: (index: string) => queueUpdate(client, config, deleteUpdate, { index }),
    disable: () => queueUpdate(client, config, disableUpdate),
    enable: () => queueUpdate(client, config, enableUpdate),
    /** Waits until the entry has `status` (or is gone, for 'gone') and `more` holds. */
    async until(index: string, status: RepairQueueEntry['status'], timeoutMs = 60_000, more?: (e: RepairQueueEntry) => boolean): Promise<RepairQueueEntry> {
      return waitFor(`entry ${index} ${status}`, async () => {
        const e = (await h().query(listQuery)).find((x) => x.index === index);
        return e?.status === status && (!more || more(e)) && e;
      }, { timeoutMs });
    },
    async gone(index: string, timeoutMs = 60_000): Promise<void> {
      await waitFor(`entry ${index} gone`, async () => (await h().query(listQuery)).every((x) => x.index !== index), { timeoutMs });
    },
  };
}

export type QueueClient = ReturnType<typeof queueClient>;

/** What a repair workflow test works with: the dev server, this test's World and task queue. */
export interface RepairSuite {
  env: TestWorkflowEnvironment;
  world: World;
  tq: string;
  /** Runs `fn` while a worker with `activities` (the World's when absent) polls the test's task queue. */
  run<T>(fn: (client: Client, q: QueueClient) => Promise<T>, activities?: object): Promise<T>;
}

/**
 * The set-up every repair workflow test file shares, called inside its `describe`: one dev server
 * for the file; before each test, no workflow left running, a new World and a new task queue
 * named after `queue`.
 */
export function repairSuite(queue: string): RepairSuite {
  const suite = {
    run: <T>(fn: (client: Client, q: QueueClient) => Promise<T>, activities: object = suite.world.activities()) =>
      withWorker(suite.env, suite.tq, activities, (client) => fn(client, queueClient(client, suite.tq))),
  } as RepairSuite;
  before(async () => {
    suite.env = await startWorkflowEnv();
  });
  after(async () => {
    await suite.env?.teardown();
  });
  beforeEach(async () => {
    await resetAll(suite.env.client);
    suite.world = new World();
    suite.tq = taskQueue(queue);
  });
  return suite;
}
