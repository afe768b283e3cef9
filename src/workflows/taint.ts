// Taint replacement, as two kinds of workflow:
//  - `taint/<node>` (taintNodeWorkflow): one per node carrying a configured
//    taint. Marks the managed pods on it, sleeps on a durable timer until the
//    next deadline, and replaces due pods once the coordinator grants a slot.
//  - `taint-replacements` (taintReplacementsWorkflow): the cluster-wide slots
//    (maxConcurrentReplacements) and the breaker.
// Decisions live in src/taint (pure, unit-tested); these only act on them.
import {
  allHandlersFinished, ApplicationFailure, CancellationScope, condition, continueAsNew, getExternalWorkflowHandle, isCancellation,
  log, patched, proxyActivities, proxyLocalActivities, setCurrentDetails, setHandler, sleep, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { carriedData, newNodeTaintData, nodeDetails, statusRows, type NodeTaintData, markWritten } from '../taint/node.ts';
import {
  nodeCountsSignal, nodeSlotsQuery, nodeStatusQuery, nodeTaintsSignal, nodeWorkflowId, podsChangedSignal,
  releaseReplacementSignal, replacementGrantedSignal, requestReplacementSignal, SLOTS_WORKFLOW_ID, slotSettingsSignal, slotsStatusQuery, TAINT_REFUSED,
  withdrawNodeSignal, announceSlotsSignal, slotsHeldSignal,
} from '../taint/messages.ts';
import { pastLimits } from '../checks/limits.ts';
import { preview } from '../checks/preview.ts';
import { failureMessage, refusalOf } from './failures.ts';
import { carriedFromOwnRun } from './carried.ts';
import { STEP_RETRY_MS, type EvictOutcome, type ReplaceOp } from '../taint/replace.ts';
import {
  CARRIED_LIMITS, clearingDetails, clears, continueDue, TAINT_HISTORY_BYTES_PATCH, NodeInbox, nodeInputProblem, nodeOfId, NodeRun, nodeSlots, TAINT_ID_NAMES_NODE_PATCH, replacedPods, TAINT_CLEAR_UNTIL_DONE_PATCH, TAINT_GIVE_BACK_FIRST_PATCH, TAINT_LIST_MARKS_PATCH, TAINT_START_LIST_PATCH, TAINT_START_LOCAL_PATCH, untaintedRefusal, type NodeFirstRead,
} from '../taint/node-machine.ts';
import {
  Coordinator, TAINT_ADOPT_CONFIRMED_PATCH, TAINT_HINT_WHILE_ASKING_PATCH, TAINT_UNDELIVERED_WITHDRAWS_PATCH, TAINT_VERIFY_GIVE_BACK_PATCH,
} from '../taint/coordinator.ts';
import { byNode, Slots, slotsDetails, type Grant, type SlotData } from '../taint/slots.ts';
import * as summary from '../taint/summaries.ts';
import { said } from './summary.ts';

type ExternalHandle = ReturnType<typeof getExternalWorkflowHandle>;

/** What the workflows show in the Web UI's Current Details (re-exported for their tests). */
export { nodeDetails, slotsDetails };

// Every activity gives up after a bounded number of attempts (a few minutes),
// so that the workflow gets to act on a failure (retry later, give a slot back,
// continue as new) instead of waiting on one call for ever.
const retry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 };

const kube = proxyActivities<Activities>({ startToCloseTimeout: '1m', retry });

// awaitReplacement waits up to 30 s per call; no heartbeats (each would be a billed action).
const waiting = proxyActivities<Activities>({ startToCloseTimeout: '90s', retry: { ...retry, maximumAttempts: 5 } });

/**
 * Names the node only. Its taints are read from the Node, and the settings
 * from the worker's configuration, by an activity at the start (taintNodeStart,
 * which lists and marks the pods too) and on every nodeTaints signal
 * (taintNodeState): a signal says "look again", nothing more.
 */
export interface TaintNodeInput {
  node: string;
  /** State carried over by continue-as-new (its settings are read afresh). */
  data?: NodeTaintData;
}

