// One node's decide / forget / ask / give-back sequence, as the workflow `taint/<node>` runs it
// at every turn of its loop, over the node's data (plain, carried over continue-as-new). Pure:
// it changes the machine's own data only, never what it is handed, and returns what the
// workflow has to do; the workflow runs it as activities, signals and timers and hands the
// outcomes back.
//
//   NodeRun.next(now, turn) -> the next operation of the turn:
//       read     the node's taints again (a nodeTaints signal came)
//       list     the node's pods (again), with their first mark
//       write    the pods' conditions (the decision's writes)
//       replace  start these replacement steps (evictions, waits for a replacement) beside the turn
//       tell     the coordinator what the node owes it (slots held, requests, give-backs)
//       done | continue | again | wait (until)
//   NodeRun.apply(outcome, now) -> takes what an operation brought (a read, a listing, a write;
//       undefined: its activity gave up, tried again after STEP_RETRY_MS)
//   evicted / awaited          -> a replacement step's outcome (replace.ts evictDone / awaitDone)
//   slots()                    -> what it holds, asks for, and holds confirmed (the coordinator's check)
//
// Inside a turn: decide(now) (the writes; moves of waiting pods applied), then settle (pods
// forgotten only once their clears landed, due pods asked for, withdrawn ones given back, grants
// taken; the replacement steps to start).
import {
  applyMoves, believedSeenAt, decideNode, firstMark, markWritten, observeTaints, reconcilePods, type ConditionWrite, type ListedPod, type NodeDecision, type OwnerRef,
  type NodeTaintData, type TaintSettings,
} from './node.ts';
import {
  askFor, awaitDone, confirmedHolds, decideReplacements, evictDone, giveBack, holders, noteGrants, outboxOf, STEP_RETRY_MS, takeGrants, type EvictOutcome, type ReplaceDecision, type ReplaceOp,
} from './replace.ts';
import { fieldOf, grantedUids, NODE_MESSAGE_BOUNDS, nodeWorkflowId, taintHints, type NodeSlots } from './messages.ts';
import { pastLimits, type ValueLimits } from '../checks/limits.ts';
import { preview } from '../checks/preview.ts';
import { taintId, type MatchedTaint, type TaintOption } from './match.ts';
import { nodeNameProblem, SLOT_BOUNDS, type SlotRequest } from './slots.ts';

// The node workflow's patched behaviours (docs/contributing/patch-history.md): the workflow asks patched() for each
// where it first takes that path, and hands the answer to the machine.

/**
 * The listing activity writes the first mark of the pods it finds new (one
 * activity and one workflow task less per node, and no GET per pod); histories
 * from before it list, then write. docs/contributing/patch-history.md.
 */
export const TAINT_LIST_MARKS_PATCH = 'taint-list-marks';

/**
 * A new run reads the node, lists its pods and writes their first mark in one
 * activity (taintNodeStart): one activity, one workflow task and one Node read
 * less per node; histories from before it read the node, then list.
 * docs/contributing/patch-history.md.
 */
export const TAINT_START_LIST_PATCH = 'taint-start-list';

/**
 * A new run's first step (taintNodeStart) runs as a local activity: in the worker that runs
 * the workflow task, its result recorded with the task's completion, rather than scheduled
 * through the server as a task of its own. That is one workflow task, one activity task and
 * three history events less per node, where a zone outage starts hundreds at once.
 * docs/contributing/patch-history.md.
 */
export const TAINT_START_LOCAL_PATCH = 'taint-start-local';

/**
 * A node workflow that ends (cancelled, failed) clears the conditions it set until they are
 * cleared, STEP_RETRY_MS after each write that ran out of attempts, the reason in its Current
 * Details; before, one failed clear was logged and the conditions outlived the workflow. Only a
 * refusal ends the tries. docs/contributing/patch-history.md.
 */
export const TAINT_CLEAR_UNTIL_DONE_PATCH = 'taint-clear-until-done';

/**
 * An ending node workflow gives its slots and requests back before it clears its pods'
 * conditions, so that clears that keep failing (a 403, an API server away) never hold the
 * cluster's slots; before, it gave them back after its last clear. docs/contributing/patch-history.md.
 */
export const TAINT_GIVE_BACK_FIRST_PATCH = 'taint-give-back-first';

