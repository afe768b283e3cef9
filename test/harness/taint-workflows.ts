// For a file of taint workflow tests on stub activities: a dev server of the
// file's own, the coordinator ended after each test (it has a fixed id), and
// the starters the tests share.
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startWorkflowEnv } from './workflow-env.ts';
import type { SlotsStatus } from '../../src/taint/messages.ts';
import type { StubPod, TaintStubs } from './taint.ts';

export const SLOTS = 'taint-replacements';
export const stubPod = (uid: string): StubPod => ({ uid, namespace: 'ns', name: `db-${uid}` });

export const startSlots = (client: Client, queue: string) =>
  client.workflow.start('taintReplacementsWorkflow', { taskQueue: queue, workflowId: SLOTS, args: [{}] });
export const startNode = (client: Client, queue: string, node: string): Promise<WorkflowHandle> =>
  client.workflow.start('taintNodeWorkflow', { taskQueue: queue, workflowId: `taint/${node}`, args: [{ node }] });
/** The coordinator's status query: its slots, queue and breaker. */
export const slotsStatus = (client: Client) => client.workflow.getHandle(SLOTS).query<SlotsStatus>('status');

/** The taint goes: the node's workflow clears what is left and ends. */
export async function untaintNode(stubs: TaintStubs, h: WorkflowHandle, node: string): Promise<unknown> {
  stubs.taints.set(node, []);
  await h.signal('nodeTaints', { taints: [] });
  return h.result();
}

/** The node workflow's status query: a row per pod. */
export const nodeStatus = (h: WorkflowHandle) => h.query<{ pod: string; state: string; condition?: string; lastError?: string }[]>('status');

/** Registers the file's hooks (call it inside `describe`); the env, once `before` has run. */
export function taintWorkflowEnv(): () => TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  before(async () => {
    env = await startWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });
  afterEach(async () => {
    await env?.client.workflow.getHandle(SLOTS).terminate('test over').catch(() => undefined);
  });
  return () => {
    if (!env) throw new Error('the workflow env is not up (before hook did not run?)');
    return env;
  };
}