const { taintNodeState, taintSlotSettings, taintNodeCounts } = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry });
// Reads the node and lists and marks its pods: the listing's minute.
const { taintNodeStart } = proxyActivities<Activities>({ startToCloseTimeout: '1m', retry });

// The same minute and retries; they back off inside the worker (none waits as long as the SDK's one-minute
// threshold past which a local activity's retry waits on a timer), the workflow task kept alive meanwhile.
const { taintNodeStart: taintNodeStartHere } = proxyLocalActivities<Activities>({ startToCloseTimeout: '1m', retry });

export interface TaintNodeResult {
  node: string;
  replaced: string[];
}

/** Whether the run should continue as new (src/taint/node-machine.ts, continueDue). */
const continueSuggested = (capped: boolean) => continueDue(workflowInfo(), capped);

export async function taintNodeWorkflow(input: TaintNodeInput): Promise<TaintNodeResult> {
  const why = nodeInputProblem(input, workflowInfo().workflowId);
  const own = why ? nodeOfId(workflowInfo().workflowId) : undefined;
  if (own && patched(TAINT_ID_NAMES_NODE_PATCH)) log.warn(`the start input is ignored (${why}): this run serves node ${own}, the node its id names`);
  else if (why) throw refused(why);
  const node = own ?? input.node;
  const capped = patched(TAINT_HISTORY_BYTES_PATCH);
  const carried = own ? undefined : carriedData(node, carriedFromOwnRun(input?.data));
  // The data this run acts on (undefined until the first read, for a new run).
  let d: NodeTaintData | undefined = carried;
  const slots: ExternalHandle = getExternalWorkflowHandle(SLOTS_WORKFLOW_ID);
  // Set as the workflow starts to end: from then on it holds and asks for no slot.
  const ending = { now: false };
  let continuing = false;
  try {
    continuing = await runNode(node, carried, (run) => (d = run.data), slots, ending, capped);
  } catch (err) {
    // Cancelled (from the Web UI, or the feature was disabled), or failed
    // (refused, or a bug): clear every condition this workflow set and give
    // back its slots, whatever the ending, so nothing outlives the workflow.
    if (d) {
      ending.now = true;
      await cleanUp(d, slots);
      setCurrentDetails(summary.endedDetails(d.node, isCancellation(err)));
    }
    throw err;
  }
  if (continuing && d) {
    await condition(allHandlersFinished);
    return await continueAsNew<typeof taintNodeWorkflow>({ node: d.node, data: d });
  }
  return { node, replaced: d ? replacedPods(d) : [] };
}

/** Gives the node's slots and requests back, and clears the conditions set, in a non-cancellable scope; errors are logged. */
async function cleanUp(d: NodeTaintData, slots: ExternalHandle): Promise<void> {
  await CancellationScope.nonCancellable(async () => {
    const first = patched(TAINT_GIVE_BACK_FIRST_PATCH);
    if (first) await withdraw(d.node, slots);
    await clearAll(d, first);
    if (!first) await withdraw(d.node, slots);
  });
}

/** Tells the coordinator the node is ending (it asks the workflow itself what it still holds: nothing). */
async function withdraw(node: string, slots: ExternalHandle): Promise<void> {
  try {
    await slots.signal(withdrawNodeSignal, { node });
  } catch (err) {
    // The coordinator gets these slots back by checking their holder (slots.ts).
    log.warn('withdrawing the node from the coordinator failed', { node, error: failureMessage(err) });
  }
}

/**
 * Clears every condition this workflow set, until they are cleared (patched: before, one try),
 * the reason in the Web UI's Current Details. Terminating the workflow ends the tries.
 */
