// Benchmark (not a test): what each workflow kept in the worker's cache costs in heap, with the
// workflow code bundled as the worker bundles it (its pure modules loaded once and shared by every
// workflow) and, for comparison, with every module evaluated again per workflow.
//
//   node bench/workflow-memory.ts [--workflows 300] [--snapshot DIR]
//
// --snapshot writes the heap before and after the shared run's workflows (DIR/before.heapsnapshot,
// DIR/after.heapsnapshot) and prints what grew between them, by constructor
// (bench/lib/heap-diff.ts), so that what each cached workflow holds is seen, not guessed.
//
// It needs no sandbox: a Temporal dev server of its own (the binary cache's `temporal`), one
// worker in this thread (debugMode, so that the heap measured is the workflows'), and the
// `tend doctor` workflow held in its activity, so that each run stays cached. Run with
// --expose-gc (npm run bench does) to measure after a full collection.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapStatistics, writeHeapSnapshot } from 'node:v8';
import { printHeapDiff } from './lib/heap-diff.ts';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { ensureBinaries } from '../src/sandbox/binaries.ts';
import { workflowBundleOptions } from '../src/workers/worker.ts';

const { values } = parseArgs({ options: { workflows: { type: 'string', default: '300' }, snapshot: { type: 'string' } } });
const count = Number(values.workflows);
if (!Number.isInteger(count) || count < 1) throw new Error(`--workflows must be a whole number above 0 (got ${values.workflows})`);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench -- workflow-memory does)');
const heapMiB = () => {
  gc();
  gc();
  return getHeapStatistics().used_heap_size / 2 ** 20;
};
const waitFor = async (what: string, done: () => boolean, ms = 300_000) => {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

Runtime.install({ logger: new DefaultLogger('WARN') });
const env = await TestWorkflowEnvironment.createLocal({
  server: { executable: { type: 'existing-path', path: (await ensureBinaries()).temporal }, extraArgs: ['--log-level', 'error'] },
});

async function measure(label: string, shared: boolean) {
  const options = workflowBundleOptions();
  const workflowBundle = await bundleWorkflowCode({ ...options, ...(shared ? {} : { preloadModules: [] }), logger: new DefaultLogger('WARN') });
  const taskQueue = `memory-${randomUUID().slice(0, 8)}`;
  let held = 0;
  const release: Array<() => void> = [];
  const worker = await Worker.create({
    connection: env.nativeConnection, taskQueue, workflowBundle, debugMode: true,
    maxCachedWorkflows: count + 10, maxConcurrentActivityTaskExecutions: count + 10, shutdownGraceTime: '1s',
    activities: {
      clusterFacts: () => new Promise((resolve) => {
        held++;
        release.push(() => resolve({ version: 'v0', nodes: 0 }));
      }),
    },
  });
  const running = worker.run();
  // One workflow first, so that what every workflow shares (the bundle's context) is in the baseline.
  const first = await env.client.workflow.start('checkWorkflow', { taskQueue, workflowId: `${taskQueue}-0` });
  await waitFor('the first workflow', () => held === 1);
  const before = heapMiB();
  const snapshots = shared && values.snapshot ? values.snapshot : undefined;
  if (snapshots) {
    mkdirSync(snapshots, { recursive: true });
    writeHeapSnapshot(join(snapshots, 'before.heapsnapshot'));
  }
  const t0 = performance.now();
  const handles = [first];
  for (let i = 1; i < count; i++) handles.push(await env.client.workflow.start('checkWorkflow', { taskQueue, workflowId: `${taskQueue}-${i}` }));
  await waitFor(`${count} workflows in their activity`, () => held === count);
  const seconds = (performance.now() - t0) / 1000;
  const after = heapMiB();
  if (snapshots) {
    writeHeapSnapshot(join(snapshots, 'after.heapsnapshot'));
    printHeapDiff(join(snapshots, 'before.heapsnapshot'), join(snapshots, 'after.heapsnapshot'), count - 1);
  }
  for (const r of release) r();
  await Promise.all(handles.map((h) => h.result()));
  worker.shutdown();
  await running;
  const per = (after - before) / (count - 1);
  console.log(`${label.padEnd(34)} ${count} workflows cached: heap ${before.toFixed(0)} -> ${after.toFixed(0)} MiB, ${(per * 1024).toFixed(0)} KiB per workflow, started in ${seconds.toFixed(1)} s`);
  return per;
}

try {
  const shared = await measure('pure modules shared (the worker)', true);
  const each = await measure('every module per workflow', false);
  console.log(`per workflow: ${(shared * 1024).toFixed(0)} KiB against ${(each * 1024).toFixed(0)} KiB; 500 cached workflows: ${(shared * 500).toFixed(0)} MiB against ${(each * 500).toFixed(0)} MiB`);
} finally {
  await env.teardown();
}
