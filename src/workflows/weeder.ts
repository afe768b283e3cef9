// One weeder window per Service (`weeder/<namespace>/<service>`): opened by
// the watcher on a not-ready -> ready transition, extended by the next ones,
// closed after watchDuration (or by the stop signal). The weeding runs in an
// activity that watches the dependants for the rest of the window; this
// workflow only keeps the deadline and the record of what was weeded.
//
// The watcher also arms the workflow when the Service goes not ready: an
// activity then watches the Service and its dependants through the outage and
// weeds the instant the Service is ready again, without waiting for a round
// trip through Temporal; the workflow learns of the opening from its result.
//
// So there are two lanes, each at most one activity at a time: the window's
// (while the window is open) and the armed one (while the Service is not
// ready). They run side by side when both are wanted; a lane held up by a lost
// activity (a worker that died: its heartbeat timeout is up to a minute) never
// holds up the other. Deleting twice is harmless (UID preconditions, and the
// record and Events are keyed by pod UID).
import {
  allHandlersFinished, CancellationScope, condition, continueAsNew, isCancellation, proxyActivities, setCurrentDetails,
  setHandler, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { armSignal, extendSignal, stopSignal, windowQuery } from '../weeder/messages.ts';
import {
  ARM_LIMIT_MS, heartbeatTimeoutMs, lanesWanted, WindowState, type Lane, type WeederInput, type WeederResult,
} from '../weeder/window.ts';

/** Longest extension an operator's signal may ask for: a day. */
const MAX_EXTEND_MS = 24 * 3600_000;

export async function weederWorkflow(input: WeederInput): Promise<WeederResult> {
  // The watcher's signal-with-start (extend, or arm) sets what this run does first.
  const state = new WindowState(input.carried);
  const running = new Map<Lane, CancellationScope>();
  let failure: { err: unknown } | undefined;
  const show = () => setCurrentDetails(details(state));

  setHandler(extendSignal, (args) => {
    const seconds = args?.seconds;
    const ms = typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0
      ? Math.min(seconds * 1000, MAX_EXTEND_MS)
      : input.watchDuration.ms;
    state.extend(Date.now(), ms);
    show();
  });
  setHandler(armSignal, () => {
    state.arm(Date.now(), ARM_LIMIT_MS);
    show();
  });
  setHandler(stopSignal, (args) => {
    state.stop(Date.now(), args?.reason || 'stop signal');
    // The cancellation reaches an activity with its next heartbeat; the window is closed now.
    for (const scope of running.values()) scope.cancel();
  });
  setHandler(windowQuery, () => state.snapshot());
  show();

  const start = (lane: Lane, until: number) => {
    const scope = new CancellationScope();
    const armedSince = lane === 'armed' ? state.armed?.since : undefined;
    running.set(lane, scope);
    void scope.run(() => weedDependants(input, state, until, lane === 'armed')).then(
      (found) => {
        state.record(found);
        if (found.readyAt !== undefined) state.readySeen(found.readyAt, armedSince, input.watchDuration.ms);
      },
      (err: unknown) => {
        // A stopped window cancelled its own activities; any other cancellation (the
        // Web UI's cancel) ends the workflow. Deletions already done need no undoing.
        if (!(isCancellation(err) && state.stopped)) failure ??= { err };
      },
    ).finally(() => {
      running.delete(lane);
      show();
    });
  };

  for (;;) {
    if (failure) throw failure.err;
    // A large history: start nothing more, and carry on in a new run once both lanes are idle.
    const large = workflowInfo().continueAsNewSuggested;
    const wanted = lanesWanted(state.snapshot(), Date.now());
    if (!large) {
      for (const [lane, until] of wanted) if (!running.has(lane)) start(lane, until);
    }
    if (running.size === 0) {
      if (wanted.size === 0) break;
      await condition(allHandlersFinished);
      return continueAsNew<typeof weederWorkflow>({ ...input, carried: state.snapshot() });
    }
    // Wake when a lane ends, or (a signal) one is wanted that is not running.
    const lanes = [...running.keys()].join();
    await condition(() => failure !== undefined || [...running.keys()].join() !== lanes ||
      (!large && [...lanesWanted(state.snapshot(), Date.now()).keys()].some((l) => !running.has(l))));
  }
  return state.result(input, Date.now());
}

/** What the Web UI shows as the workflow's current details. */
function details(state: WindowState): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  const lines = [];
  if (state.deadline > Date.now()) lines.push(`Window open until ${iso(state.deadline)}.`);
  if (state.armed) lines.push(`Service not ready since ${iso(state.armed.since)}: weeds the moment it is ready (armed until ${iso(state.armed.until)}).`);
  if (state.stopped) lines.push(`Stopped: ${state.stopped.reason}.`);
  lines.push(`Weeded: ${state.weeded.map((p) => p.name).join(', ') || 'none'}. Reported (no controller): ${state.reported.map((p) => p.name).join(', ') || 'none'}.`);
  return lines.join('\n\n');
}

function weedDependants(input: WeederInput, state: WindowState, until: number, openOnReady: boolean) {
  const stretch = Math.max(0, until - Date.now());
  const { weedDependants } = proxyActivities<Activities>({
    startToCloseTimeout: stretch + 60_000,
    heartbeatTimeout: heartbeatTimeoutMs(stretch),
    retry: { initialInterval: '1s', maximumInterval: '10s' },
  });
  return weedDependants({
    workflowId: workflowInfo().workflowId,
    namespace: input.namespace,
    service: input.service,
    podSelectors: input.podSelectors,
    until,
    openOnReady,
    handled: state.handledUids(),
  });
}
