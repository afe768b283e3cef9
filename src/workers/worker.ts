// The worker: hosts every workflow and activity on one task queue; with
// repair.taskQueue set, the repair commands run on a worker of their own.
import { Worker } from '@temporalio/worker';
import type * as k8s from '@kubernetes/client-node';
import { installRuntime } from './runtime.ts';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { workerActivities, type Capability } from '../activities/index.ts';
import { ConfigError, OperatorError, UsageError } from '../errors.ts';
import { beginShutdown } from '../temporal/worker-shutdown.ts';
import { logAwaited, stopAtShutdown } from './shutdown.ts';
import { keepSingletons, SINGLETONS, type SingletonId } from './singletons.ts';
import { SAFETY_WORKFLOW_ID } from '../safety/messages.ts';
import { SLOTS_WORKFLOW_ID } from '../taint/messages.ts';
import { REPAIR_QUEUE_WORKFLOW_ID } from '../repair/messages.ts';
import { Client } from '@temporalio/client';
import { withholdFromCommands } from '../repair/process.ts';
import { GUARD_ANNOTATION } from '../repair/guard.ts';
import { checkKubernetes, kubeClients, loadKubeConfig, type KubeOptions } from '../kube/client.ts';
import { connectNative, type TemporalSettings } from '../temporal/connection.ts';
import { log } from '../log.ts';
import { buildIdOf, promoteVersion } from './versioning.ts';
import { describeReader, PauseState } from '../safety/pause.ts';
import { ModeState } from '../safety/modes.ts';
import { configWarnings, loadConfig, sourceOf } from '../config/load.ts';
import type { WorkerSections } from '../activities/index.ts';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * The modules of the workflow code that hold no state of a workflow: the capabilities' pure
 * logic, their messages and the checks of those. The SDK evaluates every other module of the
 * bundle again for each workflow it keeps in its cache (isolation); these it evaluates once,
 * before any workflow, and shares frozen (npm run bench -- workflow-memory measures what that
 * saves). A module listed here must not keep anything that changes (no module-level `let`, no
 * Map written to): test/unit/shared-modules.test.ts checks that, and keeps this list equal to the
 * workflow code's modules outside src/workflows. zod must stay out of the workflow code
 * (src/checks/shape.ts says why).
 */
export const sharedWorkflowModules: readonly string[] = [
  'checks/shape.ts', 'checks/limits.ts', 'checks/preview.ts', 'checks/message.ts', 'config/selector.ts', 'search-attributes.ts',
  'safety/messages.ts',
  'repair/entry.ts', 'repair/validate.ts', 'repair/decide.ts', 'repair/messages.ts', 'repair/queue.ts', 'repair/entry-machine.ts', 'repair/summaries.ts',
  'taint/breaker.ts', 'taint/match.ts', 'taint/messages.ts', 'taint/node.ts', 'taint/replace.ts', 'taint/slots.ts', 'taint/node-machine.ts', 'taint/coordinator.ts', 'taint/summaries.ts',
  'weeder/messages.ts', 'weeder/window.ts', 'weeder/armed.ts', 'weeder/crashloop.ts', 'weeder/window-run.ts', 'weeder/summaries.ts',
  'apps/messages.ts', 'apps/entity.ts', 'apps/types.ts', 'apps/summaries.ts',
  'config/node-repair-operation.ts', 'noderepair/messages.ts', 'noderepair/countdown.ts', 'noderepair/decide.ts', 'noderepair/node.ts',
].map((m) => fileURLToPath(new URL(`../${m}`, import.meta.url)));

/** The workflow sources for a worker that bundles them at start-up, bundled as the pre-built bundle is. */
export interface WorkflowSources { workflowsPath: string; bundlerOptions: { preloadModules: string[] } }
const workflowSources = (): WorkflowSources => {
  const { preloadModules } = workflowBundleOptions();
  return { workflowsPath, bundlerOptions: { preloadModules } };
};

/** How the workflow code is bundled, everywhere it is (the worker, the pre-built bundle, tests, replay). */
export function workflowBundleOptions(): { workflowsPath: string; preloadModules: string[] } {
  return { workflowsPath, preloadModules: [...sharedWorkflowModules] };
}

