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
import { preview } from '../checks/preview.ts';
import { AppEntity, continueAsNewDue, decideNext, type AppEntityData, type NextStep, type WaitOutcome } from '../apps/entity.ts';
import {
  appChangedOf, appChangedSignal, appDeletedSignal, appOfWorkflowId, appStateQuery, APPS_REFUSED, appWorkflowId, MAX_QUEUED_COMMANDS, restartRequestProblem,
  restartUpdate, startUpdate, stopUpdate, type AppCommandResult, type RestartRequest,
} from '../apps/messages.ts';
import type { AppCommand } from '../apps/revisions.ts';
import { appDetails, reconcileSummary, waitSummary } from '../apps/summaries.ts';
import { carriedFromOwnRun } from './carried.ts';
import { failureMessage, refusalOf } from './failures.ts';
import { patchesBeforeLocalActivity } from './patches.ts';
import { said } from './summary.ts';

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
  log.warn('historyLimit in the start input ignored', { historyLimit: preview(asked, 60), range: `${MIN_HISTORY_LIMIT} to ${HISTORY_LIMIT}` });
  return HISTORY_LIMIT;
}

// A check of the worker's configuration: it fails only by refusing (non-retryable)
// or by a worker too busy to answer, which is retried until it answers.
const { appInScope } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '1s', maximumInterval: '10s' },
});

/** The refusal in an activity's failure (the App outside the worker's configuration). */
const refusal = (err: unknown) => refusalOf(err, [APPS_REFUSED]);

/**
 * A reconcile's result is dropped when the watcher reported an App with another
 * uid while it ran (the App deleted and created again): the new App is
 * reconciled. Before, the old App's result could make the new one (at the same
 * generation) look handled. Histories from before replay the old decision.
 */
export const APP_NEW_UID_RECONCILES_PATCH = 'app-new-uid-reconciles';
/**
 * A reported generation above the one a later reconcile read is refuted by
 * that read (entity.generationRefuted): the App is not reconciled again for
 * it. Before, a forged report of a huge generation made it reconcile for ever.
 */
export const APP_GENERATION_CONFIRMED_PATCH = 'app-generation-confirmed';
/**
 * A workflow started under an id that is not its App's is refused before it
 * reads anything. Histories from before replay as they ran.
 */
export const APP_OWN_ID_PATCH = 'app-own-id';

/** Paused: how soon a held reconcile is tried again. */
export const HELD_RETRY_MS = 5_000;
/** Observe mode with writes to make: how often the App is looked at again. */
export const OBSERVED_RECHECK_MS = 30_000;

/**
 * A workflow started under an App's id with an input that does not name that App (a hand start
 * with junk) serves the App its id names, the input ignored: the watcher's signal-with-start that
 * reaches it is served, instead of being lost with a run that refuses. Before, it was refused
 * (app-own-id). docs/contributing/patch-history.md.
 */
export const APP_ID_NAMES_APP_PATCH = 'app-id-names-app';

export async function appWorkflow(given: AppWorkflowInput): Promise<string> {
  let input = given;
  const idProblem = ownIdProblem(input, workflowInfo().workflowId);
  const own = idProblem ? appOfWorkflowId(workflowInfo().workflowId) : undefined;
  if (own && patched(APP_ID_NAMES_APP_PATCH)) {
    log.warn(`the start input is ignored (${idProblem}): this run serves the App ${own.namespace}/${own.name}, the App its id names`);
    input = own;
  }
  const carried = carriedFromOwnRun(input?.state);
  const entity = new AppEntity(carried && carried.namespace === input?.namespace && carried.name === input?.name
    ? carried : { namespace: input?.namespace, name: input?.name });
  const run = new AppRun(entity, historyLimitOf(input?.historyLimit), input?.historyLimit !== undefined);
  setHandler(appChangedSignal, (changed) => run.changed(changed));
  setHandler(appDeletedSignal, () => entity.markDeleted());
  setHandler(appStateQuery, () => entity.data);
  setHandler(startUpdate, run.counted(() => run.apply({ kind: 'start' })), { validator: (...args: unknown[]) => run.refuseBare('start', args) });
  setHandler(stopUpdate, run.counted(() => run.apply({ kind: 'stop' })), { validator: (...args: unknown[]) => run.refuseBare('stop', args) });
  setHandler(restartUpdate, run.counted((req?: RestartRequest) => run.restart(req)), { validator: (req?: RestartRequest) => run.refuseRestart(req) });

  // The workflow's own id must be its App's, and the App must be in the
  // worker's apps.namespaces: refused (the workflow fails, non-retryably, and
  // so do updates waiting on it) before anything is read or written. The
  // handlers are set first, so that an update sent with the start (`tend
  // app`'s update-with-start) is not rejected unseen.
  if (idProblem && input === given && patched(APP_OWN_ID_PATCH)) return run.refuse(`refused: ${idProblem}; nothing was read or changed`);
  // The first reconcile, right after the scope's answer, asks for this one (src/workflows/patches.ts).
  patchesBeforeLocalActivity([APP_NEW_UID_RECONCILES_PATCH]);
  try {
    await appInScope({ namespace: input?.namespace, name: input?.name });
    run.scope = 'ok';
  } catch (err) {
    const refused = refusal(err);
    if (!refused) return await run.cancelledOr(err);
    return run.refuse(refused.message);
  }
  return run.run();
}