/**
 * A workflow started under a node's id (`taint/<node>`) with an input that does not name that node
 * (a hand start with junk) serves the node its id names, the input ignored: the watcher's
 * signal-with-start that reaches it is served, instead of being lost with a run that refuses.
 * Before, it was refused. docs/contributing/patch-history.md.
 */
export const TAINT_ID_NAMES_NODE_PATCH = 'taint-id-names-node';

/**
 * A taint workflow's history past this many bytes continues as new, besides when the server
 * suggests it (about 4 MB on a default server). Signals anyone with write access to the namespace
 * can send (up to 2 MB each) are in the history even when refused; a worker that has to replay it
 * whole (after a failed workflow task, on another replica, after a restart) then reads every byte,
 * and on a busy machine a replay of 10 MB outlasted the 10 s workflow task timeout, attempt after
 * attempt, while the coordinator granted nothing. Histories from before replay as they ran
 * (patch taint-history-bytes, asked at the start of the coordinator's and each node's run).
 * docs/contributing/patch-history.md.
 */
export const TAINT_HISTORY_BYTES = 2 * 1024 * 1024;
export const TAINT_HISTORY_BYTES_PATCH = 'taint-history-bytes';

/** Whether a run continues as new: the server suggests it, or (`capped`) its history is past TAINT_HISTORY_BYTES. */
export function continueDue(info: { continueAsNewSuggested: boolean; historySize: number }, capped: boolean): boolean {
  return info.continueAsNewSuggested || (capped && info.historySize > TAINT_HISTORY_BYTES);
}

/** The node a node workflow's id names (`taint/<node>`), or undefined when it names none. */
export function nodeOfId(id: string): string | undefined {
  const node = id.startsWith('taint/') ? id.slice('taint/'.length) : undefined;
  return node !== undefined && !nodeNameProblem(node) && nodeWorkflowId(node) === id ? node : undefined;
}

/**
 * Bounds on a start input (carried state): a node's data (a few hundred pods) and the
 * coordinator's (SLOT_BOUNDS) fit well within them; past them the input is ignored.
 */
export const CARRIED_LIMITS: ValueLimits = Object.freeze({ maxDepth: 8, maxNodes: 200_000, maxChars: 1536 * 1024 });

/** What is wrong with a node workflow's start input, run as workflow `id` (the reason only, the values previewed). */
export function nodeInputProblem(input: unknown, id: string): string | undefined {
  const tooBig = pastLimits(input, CARRIED_LIMITS);
  if (tooBig) return `the start input: ${tooBig}`;
  const raw = fieldOf(input, 'node');
  const node = typeof raw === 'string' ? raw : '';
  const badName = nodeNameProblem(node);
  if (badName) return `${badName} (${preview(raw, 80)})`;
  if (id !== nodeWorkflowId(node)) return `the workflow of node ${node} runs as ${nodeWorkflowId(node)} only, not as ${preview(id, 80)}`;
  return undefined;
}

/**
 * What the node's messages tell, from the workflow's first task on: the watcher's first sight
 * of each taint (a hint, for taints without timeAdded), and grants. Before the first read, a
 * run continued as new answers and takes grants with its carried data; a new run keeps the
 * grants for the run it starts.
 */
export class NodeInbox {
  readonly hints = new Map<string, number>();
  readonly early: string[] = [];
  /** The run, once the first read made it. */
  run: NodeRun | undefined;
  /** A nodeTaints signal came: the node is to be read again. */
  recheck = false;
  private readonly carried: NodeTaintData | undefined;

  constructor(carried: NodeTaintData | undefined) {
    this.carried = carried;
  }

  /** The data the node's queries answer from and grants go to: the run's, else the carried. */
  get data(): NodeTaintData | undefined {
    return this.run?.data ?? this.carried;
  }

  /** replacementsGranted. */
  granted(m: unknown): string | undefined {
    const { uids, why } = grantedUids(m);
    const d = this.data;
    if (d) noteGrants(d, uids);
    else if (this.early.length + uids.length <= NODE_MESSAGE_BOUNDS.uids) this.early.push(...uids);
    return why;
  }

  /** nodeTaints: "look again", with the watcher's first sights. */
  taints(m: unknown): string | undefined {
    const { taints, why } = taintHints(m);
    for (const t of taints) this.hints.set(taintId(t), t.seenAt);
    (this.run ?? this).recheck = true;
    return why;
  }

  /** The run starts: the grants that came before are its own, and so is a "look again". */
  started(run: NodeRun): void {
    this.run = run;
    run.recheck = this.recheck;
    noteGrants(run.data, this.early);
  }
}

