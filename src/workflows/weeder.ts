// One weeder window per Service (`weeder/<namespace>/<service>`): opened by
// the watcher on a not-ready -> ready transition, extended by the next ones,
// closed after watchDuration (or by the stop signal). The weeding runs in an
// activity that watches the dependants for the rest of the window; this
// workflow only keeps the deadline and the record of what was weeded.
import {
  allHandlersFinished, CancellationScope, condition, continueAsNew, isCancellation, proxyActivities, setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { extendSignal, stopSignal, windowQuery } from '../weeder/messages.ts';
import {
  decideNext, heartbeatTimeoutMs, WindowState, type WeederInput, type WeederResult,
} from '../weeder/window.ts';

/** Longest extension an operator's signal may ask for: a day. */
const MAX_EXTEND_MS = 24 * 3600_000;

export async function weederWorkflow(input: WeederInput): Promise<WeederResult> {
  const state = new WindowState(Date.now(), input.carried);
  // A fresh run lasts one watchDuration; the watcher's signal-with-start
  // transition (counted) and later ones extend it.
  if (!input.carried) state.deadline = state.openedAt + input.watchDuration.ms;
  let cancelWeeding: (() => void) | undefined;
  setHandler(extendSignal, (args) => {
    const seconds = args?.seconds;
    const ms = typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0
      ? Math.min(seconds * 1000, MAX_EXTEND_MS)
      : input.watchDuration.ms;
    state.extend(Date.now(), ms);
  });
  setHandler(stopSignal, (args) => {
    state.stop(Date.now(), args?.reason || 'stop signal');
    // The cancellation reaches the activity with its next heartbeat; the window is closed now.
    cancelWeeding?.();
  });
  setHandler(windowQuery, () => state.snapshot());

  for (;;) {
    const next = decideNext(state.snapshot(), Date.now(), workflowInfo().continueAsNewSuggested);
    if (next.step === 'close') break;
    if (next.step === 'continue-as-new') {
      await condition(allHandlersFinished);
      return continueAsNew<typeof weederWorkflow>({ ...input, carried: state.snapshot() });
    }
    // An extension lets the running activity finish its stretch; this loop starts the next for the rest.
    const scope = new CancellationScope();
    cancelWeeding = () => scope.cancel();
    try {
      state.record(await scope.run(() => weedDependants(input, state, next.until)));
    } catch (err) {
      // A stopped window cancelled its own activity; any other cancellation (the
      // Web UI's cancel) ends the workflow. Deletions already done need no undoing.
      if (!(isCancellation(err) && state.stopped)) throw err;
    } finally {
      cancelWeeding = undefined;
    }
  }
  return state.result(input, Date.now());
}

function weedDependants(input: WeederInput, state: WindowState, until: number) {
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
    handled: state.handledUids(),
  });
}