// ---------------------------------------------------------------------------------------------
// The pre-built workflow bundle. `npm run bundle` (and the image build) writes the workflow code
// bundled by webpack to dist/workflow-bundle.js, and beside it the fingerprint of the sources it
// was built from. A worker whose sources have that fingerprint loads the file (no webpack, no
// swc, nothing written to /tmp: fast, and fine on a read-only root filesystem); any other bundles
// its workflows at start-up as before.
// ---------------------------------------------------------------------------------------------
const srcRoot = fileURLToPath(new URL('..', import.meta.url));
export const workflowBundlePath = fileURLToPath(new URL('../../dist/workflow-bundle.js', import.meta.url));
const fingerprintPath = (bundle: string) => bundle.replace(/\.js$/, '.fingerprint');

/**
 * The fingerprint of everything a bundle is built from: every TypeScript file under src/ (the
 * workflows and whatever they import) and the SDK's version. Conservative: any source change
 * makes the bundle stale.
 */
export function workflowSourcesFingerprint(): Promise<string> {
  // Once per process: the worker asks for it twice at start-up (the bundle check, the build id).
  fingerprint ??= computeFingerprint();
  return fingerprint;
}
let fingerprint: Promise<string> | undefined;

async function computeFingerprint(): Promise<string> {
  const hash = createHash('sha256');
  const walk = async (dir: string): Promise<string[]> => (await Promise.all(
    (await readdir(dir, { withFileTypes: true })).map((e) => {
      const path = join(dir, e.name);
      return e.isDirectory() ? walk(path) : e.name.endsWith('.ts') ? [path] : [];
    }))).flat();
  for (const file of (await walk(srcRoot)).sort()) {
    hash.update(`${relative(srcRoot, file)}\0`).update(await readFile(file)).update('\0');
  }
  const sdk = JSON.parse(await readFile(fileURLToPath(import.meta.resolve('@temporalio/workflow/package.json')), 'utf8')) as { version: string };
  hash.update(`@temporalio/workflow@${sdk.version}`);
  return hash.digest('hex');
}

/** Bundles the workflow code to `path` with its fingerprint (`npm run bundle`, the image build). */
export async function writeWorkflowBundle(path = workflowBundlePath): Promise<{ path: string; bytes: number }> {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { code } = await bundleWorkflowCode(workflowBundleOptions());
  await mkdir(dirname(path), { recursive: true });
  // Written beside and renamed: a worker starting meanwhile reads the old bundle or the new, never half of one.
  await writeFile(`${path}.${process.pid}.tmp`, code);
  await rename(`${path}.${process.pid}.tmp`, path);
  await writeFile(fingerprintPath(path), `${await workflowSourcesFingerprint()}\n`);
  return { path, bytes: Buffer.byteLength(code) };
}

/**
 * The pre-built bundle at `path`, written when it is missing or not of the current sources (the
 * test run's first step, the benchmarks'): `written` says whether it was.
 */
export async function ensureWorkflowBundle(path = workflowBundlePath): Promise<{ path: string; written: boolean }> {
  if (await bundleIsCurrent(path)) return { path, written: false };
  await writeWorkflowBundle(path);
  return { path, written: true };
}

/** Whether the pre-built bundle at `path` is of the current sources. */
export async function bundleIsCurrent(path = workflowBundlePath): Promise<boolean> {
  if (!existsSync(path)) return false;
  return (await readFile(fingerprintPath(path), 'utf8').catch(() => '')).trim() === await workflowSourcesFingerprint();
}

/** The worker's workflow code: the pre-built bundle when it matches the sources, else the sources (bundled now). */
export async function workflowCode(path = workflowBundlePath): Promise<{ workflowBundle: { codePath: string } } | WorkflowSources> {
  if (process.env.TEND_WORKFLOW_BUNDLE === 'off' || !existsSync(path)) return workflowSources();
  if (!(await bundleIsCurrent(path))) {
    log.warn({ bundle: path }, 'the pre-built workflow bundle is not of these sources: bundling the workflows now (run `npm run bundle` to refresh it)');
    return workflowSources();
  }
  return { workflowBundle: { codePath: path } };
}

/**
 * A failure to bundle the workflows at start-up, said plainly: the bundler's loader (swc) unpacks
 * its native binary into a cache first, which fails on a read-only filesystem, and the error it
 * prints never says so.
 */
export class BundlingError extends OperatorError {}