async function clearAll(d: NodeTaintData, givenBack: boolean): Promise<void> {
  const writes = clears(d);
  if (writes.length === 0) return;
  const untilDone = patched(TAINT_CLEAR_UNTIL_DONE_PATCH);
  for (;;) {
    try {
      await kube.writeTaintConditions.executeWithOptions(said(summary.writeSummary(d.node, writes)), [{ node: d.node, writes }]);
      for (const w of writes) markWritten(d, w);
      return;
    } catch (err) {
      log.warn('clearing the taint conditions failed', { node: d.node, error: failureMessage(err), ...(untilDone ? { retryInMs: STEP_RETRY_MS } : {}) });
      if (!untilDone || refusalOf(err, [TAINT_REFUSED])) return;
      setCurrentDetails(clearingDetails(d.node, writes.length, failureMessage(err), givenBack));
      await sleep(STEP_RETRY_MS);
    }
  }
}

/** Runs the node until it is done (false) or should continue as new (true). */
async function runNode(
  node: string, carried: NodeTaintData | undefined, publish: (m: NodeRun) => void, slots: ExternalHandle, ending: { now: boolean }, capped: boolean,
): Promise<boolean> {
  const inbox = new NodeInbox(carried);
  let dirty = true;
  const changed = (what: string, why: string | undefined) => {
    noted(what, why);
    dirty = true;
  };
  setHandler(replacementGrantedSignal, (msg) => changed('replacementsGranted', inbox.granted(msg)));
  // What the coordinator believes before it frees a slot this node gave back: nothing once ending.
  setHandler(nodeSlotsQuery, () => (inbox.data && !ending.now ? nodeSlots(inbox.data) : { held: [], asking: [] }));
  // Answered from the first workflow task on (a run continued as new is queried while it reads the node).
  setHandler(nodeStatusQuery, () => (inbox.data ? statusRows(inbox.data) : []));
  const onTaints = (msg: unknown) => changed('nodeTaints', inbox.taints(msg));
  // A new run reads, lists and marks in one activity, with the hints of the signals it was started with
  // (their handler set first, so that they are taken in before the activity is asked).
  const startsListing = !carried && patched(TAINT_START_LIST_PATCH);
  if (startsListing) {
    setHandler(nodeTaintsSignal, onTaints);
    // Those signals are read with the node; one that comes while the activity runs has the node read again.
    inbox.recheck = false;
  }
  const first = await firstRead(node, startsListing, inbox.hints);
  if (!carried && first.taints.length === 0) {
    // A new workflow for a node without a configured taint: nothing it could do (a run carried
    // over by continue-as-new goes on, to clear its pods' conditions once the taint has gone).
    throw refused(untaintedRefusal(node, first.missing === true, first.settings.taintReplacementOptions));
  }
  const run = new NodeRun(carried ? { ...carried, settings: first.settings } : newNodeTaintData(node, first.settings));
  inbox.started(run);
  publish(run);
  if (!startsListing) setHandler(nodeTaintsSignal, onTaints);
  run.first(first, inbox.hints, startsListing, Date.now());
  // The signals delivered with the start were sent before `first` was read.
  if (!startsListing) run.recheck = false;
  setHandler(podsChangedSignal, () => {
    run.listNeeded = dirty = true;
  });
  // A fresh coordinator asks: the slots held are told to it, the pods queued ask again. An ask
  // not answered before continue-as-new is carried over (data.announce), never lost.
  setHandler(announceSlotsSignal, () => {
    run.announce = dirty = true;
  });
  /** Replacement activities under way, by pod. */
  const running = new Map<string, Promise<void>>();
  let taskFailure: unknown;
  const launch = (op: ReplaceOp) => {
    const task = replace(run, op)
      .catch((err: unknown) => {
        if (!isCancellation(err)) taskFailure ??= err;
      })
      .finally(() => {
        running.delete(op.uid);
        dirty = true;
      });
    running.set(op.uid, task);
  };
  for (;;) {
    dirty = false;
    if (taskFailure) throw taskFailure;
    // One turn: the machine's operations, each run here and its outcome handed back.
    for (;;) {
      const op = run.next(Date.now(), { running: new Set(running.keys()), woken: dirty, continueSuggested: continueSuggested(capped) });
      if (op.kind === 'read') {
        const state = await step(node, 'reading the node', () => taintNodeState.executeWithOptions(said(summary.nodeReadSummary(node)), [{ node }]));
        run.apply({ kind: 'read', state, hints: inbox.hints }, Date.now());
      } else if (op.kind === 'list') {
        // The pods the list finds new get their first mark from the listing activity itself:
        // its list is their re-read, and their mark needs no activity (nor workflow task) of its own.
        const mark = run.listMark(patched(TAINT_LIST_MARKS_PATCH), op.listedAt);
        const listing = await step(node, 'listing the pods', () => kube.listTaintPods.executeWithOptions(said(summary.listSummary(node, !!mark)), [{ node, ...(mark ? { mark } : {}) }]));
        run.apply({ kind: 'list', listing, mark, listedAt: op.listedAt }, Date.now());
      } else if (op.kind === 'write') {
        const done = await step(node, 'writing the conditions', () => kube.writeTaintConditions.executeWithOptions(said(summary.writeSummary(node, op.writes)), [{ node, writes: [...op.writes] }]));
        run.apply({ kind: 'write', ok: done !== undefined, marked: done?.marked }, Date.now());
      } else if (op.kind === 'replace') {
        for (const r of op.steps) launch(r);
      } else if (op.kind === 'tell') {
        await deliver(run, slots);
      } else if (op.kind === 'done' || op.kind === 'continue') {
        return op.kind === 'continue';
      } else if (op.kind === 'again') {
        break;
      } else {
        // The Web UI's Current Details (records no command).
        setCurrentDetails(nodeDetails(run.data, running.size, op.until, run.stepRetryAt !== undefined));
        if (op.until === undefined) await condition(() => dirty);
        else await condition(() => dirty, Math.max(1, op.until - Date.now()));
        break;
      }
    }
  }
}

