#!/usr/bin/env node
// The `tend` command: the operator's tool, and the process that runs the
// worker and the watcher. Exit codes: 0 ok, 1 failure, 2 usage or configuration.
import { Command, CommanderError, Help, InvalidArgumentError, Option } from 'commander';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { ConfigError, KubeUnreachableError, UnreachableError } from '../errors.ts';
import type { Config } from '../config/load.ts';
import { LOG_FORMATS, log, parseLogFormat, redact, setLogFormat, type LogFormat } from '../log.ts';
import { workerCheckOf } from '../http/worker-state.ts';
import { SandboxError } from '../sandbox/errors.ts';
import { MAX_NODES } from '../sandbox/kubelet/ipam.ts';
import {
  configFrom, configOrSandbox, EXIT_FAILURE, EXIT_USAGE, OperatorError, positiveInt, positiveNumber, shutdownSignal, UsageError,
  withConfigOptions, type ConfigFlags,
} from './cli-support.ts';
import { COMMAND_GROUPS, groupOf } from './command-groups.ts';
import { registerCompletionCommand } from './completion.ts';
import { unknownCommandIn, unknownCommandMessage } from './unknown-command.ts';
import { parseListenAddress, type ListenAddress } from '../http/address.ts';
import type { Capability } from '../activities/index.ts';
import { tendCommit, tendVersion } from '../version.ts';

/** --nodes: the simulated kubelet gives each node a pod range of its own, and has MAX_NODES of them. */
function nodeCount(v: string): number {
  const n = positiveInt('--nodes', Number.MAX_SAFE_INTEGER)(v);
  if (n > MAX_NODES) throw new InvalidArgumentError(`--nodes must be at most ${MAX_NODES}, a /26 of the pod network each (got "${v}")`);
  return n;
}

interface RunFlags extends ConfigFlags {
  httpAddress?: ListenAddress;
  capabilities?: string;
}

/** What runs: the worker and/or the watcher; the worker limited to some capabilities (`tend worker --capabilities`). */
interface Parts {
  worker: boolean;
  watcher: boolean;
  capabilities?: Capability[];
}

/** --capabilities LIST (worker only): a comma list, parsed when the worker starts (an unknown name: exit 2, named). */
const capabilitiesOption = () =>
  new Option('--capabilities <list>', "run only these capabilities' activities (comma list of weeder, taint, apps, repair); " +
    'with repair.taskQueue set, `repair` alone is the worker that runs the repair commands on that task queue (docs/repair.md)');

async function capabilitiesOf(text: string | undefined): Promise<{ capabilities?: Capability[] }> {
  if (text === undefined) return {};
  const { parseCapabilities } = await import('../activities/index.ts');
  const c = parseCapabilities(text);
  if ('problem' in c) throw new UsageError(`--capabilities: ${c.problem}`);
  return { capabilities: c };
}

/** --http-address HOST:PORT: overrides the config's http.address. */
const httpAddressOption = () =>
  new Option('--http-address <host:port>', "serve /metrics, /healthz and /readyz here (default: the config's http.address, 0.0.0.0:9464)")
    .argParser((v: string) => {
      const a = parseListenAddress(v);
      if ('problem' in a) throw new InvalidArgumentError(`--http-address: ${a.problem}`);
      return a;
    });

/**
 * --log-format text|json, tend's own option, before or after the command's name: how every line
 * the command logs is written (src/log.ts, docs/logging.md). A bad value is a usage error, said in one line.
 */
const logFormatOption = () =>
  new Option('--log-format <format>', 'how log lines are written (env: TEND_LOG_FORMAT; default: text when stderr is a terminal, else json)')
    .choices(LOG_FORMATS)
    .argParser((v: string): LogFormat => {
      const format = parseLogFormat(v, '--log-format');
      if (typeof format !== 'string') throw new UsageError(format.problem);
      return format;
    });

