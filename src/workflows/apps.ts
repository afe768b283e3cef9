// The App entity workflow, `app/<namespace>/<name>`: one per App, taking spec
// changes from the watcher (signals) and commands from the CLI (updates) in
// order, so that a stop + start through tend always rolls the pods, however
// fast the two follow each other. Decisions are in src/apps; this file only
// sequences them.
import {
  allHandlersFinished, ApplicationFailure, CancellationScope, condition, continueAsNew, isCancellation, log, patched, proxyActivities,
  proxyLocalActivities, setCurrentDetails, setHandler, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { AppEntity, continueAsNewDue, decideNext, type AppEntityData, type WaitOutcome } from '../apps/entity.ts';
import {
  appChangedSignal, appDeletedSignal, appStateQuery, restartUpdate, startUpdate, stopUpdate,
  type AppCommandResult, type RestartRequest,
} from '../apps/messages.ts';
import type { AppCommand } from '../apps/revisions.ts';
import { MAX_RESTART_TIMEOUT_SECONDS } from '../apps/types.ts';
import { carriedFromOwnRun } from './carried.ts';

// Retries are bounded: a reconcile that still fails after them is recorded
// (the `state` query, the workflow's details in the Web UI), its command is
// answered as failed, and the App is reconciled again after a back-off.
const { reconcileApp } = proxyActivities<Activities>({
  // A reconcile is a handful of API calls; a short limit lets a lost worker's attempt be retried soon.
  startToCloseTimeout: '15s',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10 },
});
const { waitForApp } = proxyActivities<Activities>({
  // A wait runs for minutes; the heartbeat timeout notices a lost worker quickly.
  startToCloseTimeout: '35m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 5 },
});

export interface AppWorkflowInput {
  namespace: string;
  name: string;
  /** Carried over by continue-as-new. */
  state?: AppEntityData;
  /** History length past which the workflow continues-as-new when idle (2000; tests use less). */
  historyLimit?: number;
}

const HISTORY_LIMIT = 2000;
/** The least history limit a start may ask for: below it a run could continue as new before it does anything. */
const MIN_HISTORY_LIMIT = 10;

/** A start's history limit: a whole number from MIN_HISTORY_LIMIT to HISTORY_LIMIT, else HISTORY_LIMIT. */
function historyLimitOf(asked: unknown): number {
  if (asked === undefined) return HISTORY_LIMIT;
  if (typeof asked === 'number' && Number.isInteger(asked) && asked >= MIN_HISTORY_LIMIT && asked <= HISTORY_LIMIT) return asked;
  log.warn('historyLimit in the start input ignored', { historyLimit: String(asked), range: `${MIN_HISTORY_LIMIT} to ${HISTORY_LIMIT}` });
  return HISTORY_LIMIT;
}

// A check of the worker's configuration: it fails only by refusing (non-retryable)
// or by a worker too busy to answer, which is retried until it answers.
const { appInScope } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '1s', maximumInterval: '10s' },
});

/** The message of an activity failure: its cause's, which says what went wrong. */
function failureMessage(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  const inner = cause instanceof Error ? cause : err;
  return inner instanceof Error ? inner.message : String(inner);
}

function isRefusal(err: unknown): ApplicationFailure | undefined {
  // An activity's failure arrives as its cause; a local activity's may arrive as the ApplicationFailure itself.
  const cause = err instanceof ApplicationFailure ? err : (err as { cause?: unknown }).cause;
  return cause instanceof ApplicationFailure && cause.type === 'AppsRefused' ? cause : undefined;
}

/**
 * A reconcile's result is dropped when the watcher reported an App with another
 * uid while it ran (the App deleted and created again): the new App is
 * reconciled. Before, the old App's result could make the new one (at the same
 * generation) look handled. Histories from before replay the old decision.
 */
export const APP_NEW_UID_RECONCILES_PATCH = 'app-new-uid-reconciles';

