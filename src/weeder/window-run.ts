// One run of a weeder window (docs/weeder.md): its two watching lanes, its
// deletions under way, what the handlers and the run loop do with them, and
// the Web UI's details. The workflow (src/workflows/weeder.ts) hands in
// Temporal's calls as WindowPorts (scopes, conditions, activities, patches,
// the clock), so this module imports none of them and a test can drive a run
// with stand-ins. The order of the calls is the workflow's commands: a change
// here is a change of what a history replays. It imports nothing from the
// workflows either, so that it can join the weeder's pure modules in
// src/weeder/ (and the worker's shared modules) as it is.
import { preview } from '../checks/preview.ts';
import { announcementOps, laneAnswered, laneFailed, type LaneOp, type LaneRun } from './armed.ts';
import { checkExtendArgs, checkReasonArgs, type StopAnswer } from './messages.ts';
import {
  ARM_LIMIT_MS, checkArmedWeeding, lanesWanted, windowOpen, type Candidate, type Lane, type PodSeen, type WatchOutput, type WeedOutcome, type WeederResult,
  type WindowSnapshot, type WindowState,
} from './window.ts';

/**
 * A deletion observe mode recorded or the pause held is asked again with a
 * hold of at most this long (and no longer than the window): the activity
 * waits in place for the weeder to be let act, heartbeating.
 */
export const WEED_HOLD_MS = 10 * 60_000;
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
 * The armed watch's deletion of a pod it announced is recorded even when another lane's answer
 * took the pod off the pending list first (its deleting activity found the pod being deleted: by
 * this watch). Before it, such a deletion was made but left out of the window's record.
 */
export const WEEDER_ARMED_RECORD_PATCH = 'weeder-armed-record';

/**
 * The armed watch's heartbeat timeout is ARMED_TAKEOVER_HEARTBEAT_MS (it was 10 s): a worker lost
 * with it (killed as the Service returns) is noticed that soon, and the retried attempt, on
 * another worker, deletes at once. Before it, the announced pods waited for the 10 s timeout.
 */
export const WEEDER_ARMED_TAKEOVER_PATCH = 'weeder-armed-takeover';

export type WeederTarget = { namespace: string; service: string };

/** A part of the run that can be cancelled on its own: a CancellationScope in the workflow. */
export interface Scope {
  run<T>(fn: () => Promise<T>): Promise<T>;
  cancel(): void;
}

/** What a deleting activity is asked: the pods, and those of them observe mode recorded already. */
export interface WeedAsk extends WeederTarget {
  pods: Candidate[];
  observed?: string[];
}

/** Temporal's calls, as the workflow hands them in. */
export interface WindowPorts {
  now(): number;
  scope(): Scope;
  nonCancellable<T>(fn: () => Promise<T>): Promise<T>;
  condition(fn: () => boolean): Promise<void>;
  allHandlersFinished(): boolean;
  continueAsNewSuggested(): boolean;
  continueAsNew(input: WeederTarget & { carried: WindowSnapshot }): Promise<never>;
  patched(name: string): boolean;
  uuid(): string;
  warn(message: string, attrs?: Record<string, unknown>): void;
  details(text: string): void;
  isCancellation(err: unknown): boolean;
  isRefusal(err: unknown): boolean;
  failureMessage(err: unknown): string;
  /** The failure the workflow ends with when the window could not go on (its result in the details). */
  failed(message: string, result: WeederResult): unknown;
  /** The deleting activity; `holdMs` above 0: asked again, waiting in place up to that long. */
  weedPods(ask: WeedAsk, holdMs: number): Promise<WeedOutcome[]>;
  checkPods(ask: WeederTarget & { pods: Candidate[] }): Promise<PodSeen[]>;
  watchDependants(until: number, openOnReady: boolean, handled: string[], weedToken: string | undefined): Promise<WatchOutput>;
}

/** One run of a window: its lanes, its deletions under way, and what the handlers and the loop do with them. */
export class WindowRun {
  private readonly lanes = new Map<Lane, Scope>();
  private readonly deleting = new Map<Promise<void>, Scope>();
  // The armed watch that deletes at once: its token (one per run), the pods it
  // announced and has not answered for yet, and whether a lane of it runs (it
  // is waited for when cancelled: it may be deleting).
  private weedToken: string | undefined;
  private readonly announced = new Map<string, Candidate>();
  /** Every pod the armed watch announced, pending already or not, until its answer: what its deletions name. */
  private readonly armedAnnounced = new Map<string, Candidate>();
  private armedDeleting = false;
  private refused: { err: unknown } | undefined;
  private readonly target: WeederTarget;
  private readonly state: WindowState;
  private readonly watchMs: number;
  private readonly p: WindowPorts;

  constructor(target: WeederTarget, state: WindowState, watchMs: number, ports: WindowPorts) {
    this.target = target;
    this.state = state;
    this.watchMs = watchMs;
    this.p = ports;
  }

  show(): void {
    this.p.details(details(this.state, this.target.namespace, this.announced, this.p.now()));
  }

  private armedSettled(): boolean {
    return !(this.armedDeleting && this.lanes.has('armed'));
  }

