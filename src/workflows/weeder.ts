// One weeder window per Service (`weeder/<namespace>/<service>`): opened by
// the watcher on a not-ready -> ready transition, extended by the next ones,
// closed after watchDuration (or by the stop signal or update). This workflow
// keeps the deadline and the record, and does every deletion itself, through
// a short activity: a watching activity finds the crash-looping dependants and
// returns them, and the workflow hands them to `weedPods`. So each deletion's
// intent is in the history before the deletion is issued, and its outcome as
// soon as it is back; a worker killed in between loses nothing (a retry, or
// `checkPods` after a lost answer, says what became of the pods).
//
// The watcher also arms the workflow when the Service goes not ready: a
// watching activity then follows the Service through the outage and returns
// the instant it is ready again, with the dependants to weed; the workflow
// learns of the opening from its result.
//
// So there are two watching lanes, each at most one activity at a time: the
// window's (while the window is open) and the armed one (while the Service is
// not ready). They run side by side when both are wanted; a lane held up by a
// lost activity never holds up the other. Watching activities delete nothing,
// so one is cancelled without waiting (stop, continue-as-new): nothing it
// might still see can act. Deleting activities are waited for.
//
// The safety gates (docs/safety.md, docs/weeder.md): a deletion observe mode
// recorded (`observed`) or the pause held (`held`) is asked again, while the
// window is open, by the same deleting activity with a hold: it waits in place
// until the weeder may delete (tend resume weeder, or the configuration's
// mode: act), then judges the pods afresh. One activity per batch and hold
// (at most WEED_HOLD_MS), not a timer per pod: a long pause costs little
// history. The window closing while held: those deletions are not made, and
// the result lists them as held.
//
// The arming rules (what a lane's end leads to) are src/weeder/armed.ts; the
// window's state is src/weeder/window.ts; the messages and their checks are
// src/weeder/messages.ts. This file runs what they decide.
import {
  allHandlersFinished, ActivityCancellationType, ApplicationFailure, CancellationScope, condition, continueAsNew, isCancellation, log,
  patched, proxyActivities, proxyLocalActivities, setCurrentDetails, setHandler, uuid4, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { preview } from '../checks/preview.ts';
import { announcementOps, laneAnswered, laneFailed, type LaneOp, type LaneRun } from '../weeder/armed.ts';
import {
  armedWeedingSignal, armSignal, checkExtendArgs, checkReasonArgs, extendSignal, stopSignal, stopUpdate, WEEDER_FAILED, WEEDER_REFUSED,
  weederWorkflowId, windowQuery, type StopAnswer,
} from '../weeder/messages.ts';
import {
  ARM_LIMIT_MS, carriedWindow, checkArmedWeeding, heartbeatTimeoutMs, lanesWanted, windowOpen, WindowState, type Candidate, type Lane, type WatchOutput,
  type WeedOutcome, type WeederInput, type WeederResult,
} from '../weeder/window.ts';
import { failureMessage, refusalOf } from './failures.ts';

// The Service must be one the worker is configured for: asked once per run,
// before anything else (a refusal fails the workflow, non-retryably).
const { weederSettings } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 5 },
});

// Deleting: one API read and one delete per pod. Retried a few times (a retry
// counts a pod found gone as the earlier attempt's deletion); a stop cancels it
// only before it has started. Waited for, always.
const { weedPods } = proxyActivities<Activities>({
  // Short, so that an attempt lost with its worker is retried soon.
  startToCloseTimeout: '15s',
  retry: { initialInterval: '1s', maximumInterval: '5s', maximumAttempts: 5, nonRetryableErrorTypes: [WEEDER_REFUSED] },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});
/**
 * A deletion observe mode recorded or the pause held is asked again with a
 * hold of at most this long (and no longer than the window): the activity
 * waits in place for the weeder to be let act, heartbeating.
 */
