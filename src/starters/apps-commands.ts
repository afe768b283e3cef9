// `tend app start|stop|restart|status NAMESPACE/NAME`: an operator's commands
// for Apps. start, stop and restart go through the App's entity workflow (an
// update, starting the workflow when none runs), so that they are applied in
// order, whatever else happens to the App; status reads the App itself.
import { Option, type Command } from 'commander';
import type { Client } from '@temporalio/client';
import type { Config } from '../config/load.ts';
import type { KubeClients } from '../kube/client.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import type { AppCommandResult, RestartRequest, RestartStrategy } from '../apps/messages.ts';
import { MAX_RESTART_TIMEOUT_SECONDS, parseAppKey, type App } from '../apps/types.ts';
import type { appWorkflow } from '../workflows/apps.ts';
import { configOrSandbox, EXIT_FAILURE, OperatorError, positiveInt, readerConfig, UsageError, withConfigOptions, type ConfigFlags } from './cli-support.ts';
import { columns, formatOf, jsonAliasOption, outputOption, printOutput, type OutputFormat } from './output.ts';
import { namespacedKey, namespaceOption } from './namespace-option.ts';
import { preview } from '../checks/preview.ts';

// Each command loads what it uses when it runs (the Temporal client, the Kubernetes client): `tend app --help` loads neither.
const reading = () => import('../apps/read.ts');

type Verb = 'start' | 'stop' | 'restart';

/** The App a command names: NAMESPACE/NAME, NAME with -n NAMESPACE, or app/NAMESPACE/NAME as -o name prints it. */
function target(given: string, namespace?: string): { namespace: string; name: string } {
  const text = /^app\/[^/]+\/[^/]+$/.test(given) ? given.slice('app/'.length) : given;
  const key = parseAppKey(namespacedKey(text, namespace, 'App'));
  if (!key) throw new UsageError(`App must be given as NAMESPACE/NAME, or -n NAMESPACE NAME, e.g. demo/hello (got ${preview(given, 160)}${namespace !== undefined ? ` in ${preview(namespace, 80)}` : ''})`);
  return key;
}

/** The cluster the command talks to: one KubeConfig and its clients, for the App's check and its progress. */
async function clusterOf(config: Config): Promise<{ kc: KubeConfig; kube: KubeClients }> {
  const { kubeClients, loadKubeConfig } = await import('../kube/client.ts');
  const kc = loadKubeConfig(config.kubernetes);
  return { kc, kube: kubeClients(kc) };
}

async function existingApp({ kc, kube }: Awaited<ReturnType<typeof clusterOf>>, namespace: string, name: string): Promise<App> {
  const { readApp } = await reading();
  const { serverOf, statusOf, unreachableError } = await import('../kube/client.ts');
  const app = await readApp(kube, namespace, name).catch((err: unknown) => {
    const unreachable = unreachableError(kc, err);
    if (unreachable) throw unreachable;
    // Another answer (401, 403, 5xx): its status, not the client library's stack.
    const status = statusOf(err);
    if (status !== undefined) throw new OperatorError(`cannot read App ${namespace}/${name} from ${serverOf(kc)}: the API server answered ${status}${status === 401 || status === 403 ? ' (the credentials may not get apps.tend.dev there)' : ''}`);
    throw err;
  });
  // What the cluster answers, not a mistake in the command's words: exit 1, as kubectl's NotFound.
  if (!app) throw new OperatorError(`App ${namespace}/${name} not found (kubectl get apps.tend.dev -n ${namespace})`);
  return app;
}


/**
 * Sends a command to the App's workflow, starting it if needed, and waits for
 * its result; gives up after `timeoutMs` (no worker answering) with a clear message.
 */