async function bundlingExplained<T>(code: Awaited<ReturnType<typeof workflowCode>> | undefined, create: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (err) {
    if (!code || !('workflowsPath' in code)) throw err;
    const uid = process.getuid?.() ?? 'UID';
    throw new BundlingError(
      `bundling the workflow code at start-up failed: ${(err as Error).message.split('\n')[0]}\n` +
      `  The bundler's loader (swc) unpacks its native binary into a writable cache: $SWC_NATIVE_BINDING_CACHE, else $XDG_CACHE_HOME or ~/.cache (swc-native-${uid}), else $TMPDIR. ` +
      'On a read-only filesystem give it one of these, or load the pre-built bundle instead (`npm run bundle`; the image ships it), which writes nothing.');
  }
}

/**
 * Workflows the worker keeps in memory between their tasks (sticky execution); one pushed out
 * replays its history at its next task. The SDK's default grows with the heap limit (about
 * 2,400 on a machine with 24 GiB), more than a storm needs and all of it kept in memory. 500 holds
 * a zone outage of a 1,000-node cluster (334 node workflows and the coordinator, all busy at
 * once: npm run bench -- taint-storm) and the other capabilities' workflows beside it; past it,
 * the least recently used replay. docs/taint.md gives the memory measured.
 */
export const WORKFLOW_CACHE_SIZE = 500;

/**
 * The longest a heartbeat an activity gives waits before it is sent (the SDK sends at most one per
 * 0.8 x the activity's heartbeat timeout otherwise). An armed weeder watch (10 s timeout) would
 * then be timed out by a stall of 2 s on a busy machine, and its retry, elsewhere, act beside it; a
 * cancellation, a stop, or the news that the attempt was timed out reaches a running activity only
 * with a heartbeat's answer. Once per 2 s per running heartbeating activity at most.
 */
export const HEARTBEAT_THROTTLE_MAX = '2s';

/**
 * On SIGTERM a worker that runs repair commands stops polling and gives a
 * running repair or success command this long to finish before it cancels it
 * (its process group is killed; the attempt is retried by the next worker).
 * Every other activity stops at once (src/workers/shutdown.ts). Keep the
 * Deployment's terminationGracePeriodSeconds (90) above it, so the kubelet's
 * SIGKILL never comes first.
 */
export const SHUTDOWN_GRACE_SECONDS = 60;

export interface WorkerOptions extends WorkerSections {
  temporal: TemporalSettings;
  kubernetes: KubeOptions;
}

/** What a worker runs: every capability (the default), or only some (`tend worker --capabilities`). */
export interface WorkerScope {
  capabilities?: readonly Capability[];
  /** Told the SDK Worker's state whenever it changes (INITIALIZED, RUNNING, STOPPING, DRAINING, DRAINED, STOPPED, FAILED). */
  onState?(state: string): void;
}

/** How often the Worker's state is looked at for onState. */
const STATE_POLL_MS = 500;

/**
 * Where a worker polls and what it registers. With repair.taskQueue set,
 * `--capabilities repair` is the repair command worker: it polls only that
 * task queue, registers only the command activities and no workflows, and uses
 * a Kubernetes connection for the guard on the entry's Node only
 * (commandsGuard). Any other worker polls the main task queue.
 * Bad combinations are configuration errors, named.
 */
export function workerPlan(opts: Pick<WorkerOptions, 'temporal' | 'repair'>, scope: WorkerScope = {}):
  { kind: 'main'; taskQueue: string; capabilities?: readonly Capability[] } | { kind: 'repair-commands'; taskQueue: string } {
  const repairQueue = opts.repair?.taskQueue;
  if (repairQueue !== undefined && repairQueue === opts.temporal.taskQueue) {
    throw new ConfigError('repair.taskQueue', [{ path: 'repair.taskQueue', message: `must differ from temporal.taskQueue ("${repairQueue}"): it is the repair commands' own task queue` }]);
  }
  const caps = scope.capabilities;
  if (caps?.includes('repair') && !opts.repair) {
    throw new UsageError('--capabilities repair: the configuration has no repair section (the command worker needs the same repair section as the main worker)');
  }
  if (repairQueue && caps?.includes('repair')) {
    if (caps.length > 1) {
      throw new UsageError(`--capabilities ${caps.join(',')}: with repair.taskQueue set, "repair" is the worker that runs the repair commands on task queue "${repairQueue}" only; ` +
        `run the other capabilities (${caps.filter((c) => c !== 'repair').join(', ')}) in a worker of their own`);
    }
    return { kind: 'repair-commands', taskQueue: repairQueue };
  }
  return { kind: 'main', taskQueue: opts.temporal.taskQueue, ...(caps ? { capabilities: caps } : {}) };
}