export class NodeMachine {
  /** The node's data: the machine's own (a copy of what it is given). */
  readonly data: NodeTaintData;

  constructor(data: NodeTaintData) {
    // Plain data (JSON's values only), copied so that the caller's stays as it was.
    this.data = JSON.parse(JSON.stringify(data)) as NodeTaintData;
  }

  /** What to write now; the waiting pods' moves are applied to the machine's data. */
  decide(now: number): NodeDecision {
    const decision = decideNode(this.data, now);
    applyMoves(this.data, decision.moves);
    return decision;
  }

  /**
   * After the decision's writes (`written`: they landed): a pod to forget is forgotten only
   * when its clear landed (else it is cleared again next time), due pods ask for a slot,
   * withdrawn ones give theirs back, grants received are taken. Returns the replacement
   * steps for the pods holding a slot that have no activity `running`.
   */
  settle(decision: Readonly<NodeDecision>, written: boolean, running: ReadonlySet<string>, now: number): ReplaceDecision {
    const d = this.data;
    const unwritten = new Set(written ? [] : decision.writes.map((w) => w.uid));
    for (const uid of decision.forget) if (!unwritten.has(uid)) delete d.pods[uid];
    askFor(d, decision.request);
    for (const uid of decision.withdraw) giveBack(d, uid);
    takeGrants(d);
    return decideReplacements(d, now, running);
  }

  /** The slots the node holds and asks for. */
  slots(): NodeSlots {
    return nodeSlots(this.data);
  }
}

/** The slots a node's data holds (granted, not yet taken, or in use), asks for, and holds confirmed. */
export function nodeSlots(d: Readonly<NodeTaintData>): NodeSlots {
  const queued = Object.values(d.pods).filter((p) => p.state === 'Queued').map((p) => p.uid);
  return {
    held: [...new Set([...holders(d), ...(d.granted ?? [])])], asking: [...new Set([...(d.outbox?.request ?? []), ...queued])], confirmed: confirmedHolds(d),
  };
}

/** What a node's first read brings (taintNodeState, or taintNodeStart which also lists and marks). */
export interface NodeFirstRead {
  /** The configured taints the Node carries, each with the first sight (seenAt) the mark was decided with. */
  taints: MatchedTaint[];
  settings: TaintSettings;
  /** No Node has the name (its taints are then none). */
  missing?: true;
  /** When the pods were listed (ms); absent when the node carries no configured taint (nothing listed). */
  listedAt?: number;
  /** The first mark written on `written` (absent when none was due). */
  mark?: Pick<ConditionWrite, 'detected' | 'replacing'>;
  pods?: ListedPod[];
  written?: string[];
  marked?: Record<string, number>;
}

/** Why a node's workflow (or a mark asked for a pod on it) is refused when its node carries no configured taint, or does not exist. */
export function untaintedRefusal(node: string, missing: boolean, options: readonly TaintOption[]): string {
  if (missing) return `node ${node} does not exist: no Node has that name (kubectl get node ${node})`;
  return `node ${node} carries none of the configured taints (${options.map((o) => o.key).join(', ')})`;
}

/** What listTaintPods answers: the pods, or (asked to mark) the pods and those it marked. */
export type NodeListing = ListedPod[] | { pods: ListedPod[]; written: string[]; marked: Record<string, number> };

/** A first mark the listing writes on the pods it finds new. */
export type ListMark = Pick<ConditionWrite, 'detected' | 'replacing'> & { known: string[] };

/** How long to wait before sending the coordinator a message again after it could not be delivered. */
export const RESEND_MS = 10_000;

/** What the workflow does next in a turn of its loop (NodeRun.next). */
export type NodeOp =
  | { kind: 'read' }
  | { kind: 'list'; listedAt: number }
  | { kind: 'write'; writes: readonly ConditionWrite[] }
  | { kind: 'replace'; steps: readonly ReplaceOp[] }
  | { kind: 'tell' }
  /** Nothing left to do: the workflow ends. */
  | { kind: 'done' }
  /** Continue as new (the data readied: carry()). */
  | { kind: 'continue' }
  /** Something changed during the turn: the next turn at once. */
  | { kind: 'again' }
  /** Until something changes, or until `until` (undefined: no time). */
  | { kind: 'wait'; until: number | undefined };

