// The recorded histories (test/replay/histories/<label>/, written by
// scripts/record-histories.ts) and the workflow code to replay them against.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from './history-json.ts';
import type { HistoryEvent } from './split.ts';
import { workflowBundleOptions } from '../../src/workers/worker.ts';
import type { HistoryAndWorkflowId } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type ReplayResult, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

export const historiesDir = fileURLToPath(new URL('./histories', import.meta.url));
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/** The workflow code the worker hosts (its entry point, as the worker bundles it). */
export const workflowsPath = join(repoRoot, 'src', 'workflows', 'index.ts');

export interface RecordedHistory {
  /** `<label>/<file>`, as a test names it. */
  name: string;
  label: string;
  workflowId: string;
  runId: string;
  workflowType: string;
  status: string;
  continued: boolean;
  history: HistoryAndWorkflowId['history'];
  /** The history as the file holds it (`temporal workflow show -o json`). */
  json: { events: HistoryEvent[] };
}

interface Manifest {
  label: string;
  histories: { file: string; workflowId: string; runId: string; workflowType: string; status: string; continued: boolean }[];
}

/** Every recorded history of every label; a file the manifest does not list, or a listed file that is missing, is an error. */
export async function loadHistories(dir = historiesDir): Promise<RecordedHistory[]> {
  const out: RecordedHistory[] = [];
  const labels = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  for (const label of labels) {
    const manifestFile = join(dir, label, 'manifest.json');
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as Manifest;
    const files = new Set((await readdir(join(dir, label))).filter((f) => f.endsWith('.json') && f !== 'manifest.json'));
    for (const h of manifest.histories) {
      if (!files.delete(h.file)) throw new Error(`${manifestFile} lists ${h.file}, which is not in ${join(dir, label)}`);
      const json = JSON.parse(await readFile(join(dir, label, h.file), 'utf8')) as RecordedHistory['json'];
      out.push({ name: `${label}/${h.file}`, label, ...h, history: historyFromJSON(json), json });
    }
    if (files.size > 0) throw new Error(`${join(dir, label)} holds histories its manifest.json does not list: ${[...files].join(', ')}`);
  }
  return out;
}

/**
 * The Runtime, installed once and quiet: the core logs every failed workflow
 * task at WARN, and the reordered test fails some on purpose (its results say why).
 */
export function quietRuntime(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } });
  } catch {
    // Installed already (another test file in this process did it).
  }
}

/**
 * The workflow code at `workflowsPath`, bundled as the worker bundles it: the repository's own
 * with its shared modules loaded once (as the worker loads them), another tree's (a generated
 * fixture) with none.
 */
export function bundle(workflowsPath: string): Promise<WorkflowBundleWithSourceMap> {
  const own = workflowBundleOptions();
  return bundleWorkflowCode({
    workflowsPath,
    preloadModules: workflowsPath === own.workflowsPath ? own.preloadModules : [],
    logger: new DefaultLogger('WARN'),
    // A module outside the repository (a generated fixture) still finds tend's dependencies.
    webpackConfigHook: (config) => ({
      ...config,
      resolve: { ...config.resolve, modules: [...(config.resolve?.modules ?? []), join(repoRoot, 'node_modules')] },
    }),
  });
}

/** Replays the histories against a bundle, one at a time; each one's result, in the same order. */
export async function replay(workflowBundle: WorkflowBundleWithSourceMap, histories: RecordedHistory[]): Promise<ReplayResult[]> {
  quietRuntime();
  const results: ReplayResult[] = [];
  const input = histories.map((h) => ({ workflowId: h.workflowId, history: h.history }));
  for await (const r of Worker.runReplayHistories({ workflowBundle, replayName: 'tend-replay' }, input)) results.push(r);
  if (results.length !== histories.length) throw new Error(`replayed ${results.length} of ${histories.length} histories`);
  return results;
}