/**
 * Whether the repair command worker has a Kubernetes connection to take the guard on the entry's Node
 * with (src/repair/guard.ts): yes when one is given in any of the places the main worker reads one from
 * (kubernetes.kubeconfig or --kubeconfig, a context, in-cluster credentials, $KUBECONFIG, ~/.kube/config),
 * and then it must work (a broken one is a configuration error, as on the main worker). None at all: the
 * worker runs guarded per host only, and says so at start-up (docs/repair.md).
 */
export function commandsGuard(opts: KubeOptions, env: NodeJS.ProcessEnv = process.env, home = homedir()): 'node' | { perHostOnly: string } {
  if (opts.kubeconfig || opts.context || env.KUBERNETES_SERVICE_HOST || env.KUBECONFIG || existsSync(join(home, '.kube', 'config'))) return 'node';
  return { perHostOnly: 'no Kubernetes connection is configured (kubernetes.kubeconfig, --kubeconfig, in-cluster credentials, $KUBECONFIG or ~/.kube/config)' };
}

/** The worker's Kubernetes connection: the main worker's always; the command worker's when it has one to guard with. */
function kubeFor(commandsOnly: boolean, opts: KubeOptions): { kc?: k8s.KubeConfig; perHostOnly?: string } {
  const guard = commandsOnly ? commandsGuard(opts) : 'node';
  return guard === 'node' ? { kc: loadKubeConfig(opts) } : guard;
}

/**
 * The singletons a worker can take over (src/workers/singletons.ts): tend-safety always; the taint
 * coordinator and the repair queue only where this worker runs their capability's activities.
 */
export function servedSingletons(opts: Pick<WorkerSections, 'taintReplacement' | 'repair'>, capabilities?: readonly Capability[]): SingletonId[] {
  const runs = (c: Capability) => !capabilities || capabilities.includes(c);
  return SINGLETONS.map((s) => s.id).filter((id) =>
    id === SAFETY_WORKFLOW_ID || (id === SLOTS_WORKFLOW_ID && opts.taintReplacement && runs('taint')) || (id === REPAIR_QUEUE_WORKFLOW_ID && opts.repair && runs('repair')));
}