/** What an operation brought (NodeRun.apply); undefined parts: its activity gave up. */
export type NodeOutcome =
  | { kind: 'read'; state: { taints: MatchedTaint[]; settings: TaintSettings } | undefined; hints: ReadonlyMap<string, number> }
  | { kind: 'list'; listing: NodeListing | undefined; mark: ListMark | undefined; listedAt: number }
  | { kind: 'write'; marked: Record<string, number> | undefined; ok: boolean };

/** What the workflow knows at each operation: its replacement steps under way, whether anything woke it, whether it should continue as new. */
export interface NodeTurn {
  running: ReadonlySet<string>;
  woken: boolean;
  continueSuggested: boolean;
}

type Phase = 'read' | 'list' | 'write' | 'settle' | 'tell' | 'end';

/**
 * The run's own turn state over the machine's data (not carried over continue-as-new, except
 * `announce`): what is to be read again, and when a failed step or message is tried again.
 */
export class NodeRun extends NodeMachine {
  /** The pods are to be listed (again). */
  listNeeded = true;
  /** A step failed: the node's own steps wait until then. */
  stepRetryAt: number | undefined;
  /** A message to the coordinator could not be delivered: sent again from then on. */
  resendAt: number | undefined;
  /** A fresh coordinator asked what the node holds (carried over as data.announce). */
  announce: boolean;
  /** A nodeTaints signal came: the node is to be read again. */
  recheck = false;
  /** Where the turn is, and what it decided so far. */
  private phase: Phase = 'read';
  private decision: NodeDecision | undefined;
  private written = true;
  private replacements: ReplaceDecision = { ops: [] };
  /** The turn read continueSuggested as it settled (the same answer for its end). */
  private continuing = false;
  /** A mark became visible this turn: its deadline counts from now on, so another turn follows. */
  private woke = false;

  constructor(data: NodeTaintData) {
    super(data);
    this.announce = data.announce === true;
  }

  /**
   * The turn's next operation, in this order: read the node (when told to look again, unless a
   * failed step waits), list its pods (when needed), write the decision's conditions, start the
   * replacement steps (not when continuing as new: those under way finish first), tell the
   * coordinator; then end the turn: done, continue as new, again, or wait.
   */
  next(now: number, turn: NodeTurn): NodeOp {
    for (;;) {
      switch (this.phase) {
        case 'read':
          this.woke = false;
          this.phase = 'list';
          // Asked every turn: a failed step's wait that has passed is over.
          if (!this.paused(now) && this.recheck) {
            this.recheck = false;
            return { kind: 'read' };
          }
          break;
        case 'list':
          this.phase = 'write';
          if (this.takeListing()) return { kind: 'list', listedAt: now };
          break;
        case 'write':
          this.decision = this.decide(now);
          this.written = true;
          this.phase = 'settle';
          if (this.decision.writes.length > 0) {
            if (this.stepRetryAt === undefined) return { kind: 'write', writes: this.decision.writes };
            this.written = false;
          }
          break;
        case 'settle':
          this.replacements = this.settle(this.decision!, this.written, turn.running, now);
          this.continuing = turn.continueSuggested;
          this.phase = 'tell';
          if (!this.continuing && this.replacements.ops.length > 0) return { kind: 'replace', steps: this.replacements.ops };
          break;
        case 'tell':
          this.phase = 'end';
          return { kind: 'tell' };
        case 'end':
          this.phase = 'read';
          return this.end(turn);
      }
    }
  }

  /** Takes what an operation brought. */
  apply(o: NodeOutcome, now: number): void {
    switch (o.kind) {
      case 'read':
        if (o.state) return this.observe(o.state, o.hints, now);
        this.recheck = true;
        return this.stepFailed(now);
      case 'list':
        this.listed(o.listing, o.mark, o.listedAt, now);
        if (!o.listing) this.stepFailed(now);
        return;
      case 'write':
        if (!o.ok) {
          this.written = false;
          return this.stepFailed(now);
        }
        this.wrote(this.decision?.writes ?? [], o.marked);
        this.woke = true;
        return;
    }
  }

  private end(turn: NodeTurn): NodeOp {
    const woken = turn.woken || this.woke;
    if (this.decision!.done && this.quiet(turn.running.size) && !woken) return { kind: 'done' };
    if (this.continuing && turn.running.size === 0) {
      this.carry();
      return { kind: 'continue' };
    }
    if (woken) return { kind: 'again' };
    return { kind: 'wait', until: this.nextAt(this.decision!, this.replacements) };
  }