/** The first read: the node's taints and settings, and for a new run (`listing`) its pods listed and marked. */
async function firstRead(node: string, listing: boolean, hints: ReadonlyMap<string, number>): Promise<NodeFirstRead> {
  // Refuses (non-retryably) when the worker has no taint replacement configured, or the name is no node's.
  if (!listing) return await taintNodeState.executeWithOptions(said(summary.nodeReadSummary(node)), [{ node }]);
  // Dated with this task's time: the local activity's answer comes back within this task.
  return await (patched(TAINT_START_LOCAL_PATCH) ? taintNodeStartHere.executeWithOptions(said(summary.nodeStartSummary(node)), [{ node, hints: Object.fromEntries(hints), at: Date.now() }])
    : taintNodeStart.executeWithOptions(said(summary.nodeStartSummary(node)), [{ node, hints: Object.fromEntries(hints) }]));
}

/**
 * Runs one activity of the node's own steps. A refusal (or a cancellation) ends the workflow;
 * any other failure (its retries exhausted) is logged and answered undefined: the machine tries
 * the step again after STEP_RETRY_MS.
 */
async function step<T>(node: string, what: string, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (err) {
    if (isCancellation(err) || refusalOf(err, [TAINT_REFUSED])) throw err;
    log.warn(`${what} failed; trying again in ${STEP_RETRY_MS / 1000} s`, { node, error: failureMessage(err) });
    return undefined;
  }
}

/** One replacement step of a pod holding a slot (its eviction, or the wait for its replacement), its outcome handed to the machine. */
async function replace(run: NodeRun, op: ReplaceOp): Promise<void> {
  if (op.kind === 'evict') {
    // Its own activity: the eviction is in the history the moment it is done.
    const r = await kube.evictPod.executeWithOptions(said(summary.evictSummary({ node: run.data.node, ...run.data.pods[op.uid]! })), [run.evictInput(op.uid)]).catch((err: unknown): EvictOutcome => {
      if (isCancellation(err)) throw err;
      const refusal = refusalOf(err, [TAINT_REFUSED]);
      return refusal ? { outcome: 'refused', message: refusal.message } : { outcome: 'failed', message: failureMessage(err) };
    });
    return run.evicted(op.uid, r, Date.now());
  }
  const r = await waiting.awaitReplacement.executeWithOptions(said(summary.awaitSummary(run.data.pods[op.uid]!)), [run.awaitInput(op.uid, op.waitMs)]).catch((err: unknown) => {
    if (isCancellation(err)) throw err;
    return { failed: failureMessage(err) };
  });
  run.awaited(op.uid, r, Date.now());
}

