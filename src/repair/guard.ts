// The per-entry guard that holds across replicas: before a repair or success
// command runs, the worker writes an annotation on the entry's Node naming
// the entry, step, command, run and itself, with a time it holds until; it
// renews it while the command runs and, when the command ends, leaves its exit
// code there. Every write carries the Node's resourceVersion (compare and
// swap), so of two workers (two replicas after a partition, a retried attempt
// on another host) exactly one takes it and the other waits: two commands
// never run on one machine at once. A holder that cannot renew its guard for
// GUARD_STOP_MS stops its command before the guard can lapse.
//
// A worker that died leaves a guard that lapses at its `until`, or at once for
// a worker on this host whose process is gone (its run is then the per-host
// record's: src/repair/process.ts). A retried attempt that finds the guard
// released by the run it was cut off from (same entry, step, command and
// run) takes that run's exit code instead of running the command again.
//
// The decision is pure (decideGuard, table-tested); takeGuard/renewGuard/
// releaseGuard do the reads and writes through Node get and patch, rights tend
// already has (docs/repair.md).

/** The annotation on a Node holding its guard: JSON of a GuardRecord. */
export const GUARD_ANNOTATION = 'tend.dev/repair-run';

/** How long a guard holds past its last renewal (ms). */
export const GUARD_TTL_MS = 120_000;
/** How often the holder renews it (ms). */
export const GUARD_RENEW_MS = 20_000;
/** A holder whose renewals have failed this long stops its command: well before the guard lapses (ms). */
export const GUARD_STOP_MS = 90_000;

/** Who holds a guard: a worker process (host, pid and its start time) and one activity run in it. */
export interface Holder {
  host: string;
  pid: number;
  /** The process's start time (/proc), so a reused pid is not taken for it. */
  start: string;
  /** Unique per activity run. */
  id: string;
}

export interface GuardRecord {
  entry: string;
  step: number;
  kind: string;
  /** TEND_REPAIR_ATTEMPT of the run it guards. */
  run: number;
  holder: Holder;
  /** Epoch ms it holds until; 0: released (the command ended). */
  until: number;
  /** When released: the command's exit code (null: it did not exit by itself). */
  exitCode?: number | null;
}

/** What the taker wants to run. */
export interface Want {
  entry: string;
  step: number;
  kind: string;
  run: number;
  holder: Holder;
  /** The run an earlier attempt of this activity started and never reported (its worker died or was cut off). */
  cutOffRun?: number;
}

export type GuardDecision =
  /** Free (none, released, lapsed, its holder gone): write ours. */
  | { op: 'take'; why: string }
  /** Held by another worker: ask again later, `until` at the latest. */
  | { op: 'wait'; until: number; why: string }
  /** Released by the very run this attempt was cut off from: its exit code is this run's end. */
  | { op: 'adopt'; exitCode: number | null };

/** A guard annotation's value, or undefined when it is absent or not one (a foreign value is overwritten). */
export function parseGuard(value: string | undefined): GuardRecord | undefined {
  if (value === undefined || value.length > 2000) return undefined;
  let r: unknown;
  try {
    r = JSON.parse(value);
  } catch {
    return undefined;
  }
  const g = r as Partial<GuardRecord> | null;
  const h = g?.holder as Partial<Holder> | undefined;
  const ok = typeof g?.entry === 'string' && Number.isSafeInteger(g.step) && typeof g.kind === 'string' && Number.isSafeInteger(g.run) &&
    typeof g.until === 'number' && typeof h?.host === 'string' && Number.isSafeInteger(h.pid) && typeof h.start === 'string' && typeof h.id === 'string' &&
    (g.exitCode === undefined || g.exitCode === null || Number.isSafeInteger(g.exitCode));
  return ok ? g as GuardRecord : undefined;
}

/**
 * Situation → decision:
 *
 * | found                                                        | decision |
 * |--------------------------------------------------------------|----------|
 * | none, or not a guard                                         | take     |
 * | released by the run this attempt was cut off from            | adopt    |
 * | released (any other)                                         | take     |
 * | held by this very activity run                               | take     |
 * | held, `until` passed                                         | take     |
 * | held by a process on this host that is gone                  | take     |
 * | held by another worker, live                                 | wait     |
 */
