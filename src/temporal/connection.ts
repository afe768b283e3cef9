// Connections to Temporal, shared by the worker, the watcher and the CLI, with
// errors that name the address and say what to do.
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { readFile } from 'node:fs/promises';
import { expandHome } from '../kube/client.ts';
import { log, redact, registerSecret } from '../log.ts';

export interface TemporalTls {
  serverName?: string;
  serverRootCACertPath?: string;
  clientCertPath?: string;
  clientKeyPath?: string;
}

export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
  tls?: TemporalTls | boolean;
  apiKey?: string;
  apiKeyEnv?: string;
}

export class UnreachableError extends Error {}

/**
 * The SDK's TLS setting. Absent: the SDK's default, which is TLS when an API key is set (Temporal
 * Cloud) and plain otherwise; `false`: plain even with an API key (a server on the same host, or
 * behind a proxy that terminates TLS), said in a warning because the key then travels in clear.
 */
async function tlsOptions(tls: TemporalSettings['tls']) {
  if (tls === undefined || tls === true) return tls;
  if (tls === false) return false;
  const [serverRootCACertificate, crt, key] = await Promise.all([
    readTlsFile('serverRootCACertPath', tls.serverRootCACertPath),
    readTlsFile('clientCertPath', tls.clientCertPath),
    readTlsFile('clientKeyPath', tls.clientKeyPath),
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

/** The TLS files, named in errors by their path (their contents are never shown). */
async function readTlsFile(setting: string, path: string | undefined): Promise<Buffer | undefined> {
  if (!path) return undefined;
  try {
    return await readFile(expandHome(path));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'file not found' : code === 'EACCES' ? 'permission denied' : `cannot be read (${code ?? 'error'})`;
    throw new UnreachableError(`temporal.tls.${setting} ${path}: ${reason}`);
  }
}

function unreachable(s: TemporalSettings, err: unknown): UnreachableError {
  // The server's or the transport's words may quote what was sent: never a credential.
  const reason = redact((err as Error)?.message ?? String(err));
  return new UnreachableError(
    `cannot reach Temporal at ${s.address} (namespace ${s.namespace}): ${reason}\n` +
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
    connection = await Connection.connect({ address: s.address, tls: await tlsOptions(s.tls), apiKey, connectTimeout: '5s' });
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
    const conn = await NativeConnection.connect({ address: s.address, tls: await tlsOptions(s.tls), apiKey });
    await conn.workflowService.describeNamespace({ namespace: s.namespace });
    return conn;
  } catch (err) {
    if (err instanceof UnreachableError) throw err;
    throw unreachable(s, err);
  }
}