/** Connects to both sides, then runs until `signal` aborts. */
export async function runWorker(opts: WorkerOptions, signal: AbortSignal, scope: WorkerScope = {}): Promise<void> {
  const plan = workerPlan(opts, scope);
  for (const warning of configWarnings(opts)) log.warn({ config: 'compatibility' }, warning);
  installRuntime();
  // The variable holding tend's Temporal API key, whatever its name, never reaches a repair command.
  withholdFromCommands(opts.temporal.apiKeyEnv);
  const commandsOnly = plan.kind === 'repair-commands';
  // The repair command worker uses Kubernetes for the guard only (Node list, get and patch); without a
  // connection it still runs commands, guarded per host only, and says so below.
  const { kc, perHostOnly } = kubeFor(commandsOnly, opts.kubernetes);
  const version = kc ? await checkKubernetes(kc) : undefined;
  const kube = kc ? kubeClients(kc) : undefined;
  const connection = await connectNative(opts.temporal);
  const code = commandsOnly ? undefined : await workflowCode();
  // Versioning applies to the worker that runs workflows; the repair command worker runs
  // activities only (never replayed), unversioned on its own task queue.
  const deployment = commandsOnly ? undefined : opts.temporal.deployment;
  const buildId = deployment && (deployment.buildId ?? buildIdOf(await workflowSourcesFingerprint()));
  // The durable pause (`tend pause`), read every 250 ms; activities ask it right before a
  // destructive write (src/activities/safety-gate.ts).
  const pause = new PauseState({ read: describeReader(connection.workflowService, opts.temporal.namespace, { taskQueue: opts.temporal.taskQueue }) });
  pause.start();
  // The modes (act or observe), read again on SIGHUP and every few seconds from where the
  // configuration came from: a switch applies to the next write, no restart (docs/safety.md).
  const source = sourceOf(opts);
  const modes = new ModeState(opts, source ? { reload: () => loadConfig(source) } : {});
  modes.start();
  try {
    const worker = await bundlingExplained(code, () => Worker.create({
      connection,
      namespace: opts.temporal.namespace,
      taskQueue: plan.taskQueue,
      ...code,
      activities: workerActivities({ ...(kube ? { kube } : {}), config: opts, pause, modes },
        commandsOnly ? { repairCommandsOnly: true } : { ...(plan.capabilities ? { capabilities: plan.capabilities } : {}) }),
      shutdownGraceTime: opts.repair ? `${SHUTDOWN_GRACE_SECONDS}s` : 0,
      interceptors: { activity: [stopAtShutdown()] },
      maxCachedWorkflows: WORKFLOW_CACHE_SIZE,
      maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE_MAX,
      ...(deployment && buildId ? {
        workerDeploymentOptions: {
          useWorkerVersioning: true,
          version: { deploymentName: deployment.name, buildId },
          defaultVersioningBehavior: 'AUTO_UPGRADE',
        },
      } : {}),
    }));
    if (perHostOnly) {
      log.warn({ guard: 'per host only' }, `repair commands worker: ${perHostOnly}, so no command is guarded on its entry's Node: ` +
        'two command workers on different hosts can run one entry\'s command at once (after a partition, a retry). ' +
        'Give this worker a Kubernetes connection (Node list, get and patch), or run one command worker per group of machines (docs/repair.md)');
    }
    log.info({
      taskQueue: plan.taskQueue, temporal: opts.temporal.address,
      ...(commandsOnly
        ? {
          runs: 'repair commands only (repair.taskQueue)',
          ...(version ? { kubernetes: version, guard: `the entry's Node (${GUARD_ANNOTATION})` } : { guard: 'per host only (no Kubernetes connection)' }),
        }
        : {
          kubernetes: version, ...(plan.capabilities ? { capabilities: plan.capabilities } : {}),
          ...(opts.repair?.taskQueue ? { repairCommandsOn: opts.repair.taskQueue } : {}),
          workflowBundle: code && 'workflowBundle' in code ? code.workflowBundle.codePath : 'bundled at start-up',
          ...(deployment ? { deployment: deployment.name, buildId } : {}),
        }),
    }, 'worker started');
    let last: string | undefined;
    const report = (state: string = worker.getState()) => {
      if (state === last) return;
      last = state;
      scope.onState?.(state);
    };
    const poll = scope.onState ? setInterval(() => report(), STATE_POLL_MS) : undefined;
    // Run first, then listen: a worker that was created but never run holds the connection for good
    // (its close then throws), and one that is not running cannot be shut down. A stop that came while
    // the worker was starting shuts it down as soon as it runs.
    const running = worker.run();
    const grace = opts.repair ? SHUTDOWN_GRACE_SECONDS : 0;
    const stop = () => {
      beginShutdown();
      if (worker.getState() === 'RUNNING') worker.shutdown();
      void logAwaited(running, grace);
    };
    signal.addEventListener('abort', stop, { once: true });
    if (signal.aborted) stop();
    report();
    // The namespace's singletons left on a task queue no worker polls (their tend is gone) are
    // taken over here (src/workers/singletons.ts); stopped with the worker, before the connection closes.
    const keeping = code && plan.kind === 'main'
      ? keepSingletons({
        connection, client: new Client({ connection, namespace: opts.temporal.namespace }), namespace: opts.temporal.namespace,
        taskQueue: plan.taskQueue, workflowCode: code, signal, serves: servedSingletons(opts, plan.capabilities),
      })
      : undefined;
    // The version is registered by the worker's first poll, so promotion runs beside it, until
    // it is done or the worker stops.
    const promotion = new AbortController();
    const promoting = deployment && buildId && deployment.promote === 'newest'
      ? promoteVersion(connection, opts.temporal.namespace, deployment.name, buildId, AbortSignal.any([signal, promotion.signal])).catch((err: unknown) => {
        log.error({ err, deployment: deployment.name, buildId }, 'worker deployment: promotion failed');
      })
      : undefined;
    try {
      await running;
    } catch (err) {
      report('FAILED');
      throw err;
    } finally {
      clearInterval(poll);
      report();
      promotion.abort();
      await promoting;
      await keeping;
    }
    log.info('worker stopped');
  } finally {
    pause.stop();
    modes.stop();
    await connection.close();
  }
}
