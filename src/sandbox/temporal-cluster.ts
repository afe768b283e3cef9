// The cluster sandbox's Temporal (`tend sandbox up --temporal cluster`): Temporal's own server,
// built from its Go module, one process per service (frontend, history, matching, worker) over
// PostgreSQL from Debian's packages, as an operator runs it when one machine is not enough. The
// dev server (`--temporal dev`, the default) is one process over SQLite.
//
// PostgreSQL gets a data folder of its own and a loopback port, no system service. It refuses to
// run as root: as root, it runs as `nobody` (setpriv), with its data folder beside the sandbox's
// state folder (which only root may enter).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import type { SearchAttributeType } from '@temporalio/common';
import * as tendSearchAttributeKeys from '../search-attributes.ts';
import type { ServerBinaries } from './binaries.ts';

const run = promisify(execFile);

/** The services, in the order they start (history and matching first: the frontend routes to them). */
export const SERVICES = ['history', 'matching', 'frontend', 'worker'] as const;
export type TemporalService = (typeof SERVICES)[number];

/** The component names the sandbox records (pid and log files), PostgreSQL first. */
export const CLUSTER_COMPONENTS = ['postgres', ...SERVICES.map((s) => `temporal-${s}` as const), 'temporal-ui'] as const;

export const DB_USER = 'temporal';
export const DB_PASSWORD = 'temporal';
export const DEFAULT_DB = 'temporal';
export const VISIBILITY_DB = 'temporal_visibility';
/** History shards: fixed for the life of a cluster. Four is the development configs' number. */
export const HISTORY_SHARDS = 4;

/** The cluster's ports, all from the frontend's (the sandbox's `temporal` port) so that test runs side by side do not meet. */
export function clusterPorts(frontend: number) {
  return {
    frontend, frontendHttp: frontend + 7, history: frontend + 1, matching: frontend + 2, worker: frontend + 6,
    membership: { frontend: frontend + 2000, history: frontend + 2001, matching: frontend + 2002, worker: frontend + 2006 },
    postgres: frontend + 15000,
  };
}
export type ClusterPorts = ReturnType<typeof clusterPorts>;

const asRoot = () => process.getuid?.() === 0;
/** Debian's `nobody`/`nogroup`. */
const NOBODY = 65534;

/** Where PostgreSQL keeps its data: beside the state folder when it runs as nobody, inside it otherwise. */
export function postgresDataDir(stateDir: string): string {
  return asRoot() ? `${stateDir}.postgres` : join(stateDir, 'postgres');
}

/** The folder of PostgreSQL's programs: Debian's newest /usr/lib/postgresql/N/bin, else PATH. */
export function postgresBin(name: 'postgres' | 'initdb' | 'psql'): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (existsSync(join(root, v, 'bin', name))) return join(root, v, 'bin', name);
  }
  return name;
}

/** How PostgreSQL's programs run: as `nobody` from root (they refuse root), as they are otherwise. */
function asPostgresUser(argv: string[]): { command: string; args: string[]; user?: { uid: number; gid: number } } {
  return { command: argv[0]!, args: argv.slice(1), ...(asRoot() ? { user: { uid: NOBODY, gid: NOBODY } } : {}) };
}

/** Creates PostgreSQL's data folder the first time (initdb): user `temporal`, password authentication. */
export async function initPostgres(stateDir: string): Promise<void> {
  const data = postgresDataDir(stateDir);
  if (asRoot()) {
    // `nobody` must pass through the folder that holds the data folder (and initdb's password
    // file). A folder made for state folders is often 0700 (mkdir's mode applies to every folder
    // it creates): it gets the search bit for others, which lists nothing and opens no file.
    const parent = join(data, '..');
    const { mode } = await stat(parent);
    if ((mode & 0o001) === 0) await chmod(parent, (mode & 0o7777) | 0o001);
  }
  if (existsSync(join(data, 'PG_VERSION'))) return;
  await rm(data, { recursive: true, force: true });
  await mkdir(data, { recursive: true, mode: 0o700 });
  const pwfile = join(data, '..', `.${Math.random().toString(36).slice(2)}.pw`);
  await writeFile(pwfile, `${DB_PASSWORD}\n`, { mode: 0o644 });
  try {
    if (asRoot()) {
      await chown(data, NOBODY, NOBODY);
      await chown(pwfile, NOBODY, NOBODY);
    }
    const { command, args, user } = asPostgresUser([
      postgresBin('initdb'), '-D', data, '-U', DB_USER, `--pwfile=${pwfile}`, '-A', 'scram-sha-256', '-E', 'UTF8', '--no-instructions',
    ]);
    await run(command, args, { cwd: '/', ...(user ?? {}) });
  } catch (err) {
    await rm(data, { recursive: true, force: true });
    throw new Error(`initdb failed: ${(err as { stderr?: string }).stderr || (err as Error).message}`);
  } finally {
    await rm(pwfile, { force: true });
  }
}