export const WEED_HOLD_MS = 10 * 60_000;
/** How soon a dead worker (or a stop) reaches a waiting deleting activity: it heartbeats; the SDK sends one per 0.8 x this. */
const WEED_HOLD_HEARTBEAT_MS = 10_000;
/** Marks histories whose deleting activities may be asked again with a hold (observe mode, the pause). */
export const WEEDER_SAFETY_HOLD_PATCH = 'weeder-safety-hold';
/** A pod the deleting activity skipped restarts the window's watch, which proposes it again if it crash-loops again. */
export const WEEDER_REPROPOSE_SKIPPED_PATCH = 'weeder-repropose-skipped';
/**
 * The armed watch deletes the moment the Service is ready, after announcing the
 * pods to the workflow (armedWeeding), instead of handing them to a deleting
 * activity a workflow task later. Its lane is then waited for when cancelled.
 */
export const WEEDER_ARMED_DELETES_PATCH = 'weeder-armed-deletes';
/**
 * The armed watch's heartbeat timeout when it deletes: a stop, a cancellation
 * or a continue-as-new waits for it, and reaches it with a heartbeat (the SDK
 * sends one per 0.8 x this).
 */
export const ARMED_DELETES_HEARTBEAT_MS = 10_000;
// Asked again with a hold: waits in place up to holdMs, heartbeating.
const weedPodsHeld = (holdMs: number) => proxyActivities<Activities>({
  startToCloseTimeout: holdMs + 30_000,
  heartbeatTimeout: WEED_HOLD_HEARTBEAT_MS,
  retry: { initialInterval: '1s', maximumInterval: '5s', maximumAttempts: 5, nonRetryableErrorTypes: [WEEDER_REFUSED] },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
}).weedPods;
// Reads only: what became of pods whose deletion's answer was lost.
const { checkPods } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '5s', maximumAttempts: 5, nonRetryableErrorTypes: [WEEDER_REFUSED] },
});

/** How many attempts a watching activity gets (lost workers, timeouts) before the window gives up, with the reason. */
export const WATCH_ATTEMPTS = 10;

/**
 * A workflow started under an id that is not its Service's (by hand, or an
 * impostor) is refused before it reads anything, instead of watching a
 * Service whose signals go to another id. Histories from before replay as
 * they ran.
 */
export const WEEDER_OWN_ID_PATCH = 'weeder-own-id';

export async function weederWorkflow(input: WeederInput): Promise<WeederResult> {
  // Everything in the input arrived through Temporal: the workflow's own id
  // must be its Service's, the Service is checked against the worker's
  // configuration (a refusal fails the workflow, non-retryably, before
  // anything is done) and a carried window must be one.
  const named: Record<string, unknown> = isRecord(input) ? input as unknown as Record<string, unknown> : {};
  const carried = carriedWindow(named.carried, Date.now());
  const state = new WindowState('window' in carried ? carried.window : undefined);
  // Answered from the first activation on: a query that reaches a new run
  // (after continue-as-new) before its settings are read sees the carried window.
  setHandler(windowQuery, () => state.snapshot());
  const idProblem = ownIdProblem(named, workflowInfo().workflowId);
  if (idProblem && patched(WEEDER_OWN_ID_PATCH)) throw ApplicationFailure.nonRetryable(`refused: ${idProblem}; nothing was watched or deleted`, WEEDER_REFUSED);
  const target = { namespace: named.namespace as string, service: named.service as string };
  const watchMs = (await weederSettings(target)).watchDuration.ms;
  if ('refused' in carried) throw ApplicationFailure.nonRetryable(`refused: ${carried.refused}`, WEEDER_REFUSED);

  // Signals delivered with the start (the watcher's signal-with-start: extend,
  // or arm) wait for their handlers, set here, and set what this run does first.
  // Signals cannot be refused: a payload that is not what the signal takes is
  // ignored (and logged, its reason bounded), and nothing follows from it.
  const run = new WindowRun(target, state, watchMs);
  setHandler(extendSignal, (args) => run.extend(args));
  setHandler(armSignal, (args) => run.arm(args));
  setHandler(stopSignal, (args) => run.stop(args, 'stop signal'));
  setHandler(stopUpdate, (args) => run.stopAndAnswer(args), { validator: (args) => run.checkStop(args) });
  setHandler(armedWeedingSignal, (args) => run.armedWeeding(args));
  run.show();
  return run.run();
}

