// Stub activities for the App entity workflow's tests: a fake App whose
// generation, desired state and readiness the test moves, and a record of
// every reconcile the workflow asked for.
import { Context } from '@temporalio/activity';
import type { ReconcileResult, WaitOutcome } from '../../src/apps/entity.ts';
import type { ReconcileAppInput, WaitForAppInput } from '../../src/activities/apps.ts';

export interface FakeApp {
  generation: number;
  appRev: number;
  lastStopRev: number;
  exists: boolean;
  /** Whether a reconcile finds the App running on its current revision. */
  settled: boolean;
  uid: string;
}

export interface AppStubs {
  app: FakeApp;
  reconciles: ReconcileAppInput[];
  waits: WaitForAppInput[];
  /** When set, reconcileApp fails with it (a non-retryable failure: its retries are over at once). */
  failWith?: Error;
  /** When set, reconcileApp answers as the activity does while paused: held, nothing written. */
  held?: string;
  /** When set, reconcileApp answers as the activity does in observe mode: these writes recorded, none made. */
  observed?: string[];
  /** When set, the activities named in gated (all when absent) wait for it to resolve (or for their cancellation) first. */
  gate?: Promise<void>;
  gated?: string[];
  /** reconcileApp reads the App before its gate (as the real one reads it first): what changes while it waits is not in its result. */
  readFirst?: boolean;
  /** waitForApp's outcome after waitMs (timeout when absent). */
  waitOutcome?: WaitOutcome;
  waitMs: number;
  cancelledActivities: string[];
  /** Activities that reached their gate, in order. */
  started: string[];
  activities: object;
}

export function appStubs(init: Partial<FakeApp> = {}): AppStubs {
  const s: AppStubs = {
    app: { generation: 1, appRev: 0, lastStopRev: 0, exists: true, settled: true, uid: 'uid-1', ...init },
    reconciles: [], waits: [], waitMs: 20, cancelledActivities: [], started: [],
    activities: {},
  };
  const gated = async (name: string) => {
    s.started.push(name);
    if (!s.gate || (s.gated && !s.gated.includes(name))) return;
    const ctx = Context.current();
    try {
      await Promise.race([s.gate, ctx.cancelled]);
    } catch (err) {
      s.cancelledActivities.push(name);
      throw err;
    }
  };
  s.activities = {
    async appInScope(): Promise<void> {
      await gated('appInScope');
    },
    async reconcileApp(input: ReconcileAppInput): Promise<ReconcileResult> {
      s.reconciles.push(input);
      const read = s.readFirst ? { ...s.app } : undefined;
      await gated('reconcileApp');
      if (s.failWith) throw s.failWith;
      if (s.held !== undefined) return { gone: false, settled: false, workloads: [], held: s.held };
      const a = read ?? s.app;
      if (s.observed) {
        return {
          gone: false, uid: a.uid, lastSeen: { generation: a.generation, processesHash: 'h', desiredState: 'STARTED', appRev: a.appRev },
          lastStopRev: a.lastStopRev, desiredState: 'STARTED', actualState: 'STARTED', settled: true, workloads: [`web-${a.lastStopRev}`], observed: s.observed,
        };
      }
      if (!a.exists) return { gone: true, settled: true, workloads: [] };
      if (input.stopSeen !== undefined) {
        // Stand-in for decideRevisions: a reported stop bumps both revisions.
        a.appRev++;
        a.lastStopRev++;
      }
      if (input.command?.kind === 'rolling') a.appRev++;
      return {
        gone: false, uid: a.uid,
        lastSeen: { generation: a.generation, processesHash: 'h', desiredState: 'STARTED', appRev: a.appRev },
        lastStopRev: a.lastStopRev, desiredState: 'STARTED', actualState: a.settled ? 'STARTED' : 'STARTING',
        settled: a.settled, workloads: [`web-${a.lastStopRev}`],
        ...(input.stopSeen !== undefined && { stopsThrough: input.stopSeen }),
      };
    },
    async waitForApp(input: WaitForAppInput): Promise<WaitOutcome> {
      s.waits.push(input);
      await gated('waitForApp');
      const ctx = Context.current();
      try {
        await ctx.sleep(s.waitMs);
      } catch (err) {
        s.cancelledActivities.push('waitForApp');
        throw err;
      }
      return s.waitOutcome ?? 'timeout';
    },
  };
  return s;
}
