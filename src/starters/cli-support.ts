// What every tend subcommand shares: exit codes, configuration options,
// argument parsers, and the shutdown signal.
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Config } from '../config/load.ts';
import { log } from '../log.ts';
import { kubeSettingsFrom } from '../kube/basics.ts';
import { UsageError } from '../errors.ts';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

// The errors every layer shares live on the ground floor; the commands import them from here.
export { OperatorError, UsageError } from '../errors.ts';

/** The most a whole-number flag takes unless it says otherwise: a day of seconds. */
export const MAX_FLAG_INT = 86_400;

/** A whole number from 1 to `max`, written in decimal digits (not 1e3, 0x10 or 12.0). */
export function positiveInt(name: string, max = MAX_FLAG_INT) {
  return (v: string) => {
    const n = Number(v);
    if (!/^\s*\d+\s*$/.test(v) || n < 1 || n > max) throw new InvalidArgumentError(`${name} must be a whole number from 1 to ${max} (got "${v}")`);
    return n;
  };
}

export function positiveNumber(name: string) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a number above 0 (got "${v}")`);
    return n;
  };
}

export interface ConfigFlags {
  config?: string;
  configMap?: string;
  kubeconfig?: string;
  context?: string;
}

/**
 * --kubeconfig and --context choose the cluster, as kubectl's do: over the configuration's
 * kubernetes section, for everything the command does (and for reading --config-map).
 */
function withCluster(config: Config, flags: ConfigFlags): Config {
  if (flags.kubeconfig === undefined && flags.context === undefined) return config;
  const kubernetes = {
    ...config.kubernetes,
    ...(flags.kubeconfig !== undefined ? { kubeconfig: flags.kubeconfig } : {}),
    ...(flags.context !== undefined ? { context: flags.context } : {}),
  };
  return { ...config, kubernetes: kubeSettingsFrom(kubernetes, kubeFlagNames(flags)) };
}

/** The flags that chose the cluster, for its errors to name. */
const kubeFlagNames = (flags: ConfigFlags) => ({
  ...(flags.kubeconfig !== undefined && { kubeconfig: '--kubeconfig' }), ...(flags.context !== undefined && { context: '--context' }),
});

export const configOption = () => new Option('-c, --config <file>', 'configuration file').env('TEND_CONFIG');
export const configMapOption = () =>
  new Option('--config-map <namespace[/name][:key]>', 'read the configuration from a ConfigMap key instead of a file (key: config.yaml unless given; ' +
    'a name not found, or none given: the ConfigMap labelled tend.dev/config=true, as kustomize names it with a hash suffix)');

/** The configuration's reader (zod, yaml), loaded by the commands that read one: `--help` needs none of it. */
const loader = () => import('../config/load.ts');

export async function configFrom(flags: ConfigFlags): Promise<Config> {
  if (flags.config && flags.configMap) throw new UsageError('give either --config or --config-map, not both');
  const { loadConfig } = await loader();
  if (flags.configMap) {
    return withCluster(await loadConfig(kubeSettingsFrom({
      configMap: flags.configMap, ...(flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {}), ...(flags.context ? { context: flags.context } : {}),
    }, kubeFlagNames(flags))), flags);
  }
  if (flags.config) return withCluster(await loadConfig({ file: flags.config }), flags);
  throw new UsageError('no configuration: give --config FILE (or set TEND_CONFIG), or --config-map NAMESPACE[/NAME][:KEY]');
}

/** The exit code of a process stopped by a signal, as shells report it: 128 + the signal's number. */
const SIGNAL_EXIT: Readonly<Record<string, number>> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Aborts on the first SIGINT or SIGTERM, so every part can shut down in order; a second one
 * stops the process at once (a running repair command is then cut off, as by a crash: its entry's
 * attempt is retried by the next worker, docs/repair-commands.md).
 */
export function shutdownSignal(exit: (code: number) => void = (code) => process.exit(code)): AbortSignal {
  const ac = new AbortController();
  const stop = (sig: string) => {
    if (ac.signal.aborted) {
      log.warn({ signal: sig }, 'stopping at once (a second signal)');
      exit(SIGNAL_EXIT[sig] ?? 1);
      return;
    }
    log.info({ signal: sig }, 'shutting down (a second SIGINT or SIGTERM stops at once)');
    ac.abort();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  return ac.signal;
}

/**
 * The configuration given, or else the local sandbox's: for commands an operator runs by hand.
 * With `orEnvironment`, a command that needs only Temporal goes on without either: no file at
 * all, so that the TEMPORAL_* variables and the temporal CLI's profile decide.
 */
export async function configOrSandbox(flags: ConfigFlags, opts: { orEnvironment?: boolean } = {}): Promise<Config> {
  return (await configFound(flags, opts)).config;
}

/** Where a command's configuration came from: given (--config, --config-map), the sandbox's, or none (the environment's). */
export type ConfigFound = { config: Config; from: 'given' | 'sandbox' | 'environment' };

async function configFound(flags: ConfigFlags, opts: { orEnvironment?: boolean }): Promise<ConfigFound> {
  if (flags.config || flags.configMap) return { config: await configFrom(flags), from: 'given' };
  const { currentSandbox } = await import('../sandbox/sandbox.ts');
  const info = await currentSandbox();
  const { loadConfig, parseConfig } = await loader();
  if (info) return { config: withCluster(await loadConfig({ file: info.config }), flags), from: 'sandbox' };
  if (opts.orEnvironment) return { config: withCluster(parseConfig('', 'the environment (no --config)'), flags), from: 'environment' };
  throw new UsageError('no configuration given and no sandbox set up: give --config FILE, or run `tend sandbox up`');
}

export interface ReadFlags extends ConfigFlags {
  taskQueue?: string;
}

/** --task-queue NAME (the read commands): the task queue tend's worker polls, where no configuration says it. */
export const taskQueueOption = () =>
  new Option('--task-queue <name>', "the task queue tend's worker polls, over the configuration's temporal.taskQueue (default: tend)");

/**
 * The configuration of a read command (weeder list, taint status, app status, repair-queue list,
 * pause status), which needs only what kubectl and the temporal CLI need: the one given, else the
 * local sandbox's, else none at all: the cluster from --kubeconfig, $KUBECONFIG or ~/.kube/config
 * and Temporal from the TEMPORAL_* variables or a temporal CLI profile, as those tools find them;
 * the task queue tend's default unless --task-queue names another.
 */
export async function readerConfig(flags: ReadFlags): Promise<ConfigFound> {
  const found = await configFound(flags, { orEnvironment: true });
  if (flags.taskQueue !== undefined) {
    const { taskQueueSchema } = await import('../config/bounds.ts');
    const parsed = taskQueueSchema.safeParse(flags.taskQueue);
    if (!parsed.success) throw new UsageError(`--task-queue: ${parsed.error.issues[0]?.message ?? 'not a task queue name'}`);
    // In place: the temporal section is also the key under which its origins and source are kept (config/load.ts).
    found.config.temporal.taskQueue = parsed.data;
  }
  return found;
}

const CONFIG_FLAGS = [['config', '--config', 'a file'], ['configMap', '--config-map', 'NAMESPACE[/NAME][:KEY]'], ['kubeconfig', '--kubeconfig', 'a file'], ['context', '--context', 'a context name']] as const;

/**
 * Before a command runs, over it and the commands above it (whose options its flags merge):
 * an empty value (`--config "$UNSET"`) is refused, never read as absent (which would fall back to
 * the sandbox, or to the TEMPORAL_* variables); and --config-map wins over a TEND_CONFIG in the
 * environment, as a flag does over a variable.
 */
function settleConfigFlags(action: Command): void {
  const chain: Command[] = [];
  for (let c: Command | null = action; c; c = c.parent) chain.push(c);
  for (const cmd of chain) {
    for (const [key, flag, what] of CONFIG_FLAGS) {
      if (cmd.getOptionValue(key) !== '') continue;
      throw new UsageError(cmd.getOptionValueSource(key) === 'env'
        ? 'TEND_CONFIG is set but empty: set it to a configuration file, or unset it'
        : `${flag} is empty: give ${what}`);
    }
  }
  if (!chain.some((cmd) => cmd.getOptionValue('configMap') !== undefined)) return;
  for (const cmd of chain) {
    if (cmd.getOptionValueSource('config') === 'env') cmd.setOptionValueWithSource('config', undefined, 'default');
  }
}

/** Adds --config, --config-map, --kubeconfig and --context to a command. */
export function withConfigOptions(cmd: Command): Command {
  return cmd
    .addOption(configOption())
    .addOption(configMapOption())
    .option('--kubeconfig <file>', 'kubeconfig file: the cluster for everything the command does (and where --config-map is read), over kubernetes.kubeconfig')
    .option('--context <name>', 'context in that kubeconfig, over kubernetes.context')
    .hook('preAction', (_self, action) => settleConfigFlags(action));
}