/** Why this workflow's id is not its Service's (`weeder/<namespace>/<service>`), or undefined when it is. */
function ownIdProblem(named: Record<string, unknown>, workflowId: string): string | undefined {
  const { namespace, service } = named;
  if (typeof namespace !== 'string' || typeof service !== 'string') {
    return `a weeder workflow names its Service by namespace and service (strings); got ${preview(namespace, 60)}/${preview(service, 60)}`;
  }
  const own = weederWorkflowId(namespace, service);
  return workflowId === own ? undefined : `this workflow's id ${preview(workflowId, 120)} is not its Service's (${preview(own, 120)})`;
}

/** One run of a window: its lanes, its deletions under way, and what the handlers and the loop do with them. */
class WindowRun {
  private readonly lanes = new Map<Lane, CancellationScope>();
  private readonly deleting = new Map<Promise<void>, CancellationScope>();
  // The armed watch that deletes at once: its token (one per run), the pods it
  // announced and has not answered for yet, and whether a lane of it runs (it
  // is waited for when cancelled: it may be deleting).
  private weedToken: string | undefined;
  private readonly announced = new Map<string, Candidate>();
  private armedDeleting = false;
  private refused: { err: unknown } | undefined;
  private readonly target: { namespace: string; service: string };
  private readonly state: WindowState;
  private readonly watchMs: number;

  constructor(target: { namespace: string; service: string }, state: WindowState, watchMs: number) {
    this.target = target;
    this.state = state;
    this.watchMs = watchMs;
  }

  show(): void {
    setCurrentDetails(details(this.state, this.target.namespace, this.announced));
  }

  private armedSettled(): boolean {
    return !(this.armedDeleting && this.lanes.has('armed'));
  }

  // ---------------------------------------------------------------- handlers

  extend(args: unknown): void {
    const check = checkExtendArgs(args, 'extend signal ignored');
    if (!check.ok) {
      log.warn(check.reason);
      return;
    }
    this.state.extend(Date.now(), check.value.seconds === undefined ? this.watchMs : check.value.seconds * 1000);
    this.show();
  }

  arm(args: unknown): void {
    const check = checkReasonArgs(args, 'arm signal ignored');
    if (!check.ok) {
      log.warn(check.reason);
      return;
    }
    this.state.arm(Date.now(), ARM_LIMIT_MS);
    this.show();
  }

  stop(args: unknown, by: string): void {
    const check = checkReasonArgs(args, 'stop signal ignored');
    if (!check.ok) {
      log.warn(check.reason);
      return;
    }
    this.state.stop(Date.now(), check.value.reason || by);
    this.halt();
    this.show();
  }

  /** The stop update's validator: a payload that is not `{ reason? }` is refused, with why. */
  checkStop(args: unknown): void {
    const check = checkReasonArgs(args, 'stop refused');
    if (!check.ok) throw new Error(check.reason);
  }

  /**
   * The same as the stop signal: it answers once every deletion under way has
   * its outcome, so nothing is deleted after the answer, and the answer lists all.
   */
  async stopAndAnswer(args: unknown): Promise<StopAnswer> {
    this.stop(args, 'stop update');
    await condition(() => this.deleting.size === 0 && this.armedSettled());
    const s = this.state;
    return { stopped: s.stopped!.reason, weeded: s.weeded, reported: s.reported, failed: s.failed };
  }

  /**
   * Sent by this run's own armed watch right before it deletes (with the
   * token it was given): the pods are pending from here on, in the history
   * before any of them is deleted; the watch's answer settles them.
   */
  armedWeeding(args: unknown): void {
    const check = checkArmedWeeding(args, this.weedToken);
    if ('ignored' in check) {
      log.warn(`armedWeeding signal ignored: ${check.ignored}`);
      return;
    }
    for (const c of this.state.announce(check.pods)) this.announced.set(c.uid, c);
    this.apply(announcementOps(this.lanes.has('armed')), undefined);
    this.show();
  }

  // ---------------------------------------------------------------- deleting

  /** Ends the window now: no watching, no deletion started from here on; deletions under way are waited for. */
  private halt(): void {
    for (const scope of this.lanes.values()) scope.cancel();
    // Not started yet: cancelled, never run. Started: its one delete is issued already; its answer is waited for.
    for (const scope of this.deleting.values()) scope.cancel();
  }