export async function sendAppCommand(
  client: Client, taskQueue: string, namespace: string, name: string, verb: Verb, req: RestartRequest | undefined, timeoutMs: number,
): Promise<AppCommandResult> {
  const { WithStartWorkflowOperation, WorkflowUpdateFailedError } = await import('@temporalio/client');
  const { restartUpdate, startUpdate, stopUpdate } = await import('../apps/messages.ts');
  const { appWorkflowStartOptions } = await import('./apps-watch.ts');
  const startWorkflowOperation = new WithStartWorkflowOperation<typeof appWorkflow>('appWorkflow', {
    ...appWorkflowStartOptions(namespace, name, taskQueue),
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const update = verb === 'restart'
    ? client.workflow.executeUpdateWithStart(restartUpdate, { args: [req], startWorkflowOperation })
    : client.workflow.executeUpdateWithStart(verb === 'start' ? startUpdate : stopUpdate, { args: [], startWorkflowOperation });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(
      `no answer from workflow app/${namespace}/${name} within ${Math.round(timeoutMs / 1000)}s: `
      + `is a tend worker running on task queue ${taskQueue}? The command stays queued and is applied when one runs.`)), timeoutMs);
  });
  try {
    return await Promise.race([update, timeout]);
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) throw new Error(`workflow app/${namespace}/${name} refused ${verb}: ${err.cause?.message ?? err.message}`);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

function describeResult(key: string, r: AppCommandResult): string {
  const rev = r.appRev !== undefined ? ` revision ${r.appRev} (last stop ${r.lastStopRev})` : '';
  return `${key}: ${r.message}; desired ${r.desiredState ?? '?'}, actual ${r.actualState ?? '?'},${rev}, workloads ${r.workloads.join(', ') || 'none'}`;
}

/** `tend app status`: desired and actual state, revisions, processes; wide adds every condition. */
export function formatStatus(app: App, wide = false): string {
  const s = app.status ?? {};
  const ready = s.conditions?.find((c) => c.type === 'Ready');
  const lines = [
    `App ${app.metadata.namespace}/${app.metadata.name}`,
    `  desired ${app.spec.desiredState}, actual ${s.actualState ?? 'unknown'}, revision ${app.metadata.annotations?.['tend.dev/app-rev'] ?? '-'}`
      + ` (last stop ${app.metadata.annotations?.['tend.dev/last-stop-app-rev'] ?? '-'}), generation ${app.metadata.generation} (observed ${s.observedGeneration ?? '-'})`,
    `  Ready ${ready ? `${ready.status} (${ready.reason}): ${ready.message}` : 'unknown: tend has not reconciled this App yet'}`,
  ];
  for (const p of s.processes ?? []) {
    lines.push(`  process ${p.type}: ${p.readyInstances}/${p.instances} ready${p.workload ? ` on ${p.workload}` : ''}`);
    for (const r of p.revisions) {
      lines.push(`    ${r.current ? 'current' : 'old    '} ${r.workload} app-rev ${r.appRev}: ${r.readyReplicas}/${r.replicas} ready, ${r.updatedReplicas} updated`);
    }
  }
  if (wide) {
    const conditions = s.conditions ?? [];
    if (conditions.length > 0) {
      lines.push('  conditions:');
      lines.push(...columns(['TYPE', 'STATUS', 'REASON', 'SINCE', 'MESSAGE'],
        conditions.map((c) => [c.type, c.status, c.reason ?? '-', c.lastTransitionTime ?? '-', c.message ?? ''])).split('\n').map((l) => `    ${l}`));
    }
  }
  return lines.join('\n');
}

/** One line of an App's progress while a command waits: its state, each process's ready pods, its Ready reason. */
export function progressLine(app: App): string {
  const s = app.status ?? {};
  const ready = s.conditions?.find((c) => c.type === 'Ready');
  const processes = (s.processes ?? []).map((p) => `${p.type} ${p.readyInstances}/${p.instances} ready${p.workload ? ` on ${p.workload}` : ''}`);
  return [`actual ${s.actualState ?? 'unknown'}`, ...processes, ...(ready ? [`Ready ${ready.status} (${ready.reason})`] : [])].join(', ');
}

/**
 * While `until` runs, prints on stderr the App's progress each time it changes (read every
 * PROGRESS_MS, and once more at the end), like kubectl rollout status: an operator sees the restart move instead of
 * minutes of silence. A failed read is skipped (the command's own result says what went wrong).
 */
