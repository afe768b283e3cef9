// Sending one fuzzer message as an attacker with write access to the
// namespace would: a signal, an update, a query or a start, with whatever
// JSON it carries (nesting JSON.stringify cannot write goes out as text, as
// the temporal CLI sends it). Each send is bounded in time.
import { Client, Connection, WorkflowUpdateStage } from '@temporalio/client';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { preview } from '../src/checks/preview.ts';
import { jsonText } from './generate.ts';
import type { Message } from './targets.ts';

const PLACEHOLDER = '\u0000fuzz-raw:';

/** Values the default converter cannot write, by placeholder: sent as their JSON text instead. */
const raw = new Map<string, string>();
let nextRaw = 0;

/** Replaces each placeholder payload by the JSON text it stands for. */
const rawCodec: PayloadCodec = {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      const text = p.data ? Buffer.from(p.data).toString('utf8') : '';
      if (!text.startsWith(JSON.stringify(PLACEHOLDER).slice(0, -1))) return p;
      const key = JSON.parse(text) as string;
      const body = raw.get(key);
      raw.delete(key);
      return body === undefined ? p : { ...p, data: new Uint8Array(Buffer.from(body, 'utf8')) };
    });
  },
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  },
};

export async function fuzzClient(address: string, namespace = 'default'): Promise<Client> {
  // Histories the fuzzer reads can hold pages past gRPC's default 4 MiB (its own huge messages).
  const connection = await Connection.connect({ address, channelArgs: { 'grpc.max_receive_message_length': 128 * 1024 * 1024 } });
  return new Client({ connection, namespace, dataConverter: { payloadCodecs: [rawCodec] } });
}

/** The arguments as the client can send them: a value JSON.stringify cannot write becomes a placeholder for its text. */
function sendable(args: unknown[]): unknown[] {
  return args.map((a) => {
    try {
      JSON.stringify(a);
      return a;
    } catch {
      const key = `${PLACEHOLDER}${nextRaw++}`;
      raw.set(key, jsonText(a));
      return key;
    }
  });
}

export type Outcome =
  | { outcome: 'delivered' }
  | { outcome: 'accepted' }
  | { outcome: 'refused'; reason: string }
  | { outcome: 'started'; runId: string };

/** How long one send may take: past it, an update still running counts as taken in. */
export const SEND_TIMEOUT_MS = 10_000;

export async function within<T>(ms: number, p: Promise<T>): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  // Its failure after the timeout is not this send's to report.
  p.catch(() => undefined);
  try {
    return await Promise.race([p, new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** `p`, or a failure naming `what` once `ms` have passed without it (it goes on, unheeded). */
export async function bounded<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  p.catch(() => undefined);
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms / 1000} s`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

const reasonOf = (err: unknown) => {
  const e = err as { message?: unknown; cause?: { message?: unknown } };
  const text = [e?.message, e?.cause?.message].filter((x) => typeof x === 'string' && x).join(': ');
  return preview(text || String(err), 300).replace(/^"|"$/g, '');
};

/**
 * Sends one message. A signal the server takes is `delivered` (whether the workflow took it or
 * ignored it is read later from the worker's log); an update is `accepted` once its handler
 * answered (or still runs after SEND_TIMEOUT_MS), `refused` when its validator or handler failed
 * it; a query `accepted` when answered; a start `started` (its fate is read later).
 */
export async function send(client: Client, m: Message): Promise<Outcome> {
  const args = sendable(m.args);
  try {
    if (m.kind === 'start') {
      const h = await client.workflow.start(m.start!.workflowType, {
        workflowId: m.workflowId, taskQueue: m.start!.taskQueue, args,
        workflowIdConflictPolicy: 'FAIL',
        // Nothing the fuzzer starts outlives it by much, whatever happens to the run.
        workflowExecutionTimeout: '15 minutes',
      });
      return { outcome: 'started', runId: h.firstExecutionRunId };
    }
    const h = client.workflow.getHandle(m.workflowId);
    if (m.kind === 'signal') {
      const r = await within(SEND_TIMEOUT_MS, h.signal(m.handler, ...args));
      return r === 'timeout' ? { outcome: 'refused', reason: 'the signal was not taken within 10 s' } : { outcome: 'delivered' };
    }
    if (m.kind === 'query') {
      const r = await within(SEND_TIMEOUT_MS, h.query(m.handler, ...args));
      return r === 'timeout' ? { outcome: 'refused', reason: 'no answer within 10 s' } : { outcome: 'accepted' };
    }
    const started = await within(SEND_TIMEOUT_MS, h.startUpdate(m.handler, { args: args as [unknown], waitForStage: WorkflowUpdateStage.ACCEPTED }));
    if (started === 'timeout') return { outcome: 'refused', reason: 'not accepted nor refused within 10 s' };
    // Answered, or still running (an App restart waits for new pods): taken in either way.
    await within(SEND_TIMEOUT_MS, started.result());
    return { outcome: 'accepted' };
  } catch (err) {
    return { outcome: 'refused', reason: reasonOf(err) };
  }
}

/**
 * Sends at most `limit` messages at once, and to each workflow id one at a time, in the order they
 * were drawn: a sender's sequence to each workflow, as before, with the workflows sent to side by side.
 */
export class Lanes {
  private readonly limit: number;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly lanes = new Map<string, Promise<void>>();
  /** A job's failure: kept, its lane goes on, and drain() throws it. */
  private failure?: unknown;
  constructor(limit: number) {
    this.limit = limit;
  }

  /** Queues `job` behind the last one for `key`; resolves once it is queued (waiting while `limit` are in flight). */
  async add(key: string, job: () => Promise<void>): Promise<void> {
    while (this.inFlight.size >= this.limit) await Promise.race(this.inFlight);
    const p: Promise<void> = (this.lanes.get(key) ?? Promise.resolve()).then(job).catch((err: unknown) => {
      this.failure ??= err;
    }).finally(() => {
      this.inFlight.delete(p);
      if (this.lanes.get(key) === p) this.lanes.delete(key);
    });
    this.inFlight.add(p);
    this.lanes.set(key, p);
  }

  /** Every queued job done; the first that failed, thrown. */
  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
    if (this.failure !== undefined) throw this.failure;
  }
}

/** `fn` over every item, at most `limit` at once. */
export async function eachAtMost<T>(limit: number, items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
