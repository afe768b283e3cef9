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
  allHandlersFinished, ApplicationFailure, CancellationScope, condition, continueAsNew, isCancellation, log, proxyActivities,
  proxyLocalActivities, setCurrentDetails, setHandler, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { armSignal, extendSignal, stopSignal, windowQuery } from '../weeder/messages.ts';
import {
  ARM_LIMIT_MS, carriedWindow, heartbeatTimeoutMs, lanesWanted, WindowState, type Lane, type WeederInput, type WeederResult,
} from '../weeder/window.ts';

// The Service must be one the worker is configured for: asked once per run,
// before anything else (a refusal fails the workflow, non-retryably).
const { weederSettings } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 5 },
});

export async function weederWorkflow(input: WeederInput): Promise<WeederResult> {
  // Everything in the input arrived through Temporal: the Service's name is
  // checked against the worker's configuration (a refusal fails the workflow,
  // non-retryably, before anything is done) and a carried window must be one.
  const named: Record<string, unknown> = isRecord(input) ? input as unknown as Record<string, unknown> : {};
  const watchMs = (await weederSettings({ namespace: named.namespace as string, service: named.service as string })).watchDuration.ms;
  const carried = carriedWindow(named.carried, Date.now());
  if ('refused' in carried) throw ApplicationFailure.nonRetryable(`refused: ${carried.refused}`, 'WeederRefused');
  const target = { namespace: named.namespace as string, service: named.service as string };

  // Signals delivered with the start (the watcher's signal-with-start: extend,
  // or arm) wait for their handlers, set here, and set what this run does first.
  const state = new WindowState(carried.window);
  const running = new Map<Lane, CancellationScope>();
  let failure: { err: unknown } | undefined;
  const show = () => setCurrentDetails(details(state));

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
    // The cancellation reaches an activity with its next heartbeat; the window is closed now.
    for (const scope of running.values()) scope.cancel();
  });
  setHandler(windowQuery, () => state.snapshot());
  show();

  const start = (lane: Lane, until: number) => {
    const scope = new CancellationScope();
    const armedSince = lane === 'armed' ? state.armed?.since : undefined;
    running.set(lane, scope);
    void scope.run(() => weedDependants(target, state, until, lane === 'armed')).then(
      (found) => {
        state.record(found);
        if (found.readyAt !== undefined) state.readySeen(found.readyAt, armedSince, watchMs);
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
      return continueAsNew<typeof weederWorkflow>({ ...target, carried: state.snapshot() });
    }
    // Wake when a lane ends, or (a signal) one is wanted that is not running.
    const lanes = [...running.keys()].join();
    await condition(() => failure !== undefined || [...running.keys()].join() !== lanes ||
      (!large && [...lanesWanted(state.snapshot(), Date.now()).keys()].some((l) => !running.has(l))));
  }
  return state.result(target, Date.now());
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

function weedDependants(input: { namespace: string; service: string }, state: WindowState, until: number, openOnReady: boolean) {
  const stretch = Math.max(0, until - Date.now());
  const { weedDependants } = proxyActivities<Activities>({
    startToCloseTimeout: stretch + 60_000,
    heartbeatTimeout: heartbeatTimeoutMs(stretch),
    retry: { initialInterval: '1s', maximumInterval: '10s' },
  });
  return weedDependants({
    namespace: input.namespace,
    service: input.service,
    until,
    openOnReady,
    handled: state.handledUids(),
  });
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