/** Runs the parts with tend's HTTP port open: its checks follow the parts, its /metrics adds the SDK's. */
async function runServed(config: Config, parts: Parts, signal: AbortSignal, flag?: ListenAddress) {
  const { startHttpServer, ListenError } = await import('../http/server.ts');
  const { health } = await import('../http/health.ts');
  const { tendMetrics } = await import('../metrics/registry.ts');
  const runtime = await import('../workers/runtime.ts');
  const configured = parseListenAddress(config.http.address);
  if ('problem' in configured) throw new UsageError(`http.address: ${configured.problem}`);
  const address = flag ?? configured;
  // What this machine can check is checked before anything is served: a plan the worker refuses, or
  // a kubeconfig that cannot be used, is exit 2, never a process that has begun to serve /healthz.
  const { workerPlan } = await import('../workers/worker.ts');
  const plan = parts.worker ? workerPlan(config, parts.capabilities ? { capabilities: parts.capabilities } : {}) : undefined;
  if (parts.watcher || plan?.kind === 'main') {
    const { loadKubeConfig } = await import('../kube/client.ts');
    loadKubeConfig(config.kubernetes);
  }
  if (parts.worker) runtime.installRuntime({ coreMetricsPort: await runtime.freeLoopbackPort() });
  // The worker's check, from the SDK Worker's state: alive unless stopped or failed, ready while it polls.
  const workerCheck = parts.worker
    ? health.settable('worker', { alive: true, ready: false, reason: 'starting: connecting to Temporal and Kubernetes' })
    : undefined;
  let server;
  try {
    server = await startHttpServer({
      address, health,
      metrics: async () => {
        const [tend, sdk] = await Promise.all([
          tendMetrics(),
          runtime.coreMetrics().catch((err: unknown) => `# the Temporal SDK's metrics could not be read: ${String((err as Error)?.message ?? err).replace(/\n/g, ' ')}\n`),
        ]);
        return `${tend}\n${sdk}`;
      },
      onError: (err, path) => log.warn({ err, path }, 'HTTP request failed'),
    });
  } catch (err) {
    workerCheck?.remove();
    if (err instanceof ListenError) throw new OperatorError(err.message);
    throw err;
  }
  log.info({ address: address.text, port: server.port }, 'serving /metrics, /healthz and /readyz');
  try {
    await runParts(config, parts, signal, workerCheck && ((state) => workerCheck.set(workerCheckOf(state))));
  } finally {
    workerCheck?.remove();
    await server.close();
  }
}