  /** Takes the first read; `listed`: the read listed and marked the pods too (taintNodeStart). */
  first(read: NodeFirstRead, hints: ReadonlyMap<string, number>, listed: boolean, now: number): void {
    if (!listed) return this.observe(read, hints, now);
    // The taints carry the first sights the activity decided the mark with: taken as they are.
    observeTaints(this.data, read.taints, read.settings, now);
    if (!read.pods) return;
    this.listNeeded = false;
    reconcilePods(this.data, read.pods, read.listedAt!);
    if (read.mark) for (const uid of read.written ?? []) markWritten(this.data, { uid, namespace: '', name: '', ...read.mark }, read.marked?.[uid]);
  }

  /** Takes a read of the node's taints, each dated by the watcher's first sight of it when told (`hints`). */
  observe(read: { taints: MatchedTaint[]; settings: TaintSettings }, hints: ReadonlyMap<string, number>, now: number): void {
    if (this.data.taints.length === 0 && read.taints.length > 0) this.listNeeded = true;
    const taints = read.taints.map((t) => {
      const hint = hints.get(taintId(t));
      return hint === undefined ? t : { ...t, seenAt: believedSeenAt(hint, now) };
    });
    observeTaints(this.data, taints, read.settings, now);
  }

  /** Whether the node's own steps wait on a failed one (a wait that has passed is over). */
  paused(now: number): boolean {
    if (this.stepRetryAt !== undefined && now >= this.stepRetryAt) this.stepRetryAt = undefined;
    return this.stepRetryAt !== undefined;
  }

  /** A step failed: tried again after STEP_RETRY_MS. */
  stepFailed(now: number): void {
    this.stepRetryAt = now + STEP_RETRY_MS;
  }

  /** Whether the pods are to be listed now (taken: listed once). */
  takeListing(): boolean {
    if (!this.listNeeded || this.data.taints.length === 0 || this.stepRetryAt !== undefined) return false;
    this.listNeeded = false;
    return true;
  }

  /** The first mark the listing is to write on the pods it finds new (`listMarks`: patched). */
  listMark(listMarks: boolean, now: number): ListMark | undefined {
    const first = listMarks ? firstMark(this.data, now) : undefined;
    return first && { known: Object.keys(this.data.pods), ...first };
  }

  /** Takes a listing (`mark`: the mark asked of it, at `listedAt`); undefined: it failed, listed again. */
  listed(listing: NodeListing | undefined, mark: ListMark | undefined, listedAt: number, now: number): void {
    if (!listing) {
      this.listNeeded = true;
      return;
    }
    if (Array.isArray(listing)) return reconcilePods(this.data, listing, now);
    reconcilePods(this.data, listing.pods, mark ? listedAt : now);
    if (mark) for (const uid of listing.written) markWritten(this.data, { uid, namespace: '', name: '', detected: mark.detected, replacing: mark.replacing }, listing.marked[uid]);
  }

  /** The writes landed (`marked`: the times the writes set). */
  wrote(writes: readonly ConditionWrite[], marked: Record<string, number> | undefined): void {
    for (const w of writes) markWritten(this.data, w, marked?.[w.uid]);
  }

  evicted(uid: string, r: EvictOutcome, now: number): void {
    evictDone(this.data, uid, r, now);
  }

  awaited(uid: string, r: 'replaced' | 'pending' | { failed: string }, now: number): void {
    awaitDone(this.data, uid, r, now);
  }

  /** Whether a message to the coordinator waits on an undelivered one. */
  private holding(now: number): boolean {
    return this.resendAt !== undefined && now < this.resendAt;
  }

  /** Answering a fresh coordinator: the queued pods ask again, and the slots held to tell it (undefined: nothing to answer now). */
  announcement(now: number): SlotRequest[] | undefined {
    if (!this.announce || this.holding(now)) return undefined;
    askFor(this.data, Object.values(this.data.pods).filter((p) => p.state === 'Queued').map((p) => p.uid));
    return holders(this.data).map((uid) => this.request(uid, now));
  }

  /** The requests to send, SLOT_BOUNDS.requestsPerSignal a signal (undefined: nothing to send now). */
  requests(now: number): { uids: string[]; batches: SlotRequest[][] } | undefined {
    const out = outboxOf(this.data);
    if ((out.request.length === 0 && out.release.length === 0) || this.holding(now)) return undefined;
    const uids = [...out.request];
    return { uids, batches: batches(uids.filter((uid) => this.data.pods[uid]).map((uid) => this.request(uid, now))) };
  }