  /**
   * Hands candidates to a deleting activity; what observe mode recorded or the
   * pause held is asked again, with a hold, while the window is open.
   */
  private async weedAndAskAgain(asking: { pods: Candidate[] }): Promise<void> {
    const state = this.state;
    for (let holdMs = 0; ;) {
      const observed = state.observedOf(asking.pods.map((p) => p.uid));
      const ask = { ...this.target, pods: asking.pods, ...(observed.length > 0 ? { observed } : {}) };
      const outcomes: WeedOutcome[] = holdMs > 0 ? await weedPodsHeld(holdMs)({ ...ask, holdMs }) : await weedPods(ask);
      state.settle(outcomes, Date.now());
      // Found not deletable now (a crash-looping pod between two crashes, say): it may be proposed
      // again, but the window's watch under way was told it is handled (it was pending when that
      // watch started). That watch starts again, knowing, and proposes it if it crash-loops again.
      // Before the patch only a pod asked again after a hold was, and a pod skipped at its first ask
      // was never proposed again in that window.
      if (outcomes.some((o) => o.outcome === 'skipped') && (holdMs > 0 || patched(WEEDER_REPROPOSE_SKIPPED_PATCH))) this.lanes.get('window')?.cancel();
      const gated = new Set(outcomes.filter((o) => o.outcome === 'observed' || o.outcome === 'held').map((o) => o.uid));
      if (gated.size === 0) return;
      const again = asking.pods.filter((p) => gated.has(p.uid));
      // The window closed or stopped (or a new run takes over): not asked again; held ones stay held, not deleted.
      const now = Date.now();
      if (!state.acting || !windowOpen(state, now) || workflowInfo().continueAsNewSuggested || !patched(WEEDER_SAFETY_HOLD_PATCH)) {
        state.release(again.map((p) => p.uid));
        return;
      }
      this.show();
      asking.pods = again;
      holdMs = Math.min(WEED_HOLD_MS, state.deadline - now);
    }
  }

  /** An attempt may have deleted these pods, and its answer is lost (`reason`; absent: cancelled): look at them, record what became of them. */
  private async lookAt(pods: Candidate[], reason: string | undefined): Promise<void> {
    try {
      const seen = await CancellationScope.nonCancellable(() => checkPods({ ...this.target, pods }));
      this.state.settleLost(pods, seen, reason, Date.now());
    } catch (lookErr) {
      log.warn(`could not look at pods whose deletion's answer was lost: ${failureMessage(lookErr)}`);
      this.state.settleLost(pods, [], reason, Date.now());
    }
  }

  /** Runs `work` as a deletion under way: waited for by the stop, the end, continue-as-new. */
  private underWay(scope: CancellationScope, work: Promise<void>): void {
    const done: Promise<void> = work.finally(() => {
      this.deleting.delete(done);
      this.show();
    });
    this.deleting.set(done, scope);
  }

  private weed(pods: Candidate[]): void {
    const scope = new CancellationScope();
    // The pods of the latest ask: those a lost answer leaves in doubt.
    const asking = { pods };
    // No answer: cancelled (a stop) or given up. An attempt may have deleted: look.
    this.underWay(scope, scope.run(() => this.weedAndAskAgain(asking)).then(
      () => undefined,
      (err: unknown) => this.lookAt(asking.pods, isCancellation(err) ? undefined : `deleting failed: ${failureMessage(err)}`),
    ));
  }

  /** Pods the armed watch announced that its answer did not account for (it was lost, or never came): looked at. */
  private lookAtAnnounced(reason: string | undefined): void {
    const lost = [...this.announced.values()].filter((c) => this.state.isPending(c.uid));
    this.announced.clear();
    if (lost.length > 0) this.underWay(new CancellationScope(), this.lookAt(lost, reason));
  }