async function runParts(config: Config, parts: Parts, signal: AbortSignal, onWorkerState?: (state: string) => void) {
  const { runWorker } = await import('../workers/worker.ts');
  const { runWatcher } = await import('./watcher.ts');
  const { capabilityWatches } = await import('./watches.ts');
  const ac = new AbortController();
  signal.addEventListener('abort', () => ac.abort(), { once: true });
  // If one part fails, stop the other rather than run half a tend.
  const guard = (p: Promise<void>) => p.catch((err) => {
    ac.abort();
    throw err;
  });
  const running: Promise<void>[] = [];
  if (parts.worker) running.push(guard(runWorker(config, ac.signal, {
    ...(parts.capabilities ? { capabilities: parts.capabilities } : {}), ...(onWorkerState ? { onState: onWorkerState } : {}),
  })));
  if (parts.watcher) running.push(guard(runWatcher(config, capabilityWatches(config), ac.signal)));
  const results = await Promise.allSettled(running);
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

/** `tend --version`: tend's own version, the commit it was built from (src/version.ts), the Temporal SDK it runs on, and Node.js. */
export function versionLine(): string {
  const sdk = JSON.parse(readFileSync(fileURLToPath(import.meta.resolve('@temporalio/worker/package.json')), 'utf8')) as { version: string };
  return `tend ${tendVersion()} (commit ${tendCommit()}, Temporal SDK ${sdk.version}, Node.js ${process.version})`;
}

/**
 * The command tree. `argv` (the words after `tend`) chooses what is loaded: the module of the
 * command it names (`tend help X`: X's), every module for `completion` (or `all`), none for `tend --help`;
 * the others appear in `tend --help` as command-groups.ts describes them.
 */
export async function buildProgram(argv: readonly string[] = [], opts: { all?: boolean } = {}): Promise<Command> {
  // The words, without options nor the value of tend's own `--log-format VALUE` (which may come before the command).
  const words = argv.filter((a, i) => !a.startsWith('-') && argv[i - 1] !== '--log-format');
  const all = opts.all === true || words[0] === 'completion';
  // `tend help X` is `tend X --help`.
  const wanted = groupOf(words[0] === 'help' ? words[1] : words[0]);
  const terms = new Map<Command, string>();
  const program = new Command('tend')
    .configureHelp({ subcommandTerm: (cmd) => terms.get(cmd) ?? new Help().subcommandTerm(cmd), showGlobalOptions: true })
    .description('durable Kubernetes remediation on Temporal')
    // Only when asked for: in a checkout, the commit costs a git process.
    .version(argv.includes('--version') || argv.includes('-V') ? versionLine() : '', '-V, --version', 'print the version of tend, the commit it was built from, its Temporal SDK and Node.js')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ outputError: (message, write) => write(boundedWords(message)) })
    .addOption(logFormatOption())
    .hook('preAction', (self) => {
      const format = (self.opts() as { logFormat?: LogFormat }).logFormat;
      if (format !== undefined) setLogFormat(format);
    })
    .exitOverride();

  withConfigOptions(program
    .command('run')
    .description('run the worker and the watcher in one process; on the local sandbox when no configuration is given'))
    .addOption(httpAddressOption())
    .action(async (flags: RunFlags) => {
      const signal = shutdownSignal();
      if (!flags.config && !flags.configMap) {
        const { runOnSandbox } = await import('./demo.ts');
        await runOnSandbox(signal, (config) => runServed(config, { worker: true, watcher: true }, signal, flags.httpAddress));
        return;
      }
      await runServed(await configFrom(flags), { worker: true, watcher: true }, signal, flags.httpAddress);
    });

  for (const part of ['worker', 'watcher'] as const) {
    const command = withConfigOptions(program
      .command(part)
      .description(part === 'worker' ? 'run only the worker (workflows and activities)' : 'run only the watcher (informers that start workflows)'))
      .addOption(httpAddressOption());
    if (part === 'worker') command.addOption(capabilitiesOption());
    command.action(async (flags: RunFlags) => {
      const capabilities = await capabilitiesOf(flags.capabilities);
      const signal = shutdownSignal();
      await runServed(await configFrom(flags), { worker: part === 'worker', watcher: part === 'watcher', ...capabilities }, signal, flags.httpAddress);
    });
  }

  withConfigOptions(program
    .command('doctor')
    .description('run a check workflow through Temporal and the worker, and print what the worker sees of the cluster'))
    .option('--timeout <seconds>', 'how long to wait for a worker to answer', positiveInt('--timeout'), 30)
    .action(async (flags: ConfigFlags & { timeout: number }) => {
      const { doctor } = await import('./doctor.ts');
      const config = await configOrSandbox(flags);
      console.log(JSON.stringify(await doctor(config, flags.timeout * 1000), null, 2));
    });

  const cfg = program.command('config').description('work with configuration files');
  cfg
    .command('validate')
    .description('check a configuration file; prints every problem by its path')
    .argument('<file>', 'configuration file')
    .action(async (file: string) => {
      const { describeConfig, loadConfig } = await import('../config/load.ts');
      const config = await loadConfig({ file });
      console.log(`config OK: ${file}\n${describeConfig(config)}`);
    });

  const sandbox = program.command('sandbox').description('the local sandbox: Temporal dev server, Kubernetes control plane, simulated kubelet');
  const stateDirOption = () => new Option('--state-dir <dir>', 'state folder').env('TEND_SANDBOX_DIR');
  sandbox
    .command('up')
    .description('start whatever part of the sandbox is not running')
    .addOption(stateDirOption())
    .option('--nodes <n>', `simulated nodes (at most ${MAX_NODES}: a pod range each)`, nodeCount)
    .option('--time-scale <x>', 'simulated kubelet time scale (0.1: ten times faster back-off)', positiveNumber('--time-scale'))
    .option('--min-request-timeout <seconds>', 'kube-apiserver --min-request-timeout (watches end after 1-2x this)', positiveInt('--min-request-timeout'))
    .addOption(new Option('--temporal <kind>', "dev: the temporal CLI's dev server (SQLite); cluster: Temporal's own server, a process per service, on PostgreSQL")
      .choices(['dev', 'cluster']))
    .option('--run-images <prefixes>', "pods whose every image starts with one of these (comma-separated, e.g. localhost/tend) run for real with podman; '' for none")
    .action(async (flags: { stateDir?: string; nodes?: number; timeScale?: number; minRequestTimeout?: number; temporal?: 'dev' | 'cluster'; runImages?: string }) => {
      const { up } = await import('../sandbox/sandbox.ts');
      const runImages = flags.runImages?.split(',').map((p) => p.trim()).filter((p) => p !== '');
      const settings = Object.fromEntries(Object.entries({
        nodes: flags.nodes, timeScale: flags.timeScale, minRequestTimeoutSeconds: flags.minRequestTimeout, temporal: flags.temporal, runImages,
      }).filter(([, v]) => v !== undefined));
      const info = await up({ stateDir: flags.stateDir, settings, progress: (m) => console.error(`sandbox: ${m}`) });
      printEnv(info);
    });
  sandbox
    .command('down')
    .description('stop what the sandbox started (and nothing else)')
    .addOption(stateDirOption())
    .option('--purge', 'also delete the state folder (cluster and Temporal data)')
    .action(async (flags: { stateDir?: string; purge?: boolean }) => {
      const { down } = await import('../sandbox/sandbox.ts');
      await down(flags.stateDir, { purge: flags.purge, progress: (m) => console.error(`sandbox: ${m}`) });
    });
  sandbox
    .command('status')
    .description('show which sandbox components run')
    .addOption(stateDirOption())
    .action(async (flags: { stateDir?: string }) => {
      const { status } = await import('../sandbox/sandbox.ts');
      const rows = await status(flags.stateDir);
      for (const r of rows) console.log(`${r.name.padEnd(24)} ${r.running ? `running  pid ${r.pid}` : 'stopped'}`);
      if (!rows.every((r) => r.running)) process.exitCode = EXIT_FAILURE;
    });
  sandbox
    .command('env')
    .description('print the kubeconfig path, the Temporal address and the Web UI URL as shell exports')
    .addOption(stateDirOption())
    .action(async (flags: { stateDir?: string }) => {
      const { currentSandbox } = await import('../sandbox/sandbox.ts');
      const info = await currentSandbox(flags.stateDir);
      if (!info) throw new UsageError('no sandbox has been set up here; run `tend sandbox up`');
      printEnv(info);
    });
  const node = sandbox.command('node').description("stop or restart a simulated node's heartbeats, or say whether it is Ready");
  /**
   * The sandbox's admin kubeconfig and the Node that `value` names: its name or its InternalIP, the
   * address a repair command is given last (deploy/demo/node-repair.yaml). Anything else is refused.
   */
  const simNodeOf = async (value: string, flags: { stateDir?: string }) => {
    const { currentSandbox } = await import('../sandbox/sandbox.ts');
    const { kubeClients, loadKubeConfig } = await import('../kube/client.ts');
    const { simNodeNamed, simNodes } = await import('../sandbox/kubelet/node-ref.ts');
    const info = await currentSandbox(flags.stateDir);
    if (!info) throw new UsageError('no sandbox has been set up here; run `tend sandbox up`');
    const kc = loadKubeConfig({ kubeconfig: info.kubeconfig });
    const nodes = await simNodes(kubeClients(kc).core);
    const found = simNodeNamed(nodes, value);
    if ('problem' in found) throw new UsageError(found.problem);
    return { kc, name: found.name, node: nodes.find((n) => n.metadata?.name === found.name)! };
  };
  const nodeArgument = '<node>';
  const nodeArgumentHelp = 'node name or InternalIP, e.g. sim-2 or 10.88.0.2';
  for (const verb of ['stop', 'start'] as const) {
    node
      .command(verb)
      .description(verb === 'stop' ? 'stop heartbeats: the node lifecycle controller will taint the node unreachable' : 'resume heartbeats')
      .argument(nodeArgument, nodeArgumentHelp)
      .addOption(stateDirOption())
      .action(async (value: string, flags: { stateDir?: string }) => {
        const { stopHeartbeats, startHeartbeats } = await import('../sandbox/kubelet/index.ts');
        const { kc, name } = await simNodeOf(value, flags);
        await (verb === 'stop' ? stopHeartbeats(kc, name) : startHeartbeats(kc, name));
        console.log(`node ${name}: heartbeats ${verb === 'stop' ? 'stopped' : 'resumed'}`);
      });
  }
  node
    .command('ready')
    .description('print true when the node is Ready, else false (a repair health check\'s answer)')
    .argument(nodeArgument, nodeArgumentHelp)
    .addOption(stateDirOption())
    .action(async (value: string, flags: { stateDir?: string }) => {
      const { nodeReady } = await import('../sandbox/kubelet/node-ref.ts');
      console.log(String(nodeReady((await simNodeOf(value, flags)).node)));
    });
  for (const group of COMMAND_GROUPS) {
    if (all || group === wanted) {
      (await group.load())(program);
      continue;
    }
    for (const name of group.names) terms.set(program.command(name).description(group.help[name]!.description), group.help[name]!.term);
  }
  registerCompletionCommand(program);
  return program;
}