/** Paused: how soon a held reconcile is tried again. */
export const HELD_RETRY_MS = 5_000;
/** Observe mode with writes to make: how often the App is looked at again. */
export const OBSERVED_RECHECK_MS = 30_000;

export async function appWorkflow(input: AppWorkflowInput): Promise<string> {
  const carried = carriedFromOwnRun(input?.state);
  const entity = new AppEntity(carried && carried.namespace === input?.namespace && carried.name === input?.name
    ? carried : { namespace: input?.namespace, name: input?.name });
  const e = entity.data;
  const label = `${input?.namespace}/${input?.name}`;
  const historyLimit = historyLimitOf(input?.historyLimit);

  const result = (ok: boolean, message: string): AppCommandResult => ({
    ok, message, workloads: e.last?.workloads ?? [],
    ...(e.last?.desiredState && { desiredState: e.last.desiredState }),
    ...(e.last?.actualState && { actualState: e.last.actualState }),
    ...(e.last?.lastSeen && { appRev: e.last.lastSeen.appRev }),
    ...(e.last?.lastStopRev !== undefined && { lastStopRev: e.last.lastStopRev }),
  });
  // Whether the worker's configuration covers this App: unknown until the
  // local activity below answers; a refusal's text otherwise.
  let scope: 'unknown' | 'ok' | { refused: string } = 'unknown';
  // The workflow was cancelled (the Web UI, `temporal workflow cancel`): updates still waiting are answered.
  let cancelled = false;
  /** An update waits for the answer, and fails with the refusal's reason. */
  const inScope = async () => {
    await condition(() => scope !== 'unknown');
    if (typeof scope === 'object') throw ApplicationFailure.nonRetryable(scope.refused, 'AppsRefused');
  };
  const refuseWhenGone = () => {
    if (typeof scope === 'object') throw new Error(scope.refused);
    if (cancelled) throw new Error(`the workflow of App ${label} has been cancelled`);
    if (e.deleted || entity.gone) throw new Error(`App ${label} has been deleted`);
  };
  const notApplied = (seq: number): AppCommandResult | undefined => {
    const failure = entity.takeFailure(seq);
    if (failure !== undefined) return result(false, `not applied: ${failure}`);
    if (cancelled && e.appliedSeq < seq) return result(false, `not applied: the workflow of App ${label} was cancelled`);
    return undefined;
  };
  const apply = async (command: AppCommand): Promise<AppCommandResult> => {
    await inScope();
    const seq = entity.enqueue(command);
    await condition(() => e.appliedSeq >= seq || cancelled);
    const failed = notApplied(seq);
    if (failed) return failed;
    if (entity.gone) return result(false, `App ${label} is gone`);
    if (e.last?.problem) return result(false, `applied, but the App's spec is refused: ${e.last.problem}`);
    if (e.last?.observed?.length) return result(true, `${command.kind}: observe mode, nothing written; would have: ${e.last.observed.join('; ')}`);
    return result(true, `${command.kind} applied`);
  };

  setHandler(appChangedSignal, (changed) => entity.observe(changed?.generation, changed?.uid, changed?.stoppedGeneration));
  setHandler(appDeletedSignal, () => entity.markDeleted());
  setHandler(appStateQuery, () => e);
  let updatesInFlight = 0;
  const counted = <A extends unknown[]>(fn: (...args: A) => Promise<AppCommandResult>) => async (...args: A) => {
    updatesInFlight++;
    try {
      return await fn(...args);
    } finally {
      updatesInFlight--;
    }
  };
  setHandler(startUpdate, counted(() => apply({ kind: 'start' })), { validator: refuseWhenGone });
  setHandler(stopUpdate, counted(() => apply({ kind: 'stop' })), { validator: refuseWhenGone });
  setHandler(restartUpdate, counted(async (req?: RestartRequest) => {
    await inScope();
    const timeoutSeconds = req?.timeoutSeconds ?? 300;
    let seq: number;
    const seqs: number[] = [];
    if (req?.strategy === 'rolling') seqs.push(seq = entity.enqueue({ kind: 'rolling' }));
    else {
      const stop = entity.enqueue({ kind: 'stop' });
      seqs.push(stop, seq = entity.enqueue({ kind: 'start' }, stop));
    }
    const failed = () => seqs.some((s) => e.failures?.[s] !== undefined);
    const done = () => cancelled || failed() || entity.gone || (e.appliedSeq >= seq && (e.settledSeq >= seq || !!e.last?.problem));
    if (!(await condition(done, timeoutSeconds * 1000))) {
      return result(false, `timed out after ${timeoutSeconds}s waiting for ${label} to run on new, ready pods; `
        + `the restart goes on: see \`tend app status ${label}\``);
    }
    const answers = seqs.map((s) => notApplied(s)).filter((r) => r !== undefined);
    if (answers[0]) return answers[0];
    if (entity.gone) return result(false, `App ${label} is gone`);
    if (e.last?.problem) return result(false, `the App's spec is refused: ${e.last.problem}`);
    if (e.last?.observed?.length) return result(true, `observe mode, nothing restarted; would have: ${e.last.observed.join('; ')}`);
    return result(true, `${label} runs on new, ready pods`);
  }), {
    validator: (req?: RestartRequest) => {
      refuseWhenGone();
      if (req?.strategy !== undefined && req.strategy !== 'stop-start' && req.strategy !== 'rolling') {
        throw new Error(`strategy must be stop-start or rolling (got ${JSON.stringify(req.strategy)})`);
      }
      const t = req?.timeoutSeconds;
      if (t !== undefined && (!Number.isInteger(t) || t < 1 || t > MAX_RESTART_TIMEOUT_SECONDS)) {
        throw new Error(`timeoutSeconds must be a whole number from 1 to ${MAX_RESTART_TIMEOUT_SECONDS} (got ${JSON.stringify(t)})`);
      }
    },
  });

  // The App must be in the worker's apps.namespaces: refused (the workflow
  // fails, non-retryably, and so do updates waiting on it) before anything is
  // read or written. The handlers are set first, so that an update sent with
  // the start (`tend app`'s update-with-start) is not rejected unseen.
  try {
    await appInScope({ namespace: input?.namespace, name: input?.name });
    scope = 'ok';
  } catch (err) {
    const refusal = isRefusal(err);
    if (!refusal) return await cancelledOr(err);
    scope = { refused: refusal.message };
    await condition(allHandlersFinished);
    throw ApplicationFailure.nonRetryable(refusal.message, 'AppsRefused');
  }

  // Updates being answered (signal handlers are synchronous: they never hold continue-as-new back).
  const continueAsNewNow = () => continueAsNewDue({
    suggested: workflowInfo().continueAsNewSuggested, length: workflowInfo().historyLength, limit: historyLimit,
    handlersFinished: updatesInFlight === 0,
  });
  const recordFailure = (message: string, seq: number | undefined) => {
    entity.reconcileFailed(message, seq, new Date(Date.now()).toISOString());
    log.warn('App reconcile gave up after its retries; retried after a back-off', { app: label, error: message });
    setCurrentDetails(`reconciling App ${label} failed at ${e.lastError!.at}: ${message}; retried after a back-off, or at once on a new command or change`);
  };

  // At most one wait at a time; a newer command does not cancel it (that
  // would cost heartbeats): its write to the App makes the wait return. It
  // runs in a scope of its own, so that continue-as-new can cancel it.
  let wait: CancellationScope | undefined;
  try {
    for (;;) {
      if (continueAsNewNow()) {
        // Whatever it waits on: a wait for pods is started again by the new
        // run; observations, commands left by a restart that timed out, a
        // deletion and a back-off are carried in the state.
        // Signal handlers of this activation finish in a microtask; an update
        // that arrives meanwhile needs this loop, so it sends us back to work.
        await condition(() => allHandlersFinished() || updatesInFlight > 0);
        if (updatesInFlight > 0) continue;
        wait?.cancel();
        await continueAsNew<typeof appWorkflow>({
          namespace: e.namespace, name: e.name, state: e, ...(input?.historyLimit !== undefined && { historyLimit }),
        });
      }
      const step = decideNext(e, wait !== undefined);
      if (step.kind === 'end') break;
      if (step.kind === 'reconcile') {
        const deletionsBefore = entity.deletions;
        const uidChangesBefore = patched(APP_NEW_UID_RECONCILES_PATCH) ? entity.uidChanges : undefined;
        try {
          const res = await reconcileApp({
            namespace: e.namespace, name: e.name, command: step.command?.command, lastSeen: e.last?.lastSeen, uid: e.last?.uid,
            ...(step.stopSeen !== undefined && { stopSeen: step.stopSeen }),
          });
          if (res.held !== undefined) {
            // Paused: nothing was written and the command (if any) stays queued; asked again shortly,
            // so what fell due is written soon after the resume.
            setCurrentDetails(`held: ${res.held}; nothing written; tried again every ${HELD_RETRY_MS / 1000} s`);
            await condition(() => continueAsNewNow() || entity.data.deleted, HELD_RETRY_MS);
            continue;
          }
          const failedBefore = e.lastError && !e.lastError.recovered;
          entity.reconciled(res, step.command?.seq, deletionsBefore, step.stopSeen, uidChangesBefore);
          if (failedBefore) setCurrentDetails(`recovered; the last failure (${e.lastError!.at}): ${e.lastError!.message}`);
          if (res.observed?.length) setCurrentDetails(`observe mode, nothing written; would have:\n${res.observed.join('\n')}`);
        } catch (err) {
          if (isCancellation(err) || isRefusal(err)) throw err;
          recordFailure(failureMessage(err), step.command?.seq);
        }
        continue;
      }
      if (step.kind === 'backoff') {
        await condition(() => e.backoff?.newInput === true || continueAsNewNow(), step.seconds * 1000);
        if (!continueAsNewNow()) entity.backoffOver();
        continue;
      }
      if (step.kind === 'wait' && e.last?.lastSeen) {
        const { generation, appRev } = e.last.lastSeen;
        const scope = new CancellationScope();
        wait = scope;
        const finished = (outcome: WaitOutcome) => {
          if (wait === scope) wait = undefined;
          entity.waited(outcome);
        };
        void scope.run(() => waitForApp({ namespace: e.namespace, name: e.name, generation, appRev, timeoutSeconds: step.timeoutSeconds }))
          .then(finished, (err: unknown) => {
            if (isCancellation(err)) {
              if (wait === scope) wait = undefined;
              return;
            }
            finished('timeout');
            recordFailure(`waiting for the App's workloads: ${failureMessage(err)}`, undefined);
          });
      }
      // Idle (or waiting): sleep until there is something to do. No timer: an idle App costs nothing.
      const idleOver = () => entity.hasInput || (!wait && e.statusStale) || continueAsNewNow();
      if (e.last?.observed?.length) {
        // Observe mode found writes to make: looked at again now and then, so that they are made
        // soon after a switch to act mode (recorded once meanwhile).
        if (!(await condition(idleOver, OBSERVED_RECHECK_MS))) e.statusStale = true;
      } else {
        await condition(idleOver);
      }
    }
  } catch (err) {
    return await cancelledOr(err);
  }
  await condition(allHandlersFinished);
  return `App ${label} deleted; its workloads deleted`;

  /**
   * Ends the workflow with `err`. A cancellation answers the updates still
   * waiting (not applied) first: nothing is held by this workflow, so
   * nothing else needs undoing; the watcher starts it again on the App's next change.
   */
  async function cancelledOr(err: unknown): Promise<never> {
    if (isCancellation(err)) {
      cancelled = true;
      await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    }
    throw err;
  }
}