/** Why this workflow's id is not its App's (`app/<namespace>/<name>`), or undefined when it is. */
function ownIdProblem(input: AppWorkflowInput | undefined, workflowId: string): string | undefined {
  const namespace: unknown = input?.namespace;
  const name: unknown = input?.name;
  if (typeof namespace !== 'string' || typeof name !== 'string') {
    return `an App's workflow names its App by namespace and name (strings); got ${preview(namespace, 60)}/${preview(name, 60)}`;
  }
  const own = appWorkflowId(namespace, name);
  return workflowId === own ? undefined : `this workflow's id ${preview(workflowId, 120)} is not its App's (${preview(own, 120)})`;
}

/** One run of an App's workflow: its updates, its run loop, and how it ends. */
class AppRun {
  /** Whether the worker's configuration covers this App: unknown until the local activity answers; a refusal's text otherwise. */
  scope: 'unknown' | 'ok' | { refused: string } = 'unknown';
  /** The workflow was cancelled (the Web UI, `temporal workflow cancel`): updates still waiting are answered. */
  private cancelled = false;
  /** Updates being answered (signal handlers are synchronous: they never hold continue-as-new back). */
  private updatesInFlight = 0;
  /**
   * At most one wait at a time; a newer command does not cancel it (that
   * would cost heartbeats): its write to the App makes the wait return. It
   * runs in a scope of its own, so that continue-as-new can cancel it.
   */
  private wait: CancellationScope | undefined;
  private readonly entity: AppEntity;
  private readonly label: string;
  private readonly historyLimit: number;
  private readonly limitAsked: boolean;

  constructor(entity: AppEntity, historyLimit: number, limitAsked: boolean) {
    this.entity = entity;
    this.label = `${entity.data.namespace}/${entity.data.name}`;
    this.historyLimit = historyLimit;
    this.limitAsked = limitAsked;
  }

  private get e(): AppEntityData {
    return this.entity.data;
  }

  // ---------------------------------------------------------------- handlers

  /** The watcher saw the App change: a hint (checked, then confirmed by the next reconcile). */
  changed(args: unknown): void {
    const c = appChangedOf(args);
    if ('ignored' in c) {
      log.warn(c.ignored);
      return;
    }
    this.entity.observe(c.generation, c.uid, c.stoppedGeneration);
  }

  counted<A extends unknown[]>(fn: (...args: A) => Promise<AppCommandResult>): (...args: A) => Promise<AppCommandResult> {
    return async (...args: A) => {
      this.updatesInFlight++;
      try {
        return await fn(...args);
      } finally {
        this.updatesInFlight--;
      }
    };
  }

  private result(ok: boolean, message: string): AppCommandResult {
    const last = this.e.last;
    return {
      ok, message, workloads: last?.workloads ?? [],
      ...(last?.desiredState && { desiredState: last.desiredState }),
      ...(last?.actualState && { actualState: last.actualState }),
      ...(last?.lastSeen && { appRev: last.lastSeen.appRev }),
      ...(last?.lastStopRev !== undefined && { lastStopRev: last.lastStopRev }),
    };
  }

  /** An update waits for the answer, and fails with the refusal's reason. */
  private async inScope(): Promise<void> {
    await condition(() => this.scope !== 'unknown');
    if (typeof this.scope === 'object') throw ApplicationFailure.nonRetryable(this.scope.refused, APPS_REFUSED);
  }

  /** The validator of start and stop: refused once the App or the workflow is gone, or too many commands wait. */
  refuseCommand(): void {
    if (typeof this.scope === 'object') throw new Error(this.scope.refused);
    if (this.cancelled) throw new Error(`the workflow of App ${this.label} has been cancelled`);
    if (this.e.deleted || this.entity.gone) throw new Error(`App ${this.label} has been deleted`);
    if (this.e.commands.length >= MAX_QUEUED_COMMANDS) throw new Error(`App ${this.label} has ${MAX_QUEUED_COMMANDS} commands waiting already; try again once they are applied`);
  }

  /**
   * start and stop take no argument (`tend app start|stop` sends none): one that comes with an
   * argument is not a command tend sent, and is refused instead of applied.
   */
  refuseBare(verb: 'start' | 'stop', args: unknown[]): void {
    this.refuseCommand();
    const given = args.filter((a) => a !== undefined && a !== null);
    if (given.length > 0) throw new Error(`${verb} takes no argument; got ${preview(given.length === 1 ? given[0] : given, 80)}`);
  }