  // ---------------------------------------------------------------- handlers

  extend(args: unknown): void {
    const check = checkExtendArgs(args, 'extend signal ignored');
    if (!check.ok) {
      this.p.warn(check.reason);
      return;
    }
    this.state.extend(this.p.now(), check.value.seconds === undefined ? this.watchMs : check.value.seconds * 1000);
    this.show();
  }

  arm(args: unknown): void {
    const check = checkReasonArgs(args, 'arm signal ignored');
    if (!check.ok) {
      this.p.warn(check.reason);
      return;
    }
    this.state.arm(this.p.now(), ARM_LIMIT_MS);
    this.show();
  }

  stop(args: unknown, by: string): void {
    const check = checkReasonArgs(args, 'stop signal ignored');
    if (!check.ok) {
      this.p.warn(check.reason);
      return;
    }
    this.state.stop(this.p.now(), check.value.reason || by);
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
    await this.p.condition(() => this.deleting.size === 0 && this.armedSettled());
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
      this.p.warn(`armedWeeding signal ignored: ${check.ignored}`);
      return;
    }
    for (const c of check.pods) this.armedAnnounced.set(c.uid, c);
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
    const { state, p } = this;
    for (let holdMs = 0; ;) {
      const observed = state.observedOf(asking.pods.map((pod) => pod.uid));
      const ask = { ...this.target, pods: asking.pods, ...(observed.length > 0 ? { observed } : {}) };
      const outcomes: WeedOutcome[] = await p.weedPods(ask, holdMs);
      state.settle(outcomes, p.now());
      // Found not deletable now (a crash-looping pod between two crashes, say): it may be proposed
      // again, but the window's watch under way was told it is handled (it was pending when that
      // watch started). That watch starts again, knowing, and proposes it if it crash-loops again.
      // Before the patch only a pod asked again after a hold was, and a pod skipped at its first ask
      // was never proposed again in that window.
      if (outcomes.some((o) => o.outcome === 'skipped') && (holdMs > 0 || p.patched(WEEDER_REPROPOSE_SKIPPED_PATCH))) this.lanes.get('window')?.cancel();
      const gated = new Set(outcomes.filter((o) => o.outcome === 'observed' || o.outcome === 'held').map((o) => o.uid));
      if (gated.size === 0) return;
      const again = asking.pods.filter((pod) => gated.has(pod.uid));
      // The window closed or stopped (or a new run takes over): not asked again; held ones stay held, not deleted.
      const now = p.now();
      if (!state.acting || !windowOpen(state, now) || p.continueAsNewSuggested() || !p.patched(WEEDER_SAFETY_HOLD_PATCH)) {
        state.release(again.map((pod) => pod.uid));
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
      const seen = await this.p.nonCancellable(() => this.p.checkPods({ ...this.target, pods }));
      this.state.settleLost(pods, seen, reason, this.p.now());
    } catch (lookErr) {
      this.p.warn(`could not look at pods whose deletion's answer was lost: ${this.p.failureMessage(lookErr)}`);
      this.state.settleLost(pods, [], reason, this.p.now());
    }
  }

  /** Runs `work` as a deletion under way: waited for by the stop, the end, continue-as-new. */
  private underWay(scope: Scope, work: Promise<void>): void {
    const done: Promise<void> = work.finally(() => {
      this.deleting.delete(done);
      this.show();
    });
    this.deleting.set(done, scope);
  }

  private weed(pods: Candidate[]): void {
    const scope = this.p.scope();
    // The pods of the latest ask: those a lost answer leaves in doubt.
    const asking = { pods };
    // No answer: cancelled (a stop) or given up. An attempt may have deleted: look.
    this.underWay(scope, scope.run(() => this.weedAndAskAgain(asking)).then(
      () => undefined,
      (err: unknown) => this.lookAt(asking.pods, this.p.isCancellation(err) ? undefined : `deleting failed: ${this.p.failureMessage(err)}`),
    ));
  }

  /** Pods the armed watch announced that its answer did not account for (it was lost, or never came): looked at. */
  private lookAtAnnounced(reason: string | undefined): void {
    const lost = [...this.announced.values()].filter((c) => this.state.isPending(c.uid));
    this.announced.clear();
    if (lost.length > 0) this.underWay(this.p.scope(), this.lookAt(lost, reason));
  }

  /**
   * The armed watch's deletions of pods it announced that are no longer pending: another lane's
   * deleting activity answered for them first, finding them being deleted (by this watch), and
   * they were settled as skipped. Pending again, so that this answer records them.
   */
  private pendAgainArmedDeletions(outcomes: readonly WeedOutcome[]): void {
    const lost = outcomes.flatMap((o) => {
      const c = o.outcome === 'deleted' && !this.state.isPending(o.uid) ? this.armedAnnounced.get(o.uid) : undefined;
      return c ? [c] : [];
    });
    this.armedAnnounced.clear();
    if (lost.length > 0 && this.p.patched(WEEDER_ARMED_RECORD_PATCH)) this.state.announce(lost);
  }

