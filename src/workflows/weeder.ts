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
// window's state is src/weeder/window.ts; a run's lanes and deletions are
// src/weeder/window-run.ts; the messages and their checks are
// src/weeder/messages.ts. This file hands them Temporal's calls.
import {
  allHandlersFinished, ActivityCancellationType, ApplicationFailure, CancellationScope, condition, continueAsNew, isCancellation, log,
  patched, proxyActivities, proxyLocalActivities, setCurrentDetails, setHandler, uuid4, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { preview } from '../checks/preview.ts';
import {
  armedWeedingSignal, armSignal, extendSignal, serviceOfWeederId, stopSignal, stopUpdate, WEEDER_FAILED, WEEDER_REFUSED, weederWorkflowId, windowQuery,
} from '../weeder/messages.ts';
import { WEEDER_ARMED_DELETES_PATCH, WEEDER_ARMED_TAKEOVER_PATCH, WindowRun, type WeederTarget, type WindowPorts } from '../weeder/window-run.ts';
import { checkSummary, settingsSummary, watchSummary, weedSummary } from '../weeder/summaries.ts';
import { carriedWindow, heartbeatTimeoutMs, WindowState, type WeederInput, type WeederResult } from '../weeder/window.ts';
import { failureMessage, refusalOf } from './failures.ts';
import { patchesBeforeLocalActivity } from './patches.ts';
import { said } from './summary.ts';

export { WEED_HOLD_MS, WEEDER_ARMED_DELETES_PATCH, WEEDER_ARMED_RECORD_PATCH, WEEDER_ARMED_TAKEOVER_PATCH, WEEDER_REPROPOSE_SKIPPED_PATCH, WEEDER_SAFETY_HOLD_PATCH } from '../weeder/window-run.ts';

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
/** How soon a dead worker (or a stop) reaches a waiting deleting activity: it heartbeats; the SDK sends one per 0.8 x this. */
const WEED_HOLD_HEARTBEAT_MS = 10_000;
/**
 * The armed watch's heartbeat timeout when it deletes: a stop, a cancellation
 * or a continue-as-new waits for it, and reaches it with a heartbeat (the SDK
 * sends one per 0.8 x this).
 */
export const ARMED_DELETES_HEARTBEAT_MS = 10_000;
/**
 * The same, under the weeder-armed-takeover patch: how soon Temporal notices the armed watch's
 * worker is gone and retries it on another worker, whose attempt deletes at once (src/weeder/armed.ts
 * deletingToken). Shorter costs heartbeats (the worker sends at most one per 2 s); longer, the
 * Service's first seconds back without its dependants weeded (docs/weeder.md, "Armed").
 */
export const ARMED_TAKEOVER_HEARTBEAT_MS = 3_000;
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

/**
 * A workflow started under a Service's weeder id with an input that does not name that Service
 * (a hand start with junk) serves the Service its id names, the input ignored: the watcher's
 * signal-with-start that reaches it is served, instead of being lost with a run that refuses.
 * Before, it was refused (weeder-own-id). docs/contributing/patch-history.md.
 */
export const WEEDER_ID_NAMES_SERVICE_PATCH = 'weeder-id-names-service';

export async function weederWorkflow(input: WeederInput): Promise<WeederResult> {
  // Everything in the input arrived through Temporal: the workflow's own id
  // must be its Service's, the Service is checked against the worker's
  // configuration (a refusal fails the workflow, non-retryably, before
  // anything is done) and a carried window must be one.
  let named: Record<string, unknown> = isRecord(input) ? input as unknown as Record<string, unknown> : {};
  const idProblem = ownIdProblem(named, workflowInfo().workflowId);
  const own = idProblem ? serviceOfWeederId(workflowInfo().workflowId) : undefined;
  if (own && patched(WEEDER_ID_NAMES_SERVICE_PATCH)) {
    log.warn(`the start input is ignored (${idProblem}): this run serves ${own.namespace}/${own.service}, the Service its id names`);
    named = { ...own };
  } else if (idProblem && patched(WEEDER_OWN_ID_PATCH)) {
    throw ApplicationFailure.nonRetryable(`refused: ${idProblem}; nothing was watched or deleted`, WEEDER_REFUSED);
  }
  const carried = carriedWindow(named.carried, Date.now());
  const state = new WindowState('window' in carried ? carried.window : undefined);
  // Answered from the first activation on: a query that reaches a new run
  // (after continue-as-new) before its settings are read sees the carried window.
  setHandler(windowQuery, () => state.snapshot());
  const target = { namespace: named.namespace as string, service: named.service as string };
  // The armed lane, started right after the settings' answer, asks for this one (src/workflows/patches.ts).
  patchesBeforeLocalActivity([WEEDER_ARMED_DELETES_PATCH, WEEDER_ARMED_TAKEOVER_PATCH]);
  const watchMs = (await weederSettings.executeWithOptions(said(settingsSummary(target)), [target])).watchDuration.ms;
  if ('refused' in carried) throw ApplicationFailure.nonRetryable(`refused: ${carried.refused}`, WEEDER_REFUSED);

  // Signals delivered with the start (the watcher's signal-with-start: extend,
  // or arm) wait for their handlers, set here, and set what this run does first.
  // Signals cannot be refused: a payload that is not what the signal takes is
  // ignored (and logged, its reason bounded), and nothing follows from it.
  const run = new WindowRun(target, state, watchMs, ports(target));
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

/** Temporal's calls, for the window's run (src/weeder/window-run.ts). */
function ports(target: WeederTarget): WindowPorts {
  return {
    now: () => Date.now(),
    scope: () => new CancellationScope(),
    nonCancellable: (fn) => CancellationScope.nonCancellable(fn),
    condition: (fn) => condition(fn),
    allHandlersFinished,
    continueAsNewSuggested: () => workflowInfo().continueAsNewSuggested,
    continueAsNew: (next) => continueAsNew<typeof weederWorkflow>(next),
    patched,
    uuid: uuid4,
    warn: (message, attrs) => log.warn(message, attrs),
    details: setCurrentDetails,
    isCancellation,
    isRefusal: (err) => refusalOf(err, [WEEDER_REFUSED]) !== undefined,
    failureMessage,
    failed: (message, result) => ApplicationFailure.nonRetryable(message, WEEDER_FAILED, result),
    weedPods: (ask, holdMs) => (holdMs > 0 ? weedPodsHeld(holdMs) : weedPods).executeWithOptions(said(weedSummary(target, ask.pods, holdMs > 0)),
      [holdMs > 0 ? { ...ask, holdMs } : ask]),
    checkPods: (ask) => checkPods.executeWithOptions(said(checkSummary(target, ask.pods)), [ask]),
    watchDependants: (until, openOnReady, handled, weedToken) => watchDependants(target, until, openOnReady, handled, weedToken),
  };
}

function watchDependants(input: WeederTarget, until: number, openOnReady: boolean, handled: string[], weedToken?: string) {
  const stretch = Math.max(0, until - Date.now());
  // The armed watch lost with its worker is retried at once, elsewhere (two more attempts keep the time it may take to give up).
  const takeover = weedToken !== undefined && patched(WEEDER_ARMED_TAKEOVER_PATCH);
  const { watchDependants } = proxyActivities<Activities>({
    startToCloseTimeout: stretch + 60_000,
    heartbeatTimeout: weedToken === undefined ? heartbeatTimeoutMs(stretch) : takeover ? ARMED_TAKEOVER_HEARTBEAT_MS : ARMED_DELETES_HEARTBEAT_MS,
    retry: {
      initialInterval: takeover ? '200ms' : '1s', maximumInterval: '10s', maximumAttempts: WATCH_ATTEMPTS + (takeover ? 2 : 0), nonRetryableErrorTypes: [WEEDER_REFUSED],
    },
    // A watch that deletes nothing is not waited for when cancelled; the armed
    // one that deletes at once is: it may be deleting, and its answer says what.
    cancellationType: weedToken === undefined ? ActivityCancellationType.TRY_CANCEL : ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    ...said(watchSummary(input, openOnReady, weedToken !== undefined)),
  });
  return watchDependants({
    namespace: input.namespace,
    service: input.service,
    until,
    openOnReady,
    handled,
    ...(weedToken === undefined ? {} : { weedToken }),
  });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
