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
import {
  allHandlersFinished, ActivityCancellationType, ApplicationFailure, CancellationScope, condition, continueAsNew, isCancellation, log,
  patched, proxyActivities, proxyLocalActivities, setCurrentDetails, setHandler, uuid4, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { armedWeedingSignal, armSignal, extendSignal, stopSignal, stopUpdate, windowQuery, type StopAnswer } from '../weeder/messages.ts';
import {
  ARM_LIMIT_MS, carriedWindow, checkArmedWeeding, heartbeatTimeoutMs, lanesWanted, windowOpen, WindowState, type Candidate, type Lane, type WeedOutcome, type WeederInput,
  type WeederResult,
} from '../weeder/window.ts';

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
  retry: { initialInterval: '1s', maximumInterval: '5s', maximumAttempts: 5, nonRetryableErrorTypes: ['WeederRefused'] },
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
  retry: { initialInterval: '1s', maximumInterval: '5s', maximumAttempts: 5, nonRetryableErrorTypes: ['WeederRefused'] },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
}).weedPods;
// Reads only: what became of pods whose deletion's answer was lost.
const { checkPods } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '5s', maximumAttempts: 5, nonRetryableErrorTypes: ['WeederRefused'] },
});

/** How many attempts a watching activity gets (lost workers, timeouts) before the window gives up, with the reason. */
export const WATCH_ATTEMPTS = 10;