  /** The give-backs to send, SLOT_BOUNDS.requestsPerSignal a signal. */
  releases(): { uids: string[]; batches: string[][] } {
    const uids = [...outboxOf(this.data).release];
    return { uids, batches: batches(uids) };
  }

  /** Messages delivered: out of the outbox. */
  sent(kind: 'request' | 'release', uids: readonly string[]): void {
    const out = outboxOf(this.data);
    const sent = new Set(uids);
    out[kind] = out[kind].filter((u) => !sent.has(u));
  }

  /** Delivered (undefined) or not (now): an undelivered message is sent again RESEND_MS later. */
  delivery(failedAt: number | undefined): void {
    this.resendAt = failedAt === undefined ? undefined : failedAt + RESEND_MS;
  }

  /** Whether nothing is under way or owed to the coordinator. */
  quiet(running: number): boolean {
    const out = outboxOf(this.data);
    return running === 0 && out.request.length === 0 && out.release.length === 0 && (this.data.granted ?? []).length === 0;
  }

  /** The next moment something is due. */
  nextAt(decision: Readonly<NodeDecision>, replacements: Readonly<ReplaceDecision>): number | undefined {
    const out = outboxOf(this.data);
    const next = [decision.nextAt, replacements.nextAt, this.stepRetryAt, out.request.length + out.release.length > 0 || this.announce ? this.resendAt : undefined]
      .filter((t): t is number => t !== undefined);
    return next.length > 0 ? Math.min(...next) : undefined;
  }

  /** Readies the data to continue as new with: an unanswered announceSlots is carried. */
  carry(): void {
    if (this.announce) this.data.announce = true;
    else delete this.data.announce;
  }

  /** The eviction activity's input for a pod. */
  evictInput(uid: string): { node: string; namespace: string; name: string; uid: string; observed?: true } {
    const pod = this.data.pods[uid]!;
    return { node: this.data.node, namespace: pod.namespace, name: pod.name, uid: pod.uid, ...(pod.observed ? { observed: true as const } : {}) };
  }

  /** The wait-for-replacement activity's input for a pod. */
  awaitInput(uid: string, waitMs: number): { namespace: string; name: string; uid: string; controllerUid: string; controller?: OwnerRef; createdAt?: number; waitMs: number } {
    const pod = this.data.pods[uid]!;
    return {
      namespace: pod.namespace, name: pod.name, uid: pod.uid, controllerUid: pod.controllerUid!, ...(pod.controller ? { controller: pod.controller } : {}),
      ...(pod.createdAt !== undefined ? { createdAt: pod.createdAt } : {}), waitMs,
    };
  }

  private request(uid: string, now: number): SlotRequest {
    const pod = this.data.pods[uid]!;
    return { node: this.data.node, uid, pod: `${pod.namespace}/${pod.name}`, requestedAt: now };
  }
}

function batches<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += SLOT_BOUNDS.requestsPerSignal) out.push(items.slice(i, i + SLOT_BOUNDS.requestsPerSignal));
  return out;
}

/** The writes that clear every condition the node's workflow set (as it ends). */
export function clears(d: Readonly<NodeTaintData>): ConditionWrite[] {
  return Object.values(d.pods)
    .filter((p) => p.written.detected !== undefined || p.written.replacing !== undefined)
    .map((p) => ({ uid: p.uid, namespace: p.namespace, name: p.name, detected: null, replacing: null }));
}

/** The Current Details of an ending whose clears failed (tried again every STEP_RETRY_MS). */
export function clearingDetails(node: string, pods: number, error: string, givenBack: boolean): string {
  return `ending: clearing the taint conditions of ${pods} pod(s) on node ${node} failed (${error}); ` +
    `tried again every ${STEP_RETRY_MS / 1000} s until they are cleared.${givenBack ? ' Its replacement slots are given back already.' : ''} ` +
    'Terminating the workflow ends the tries and leaves the conditions on the pods';
}

/** The pods the node's workflow replaced (its result). */
export function replacedPods(d: Readonly<NodeTaintData>): string[] {
  return Object.values(d.pods).filter((p) => p.state === 'Replaced').map((p) => `${p.namespace}/${p.name}`);
}