/**
 * Tells the coordinator what the node owes it: the slots held, when a fresh coordinator asked
 * (announceSlots), then the outbox, one signal each way however many pods (signals are billed).
 */
async function deliver(run: NodeRun, slots: ExternalHandle): Promise<void> {
  const node = run.data.node;
  try {
    const held = run.announcement(Date.now());
    if (held) {
      if (held.length > 0) await slots.signal(slotsHeldSignal, { node, held });
      run.announce = false;
    }
    const requests = run.requests(Date.now());
    if (!requests) return;
    if (requests.uids.length > 0) {
      for (const batch of requests.batches) await slots.signal(requestReplacementSignal, { node, requests: batch });
      run.sent('request', requests.uids);
    }
    const releases = run.releases();
    if (releases.uids.length > 0) {
      for (const uids of releases.batches) await slots.signal(releaseReplacementSignal, { node, uids });
      run.sent('release', releases.uids);
    }
    run.delivery(undefined);
  } catch (err) {
    if (isCancellation(err)) throw err;
    // The coordinator is started by the watcher before any node workflow; if it is not
    // there (yet), what is owed stays for later, sent again after the resend wait.
    run.delivery(Date.now());
  }
}

export interface TaintReplacementsInput {
  data?: SlotData;
}

/** The cluster-wide replacement slots: long-lived, continues as new as its history grows. */
export async function taintReplacementsWorkflow(input: TaintReplacementsInput = {}): Promise<void> {
  const id = workflowInfo().workflowId;
  if (id !== SLOTS_WORKFLOW_ID) throw refused(`the coordinator runs as ${SLOTS_WORKFLOW_ID} only, not as ${preview(id, 80)}`);
  // The limits come from the worker's configuration (refused when it has no
  // taint replacement), the breaker's counts from the Nodes: the settings and
  // nodeCounts signals only say "look again". Only the slots themselves are
  // carried over, each checked as a request is; limits and counts start at the
  // most cautious values until read, so that a forged input can never lend them its own.
  const tooBig = pastLimits(input, CARRIED_LIMITS);
  if (tooBig) log.warn(`the start input is ignored: ${tooBig}`);
  const s = Slots.carried(tooBig ? undefined : carriedFromOwnRun(input?.data), Date.now());
  const c = new Coordinator(s, {
    verifies: patched(TAINT_VERIFY_GIVE_BACK_PATCH),
    adoptsConfirmed: patched(TAINT_ADOPT_CONFIRMED_PATCH),
    withdrawsUndelivered: patched(TAINT_UNDELIVERED_WITHDRAWS_PATCH),
    asksAgain: patched(TAINT_HINT_WHILE_ASKING_PATCH),
  });
  const capped = patched(TAINT_HISTORY_BYTES_PATCH);
  let dirty = true;
  /** What a handler could not take is logged; the loop runs again. */
  const changed = (what?: string, why?: string) => {
    if (what) noted(what, why);
    dirty = true;
  };
  setHandler(slotSettingsSignal, () => {
    c.settingsStale = true;
    changed();
  });
  setHandler(nodeCountsSignal, () => {
    c.countsStale = true;
    changed();
  });
  setHandler(requestReplacementSignal, (m) => changed('requestReplacements', c.requests(m, Date.now())));
  setHandler(releaseReplacementSignal, (m) => changed('releaseReplacements', c.releases(m)));
  setHandler(withdrawNodeSignal, (m) => changed('withdrawNode', c.withdrawal(m)));
  setHandler(slotsHeldSignal, (m) => changed('slotsHeld', c.held(m, Date.now())));
  setHandler(slotsStatusQuery, () => ({ ...s.toData(), breakerOpen: s.breakerOpen() }));

  for (;;) {
    dirty = false;
    // One turn: the machine's operations, each run here and its outcome handed back.
    for (;;) {
      const op = c.next(Date.now(), { woken: dirty, continueSuggested: continueSuggested(capped) });
      if (op.kind === 'read') {
        await readSlotInputs(c, op.what);
      } else if (op.kind === 'ask') {
        await askHolders(c, op.nodes);
        dirty = true;
      } else if (op.kind === 'send') {
        if (await sendGrants(c, op.grants)) dirty = true;
      } else if (op.kind === 'announce') {
        // Nodes refused for room: asked to ask again now that there is room.
        await Promise.all(op.nodes.map((node) => getExternalWorkflowHandle(nodeWorkflowId(node)).signal(announceSlotsSignal).catch((err: unknown) => {
          if (isCancellation(err)) throw err;
        })));
      } else if (op.kind === 'continue') {
        await condition(allHandlersFinished);
        // Requests, releases and grants that land from here on are in `s` (handlers
        // update it) or make the server reject this ending, so none is lost.
        return await continueAsNew<typeof taintReplacementsWorkflow>({ data: s.toData() });
      } else if (op.kind === 'again') {
        break;
      } else {
        // The Web UI's Current Details (records no command).
        setCurrentDetails(slotsDetails(s, s.breakerOpen(), c.stale()));
        if (op.until === undefined) await condition(() => dirty);
        else await condition(() => dirty, Math.max(1, op.until - Date.now()));
        break;
      }
    }
  }
}