export async function weederWorkflow(input: WeederInput): Promise<WeederResult> {
  // Everything in the input arrived through Temporal: the Service's name is
  // checked against the worker's configuration (a refusal fails the workflow,
  // non-retryably, before anything is done) and a carried window must be one.
  const named: Record<string, unknown> = isRecord(input) ? input as unknown as Record<string, unknown> : {};
  const carried = carriedWindow(named.carried, Date.now());
  const state = new WindowState('window' in carried ? carried.window : undefined);
  // Answered from the first activation on: a query that reaches a new run
  // (after continue-as-new) before its settings are read sees the carried window.
  setHandler(windowQuery, () => state.snapshot());
  const watchMs = (await weederSettings({ namespace: named.namespace as string, service: named.service as string })).watchDuration.ms;
  if ('refused' in carried) throw ApplicationFailure.nonRetryable(`refused: ${carried.refused}`, 'WeederRefused');
  const target = { namespace: named.namespace as string, service: named.service as string };

  // Signals delivered with the start (the watcher's signal-with-start: extend,
  // or arm) wait for their handlers, set here, and set what this run does first.
  const lanes = new Map<Lane, CancellationScope>();
  const deleting = new Map<Promise<void>, CancellationScope>();
  // The armed watch that deletes at once: its token (one per run), the pods it
  // announced and has not answered for yet, and whether a lane of it runs (it
  // is waited for when cancelled: it may be deleting).
  let weedToken: string | undefined;
  const announced = new Map<string, Candidate>();
  let armedDeleting = false;
  const armedSettled = () => !(armedDeleting && lanes.has('armed'));
  let refused: { err: unknown } | undefined;
  const show = () => setCurrentDetails(details(state, target.namespace, announced));

  /** Ends the window now: no watching, no deletion started from here on; deletions under way are waited for. */
  const halt = () => {
    for (const scope of lanes.values()) scope.cancel();
    // Not started yet: cancelled, never run. Started: its one delete is issued already; its answer is waited for.
    for (const scope of deleting.values()) scope.cancel();
  };

  // Signals cannot be refused: a payload that is not what the signal takes is
  // ignored (and logged), and nothing follows from it.
  setHandler(extendSignal, (args) => {
    const check = checkExtend(args);
    if ('ignored' in check) {
      log.warn(`extend signal ignored: ${check.ignored}`);
      return;
    }
    state.extend(Date.now(), check.ms ?? watchMs);
    show();
  });
  setHandler(armSignal, (args) => {
    const problem = reasonProblem(args);
    if (problem) {
      log.warn(`arm signal ignored: ${problem}`);
      return;
    }
    state.arm(Date.now(), ARM_LIMIT_MS);
    show();
  });
  setHandler(stopSignal, (args) => {
    const problem = reasonProblem(args);
    if (problem) {
      log.warn(`stop signal ignored: ${problem}`);
      return;
    }
    state.stop(Date.now(), args?.reason || 'stop signal');
    halt();
    show();
  });
  // The same as an update: it answers once every deletion under way has its
  // outcome, so nothing is deleted after the answer, and the answer lists all.
  setHandler(stopUpdate, async (args) => {
    state.stop(Date.now(), args?.reason || 'stop update');
    halt();
    show();
    await condition(() => deleting.size === 0 && armedSettled());
    return { stopped: state.stopped!.reason, weeded: state.weeded, reported: state.reported, failed: state.failed } satisfies StopAnswer;
  }, { validator: (args) => {
    const problem = reasonProblem(args);
    if (problem) throw new Error(`stop refused: ${problem}`);
  } });
  show();

  /**
   * Hands candidates to a deleting activity; what observe mode recorded or the
   * pause held is asked again, with a hold, while the window is open.
   */
  const weedAndAskAgain = async (asking: { pods: Candidate[] }) => {
    for (let holdMs = 0; ;) {
      const observed = state.observedOf(asking.pods.map((p) => p.uid));
      const ask = { ...target, pods: asking.pods, ...(observed.length > 0 ? { observed } : {}) };
      const outcomes: WeedOutcome[] = holdMs > 0 ? await weedPodsHeld(holdMs)({ ...ask, holdMs }) : await weedPods(ask);
      state.settle(outcomes, Date.now());
      // Found not deletable now (a crash-looping pod between two crashes, say): it may be proposed
      // again, but the window's watch under way was told it is handled (it was pending when that
      // watch started). That watch starts again, knowing, and proposes it if it crash-loops again.
      // Before the patch only a pod asked again after a hold was, and a pod skipped at its first ask
      // was never proposed again in that window.
      if (outcomes.some((o) => o.outcome === 'skipped') && (holdMs > 0 || patched(WEEDER_REPROPOSE_SKIPPED_PATCH))) lanes.get('window')?.cancel();
      const gated = new Set(outcomes.filter((o) => o.outcome === 'observed' || o.outcome === 'held').map((o) => o.uid));
      if (gated.size === 0) return;
      const again = asking.pods.filter((p) => gated.has(p.uid));
      // The window closed or stopped (or a new run takes over): not asked again; held ones stay held, not deleted.
      const now = Date.now();
      if (!state.acting || !windowOpen(state, now) || workflowInfo().continueAsNewSuggested || !patched(WEEDER_SAFETY_HOLD_PATCH)) {
        state.release(again.map((p) => p.uid));
        return;
      }
      show();
      asking.pods = again;
      holdMs = Math.min(WEED_HOLD_MS, state.deadline - now);
    }
  };

  /** An attempt may have deleted these pods, and its answer is lost (`reason`; absent: cancelled): look at them, record what became of them. */
  const lookAt = async (pods: Candidate[], reason: string | undefined) => {
    try {
      const seen = await CancellationScope.nonCancellable(() => checkPods({ ...target, pods }));
      state.settleLost(pods, seen, reason, Date.now());
    } catch (lookErr) {
      log.warn(`could not look at pods whose deletion's answer was lost: ${failureMessage(lookErr)}`);
      state.settleLost(pods, [], reason, Date.now());
    }
  };

  /** Runs `work` as a deletion under way: waited for by the stop, the end, continue-as-new. */
  const underWay = (scope: CancellationScope, work: Promise<void>) => {
    const done: Promise<void> = work.finally(() => {
      deleting.delete(done);
      show();
    });
    deleting.set(done, scope);
  };

  const weed = (pods: Candidate[]) => {
    const scope = new CancellationScope();
    // The pods of the latest ask: those a lost answer leaves in doubt.
    const asking = { pods };
    // No answer: cancelled (a stop) or given up. An attempt may have deleted: look.
    underWay(scope, scope.run(() => weedAndAskAgain(asking)).then(
      () => undefined,
      (err: unknown) => lookAt(asking.pods, isCancellation(err) ? undefined : `deleting failed: ${failureMessage(err)}`),
    ));
  };

  /** Pods the armed watch announced that its answer did not account for (it was lost, or never came): looked at. */
  const lookAtAnnounced = (reason: string | undefined) => {
    const lost = [...announced.values()].filter((c) => state.isPending(c.uid));
    announced.clear();
    if (lost.length > 0) underWay(new CancellationScope(), lookAt(lost, reason));
  };

  // Sent by this run's own armed watch right before it deletes (with the
  // token it was given): the pods are pending from here on, in the history
  // before any of them is deleted; the watch's answer settles them.
  setHandler(armedWeedingSignal, (args) => {
    const check = checkArmedWeeding(args, weedToken);
    if ('ignored' in check) {
      log.warn(`armedWeeding signal ignored: ${check.ignored}`);
      return;
    }
    for (const c of state.announce(check.pods)) announced.set(c.uid, c);
    // No armed watch runs to answer for them (an attempt that lost its lease, say): look at once.
    if (!lanes.has('armed')) lookAtAnnounced('announced by an armed watch that was no longer running');
    show();
  });

  const start = (lane: Lane, until: number) => {
    const scope = new CancellationScope();
    const armedSince = lane === 'armed' ? state.armed?.since : undefined;
    const direct = lane === 'armed' && patched(WEEDER_ARMED_DELETES_PATCH);
    if (direct) {
      weedToken ??= uuid4();
      armedDeleting = true;
    }
    lanes.set(lane, scope);
    void scope.run(() => watchDependants(target, state, until, lane === 'armed', direct ? weedToken : undefined)).then(
      (found) => {
        if (found.readyAt !== undefined) state.readySeen(found.readyAt, armedSince, watchMs);
        if (found.weeded?.length) state.settle(found.weeded, Date.now());
        const fresh = state.propose(found.candidates);
        // Announced, then not deleted by the watch (a failure it could not judge): the deleting activity tries, afresh.
        const again = direct && state.acting ? found.candidates.filter((c) => announced.has(c.uid) && state.isPending(c.uid)) : [];
        for (const c of again) announced.delete(c.uid);
        if (fresh.length + again.length > 0) weed([...fresh, ...again]);
        if (direct) lookAtAnnounced(found.weeded === undefined ? "the armed watch's answer did not include them" : undefined);
      },
      (err: unknown) => {
        // The watch may have deleted what it announced before it was lost: look.
        if (direct) lookAtAnnounced(isCancellation(err) ? undefined : `the armed watch failed: ${failureMessage(err)}`);
        // Cancelled by this workflow (stop, continue-as-new, the workflow's own cancellation): nothing to do.
        if (isCancellation(err)) return;
        if (isRefusal(err)) {
          refused ??= { err };
          return;
        }
        // Given up (its attempts spent): the window cannot go on. Why is in the result and the failure.
        state.fail(Date.now(), `the ${lane === 'armed' ? 'armed' : "window's"} watch of ${target.namespace}/${target.service} gave up: ${failureMessage(err)}`);
        halt();
      },
    ).finally(() => {
      if (lanes.get(lane) === scope) lanes.delete(lane);
      show();
    });
  };

  try {
    for (;;) {
      if (refused) {
        halt();
        await condition(() => deleting.size === 0);
        throw refused.err;
      }
      // A large history: watch no more, let deletions under way answer, and go on in a new run.
      if (workflowInfo().continueAsNewSuggested) {
        for (const scope of lanes.values()) scope.cancel();
        await condition(() => lanes.size === 0 && deleting.size === 0);
        await condition(allHandlersFinished);
        return continueAsNew<typeof weederWorkflow>({ ...target, carried: state.snapshot() });
      }
      const wanted = lanesWanted(state.snapshot(), Date.now());
      for (const [lane, until] of wanted) if (!lanes.has(lane)) start(lane, until);
      if (lanes.size === 0 && deleting.size === 0) {
        if (wanted.size === 0) break;
        continue;
      }
      // Wake when a lane or a deletion ends, a lane is wanted that is not running, or the history grows large.
      const running = [...lanes.keys()].join();
      const inFlight = deleting.size;
      await condition(() => refused !== undefined || workflowInfo().continueAsNewSuggested ||
        [...lanes.keys()].join() !== running || deleting.size !== inFlight ||
        [...lanesWanted(state.snapshot(), Date.now()).keys()].some((l) => !lanes.has(l)));
    }
  } catch (err) {
    // The workflow itself cancelled (the Web UI): watch no more, and let the
    // deletions under way answer before it ends, so that they are in its history.
    if (isCancellation(err)) {
      state.stop(Date.now(), 'workflow cancelled');
      halt();
      await CancellationScope.nonCancellable(() => condition(() => deleting.size === 0 && armedSettled()));
    }
    throw err;
  }
  await condition(allHandlersFinished);
  if (state.held.length > 0) {
    log.warn(`window closed while the weeder was paused: ${state.held.length} deletion(s) held were not made`, { held: state.held.map((p) => p.name) });
  }
  const result = state.result(target, Date.now());
  if (state.failure) {
    throw ApplicationFailure.nonRetryable(`weeder window failed: ${state.failure.reason}`, 'WeederFailed', result);
  }
  return result;
}

