// What Temporal's persistence did during a benchmark on the cluster sandbox
// (`tend sandbox up --temporal cluster`): PostgreSQL's own counters for the
// server's two databases (default store and visibility), read before and after.
// On the dev server (SQLite inside the temporal CLI) there is nothing to read.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { clusterPorts, DB_PASSWORD, DB_USER, DEFAULT_DB, postgresBin, VISIBILITY_DB } from '../../src/sandbox/temporal-cluster.ts';

const run = promisify(execFile);

export interface PgCounters {
  /** Committed transactions: every statement Temporal runs outside a transaction of its own is one. */
  transactions: number;
  /** Rows inserted, updated or deleted. */
  rowsWritten: number;
  /** Rows the queries returned. */
  rowsRead: number;
  at: number;
}

/** The counters summed over Temporal's databases; undefined when the sandbox runs the dev server. */
export async function pgCounters(info: SandboxInfo): Promise<PgCounters | undefined> {
  if (info.settings.temporal !== 'cluster') return undefined;
  const port = clusterPorts(info.settings.ports.temporal).postgres;
  const sql = `SELECT sum(xact_commit), sum(tup_inserted + tup_updated + tup_deleted), sum(tup_returned)
    FROM pg_stat_database WHERE datname IN ('${DEFAULT_DB}', '${VISIBILITY_DB}')`;
  const { stdout } = await run(postgresBin('psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', DB_USER, '-d', DEFAULT_DB, '-AtX', '-F', ' ', '-c', sql], {
    env: { ...process.env, PGPASSWORD: DB_PASSWORD },
  });
  const [transactions, rowsWritten, rowsRead] = stdout.trim().split(' ').map(Number);
  return { transactions: transactions!, rowsWritten: rowsWritten!, rowsRead: rowsRead!, at: performance.now() };
}

/**
 * The counters after the work: first waits out PostgreSQL's statistics delay (a backend
 * reports its counts at most once a second, and an idle one after ten).
 */
export async function pgCountersSettled(info: SandboxInfo): Promise<PgCounters | undefined> {
  if (info.settings.temporal !== 'cluster') return undefined;
  await sleep(11_000);
  return pgCounters(info);
}

/** Per second and per action, between two readings; `actions` is what the workflows' histories count. */
export function persistenceRates(before: PgCounters | undefined, after: PgCounters | undefined, actions: number, idle?: { before: PgCounters; after: PgCounters }) {
  if (!before || !after) return undefined;
  const seconds = (after.at - before.at) / 1000;
  const d = { transactions: after.transactions - before.transactions, rowsWritten: after.rowsWritten - before.rowsWritten, rowsRead: after.rowsRead - before.rowsRead };
  const idleRate = idle && (idle.after.transactions - idle.before.transactions) / ((idle.after.at - idle.before.at) / 1000);
  // Transactions the idle server would have made anyway over the same time, taken off before dividing by the actions.
  const busy = idleRate === undefined ? d.transactions : d.transactions - idleRate * seconds;
  return {
    seconds: round(seconds), ...d, actions,
    transactionsPerSecond: round(d.transactions / seconds),
    idleTransactionsPerSecond: idleRate === undefined ? undefined : round(idleRate),
    transactionsPerAction: actions ? round(busy / actions) : undefined,
    rowsWrittenPerAction: actions ? round(d.rowsWritten / actions) : undefined,
  };
}

const round = (x: number) => Math.round(x * 100) / 100;