/** PostgreSQL's command line: TCP on loopback only, no Unix socket, no fsync (a sandbox). */
export function postgresCommand(stateDir: string, ports: ClusterPorts): { command: string; args: string[]; user?: { uid: number; gid: number } } {
  return asPostgresUser([
    postgresBin('postgres'), '-D', postgresDataDir(stateDir), '-p', String(ports.postgres),
    '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off', '-c', 'max_connections=200',
  ]);
}

const sqlToolArgs = (ports: ClusterPorts, db: string) => [
  '--plugin', 'postgres12', '--endpoint', '127.0.0.1', '--port', String(ports.postgres),
  '--user', DB_USER, '--password', DB_PASSWORD, '--database', db,
];

/**
 * Creates both databases and brings their schemas to the server's version (temporal-sql-tool).
 * Running it again changes nothing: each step is skipped when done.
 */
export async function setupSchemas(bin: ServerBinaries, ports: ClusterPorts, say: (m: string) => void): Promise<void> {
  for (const [db, dir] of [[DEFAULT_DB, 'temporal'], [VISIBILITY_DB, 'visibility']] as const) {
    const tool = (...args: string[]) => run(bin.sqlTool, [...sqlToolArgs(ports, db), ...args], { maxBuffer: 16 << 20 });
    try {
      await tool('create-database');
    } catch (err) {
      if (!/already exists/.test(`${(err as { stderr?: string }).stderr}${(err as { stdout?: string }).stdout}`)) throw err;
    }
    try {
      await tool('setup-schema', '-v', '0.0');
    } catch (err) {
      // A database set up before: its version table is there, and update-schema takes it on.
      if (!/already exists/.test(`${(err as { stderr?: string }).stderr}${(err as { stdout?: string }).stdout}`)) throw err;
    }
    await tool('update-schema', '-d', join(bin.schema, dir, 'versioned'));
    say(`${db}: schema up to date`);
  }
}

/** The server's configuration: one file for every service, each started with `--service`. */
export function serverConfig(stateDir: string, ports: ClusterPorts): object {
  const datastore = (db: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12', databaseName: db, connectAddr: `127.0.0.1:${ports.postgres}`, connectProtocol: 'tcp',
      user: DB_USER, password: DB_PASSWORD, maxConns, maxIdleConns: maxConns, maxConnLifetime: '1h',
    },
  });
  const rpc = (service: TemporalService, grpcPort: number, extra: object = {}) => ({
    rpc: { grpcPort, membershipPort: ports.membership[service], bindOnLocalHost: true, ...extra },
  });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default', visibilityStore: 'postgres-visibility', numHistoryShards: HISTORY_SHARDS,
      datastores: { 'postgres-default': datastore(DEFAULT_DB, 20), 'postgres-visibility': datastore(VISIBILITY_DB, 10) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: {
      frontend: rpc('frontend', ports.frontend, { httpPort: ports.frontendHttp }),
      history: rpc('history', ports.history),
      matching: rpc('matching', ports.matching),
      worker: rpc('worker', ports.worker),
    },
    clusterMetadata: {
      enableGlobalNamespace: false, failoverVersionIncrement: 10, masterClusterName: 'active', currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${ports.frontend}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: join(stateDir, 'temporal-config', 'dynamicconfig.yaml'), pollInterval: '10s' },
  };
}

/**
 * Dynamic configuration: what tend's workflows need beyond the defaults. One committed file, the
 * same that docker-compose.yml mounts into its server (test/unit/compose-parity.test.ts).
 */
export const DYNAMIC_CONFIG_FILE = fileURLToPath(new URL('../../deploy/temporal/dynamicconfig.yaml', import.meta.url));

/** Reads the dynamic configuration file: a map of keys to lists of `{ value, constraints? }`. */
export async function readDynamicConfig(file = DYNAMIC_CONFIG_FILE): Promise<{ text: string; config: Record<string, { value: unknown }[]> }> {
  const text = await readFile(file, 'utf8');
  const config = parseYaml(text) as unknown;
  const entries = config && typeof config === 'object' && !Array.isArray(config) ? Object.entries(config) : undefined;
  if (!entries?.length || entries.some(([, v]) => !Array.isArray(v) || v.some((e) => !e || typeof e !== 'object' || !('value' in e)))) {
    throw new Error(`${file}: not a dynamic configuration (a map of keys to lists of { value, constraints })`);
  }
  return { text, config: config as Record<string, { value: unknown }[]> };
}