/** What the Web UI shows as the workflow's current details. */
function details(state: WindowState, namespace: string, announced: ReadonlyMap<string, Candidate>): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  const names = (pods: readonly { name: string }[]) => pods.map((p) => `${namespace}/${p.name}`).join(', ');
  const lines = [];
  const weeded = new Set(state.weeded.map((p) => p.uid));
  const wouldHave = state.observed.filter((p) => !weeded.has(p.uid));
  const gated = new Set([...wouldHave, ...state.held].map((p) => p.uid));
  if (state.deadline > Date.now()) lines.push(`Window open until ${iso(state.deadline)}.`);
  if (state.armed) lines.push(`Service not ready since ${iso(state.armed.since)}: weeds the moment it is ready (armed until ${iso(state.armed.until)}).`);
  if (state.stopped) lines.push(`Stopped: ${state.stopped.reason}.`);
  if (state.failure) lines.push(`Failed: ${state.failure.reason}.`);
  // Announced by the armed watch while the Service is down: deleted the moment it is ready.
  const waiting = state.armed ? state.pending.filter((p) => announced.has(p.uid) && !gated.has(p.uid)) : [];
  if (waiting.length) lines.push(`Crash-looping, deleted the moment the Service is ready: ${names(waiting)}.`);
  const deleting = state.pending.filter((p) => !gated.has(p.uid) && !waiting.includes(p));
  if (deleting.length) lines.push(`Deleting: ${deleting.map((p) => p.name).join(', ')}.`);
  if (wouldHave.length) lines.push(`Observe mode, nothing deleted; would have deleted: ${names(wouldHave)}.`);
  if (state.held.length && state.acting && windowOpen(state, Date.now())) {
    lines.push(`Paused: ${state.held.length} deletion(s) held (${state.held[0]!.reason}); they go out within a second of tend resume weeder: ${names(state.held)}.`);
  } else if (state.held.length) {
    lines.push(`Closed while paused: ${state.held.length} deletion(s) held were not made: ${names(state.held)}.`);
  }
  if (state.failed.length) lines.push(`Not deleted: ${state.failed.map((p) => `${p.name} (${p.reason})`).join('; ')}.`);
  lines.push(`Weeded: ${state.weeded.map((p) => p.name).join(', ') || 'none'}. Reported (no controller): ${state.reported.map((p) => p.name).join(', ') || 'none'}.`);
  return lines.join('\n\n');
}