async function withProgress<T>(kube: KubeClients, namespace: string, name: string, until: Promise<T>): Promise<T> {
  const t0 = Date.now();
  const say = (line: string) => console.error(`${namespace}/${name} (${Math.round((Date.now() - t0) / 1000)}s): ${line}`);
  const { readApp } = await reading();
  let last = '';
  let done = false;
  const loop = (async () => {
    while (!done) {
      const app = await readApp(kube, namespace, name).catch(() => undefined);
      const line = app ? progressLine(app) : '';
      if (line && line !== last && !done) say(line);
      if (line) last = line;
      await new Promise((resolve) => setTimeout(resolve, PROGRESS_MS));
    }
  })();
  try {
    return await until;
  } finally {
    done = true;
    await loop;
    // Where it ended, when that is news.
    const app = await readApp(kube, namespace, name).catch(() => undefined);
    if (app && progressLine(app) !== last) say(progressLine(app));
  }
}

const PROGRESS_MS = 2000;

export function registerAppCommands(program: Command): void {
  const app = program.command('app').description('App revisions: start, stop and restart Apps (apps.tend.dev), see their status');
  const verbs: { verb: Verb; description: string; timeout: number }[] = [
    { verb: 'start', description: 'start an App (desiredState STARTED); returns once applied', timeout: 60 },
    { verb: 'stop', description: 'stop an App (desiredState STOPPED, bumping its revisions); returns once applied', timeout: 60 },
    { verb: 'restart', description: 'stop + start an App; returns when it runs on new, ready pods', timeout: 300 },
  ];
  for (const { verb, description, timeout } of verbs) {
    const cmd = withConfigOptions(app.command(verb).description(description))
      .argument('<app>', 'NAMESPACE/NAME, or NAME with -n')
      .addOption(namespaceOption())
      .option('--timeout <seconds>', 'how long to wait', positiveInt('--timeout', verb === 'restart' ? MAX_RESTART_TIMEOUT_SECONDS : undefined), timeout);
    if (verb === 'restart') {
      cmd.addOption(new Option('--strategy <strategy>', 'stop-start: new workloads; rolling: bump app-rev only, rolling the same workloads')
        .choices(['stop-start', 'rolling']).default('stop-start'));
    }
    cmd.action(async (key: string, flags: ConfigFlags & { timeout: number; strategy?: RestartStrategy; namespace?: string }) => {
      const { namespace, name } = target(key, flags.namespace);
      const config = await configOrSandbox(flags);
      // The worker would refuse it too; refused here first, before anything is sent.
      const { appScopeProblem } = await reading();
      const problem = appScopeProblem(config.apps, namespace, name);
      if (problem) throw new UsageError(`refused: ${problem}`);
      const cluster = await clusterOf(config);
      await existingApp(cluster, namespace, name);
      const { connectClient } = await import('../temporal/connection.ts');
      const client = await connectClient(config.temporal);
      try {
        const req = verb === 'restart' ? { strategy: flags.strategy, timeoutSeconds: flags.timeout } : undefined;
        // The workflow bounds a restart's wait itself; the client allows a little more, for a missing worker.
        const result = await withProgress(cluster.kube, namespace, name,
          sendAppCommand(client, config.temporal.taskQueue, namespace, name, verb, req, (flags.timeout + 15) * 1000));
        (result.ok ? console.log : console.error)(describeResult(`${namespace}/${name}`, result));
        if (!result.ok) process.exitCode = EXIT_FAILURE;
      } finally {
        await client.connection.close();
      }
    });
  }
  withConfigOptions(app.command('status').description("show an App's desired and actual state, revisions and workloads"))
    .argument('<app>', 'NAMESPACE/NAME, or NAME with -n')
    .addOption(namespaceOption())
    .addOption(outputOption())
    .addOption(jsonAliasOption())
    .action(async (key: string, flags: ConfigFlags & { output: OutputFormat; json?: boolean; namespace?: string }) => {
      const { namespace, name } = target(key, flags.namespace);
      const { config, from } = await readerConfig(flags);
      // Without a configuration no worker's scope is known: the App is read as kubectl would.
      if (from !== 'environment') {
        const { appScopeProblem } = await reading();
        const problem = appScopeProblem(config.apps, namespace, name);
        if (problem) throw new UsageError(`refused: ${problem}`);
      }
      const found = await existingApp(await clusterOf(config), namespace, name);
      const data = { metadata: { namespace, name, annotations: found.metadata.annotations, generation: found.metadata.generation }, spec: found.spec, status: found.status ?? {} };
      await printOutput(formatOf(flags), data, (wide) => formatStatus(found, wide), () => [`app/${namespace}/${name}`]);
    });
}