/** Reads the settings or the counts; refusals end the workflow, other failures are retried later. */
async function readSlotInputs(c: Coordinator, what: 'settings' | 'counts'): Promise<void> {
  try {
    c.read(what === 'settings' ? await taintSlotSettings.executeWithOptions(said(summary.slotSettingsSummary), []) : await taintNodeCounts.executeWithOptions(said(summary.nodeCountsSummary), []));
  } catch (err) {
    if (isCancellation(err) || refusalOf(err, [TAINT_REFUSED])) throw err;
    log.warn(`${what === 'settings' ? 'reading the settings' : 'counting the nodes'} failed; trying again in ${STEP_RETRY_MS / 1000} s`, { error: failureMessage(err) });
    c.readFailed(Date.now());
  }
}

/** Sends grants (new ones, or again to check their holders); a holder that has ended gets its slots taken back (true: some did). */
async function sendGrants(c: Coordinator, grants: Grant[]): Promise<boolean> {
  let undelivered = false;
  await Promise.all([...byNode(grants)].map(async ([node, uids]) => {
    try {
      await getExternalWorkflowHandle(nodeWorkflowId(node)).signal(replacementGrantedSignal, { uids });
    } catch (err) {
      if (isCancellation(err)) throw err;
      c.undelivered(node, uids);
      undelivered = true;
    }
  }));
  return undelivered;
}

/** Asks the workflows of nodes said to have given slots back (or to hold some) what they hold. */
async function askHolders(c: Coordinator, nodes: readonly string[]): Promise<void> {
  await Promise.all(nodes.map(async (node) => {
    try {
      c.holder(node, await kube.taintNodeSlots.executeWithOptions(said(summary.holderSummary(node)), [{ node }]), Date.now());
    } catch (err) {
      if (isCancellation(err)) throw err;
      c.unanswered(node, refusalOf(err, [TAINT_REFUSED]) !== undefined, Date.now());
      log.warn('asking a node workflow for the slots it holds failed', { node, error: failureMessage(err) });
    }
  }));
}

/** A refusal of the workflow's own input: it ends the workflow, nothing retried. */
function refused(what: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`refused: ${what}; nothing was changed`, TAINT_REFUSED);
}

/** What a handler could not take, said once per message (the reason only: never the value). */
function noted(what: string, why: string | undefined): void {
  if (why) log.warn(`${what} refused: ${why}`);
}