function watchDependants(input: { namespace: string; service: string }, state: WindowState, until: number, openOnReady: boolean, weedToken?: string) {
  const stretch = Math.max(0, until - Date.now());
  const { watchDependants } = proxyActivities<Activities>({
    startToCloseTimeout: stretch + 60_000,
    heartbeatTimeout: weedToken === undefined ? heartbeatTimeoutMs(stretch) : ARMED_DELETES_HEARTBEAT_MS,
    retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: WATCH_ATTEMPTS, nonRetryableErrorTypes: ['WeederRefused'] },
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

/** A failure's own words, through the activity failure's cause. */
function failureMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  const words: string[] = [];
  while (e && words.length < 4) {
    if (e.message) words.push(e.message);
    e = e.cause as typeof e;
  }
  return words.join(': ') || String(err);
}

/** A non-retryable refusal of the Service (not configured), from an activity. */
function isRefusal(err: unknown): boolean {
  let e = err as { type?: string; cause?: unknown } | undefined;
  for (let i = 0; e && i < 4; i++, e = e.cause as typeof e) if (e.type === 'WeederRefused') return true;
  return false;
}

/** Longest extension an operator's signal may ask for: a day (a longer one is cut to a day). */
export const MAX_EXTEND_SECONDS = 24 * 3600;

const shown = (v: unknown) => String(JSON.stringify(v)).slice(0, 100);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why a signal's optional `{ reason }` payload is not one, or undefined when it is. */
function reasonProblem(args: unknown): string | undefined {
  if (args === undefined || args === null) return undefined;
  if (!isRecord(args)) return `its payload must be an object like {"reason":"..."} (got ${shown(args)})`;
  if (args.reason !== undefined && typeof args.reason !== 'string') return `reason must be a string (got ${shown(args.reason)})`;
  return undefined;
}

/** An extend signal's window length in ms (undefined: the configured one), or why it is ignored. */
function checkExtend(args: unknown): { ms?: number } | { ignored: string } {
  const problem = reasonProblem(args);
  if (problem) return { ignored: problem };
  const seconds = isRecord(args) ? args.seconds : undefined;
  if (seconds === undefined) return {};
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) {
    return { ignored: `seconds must be a number above 0 (got ${shown(seconds)})` };
  }
  return { ms: Math.min(seconds, MAX_EXTEND_SECONDS) * 1000 };
}
