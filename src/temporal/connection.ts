// Connections to Temporal, shared by the worker, the watcher and the CLI, with
// errors that name the address and say what to do.
import { Client, Connection } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { readFile } from 'node:fs/promises';
import { expandHome } from '../kube/basics.ts';
import { log, redact, registerSecret } from '../log.ts';
import { temporalOrigins } from '../config/schema.ts';
import { UnreachableError } from '../errors.ts';

export { UnreachableError };

export interface TemporalTls {
  serverName?: string;
  serverRootCACertPath?: string;
  clientCertPath?: string;
  clientKeyPath?: string;
  /** PEM text given inline (TEMPORAL_TLS_*_DATA, a temporal CLI profile's *_data). */
  serverRootCAData?: string;
  clientCertData?: string;
  clientKeyData?: string;
}

/** `temporal.deployment`: the worker polls as one version of a Worker Deployment (src/workers/versioning.ts). */
export interface DeploymentSettings {
  /** The Worker Deployment's name. */
  name: string;
  /** This worker's build id; absent: the fingerprint of its code (buildIdOf). */
  buildId?: string;
  /** newest: make this version current unless a newer one is; never: leave it to the operator. */
  promote: 'newest' | 'never';
}

export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
  tls?: TemporalTls | boolean;
  apiKey?: string;
  apiKeyEnv?: string;
  /** Worker Deployment Versioning (the worker only). */
  deployment?: DeploymentSettings;
}


/**
 * The SDK's TLS setting. Absent: the SDK's default, which is TLS when an API key is set (Temporal
 * Cloud) and plain otherwise; `false`: plain even with an API key (a server on the same host, or
 * behind a proxy that terminates TLS), said in a warning because the key then travels in clear.
 */
async function tlsOptions(s: TemporalSettings) {
  const { tls } = s;
  if (tls === undefined || tls === true) return tls;
  if (tls === false) return false;
  const from = (setting: string) => temporalOrigins(s)?.tls[setting] ?? `temporal.tls.${setting}`;
  for (const key of [tls.clientCertData, tls.clientKeyData]) if (key) registerSecret(key);
  const inline = (data: string | undefined) => (data === undefined ? undefined : Buffer.from(data));
  const [serverRootCACertificate, crt, key] = await Promise.all([
    inline(tls.serverRootCAData) ?? readTlsFile(from('serverRootCACertPath'), tls.serverRootCACertPath),
    inline(tls.clientCertData) ?? readTlsFile(from('clientCertPath'), tls.clientCertPath),
    inline(tls.clientKeyData) ?? readTlsFile(from('clientKeyPath'), tls.clientKeyPath),
  ]);
  return {
    serverNameOverride: tls.serverName,
    serverRootCACertificate,
    clientCertPair: crt && key ? { crt, key } : undefined,
  };
}

/** The API key, registered as a secret so that no log line or error ever shows it. */
function apiKeyOf(s: TemporalSettings): string | undefined {
  if (s.apiKey) {
    registerSecret(s.apiKey);
    return s.apiKey;
  }
  if (s.apiKeyEnv) {
    const v = process.env[s.apiKeyEnv];
    if (!v) throw new UnreachableError(`temporal.apiKeyEnv names ${s.apiKeyEnv}, but that environment variable is empty`);
    registerSecret(v);
    return v;
  }
  return undefined;
}

/** The TLS files, named in errors by where their path came from and the path (their contents are never shown). */
async function readTlsFile(setting: string, path: string | undefined): Promise<Buffer | undefined> {
  if (!path) return undefined;
  try {
    return await readFile(expandHome(path));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'file not found' : code === 'EACCES' ? 'permission denied' : `cannot be read (${code ?? 'error'})`;
    throw new UnreachableError(`${setting} ${path}: ${reason}`);
  }
}

/** gRPC status NOT_FOUND: describeNamespace's answer for a namespace the server does not have. */
const NOT_FOUND = 5;

export class NamespaceNotFoundError extends UnreachableError {}

function unreachable(s: TemporalSettings, err: unknown): UnreachableError {
  // The server's or the transport's words may quote what was sent: never a credential.
  const reason = redact((err as Error)?.message ?? String(err));
  const origins = temporalOrigins(s);
  if ((err as { code?: number })?.code === NOT_FOUND && /namespace/i.test(reason)) {
    return new NamespaceNotFoundError(
      `Temporal at ${s.address} has no namespace "${s.namespace}"${origins ? ` (the namespace from ${origins.namespace})` : ''}: ${reason}\n` +
      `  Create it (\`temporal operator namespace create --namespace ${s.namespace} --address ${s.address}\`, or in Temporal Cloud's console), or name another.`);
  }
  return new UnreachableError(
    `cannot reach Temporal at ${s.address}${origins ? ` (from ${origins.address})` : ''} (namespace ${s.namespace}): ${reason}\n` +
    '  Is the server running and is temporal.address right? For the local sandbox run `tend sandbox up`.');
}

function warnPlainKey(s: TemporalSettings, apiKey: string | undefined) {
  if (apiKey && s.tls === false) log.warn({ temporal: s.address }, 'temporal.tls is false: the API key is sent to Temporal without TLS');
}

/** A client for starting and signalling workflows; checks the namespace answers. */
export async function connectClient(s: TemporalSettings): Promise<Client> {
  let connection: Connection;
  try {
    const apiKey = apiKeyOf(s);
    warnPlainKey(s, apiKey);
    connection = await Connection.connect({ address: s.address, tls: await tlsOptions(s), apiKey, connectTimeout: '5s' });
    await connection.workflowService.describeNamespace({ namespace: s.namespace });
  } catch (err) {
    if (err instanceof UnreachableError) throw err;
    throw unreachable(s, err);
  }
  return new Client({ connection, namespace: s.namespace });
}

/** The worker's connection (Rust core), with the same checks. */
export async function connectNative(s: TemporalSettings): Promise<NativeConnection> {
  try {
    const apiKey = apiKeyOf(s);
    warnPlainKey(s, apiKey);
    // The worker's library, loaded by the worker alone (a CLI command needs only the client).
    const { NativeConnection } = await import('@temporalio/worker');
    const conn = await NativeConnection.connect({ address: s.address, tls: await tlsOptions(s), apiKey });
    await conn.workflowService.describeNamespace({ namespace: s.namespace });
    return conn;
  } catch (err) {
    if (err instanceof UnreachableError) throw err;
    throw unreachable(s, err);
  }
}