/** The namespace's retention, here and in docker-compose.yml. */
export const NAMESPACE_RETENTION = '72h';

/** The temporal CLI's name for each search attribute type (`--type`). */
const CLI_TYPES: Record<SearchAttributeType, string> = {
  TEXT: 'Text', KEYWORD: 'Keyword', INT: 'Int', DOUBLE: 'Double', BOOL: 'Bool', DATETIME: 'Datetime', KEYWORD_LIST: 'KeywordList',
};

/** tend's search attributes (every key src/search-attributes.ts defines) with the temporal CLI's type names. */
export const TEND_SEARCH_ATTRIBUTES: readonly { name: string; type: string }[] = Object.values(tendSearchAttributeKeys)
  .map((key) => ({ name: key.name, type: CLI_TYPES[key.type] }));

/** Writes the server's configuration and copies the dynamic configuration (the folder temporal-config of the state folder). */
export async function writeServerConfig(stateDir: string, ports: ClusterPorts): Promise<{ dir: string }> {
  const dir = join(stateDir, 'temporal-config');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // It holds the database password: owner only.
  await writeFile(join(dir, 'sandbox.yaml'), toYaml(serverConfig(stateDir, ports)), { mode: 0o600 });
  await writeFile(join(dir, 'dynamicconfig.yaml'), (await readDynamicConfig()).text, { mode: 0o600 });
  return { dir };
}

/** The Web UI server's configuration (its `--root` folder), pointed at the frontend. */
export async function writeUiConfig(stateDir: string, frontend: string, uiPort: number): Promise<string> {
  const root = join(stateDir, 'temporal-ui');
  await mkdir(join(root, 'config'), { recursive: true, mode: 0o700 });
  await writeFile(join(root, 'config', 'base.yaml'), toYaml({
    temporalGrpcAddress: frontend, host: '127.0.0.1', port: uiPort, enableUi: true, defaultNamespace: 'default',
    cors: { allowOrigins: [`http://127.0.0.1:${uiPort}`] }, notifyOnNewVersion: false,
  }));
  await writeFile(join(root, 'config', 'sandbox.yaml'), '{}\n');
  return root;
}

/** The Web UI server's command line. */
export function uiArgs(stateDir: string): string[] {
  return ['--root', join(stateDir, 'temporal-ui'), '--config', 'config', '--env', 'sandbox', 'start'];
}

/** One service's command line. */
export function serviceArgs(stateDir: string, service: TemporalService): string[] {
  return ['--config-file', join(stateDir, 'temporal-config', 'sandbox.yaml'), '--allow-no-auth', 'start', '--service', service];
}

/**
 * Registers the `default` namespace (NAMESPACE_RETENTION) and search attributes, with the temporal
 * CLI against the frontend; both are left as they are when they exist already. A name that is one
 * of tend's (TEND_SEARCH_ATTRIBUTES) gets its type from there, any other is a Keyword.
 */
export async function registerNamespace(temporalCli: string, address: string, searchAttributes: string[]): Promise<void> {
  const cli = (...args: string[]) => run(temporalCli, [...args, '--address', address], { maxBuffer: 16 << 20 });
  try {
    await cli('operator', 'namespace', 'create', '--namespace', 'default', '--retention', NAMESPACE_RETENTION);
  } catch (err) {
    if (!/already (exists|registered)/i.test(`${(err as { stderr?: string }).stderr}`)) throw err;
  }
  const existing = JSON.parse((await cli('operator', 'search-attribute', 'list', '--namespace', 'default', '-o', 'json')).stdout) as unknown;
  const known = new Set((Array.isArray(existing) ? existing : []).map((a: { name?: string }) => a.name));
  const missing = searchAttributes.filter((n) => !known.has(n));
  const typeOf = (name: string) => TEND_SEARCH_ATTRIBUTES.find((a) => a.name === name)?.type ?? 'Keyword';
  if (missing.length) {
    await cli('operator', 'search-attribute', 'create', '--namespace', 'default', ...missing.flatMap((n) => ['--name', n, '--type', typeOf(n)]));
  }
}

/** The password file is never left; the version a data folder was made with. */
export async function postgresVersion(stateDir: string): Promise<string | undefined> {
  try {
    return (await readFile(join(postgresDataDir(stateDir), 'PG_VERSION'), 'utf8')).trim();
  } catch {
    return undefined;
  }
}