  /** Runs the operations the arming rules (src/weeder/armed.ts) returned, in order. */
  private apply(ops: readonly LaneOp[], err: unknown): void {
    for (const o of ops) {
      if (o.op === 'readySeen') this.state.readySeen(o.readyAt, o.armedSince, this.watchMs);
      else if (o.op === 'settle') this.state.settle(o.outcomes, Date.now());
      else if (o.op === 'weed') {
        const fresh = this.state.propose(o.candidates);
        // Announced, then not deleted by the watch (a failure it could not judge): the deleting activity tries, afresh.
        const again = o.retryAnnounced ? o.candidates.filter((c) => this.announced.has(c.uid) && this.state.isPending(c.uid)) : [];
        for (const c of again) this.announced.delete(c.uid);
        if (fresh.length + again.length > 0) this.weed([...fresh, ...again]);
      } else if (o.op === 'lookAtAnnounced') this.lookAtAnnounced(o.reason);
      else if (o.op === 'refused') this.refused ??= { err };
      else {
        this.state.fail(Date.now(), o.reason);
        this.halt();
      }
    }
  }

  // ---------------------------------------------------------------- watching

  private startLane(lane: Lane, until: number): void {
    const scope = new CancellationScope();
    const deletesAtOnce = lane === 'armed' && patched(WEEDER_ARMED_DELETES_PATCH);
    const laneRun: LaneRun = { lane, deletesAtOnce, armedSince: lane === 'armed' ? this.state.armed?.since : undefined };
    if (deletesAtOnce) {
      this.weedToken ??= uuid4();
      this.armedDeleting = true;
    }
    this.lanes.set(lane, scope);
    void scope.run(() => watchDependants(this.target, this.state, until, lane === 'armed', deletesAtOnce ? this.weedToken : undefined)).then(
      (found) => this.apply(laneAnswered(laneRun, found, this.state.acting), undefined),
      (err: unknown) => this.apply(laneFailed(laneRun, {
        cancelled: isCancellation(err), refusal: refusalOf(err, [WEEDER_REFUSED]) !== undefined, message: failureMessage(err),
      }, `${this.target.namespace}/${this.target.service}`), err),
    ).finally(() => {
      if (this.lanes.get(lane) === scope) this.lanes.delete(lane);
      this.show();
    });
  }

  /** The run loop: lanes as the window wants them, continue-as-new when the history grows large, then the result. */
  async run(): Promise<WeederResult> {
    const { lanes, deleting, state } = this;
    try {
      for (;;) {
        if (this.refused) {
          this.halt();
          await condition(() => deleting.size === 0);
          throw this.refused.err;
        }
        // A large history: watch no more, let deletions under way answer, and go on in a new run.
        if (workflowInfo().continueAsNewSuggested) {
          for (const scope of lanes.values()) scope.cancel();
          await condition(() => lanes.size === 0 && deleting.size === 0);
          await condition(allHandlersFinished);
          return continueAsNew<typeof weederWorkflow>({ ...this.target, carried: state.snapshot() });
        }
        const wanted = lanesWanted(state.snapshot(), Date.now());
        for (const [lane, until] of wanted) if (!lanes.has(lane)) this.startLane(lane, until);
        if (lanes.size === 0 && deleting.size === 0) {
          if (wanted.size === 0) break;
          continue;
        }
        // Wake when a lane or a deletion ends, a lane is wanted that is not running, or the history grows large.
        const running = [...lanes.keys()].join();
        const inFlight = deleting.size;
        await condition(() => this.refused !== undefined || workflowInfo().continueAsNewSuggested ||
          [...lanes.keys()].join() !== running || deleting.size !== inFlight ||
          [...lanesWanted(state.snapshot(), Date.now()).keys()].some((l) => !lanes.has(l)));
      }
    } catch (err) {
      // The workflow itself cancelled (the Web UI): watch no more, and let the
      // deletions under way answer before it ends, so that they are in its history.
      if (isCancellation(err)) {
        state.stop(Date.now(), 'workflow cancelled');
        this.halt();
        await CancellationScope.nonCancellable(() => condition(() => deleting.size === 0 && this.armedSettled()));
      }
      throw err;
    }
    await condition(allHandlersFinished);
    if (state.held.length > 0) {
      log.warn(`window closed while the weeder was paused: ${state.held.length} deletion(s) held were not made`, { held: state.held.slice(0, NAMES_SHOWN).map((p) => p.name) });
    }
    const result = state.result(this.target, Date.now());
    if (state.failure) throw ApplicationFailure.nonRetryable(`weeder window failed: ${state.failure.reason}`, WEEDER_FAILED, result);
    return result;
  }
}

