// `tend-safety`: the durable, cluster-wide pause of destructive actions, one
// per Temporal namespace. It keeps, for every capability, whether it is paused,
// why, since when and by whom, and a revision that grows with each change.
// Changes arrive as updates (`tend pause`, `tend resume`: the caller learns the
// new revision) or as signals of the same names (the temporal CLI); a bad
// update is refused by its validator, a bad signal logged and ignored. At every
// change the workflow writes its state to its memo, so that the readers in
// workers (src/safety/pause.ts) get it from DescribeWorkflowExecution without
// a worker having to answer a query. It never ends by itself: it continues as
// new, carrying its state, when Temporal suggests it or after
// CHANGES_PER_RUN changes. Docs: docs/safety.md.
import {
  allHandlersFinished, ApplicationFailure, CancellationScope, condition, isCancellation, log, makeContinueAsNewFunc, setCurrentDetails,
  setHandler, upsertMemo, workflowInfo,
} from '@temporalio/workflow';
import {
  applyPause, applyResume, check, describeState, emptySafetyState, pauseInputSchema, pauseSignal, pauseUpdate, resumeInputSchema, resumeSignal,
  resumeUpdate, SAFETY_MEMO_KEY, SAFETY_WORKFLOW_ID, safetyStateSchema, stateQuery, type PauseInput, type ResumeInput, type SafetyState,
} from '../safety/messages.ts';

/** What a run starts with: the state a previous run carried over, or nothing (nothing paused). */
export interface SafetyInput {
  state?: SafetyState;
}

/** Continue-as-new after this many changes in one run at the latest (each is a handful of events). */
export const CHANGES_PER_RUN = 200;

const iso = (ms: number) => new Date(ms).toISOString();

export async function safetyWorkflow(input?: SafetyInput): Promise<void> {
  if (workflowInfo().workflowId !== SAFETY_WORKFLOW_ID) {
    throw ApplicationFailure.nonRetryable(
      `safetyWorkflow: refused: the pause runs as workflow id ${SAFETY_WORKFLOW_ID} only (got ${workflowInfo().workflowId})`, 'InvalidSafetyInput');
  }
  let s: SafetyState = emptySafetyState();
  const carried = input?.state;
  if (carried !== undefined && carried !== null) {
    const c = check(safetyStateSchema, carried, 'safetyWorkflow: refused input: state');
    if (!c.ok) throw ApplicationFailure.nonRetryable(c.reason, 'InvalidSafetyInput');
    s = c.value;
  }
  let changes = 0;

  /** The memo (for readers) and the Web UI's Current Details. */
  const publish = () => {
    upsertMemo({ [SAFETY_MEMO_KEY]: s });
    setCurrentDetails(describeState(s));
  };
  const change = (next: SafetyState, what: string) => {
    if (next === s) return;
    s = next;
    changes += 1;
    publish();
    log.info(`safety: ${what}; revision ${s.revision}`, { paused: Object.entries(s.capabilities).filter(([, p]) => p.paused).map(([c]) => c) });
  };
  const pause = (p: PauseInput) => change(applyPause(s, p, iso(Date.now())), `pause ${p.capabilities?.join(', ') || 'all'} (${p.reason})`);
  const resume = (r: ResumeInput) => change(applyResume(s, r, iso(Date.now())), `resume ${r.capabilities?.join(', ') || 'all'}`);

  const parse = <T>(schema: Parameters<typeof check<T>>[0], raw: unknown, what: string): T => {
    const c = check(schema, raw, what);
    if (!c.ok) throw new Error(c.reason);
    return c.value;
  };

  setHandler(stateQuery, () => s);
  setHandler(pauseUpdate, (raw: unknown) => {
    pause(parse(pauseInputSchema, raw, 'pause'));
    return s;
  }, { validator: (raw: unknown) => void parse(pauseInputSchema, raw, 'pause') });
  setHandler(resumeUpdate, (raw: unknown) => {
    resume(parse(resumeInputSchema, raw, 'resume'));
    return s;
  }, { validator: (raw: unknown) => void parse(resumeInputSchema, raw, 'resume') });
  // Signals cannot be refused: one that is not what it takes is logged and changes nothing.
  setHandler(pauseSignal, (raw: unknown) => {
    const c = check(pauseInputSchema, raw, 'pause signal ignored');
    if (!c.ok) return log.warn(c.reason);
    pause(c.value);
  });
  setHandler(resumeSignal, (raw: unknown) => {
    const c = check(resumeInputSchema, raw, 'resume signal ignored');
    if (!c.ok) return log.warn(c.reason);
    resume(c.value);
  });

  publish();
  const due = () => workflowInfo().continueAsNewSuggested || changes >= CHANGES_PER_RUN;
  for (;;) {
    try {
      await condition(due);
      break;
    } catch (err) {
      // Cancelling would silently lift every pause: it goes on instead (terminate tend-safety to drop the state).
      if (!isCancellation(err)) throw err;
      log.warn('safety: tend-safety was cancelled; it keeps its state and goes on (terminate it to drop every pause)');
      break;
    }
  }
  // Every signal and update taken in before the state is carried over.
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  // The memo goes with the state, so a reader never finds the new run without it.
  await makeContinueAsNewFunc<typeof safetyWorkflow>({ memo: { [SAFETY_MEMO_KEY]: s } })({ state: s });
}
