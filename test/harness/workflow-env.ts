// Workflow tests: tend's real workflow code on a real Temporal dev server (the
// `temporal` binary from the binary cache; its time-skipping server cannot be
// had here), with stub activities. Durations in these tests are short instead
// of skipped.
//
// The workflow code is bundled once per test run and shared by every worker.
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { ensureBinaries } from '../../src/sandbox/binaries.ts';
import { TendCapability, TendNode, TendTarget } from '../../src/search-attributes.ts';
import { workflowBundleOptions } from '../../src/workers/worker.ts';

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
let runtimeInstalled = false;

/** The workflow code as the worker bundles it, built once per process. */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ ...workflowBundleOptions(), logger: new DefaultLogger('WARN') });
  return bundle;
}

export interface WorkflowEnvOptions {
  /**
   * Dev server dynamic config values, as `key=JSON` (e.g.
   * `limit.historyCount.suggestContinueAsNew=200`).
   */
  dynamicConfig?: string[];
  /**
   * A small history limit: Temporal suggests continue-as-new past `suggest`
   * events (and warns there) and terminates a run past `error`.
   */
  historyLimit?: { suggest: number; error: number };
}

/** The dev server's dynamic config values for a history limit. */
function historyLimitConfig(l: { suggest: number; error: number }): string[] {
  return [
    `limit.historyCount.suggestContinueAsNew=${l.suggest}`,
    `limit.historyCount.warn=${l.suggest}`,
    `limit.historyCount.error=${l.error}`,
  ];
}

/**
 * A dev server of its own for a test file (in-memory database, random port),
 * with tend's search attributes registered.
 */
export async function startWorkflowEnv(opts: WorkflowEnvOptions = {}): Promise<TestWorkflowEnvironment> {
  if (!runtimeInstalled) {
    runtimeInstalled = true;
    try {
      Runtime.install({ logger: new DefaultLogger('WARN') });
    } catch {
      // Installed already (another harness in this process did it).
    }
  }
  const bin = (await ensureBinaries()).temporal;
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: bin },
      searchAttributes: [TendCapability, TendTarget, TendNode],
      extraArgs: ['--log-level', 'error', ...[...(opts.historyLimit ? historyLimitConfig(opts.historyLimit) : []), ...(opts.dynamicConfig ?? [])].flatMap((v) => ['--dynamic-config-value', v])],
    },
  });
}

/** A unique task queue for one test, so that its workers never see another test's tasks. */
export const taskQueue = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

/**
 * Runs fn while a worker with the given stub activities polls taskQueue. The
 * worker is shut down (and its errors surfaced) when fn settles.
 */
export async function withWorker<T>(
  env: TestWorkflowEnvironment, queue: string, activities: object, fn: (client: Client) => Promise<T>,
): Promise<T> {
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue: queue,
    workflowBundle: await workflowBundle(),
    activities,
    // Short tests: no long sticky waits between them.
    stickyQueueScheduleToStartTimeout: '2s',
  });
  return worker.runUntil(fn(env.client));
}

/**
 * The history of `workflowId` (its current run) replays against the workflow code as it is, and
 * recorded these patch markers: a new path behind patched() is proven to replay.
 */
export async function replaysWithPatches(client: Client, workflowId: string, patches: string[]): Promise<void> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  await Worker.runReplayHistory({ workflowBundle: await workflowBundle(), replayName: workflowId }, history, workflowId);
  const markers = patchMarkers(history);
  for (const p of patches) {
    if (!markers.includes(p)) throw new Error(`${workflowId}: no ${p} marker in: ${markers.join(', ')}`);
  }
}

/** The patch ids a history's markers record, in order (a patch marker carries its id in a JSON payload of its details). */
export function patchMarkers(history: Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>): string[] {
  return (history.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').flatMap((e) =>
    Object.values(e.markerRecordedEventAttributes?.details ?? {}).flatMap((d) => (d.payloads ?? []).flatMap((pl) => {
      const id = (JSON.parse(Buffer.from(pl.data ?? new Uint8Array()).toString('utf8')) as { id?: unknown }).id;
      return typeof id === 'string' ? [id] : [];
    })));
}