  /** Runs the operations the arming rules (src/weeder/armed.ts) returned, in order. */
  private apply(ops: readonly LaneOp[], err: unknown): void {
    for (const o of ops) {
      if (o.op === 'readySeen') this.state.readySeen(o.readyAt, o.armedSince, this.watchMs);
      else if (o.op === 'settle') {
        this.pendAgainArmedDeletions(o.outcomes);
        this.state.settle(o.outcomes, this.p.now());
      }
      else if (o.op === 'weed') {
        const fresh = this.state.propose(o.candidates);
        // Announced, then not deleted by the watch (a failure it could not judge): the deleting activity tries, afresh.
        const again = o.retryAnnounced ? o.candidates.filter((c) => this.announced.has(c.uid) && this.state.isPending(c.uid)) : [];
        for (const c of again) this.announced.delete(c.uid);
        if (fresh.length + again.length > 0) this.weed([...fresh, ...again]);
      } else if (o.op === 'lookAtAnnounced') this.lookAtAnnounced(o.reason);
      else if (o.op === 'refused') this.refused ??= { err };
      else {
        this.state.fail(this.p.now(), o.reason);
        this.halt();
      }
    }
  }

  // ---------------------------------------------------------------- watching

  private startLane(lane: Lane, until: number): void {
    const { p } = this;
    const scope = p.scope();
    const deletesAtOnce = lane === 'armed' && p.patched(WEEDER_ARMED_DELETES_PATCH);
    const laneRun: LaneRun = { lane, deletesAtOnce, armedSince: lane === 'armed' ? this.state.armed?.since : undefined };
    if (deletesAtOnce) {
      this.weedToken ??= p.uuid();
      this.armedDeleting = true;
    }
    this.lanes.set(lane, scope);
    void scope.run(() => p.watchDependants(until, lane === 'armed', this.state.handledUids(), deletesAtOnce ? this.weedToken : undefined)).then(
      (found) => this.apply(laneAnswered(laneRun, found, this.state.acting), undefined),
      (err: unknown) => this.apply(laneFailed(laneRun, {
        cancelled: p.isCancellation(err), refusal: p.isRefusal(err), message: p.failureMessage(err),
      }, `${this.target.namespace}/${this.target.service}`), err),
    ).finally(() => {
      if (this.lanes.get(lane) === scope) this.lanes.delete(lane);
      this.show();
    });
  }

  /** The run loop: lanes as the window wants them, continue-as-new when the history grows large, then the result. */
  async run(): Promise<WeederResult> {
    const { lanes, deleting, state, p } = this;
    try {
      for (;;) {
        if (this.refused) {
          this.halt();
          await p.condition(() => deleting.size === 0);
          throw this.refused.err;
        }
        // A large history: watch no more, let deletions under way answer, and go on in a new run.
        if (p.continueAsNewSuggested()) {
          for (const scope of lanes.values()) scope.cancel();
          await p.condition(() => lanes.size === 0 && deleting.size === 0);
          await p.condition(p.allHandlersFinished);
          return p.continueAsNew({ ...this.target, carried: state.snapshot() });
        }
        const wanted = lanesWanted(state.snapshot(), p.now());
        for (const [lane, until] of wanted) if (!lanes.has(lane)) this.startLane(lane, until);
        if (lanes.size === 0 && deleting.size === 0) {
          if (wanted.size === 0) break;
          continue;
        }
        // Wake when a lane or a deletion ends, a lane is wanted that is not running, or the history grows large.
        const running = [...lanes.keys()].join();
        const inFlight = deleting.size;
        await p.condition(() => this.refused !== undefined || p.continueAsNewSuggested() ||
          [...lanes.keys()].join() !== running || deleting.size !== inFlight ||
          [...lanesWanted(state.snapshot(), p.now()).keys()].some((l) => !lanes.has(l)));
      }
    } catch (err) {
      // The workflow itself cancelled (the Web UI): watch no more, and let the
      // deletions under way answer before it ends, so that they are in its history.
      if (p.isCancellation(err)) {
        state.stop(p.now(), 'workflow cancelled');
        this.halt();
        await p.nonCancellable(() => p.condition(() => deleting.size === 0 && this.armedSettled()));
      }
      throw err;
    }
    await p.condition(p.allHandlersFinished);
    if (state.held.length > 0) {
      p.warn(`window closed while the weeder was paused: ${state.held.length} deletion(s) held were not made`, { held: state.held.slice(0, NAMES_SHOWN).map((pod) => pod.name) });
    }
    const result = state.result(this.target, p.now());
    if (state.failure) throw p.failed(`weeder window failed: ${state.failure.reason}`, result);
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
export function details(state: WindowState, namespace: string, announced: ReadonlyMap<string, Candidate>, now: number): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  const lines = [];
  const weeded = new Set(state.weeded.map((p) => p.uid));
  const wouldHave = state.observed.filter((p) => !weeded.has(p.uid));
  const held = state.held;
  const gated = new Set([...wouldHave, ...held].map((p) => p.uid));
  if (state.deadline > now) lines.push(`Window open until ${iso(state.deadline)}.`);
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
  if (held.length && state.acting && windowOpen(state, now)) {
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