function printEnv(info: { kubeconfig: string; tendKubeconfig: string; temporalAddress: string; webUi: string; config: string }) {
  console.log(`export KUBECONFIG=${info.kubeconfig}`);
  console.log(`export TEMPORAL_ADDRESS=${info.temporalAddress}`);
  console.log(`export TEND_CONFIG=${info.config}`);
  console.log(`# tend's own ServiceAccount credentials: ${info.tendKubeconfig}`);
  console.log(`# Temporal Web UI: ${info.webUi}`);
}

/** The longest word of an error message kept whole: a longer one (an argument pasted by mistake) is cut, its length said. */
const WORD_MAX = 80;

/** A usage error as commander words it, with every word past WORD_MAX characters cut (commander quotes a bad argument in full). */
function boundedWords(message: string): string {
  return message.replace(new RegExp(`\\S{${WORD_MAX + 1},}`, 'g'), (w) => `${w.slice(0, 40)}… (${w.length} characters)`);
}

/** Maps an error to its message and exit code. */
export function exitFor(err: unknown): { code: number; message?: string } {
  if (err instanceof CommanderError) {
    // Commander has printed its own message already.
    return { code: err.exitCode === 0 ? 0 : EXIT_USAGE };
  }
  if (err instanceof ConfigError || err instanceof UsageError) return { code: EXIT_USAGE, message: err.message };
  if (err instanceof UnreachableError || err instanceof KubeUnreachableError || err instanceof SandboxError || err instanceof OperatorError) {
    return { code: EXIT_FAILURE, message: err.message };
  }
  return { code: EXIT_FAILURE, message: (err as Error)?.stack ?? String(err) };
}

export async function main(argv: string[]): Promise<number> {
  try {
    const program = await buildProgram(argv);
    const unknown = unknownCommandIn(program, argv);
    if (unknown) {
      process.stderr.write(unknownCommandMessage(unknown));
      return EXIT_FAILURE;
    }
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    const { code, message } = exitFor(err);
    // Masked: an error's message or stack may quote a credential (log.ts).
    if (message) console.error(`tend: ${redact(message)}`);
    return code;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const code = await main(process.argv.slice(2));
  // Open handles (gRPC, informers) must not keep a finished command alive.
  process.exit(code);
}

