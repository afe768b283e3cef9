// A repair or success command's run under its entry's guard on the Node
// (src/repair/guard.ts): the guard taken before, renewed during, released
// with the exit code after; the command stopped if the guard cannot be kept.
// The Kubernetes side of the guard: Node get and patch with the Node's
// resourceVersion as precondition. Node-only: never imported by workflow code.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import { mergePatch } from '../kube/api.ts';
import { errorMessage, isConflict, isNotFound } from '../kube/writes.ts';
import { log } from '../log.ts';
import {
  GUARD_ANNOTATION, GUARD_RENEW_MS, GUARD_STOP_MS, releaseGuard, renewGuard, takeGuard, type GuardAccess, type Holder, type Want,
} from './guard.ts';
import { procStat, type RunResult } from './process.ts';

/** The Node calls the guard makes (the generated client's, structurally). */
export interface NodeCalls {
  readNode(p: { name: string }): Promise<k8s.V1Node>;
  patchNode(p: { name: string; body: object; fieldManager?: string }, options: typeof mergePatch): Promise<unknown>;
}

/** The guard's reads and writes on one Node: its annotation, with its resourceVersion as precondition. */
export function nodeGuardAccess(core: NodeCalls, nodename: string): GuardAccess {
  return {
    read: async () => {
      try {
        const n = await core.readNode({ name: nodename });
        return { resourceVersion: n.metadata!.resourceVersion!, value: n.metadata?.annotations?.[GUARD_ANNOTATION] };
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    write: async (resourceVersion, value) => {
      try {
        await core.patchNode({ name: nodename, body: { metadata: { resourceVersion, annotations: { [GUARD_ANNOTATION]: value } } }, fieldManager: 'tend' }, mergePatch);
        return true;
      } catch (err) {
        if (isConflict(err)) return false;
        throw err;
      }
    },
  };
}

/** This worker process, as a guard names its holder; `id` new for each activity run. */
export function holder(): Holder {
  return { host: hostname(), pid: process.pid, start: procStat(process.pid)?.starttime ?? '', id: randomUUID() };
}

/**
 * Runs `run` under the guard: waits while another worker holds it (asking
 * again, stopped by `signal`), takes the cut-off run's end instead of running
 * when the guard holds it, and stops the command (through the signal `run`
 * gets) when the guard can no longer be kept.
 */
export async function runGuarded(access: GuardAccess, want: Omit<Want, 'holder'>, signal: AbortSignal, run: (signal: AbortSignal) => Promise<RunResult>,
  stopped: () => never): Promise<RunResult> {
  const fields = { index: want.entry, step: want.step, kind: want.kind };
  let told = false;
  const got = await takeGuard(access, { ...want, holder: holder() }, {
    aliveHere: (pid, start) => procStat(pid)?.starttime === start,
    sleep: async (ms) => {
      try {
        await sleep(ms, undefined, { signal });
      } catch {
        stopped();
      }
    },
    onWait: (why) => {
      if (!told) log.info({ ...fields, why }, 'repair: the entry\'s guard is held; waiting for it');
      told = true;
    },
  });
  if ('none' in got) return run(signal);
  if ('adopted' in got) {
    const code = got.adopted;
    log.warn({ ...fields, run: want.cutOffRun, exitCode: code },
      'repair: the run this attempt was cut off from ended on another worker; its exit code is taken, the command is not run again');
    return {
      ok: code === 0, stdout: '', ...(code !== null ? { exitCode: code } : {}),
      ...(code === 0 ? {} : { error: code === null ? 'ended with no exit code (killed)' : `exit code ${code}` }),
      adopted: { run: want.cutOffRun ?? 0, startedAt: '' },
    };
  }
  const mine = got.taken;
  const lost = new AbortController();
  let renewedAt = Date.now();
  /** The renewal under way: the release waits for it, so the two never cross (src/repair/guard.ts renewGuard). */
  let renewing: Promise<void> = Promise.resolve();
  const renewer = setInterval(() => {
    renewing = renewing.then(() => renewGuard(access, mine)).then((out) => {
      if (out === 'renewed' || out === 'gone') renewedAt = Date.now();
      if (out === 'lost') lost.abort();
    }, (err: unknown) => log.warn({ ...fields, error: errorMessage(err) }, 'repair: could not renew the entry\'s guard'))
      .finally(() => {
        if (Date.now() - renewedAt > GUARD_STOP_MS) lost.abort();
      });
  }, GUARD_RENEW_MS);
  let r: RunResult | undefined;
  try {
    r = await run(AbortSignal.any([signal, lost.signal]));
    if (lost.signal.aborted && !signal.aborted) {
      log.warn(fields, 'repair: the entry\'s guard on the Node could not be kept; the command was stopped');
      r = { ...r, ok: false, error: 'stopped: its guard on the Node could not be kept (docs/repair.md)' };
    }
    return r;
  } finally {
    clearInterval(renewer);
    await renewing;
    await releaseGuard(access, mine, r?.exitCode ?? null)
      .catch((err: unknown) => log.warn({ ...fields, error: errorMessage(err) }, 'repair: could not release the entry\'s guard; it lapses by itself'));
  }
}