  refuseRestart(req: unknown): void {
    this.refuseCommand();
    const problem = restartRequestProblem(req);
    if (problem) throw new Error(problem);
  }

  private notApplied(seq: number): AppCommandResult | undefined {
    const failure = this.entity.takeFailure(seq);
    if (failure !== undefined) return this.result(false, `not applied: ${failure}`);
    if (this.cancelled && this.e.appliedSeq < seq) return this.result(false, `not applied: the workflow of App ${this.label} was cancelled`);
    return undefined;
  }

  async apply(command: AppCommand): Promise<AppCommandResult> {
    await this.inScope();
    const seq = this.entity.enqueue(command);
    await condition(() => this.e.appliedSeq >= seq || this.cancelled);
    const failed = this.notApplied(seq);
    if (failed) return failed;
    const e = this.e;
    if (this.entity.gone) return this.result(false, `App ${this.label} is gone`);
    if (e.last?.problem) return this.result(false, `applied, but the App's spec is refused: ${e.last.problem}`);
    if (e.last?.observed?.length) return this.result(true, `${command.kind}: observe mode, nothing written; would have: ${e.last.observed.join('; ')}`);
    return this.result(true, `${command.kind} applied`);
  }

  async restart(req?: RestartRequest): Promise<AppCommandResult> {
    await this.inScope();
    const { entity, label } = this;
    const e = this.e;
    const timeoutSeconds = req?.timeoutSeconds ?? 300;
    let seq: number;
    const seqs: number[] = [];
    if (req?.strategy === 'rolling') seqs.push(seq = entity.enqueue({ kind: 'rolling' }));
    else {
      const stop = entity.enqueue({ kind: 'stop' });
      seqs.push(stop, seq = entity.enqueue({ kind: 'start' }, stop));
    }
    const failed = () => seqs.some((s) => e.failures?.[s] !== undefined);
    const done = () => this.cancelled || failed() || entity.gone || (e.appliedSeq >= seq && (e.settledSeq >= seq || !!e.last?.problem));
    if (!(await condition(done, timeoutSeconds * 1000))) {
      return this.result(false, `timed out after ${timeoutSeconds}s waiting for ${label} to run on new, ready pods; `
        + `the restart goes on: see \`tend app status ${label}\``);
    }
    const answers = seqs.map((s) => this.notApplied(s)).filter((r) => r !== undefined);
    if (answers[0]) return answers[0];
    if (entity.gone) return this.result(false, `App ${label} is gone`);
    if (e.last?.problem) return this.result(false, `the App's spec is refused: ${e.last.problem}`);
    if (e.last?.observed?.length) return this.result(true, `observe mode, nothing restarted; would have: ${e.last.observed.join('; ')}`);
    return this.result(true, `${label} runs on new, ready pods`);
  }

  // ---------------------------------------------------------------- the run

  /** The workflow fails with the refusal, once the updates waiting on it have their answer (the same refusal). */
  async refuse(message: string): Promise<never> {
    this.scope = { refused: message };
    await condition(allHandlersFinished);
    throw ApplicationFailure.nonRetryable(message, APPS_REFUSED);
  }

  private continueAsNewNow(): boolean {
    return continueAsNewDue({
      suggested: workflowInfo().continueAsNewSuggested, length: workflowInfo().historyLength, limit: this.historyLimit,
      handlersFinished: this.updatesInFlight === 0,
    });
  }

  private recordFailure(message: string, seq: number | undefined): void {
    this.entity.reconcileFailed(message, seq, new Date(Date.now()).toISOString());
    log.warn('App reconcile gave up after its retries; retried after a back-off', { app: this.label, error: message });
    setCurrentDetails(`reconciling App ${this.label} failed at ${this.e.lastError!.at}: ${message}; retried after a back-off, or at once on a new command or change`);
  }

  async run(): Promise<string> {
    const { entity } = this;
    try {
      for (;;) {
        if (this.continueAsNewNow()) {
          // Whatever it waits on: a wait for pods is started again by the new
          // run; observations, commands left by a restart that timed out, a
          // deletion and a back-off are carried in the state.
          // Signal handlers of this activation finish in a microtask; an update
          // that arrives meanwhile needs this loop, so it sends us back to work.
          await condition(() => allHandlersFinished() || this.updatesInFlight > 0);
          if (this.updatesInFlight > 0) continue;
          this.wait?.cancel();
          const e = this.e;
          await continueAsNew<typeof appWorkflow>({
            namespace: e.namespace, name: e.name, state: e, ...(this.limitAsked && { historyLimit: this.historyLimit }),
          });
        }
        const step = decideNext(this.e, this.wait !== undefined);
        if (step.kind === 'end') break;
        if (step.kind === 'reconcile') {
          await this.reconcile(step);
          continue;
        }
        if (step.kind === 'backoff') {
          await condition(() => this.e.backoff?.newInput === true || this.continueAsNewNow(), step.seconds * 1000);
          if (!this.continueAsNewNow()) entity.backoffOver();
          continue;
        }
        if (step.kind === 'wait') this.startWait(step.timeoutSeconds);
        await this.idle();
      }
    } catch (err) {
      return await this.cancelledOr(err);
    }
    await condition(allHandlersFinished);
    return `App ${this.label} deleted; its workloads deleted`;
  }

