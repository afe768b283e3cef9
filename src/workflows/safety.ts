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
// CHANGES_PER_RUN changes. Every message is untrusted (anyone who may write to
// the namespace can send one): each is measured against SAFETY_LIMITS before
// any field is read, refused or ignored with a reason cut short, and none can
// throw in a handler. Docs: docs/safety.md.
import {
  allHandlersFinished, ApplicationFailure, CancellationScope, condition, isCancellation, log, makeContinueAsNewFunc, patched, setCurrentDetails,
  setHandler, upsertMemo, workflowInfo,
} from '@temporalio/workflow';
import {
  applyPause, applyResume, check, describeState, pauseInputSchema, pauseSignal, pauseUpdate, resumeInputSchema, resumeSignal,
  resumeUpdate, SAFETY_MEMO_KEY, SAFETY_TAKEOVER_PATCH, SAFETY_WORKFLOW_ID, startingState, takenOverState, stateQuery, type PauseInput, type ResumeInput, type SafetyState,
} from '../safety/messages.ts';
import { preview } from '../checks/preview.ts';
import { carriedFromOwnRun } from './carried.ts';

/** What a run starts with: the state a previous run carried over, or nothing (nothing paused). */
export interface SafetyInput {
  state?: SafetyState;
}

/** Continue-as-new after this many changes in one run at the latest (each is a handful of events). */
export const CHANGES_PER_RUN = 200;

const iso = (ms: number) => new Date(ms).toISOString();

export async function safetyWorkflow(input?: SafetyInput): Promise<void> {
  const id = workflowInfo().workflowId;
  if (id !== SAFETY_WORKFLOW_ID) {
    throw ApplicationFailure.nonRetryable(
      `safetyWorkflow: refused: the pause runs as workflow id ${SAFETY_WORKFLOW_ID} only (got ${preview(id, 80)})`, 'InvalidSafetyInput');
  }
  // A hand start's state is ignored (and said): only tend-safety itself carries state into a run.
  const raw = typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as { state?: unknown }).state : undefined;
  // Except as pauses: a run started afresh with a state that pauses something (a live tend taking
  // tend-safety over from a task queue no worker polls) takes it: it pauses what a fresh run would not.
  const takenOver = raw !== undefined && raw !== null && !workflowInfo().continuedFromExecutionRunId && patched(SAFETY_TAKEOVER_PATCH);
  const start = takenOver ? takenOverState(raw) : startingState(carriedFromOwnRun(raw), iso(Date.now()));
  if (start.problem !== undefined) log.error(takenOver ? `safety: ${start.problem}` : `safety: every capability paused: ${start.problem}`);
  else if (takenOver && 'taken' in start && start.taken) log.warn(`safety: started with the pauses of an earlier tend-safety (revision ${start.state.revision})`);
  let s: SafetyState = start.state;
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

  /** The checked message, or a refusal (an update's validator turns it down; never a workflow task failure). */
  const parse = <T>(schema: Parameters<typeof check<T>>[0], raw: unknown, what: string): T => {
    const c = check(schema, raw, what);
    if (!c.ok) throw ApplicationFailure.nonRetryable(c.reason, 'InvalidSafetyInput');
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