/** How many pod names a line of the details (or a log line) lists: the rest are counted. */
const NAMES_SHOWN = 20;

/** Pod names for the details: at most NAMES_SHOWN, then how many more. */
function names(pods: readonly { name: string }[], namespace?: string): string {
  const shown = pods.slice(0, NAMES_SHOWN).map((p) => (namespace === undefined ? p.name : `${namespace}/${p.name}`)).join(', ');
  return pods.length > NAMES_SHOWN ? `${shown} and ${pods.length - NAMES_SHOWN} more` : shown;
}

/** What the Web UI shows as the workflow's current details: bounded, whatever the window holds. */
function details(state: WindowState, namespace: string, announced: ReadonlyMap<string, Candidate>): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  const lines = [];
  const weeded = new Set(state.weeded.map((p) => p.uid));
  const wouldHave = state.observed.filter((p) => !weeded.has(p.uid));
  const held = state.held;
  const gated = new Set([...wouldHave, ...held].map((p) => p.uid));
  if (state.deadline > Date.now()) lines.push(`Window open until ${iso(state.deadline)}.`);
  if (state.armed) lines.push(`Service not ready since ${iso(state.armed.since)}: weeds the moment it is ready (armed until ${iso(state.armed.until)}).`);
  if (state.stopped) lines.push(`Stopped: ${preview(state.stopped.reason, 200)}.`);
  if (state.failure) lines.push(`Failed: ${state.failure.reason}.`);
  // Announced by the armed watch while the Service is down: deleted the moment it is ready.
  const pending = state.pending;
  const waiting = state.armed ? pending.filter((p) => announced.has(p.uid) && !gated.has(p.uid)) : [];
  if (waiting.length) lines.push(`Crash-looping, deleted the moment the Service is ready: ${names(waiting, namespace)}.`);
  const waitingUids = new Set(waiting.map((p) => p.uid));
  const deleting = pending.filter((p) => !gated.has(p.uid) && !waitingUids.has(p.uid));
  if (deleting.length) lines.push(`Deleting: ${names(deleting)}.`);
  if (wouldHave.length) lines.push(`Observe mode, nothing deleted; would have deleted: ${names(wouldHave, namespace)}.`);
  if (held.length && state.acting && windowOpen(state, Date.now())) {
    lines.push(`Paused: ${held.length} deletion(s) held (${held[0]!.reason}); they go out within a second of tend resume weeder: ${names(held, namespace)}.`);
  } else if (held.length) {
    lines.push(`Closed while paused: ${held.length} deletion(s) held were not made: ${names(held, namespace)}.`);
  }
  if (state.failed.length) {
    const failed = state.failed.slice(0, NAMES_SHOWN).map((p) => `${p.name} (${p.reason})`).join('; ');
    lines.push(`Not deleted: ${failed}${state.failed.length > NAMES_SHOWN ? ` and ${state.failed.length - NAMES_SHOWN} more` : ''}.`);
  }
  lines.push(`Weeded: ${names(state.weeded) || 'none'}. Reported (no controller): ${names(state.reported) || 'none'}.`);
  return lines.join('\n\n');
}

function watchDependants(input: { namespace: string; service: string }, state: WindowState, until: number, openOnReady: boolean, weedToken?: string): Promise<WatchOutput> {
  const stretch = Math.max(0, until - Date.now());
  const { watchDependants } = proxyActivities<Activities>({
    startToCloseTimeout: stretch + 60_000,
    heartbeatTimeout: weedToken === undefined ? heartbeatTimeoutMs(stretch) : ARMED_DELETES_HEARTBEAT_MS,
    retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: WATCH_ATTEMPTS, nonRetryableErrorTypes: [WEEDER_REFUSED] },
    // A watch that deletes nothing is not waited for when cancelled; the armed
    // one that deletes at once is: it may be deleting, and its answer says what.
    cancellationType: weedToken === undefined ? ActivityCancellationType.TRY_CANCEL : ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
  return watchDependants({
    namespace: input.namespace,
    service: input.service,
    until,
    openOnReady,
    handled: state.handledUids(),
    ...(weedToken === undefined ? {} : { weedToken }),
  });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