  private async reconcile(step: Extract<NextStep, { kind: 'reconcile' }>): Promise<void> {
    const { entity } = this;
    const e = this.e;
    const deletionsBefore = entity.deletions;
    const uidChangesBefore = patched(APP_NEW_UID_RECONCILES_PATCH) ? entity.uidChanges : undefined;
    const pendingBefore = e.pendingGeneration;
    try {
      const res = await reconcileApp.executeWithOptions(said(reconcileSummary(this.label, step.command?.command)), [{
        namespace: e.namespace, name: e.name, command: step.command?.command, lastSeen: e.last?.lastSeen, uid: e.last?.uid,
        ...(step.stopSeen !== undefined && { stopSeen: step.stopSeen }),
      }]);
      if (res.held !== undefined) {
        // Paused: nothing was written and the command (if any) stays queued; asked again shortly,
        // so what fell due is written soon after the resume.
        setCurrentDetails(`held: ${res.held}; nothing written; tried again every ${HELD_RETRY_MS / 1000} s`);
        await condition(() => this.continueAsNewNow() || entity.data.deleted, HELD_RETRY_MS);
        return;
      }
      const failedBefore = e.lastError && !e.lastError.recovered;
      entity.reconciled(res, step.command?.seq, deletionsBefore, step.stopSeen, uidChangesBefore);
      // A reported generation the read refutes (forged, or of an App gone since): the read stands.
      if (entity.generationRefuted(res, pendingBefore) && patched(APP_GENERATION_CONFIRMED_PATCH)) entity.takeReadGeneration(res);
      if (failedBefore) setCurrentDetails(`recovered; the last failure (${e.lastError!.at}): ${e.lastError!.message}`);
      if (res.observed?.length) setCurrentDetails(`observe mode, nothing written; would have:\n${res.observed.join('\n')}`);
    } catch (err) {
      if (isCancellation(err) || refusal(err)) throw err;
      this.recordFailure(failureMessage(err), step.command?.seq);
    }
  }

  /** A wait for the App's workloads, in a scope of its own; its outcome is written to status by one more reconcile. */
  private startWait(timeoutSeconds: number): void {
    const { entity } = this;
    const e = this.e;
    if (!e.last?.lastSeen) return;
    const { generation, appRev } = e.last.lastSeen;
    const scope = new CancellationScope();
    this.wait = scope;
    const finished = (outcome: WaitOutcome) => {
      if (this.wait === scope) this.wait = undefined;
      entity.waited(outcome);
    };
    void scope.run(() => waitForApp.executeWithOptions(said(waitSummary(this.label)), [{ namespace: e.namespace, name: e.name, generation, appRev, timeoutSeconds }]))
      .then(finished, (err: unknown) => {
        if (isCancellation(err)) {
          if (this.wait === scope) this.wait = undefined;
          return;
        }
        finished('timeout');
        this.recordFailure(`waiting for the App's workloads: ${failureMessage(err)}`, undefined);
      });
  }

  /** Idle (or waiting): sleep until there is something to do. No timer: an idle App costs nothing. */
  private async idle(): Promise<void> {
    // The App as the last reconcile left it, unless a failure or observe mode is shown (they say their own).
    if (!this.e.last?.observed?.length && !(this.e.lastError && !this.e.lastError.recovered)) setCurrentDetails(appDetails(this.e));
    const idleOver = () => this.entity.hasInput || (!this.wait && this.e.statusStale) || this.continueAsNewNow();
    if (this.e.last?.observed?.length) {
      // Observe mode found writes to make: looked at again now and then, so that they are made
      // soon after a switch to act mode (recorded once meanwhile).
      if (!(await condition(idleOver, OBSERVED_RECHECK_MS))) this.e.statusStale = true;
    } else {
      await condition(idleOver);
    }
  }

  /**
   * Ends the workflow with `err`. A cancellation answers the updates still
   * waiting (not applied) first: nothing is held by this workflow, so
   * nothing else needs undoing; the watcher starts it again on the App's next change.
   */
  async cancelledOr(err: unknown): Promise<never> {
    if (isCancellation(err)) {
      this.cancelled = true;
      await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    }
    throw err;
  }
}
