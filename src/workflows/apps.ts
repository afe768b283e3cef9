// The App entity workflow, `app/<namespace>/<name>`: one per App, taking spec
// changes from the watcher (signals) and commands from the CLI (updates) in
// order, so that a stop + start through tend always rolls the pods, however
// fast the two follow each other. Decisions are in src/apps; this file only
// sequences them.
import {
  allHandlersFinished, ApplicationFailure, condition, continueAsNew, proxyActivities, proxyLocalActivities, setHandler, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { AppEntity, decideNext, type AppEntityData, type WaitOutcome } from '../apps/entity.ts';
import {
  appChangedSignal, appDeletedSignal, appStateQuery, restartUpdate, startUpdate, stopUpdate,
  type AppCommandResult, type RestartRequest,
} from '../apps/messages.ts';
import type { AppCommand } from '../apps/revisions.ts';

const { reconcileApp } = proxyActivities<Activities>({
  // A reconcile is a handful of API calls; a short limit lets a lost worker's attempt be retried soon.
  startToCloseTimeout: '15s',
  retry: { initialInterval: '1s', maximumInterval: '30s' },
});
const { waitForApp } = proxyActivities<Activities>({
  // A wait runs for minutes; the heartbeat timeout notices a lost worker quickly.
  startToCloseTimeout: '35m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', maximumInterval: '30s' },
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

const { appInScope } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 5 },
});

export async function appWorkflow(input: AppWorkflowInput): Promise<string> {
  const carried = input?.state;
  const entity = new AppEntity(carried && carried.namespace === input?.namespace && carried.name === input?.name
    ? carried : { namespace: input?.namespace, name: input?.name });
  const e = entity.data;
  const label = `${input?.namespace}/${input?.name}`;

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
  /** An update waits for the answer, and fails with the refusal's reason. */
  const inScope = async () => {
    await condition(() => scope !== 'unknown');
    if (typeof scope === 'object') throw ApplicationFailure.nonRetryable(scope.refused, 'AppsRefused');
  };
  const refuseWhenGone = () => {
    if (typeof scope === 'object') throw new Error(scope.refused);
    if (e.deleted || entity.gone) throw new Error(`App ${label} has been deleted`);
  };
  const apply = async (command: AppCommand): Promise<AppCommandResult> => {
    await inScope();
    const seq = entity.enqueue(command);
    await condition(() => e.appliedSeq >= seq);
    if (entity.gone) return result(false, `App ${label} is gone`);
    if (e.last?.problem) return result(false, `applied, but the App's spec is refused: ${e.last.problem}`);
    return result(true, `${command.kind} applied`);
  };

  setHandler(appChangedSignal, ({ generation, uid }) => entity.observe(generation, uid));
  setHandler(appDeletedSignal, () => entity.markDeleted());
  setHandler(appStateQuery, () => e);
  setHandler(startUpdate, () => apply({ kind: 'start' }), { validator: refuseWhenGone });
  setHandler(stopUpdate, () => apply({ kind: 'stop' }), { validator: refuseWhenGone });
  setHandler(restartUpdate, async (req?: RestartRequest) => {
    await inScope();
    const timeoutSeconds = req?.timeoutSeconds ?? 300;
    let seq: number;
    if (req?.strategy === 'rolling') seq = entity.enqueue({ kind: 'rolling' });
    else {
      entity.enqueue({ kind: 'stop' });
      seq = entity.enqueue({ kind: 'start' });
    }
    const done = () => entity.gone || (e.appliedSeq >= seq && (e.settledSeq >= seq || !!e.last?.problem));
    if (!(await condition(done, timeoutSeconds * 1000))) {
      return result(false, `timed out after ${timeoutSeconds}s waiting for ${label} to run on new, ready pods; `
        + `the restart goes on: see \`tend app status ${label}\``);
    }
    if (entity.gone) return result(false, `App ${label} is gone`);
    if (e.last?.problem) return result(false, `the App's spec is refused: ${e.last.problem}`);
    return result(true, `${label} runs on new, ready pods`);
  }, {
    validator: (req?: RestartRequest) => {
      refuseWhenGone();
      if (req?.strategy !== undefined && req.strategy !== 'stop-start' && req.strategy !== 'rolling') {
        throw new Error(`strategy must be stop-start or rolling (got ${JSON.stringify(req.strategy)})`);
      }
      const t = req?.timeoutSeconds;
      if (t !== undefined && (!Number.isInteger(t) || t < 1 || t > 3600)) {
        throw new Error(`timeoutSeconds must be a whole number from 1 to 3600 (got ${JSON.stringify(t)})`);
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
    // A local activity's failure may arrive as the ApplicationFailure itself, or as its cause.
    const cause = err instanceof ApplicationFailure ? err : (err as { cause?: unknown }).cause;
    if (!(cause instanceof ApplicationFailure && cause.type === 'AppsRefused')) throw err;
    scope = { refused: cause.message };
    await condition(allHandlersFinished);
    throw ApplicationFailure.nonRetryable(cause.message, 'AppsRefused');
  }

  // At most one wait at a time; a newer command does not cancel it (that
  // would cost heartbeats): its write to the App makes the wait return.
  let waitInFlight = false;
  for (;;) {
    const step = decideNext(e, waitInFlight);
    if (step.kind === 'end') break;
    if (step.kind === 'reconcile') {
      const deletionsBefore = entity.deletions;
      const res = await reconcileApp({
        namespace: e.namespace, name: e.name, command: step.command?.command, lastSeen: e.last?.lastSeen, uid: e.last?.uid,
      });
      entity.reconciled(res, step.command?.seq, deletionsBefore);
      continue;
    }
    if (step.kind === 'wait' && e.last?.lastSeen) {
      waitInFlight = true;
      const { generation, appRev } = e.last.lastSeen;
      const finished = (outcome: WaitOutcome) => {
        waitInFlight = false;
        entity.waited(outcome);
      };
      void waitForApp({ namespace: e.namespace, name: e.name, generation, appRev, timeoutSeconds: step.timeoutSeconds })
        .then(finished, () => finished('timeout'));
    }
    // Idle (or waiting): sleep until there is something to do. No timer: an idle App costs nothing.
    if (!waitInFlight && !entity.hasInput && (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > (input?.historyLimit ?? HISTORY_LIMIT))) {
      await condition(allHandlersFinished);
      if (!entity.hasInput) await continueAsNew<typeof appWorkflow>({ namespace: e.namespace, name: e.name, state: e, historyLimit: input?.historyLimit });
    }
    await condition(() => entity.hasInput || (!waitInFlight && e.statusStale));
  }
  await condition(allHandlersFinished);
  return `App ${label} deleted; its workloads deleted`;
}