export function decideGuard(found: GuardRecord | undefined, want: Want, now: number, aliveHere: (pid: number, start: string) => boolean): GuardDecision {
  if (!found) return { op: 'take', why: 'no guard' };
  if (found.until === 0) {
    const same = found.entry === want.entry && found.step === want.step && found.kind === want.kind;
    if (same && want.cutOffRun !== undefined && found.run === want.cutOffRun) return { op: 'adopt', exitCode: found.exitCode ?? null };
    return { op: 'take', why: 'released' };
  }
  if (found.holder.id === want.holder.id) return { op: 'take', why: 'ours' };
  if (found.until <= now) return { op: 'take', why: 'lapsed' };
  if (found.holder.host === want.holder.host && !aliveHere(found.holder.pid, found.holder.start)) return { op: 'take', why: 'its worker on this host is gone' };
  return {
    op: 'wait', until: found.until,
    why: `entry ${found.entry}'s ${found.kind} of step ${found.step} (run ${found.run}) holds it on worker ${found.holder.host} (pid ${found.holder.pid})`,
  };
}

/** The reads and writes the guard needs: the Node's annotations and resourceVersion, and a patch with that as precondition. */
export interface GuardAccess {
  read(): Promise<{ resourceVersion: string; value: string | undefined } | undefined>;
  /** Sets (or, with null, removes) the annotation if the Node is still at `resourceVersion`; false on a conflict. */
  write(resourceVersion: string, value: string | null): Promise<boolean>;
}

/**
 * Takes the guard for `want`, waiting (asking every `pollMs`, calling `onWait`) while another worker holds it.
 * Resolves `taken`, `adopted` (with the cut-off run's exit code), or `none` (no Node: nothing to guard on).
 */
export async function takeGuard(access: GuardAccess, want: Want, o: {
  now?: () => number; aliveHere: (pid: number, start: string) => boolean; sleep: (ms: number) => Promise<void>; onWait?: (why: string) => void; pollMs?: number;
}): Promise<{ taken: GuardRecord } | { adopted: number | null } | { none: true }> {
  const now = o.now ?? Date.now;
  for (;;) {
    const node = await access.read();
    if (!node) return { none: true };
    const d = decideGuard(parseGuard(node.value), want, now(), o.aliveHere);
    if (d.op === 'adopt') return { adopted: d.exitCode };
    if (d.op === 'wait') {
      o.onWait?.(d.why);
      await o.sleep(Math.max(100, Math.min(o.pollMs ?? 2000, d.until - now())));
      continue;
    }
    const mine: GuardRecord = { entry: want.entry, step: want.step, kind: want.kind, run: want.run, holder: want.holder, until: now() + GUARD_TTL_MS };
    if (await access.write(node.resourceVersion, JSON.stringify(mine))) return { taken: mine };
    // Someone wrote the Node in between: read again.
  }
}

/**
 * Extends our guard: `renewed`; `lost` when another worker holds it now (ours lapsed and was taken: the
 * command must stop); `released` when it holds our command's end already (a renewal that lost the race
 * with the release must not take the guard again: it would hold a finished run's machine until it
 * lapsed, and a retry cut off from that run would then run the command again instead of taking its
 * exit code); `gone` when the Node is (nothing left to guard on). Throws on an API error.
 */
export async function renewGuard(access: GuardAccess, mine: GuardRecord, now = Date.now()): Promise<'renewed' | 'lost' | 'released' | 'gone'> {
  for (let conflicts = 0; ; conflicts++) {
    if (conflicts === 10) throw new Error('the Node changed under each of 10 renewals in a row');
    const node = await access.read();
    if (!node) return 'gone';
    const found = parseGuard(node.value);
    if (found?.holder.id !== mine.holder.id) return 'lost';
    if (found.until === 0) return 'released';
    if (await access.write(node.resourceVersion, JSON.stringify({ ...mine, until: now + GUARD_TTL_MS }))) return 'renewed';
  }
}

/** Leaves the command's end in our guard (until 0), unless it is no longer ours. */
export async function releaseGuard(access: GuardAccess, mine: GuardRecord, exitCode: number | null): Promise<void> {
  for (let i = 0; i < 5; i++) {
    const node = await access.read();
    if (!node || parseGuard(node.value)?.holder.id !== mine.holder.id) return;
    if (await access.write(node.resourceVersion, JSON.stringify({ ...mine, until: 0, exitCode }))) return;
  }
}
