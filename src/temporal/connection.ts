// Connections to Temporal, shared by the worker, the watcher and the CLI, with
// errors that name the address and say what to do.
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { readFile } from 'node:fs/promises';
import { expandHome } from '../kube/client.ts';

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

async function tlsOptions(tls: TemporalSettings['tls']) {
  if (!tls) return undefined;
  if (tls === true) return true;
  const read = (p?: string) => (p ? readFile(expandHome(p)) : undefined);
  const [serverRootCACertificate, crt, key] = await Promise.all([
    read(tls.serverRootCACertPath), read(tls.clientCertPath), read(tls.clientKeyPath),
  ]);
  return {
    serverNameOverride: tls.serverName,
    serverRootCACertificate,
    clientCertPair: crt && key ? { crt, key } : undefined,
  };
}

function apiKeyOf(s: TemporalSettings): string | undefined {
  if (s.apiKey) return s.apiKey;
  if (s.apiKeyEnv) {
    const v = process.env[s.apiKeyEnv];
    if (!v) throw new UnreachableError(`temporal.apiKeyEnv names ${s.apiKeyEnv}, but that environment variable is empty`);
    return v;
  }
  return undefined;
}

function unreachable(s: TemporalSettings, err: unknown): UnreachableError {
  const reason = (err as Error)?.message ?? String(err);
  return new UnreachableError(
    `cannot reach Temporal at ${s.address} (namespace ${s.namespace}): ${reason}\n` +
    '  Is the server running and is temporal.address right? For the local sandbox run `tend sandbox up`.');
}

/** A client for starting and signalling workflows; checks the namespace answers. */
export async function connectClient(s: TemporalSettings): Promise<Client> {
  let connection: Connection;
  try {
    connection = await Connection.connect({
      address: s.address, tls: await tlsOptions(s.tls), apiKey: apiKeyOf(s), connectTimeout: '5s',
    });
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
    const conn = await NativeConnection.connect({ address: s.address, tls: await tlsOptions(s.tls), apiKey: apiKeyOf(s) });
    await conn.workflowService.describeNamespace({ namespace: s.namespace });
    return conn;
  } catch (err) {
    if (err instanceof UnreachableError) throw err;
    throw unreachable(s, err);
  }
}
