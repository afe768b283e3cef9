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
import {
  carriedData, firstMark, markWritten, newNodeTaintData, nodeDetails, observeTaints, reconcilePods, believedSeenAt, statusRows, type ConditionWrite,
  type NodeTaintData, type TaintSettings,
} from '../taint/node.ts';
import {
  fieldOf, grantedUids, NODE_MESSAGE_BOUNDS, nodeCountsSignal, sameNode, takeEach, taintHints, nodeSlotsQuery, nodeStatusQuery, nodeTaintsSignal, nodeWorkflowId, podsChangedSignal, releaseReplacementSignal,
  replacementGrantedSignal, requestReplacementSignal, SLOTS_WORKFLOW_ID, slotSettingsSignal, slotsStatusQuery, TAINT_REFUSED,
  withdrawNodeSignal, announceSlotsSignal, slotsHeldSignal, type SlotSettings,
} from '../taint/messages.ts';
import { pastLimits, type ValueLimits } from '../checks/limits.ts';
import { preview } from '../checks/preview.ts';
import { failureMessage, refusalOf } from './failures.ts';
import { taintId, type MatchedTaint } from '../taint/match.ts';
import { carriedFromOwnRun } from './carried.ts';
import type { TaintNodeStartResult } from '../activities/taint.ts';
import {
  askFor, awaitDone, evictDone, holders, noteGrants, outboxOf, STEP_RETRY_MS, type EvictOutcome,
  type ReplaceOp,
} from '../taint/replace.ts';
import { NodeMachine, nodeSlots } from '../taint/node-machine.ts';
import { byNode, nodeNameProblem, SLOT_BOUNDS, Slots, slotsDetails, type Grant, type SlotData } from '../taint/slots.ts';

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

/**
 * The listing activity writes the first mark of the pods it finds new (one
 * activity and one workflow task less per node, and no GET per pod); histories
 * from before it list, then write. docs/upgrading.md.
 */
export const TAINT_LIST_MARKS_PATCH = 'taint-list-marks';

/**
 * A new run reads the node, lists its pods and writes their first mark in one
 * activity (taintNodeStart): one activity, one workflow task and one Node read
 * less per node; histories from before it read the node, then list.
 * docs/upgrading.md.
 */
export const TAINT_START_LIST_PATCH = 'taint-start-list';

/**
 * Bounds on a start input (carried state): a node's data (a few hundred pods) and the
 * coordinator's (SLOT_BOUNDS) fit well within them; past them the input is ignored.
 */
const CARRIED_LIMITS: ValueLimits = Object.freeze({ maxDepth: 8, maxNodes: 200_000, maxChars: 1536 * 1024 });

/** How long to wait before sending the coordinator a message again after it could not be delivered. */
const RESEND_MS = 10_000;

const { taintNodeState, taintSlotSettings, taintNodeCounts } = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry });
// Reads the node and lists and marks its pods: the listing's minute.
const { taintNodeStart } = proxyActivities<Activities>({ startToCloseTimeout: '1m', retry });

/**
 * A new run's first step (taintNodeStart) runs as a local activity: in the worker that runs
 * the workflow task, its result recorded with the task's completion, rather than scheduled
 * through the server as a task of its own. That is one workflow task, one activity task and
 * three history events less per node, where a zone outage starts hundreds at once.
 * docs/upgrading.md.
 */
export const TAINT_START_LOCAL_PATCH = 'taint-start-local';
/**
 * A node workflow that ends (cancelled, failed) clears the conditions it set until they are
 * cleared, STEP_RETRY_MS after each write that ran out of attempts, the reason in its Current
 * Details; before, one failed clear was logged and the conditions outlived the workflow. Only a
 * refusal ends the tries. docs/upgrading.md.
 */
export const TAINT_CLEAR_UNTIL_DONE_PATCH = 'taint-clear-until-done';
// The same minute and retries; they back off inside the worker (none waits as long as the SDK's one-minute
// threshold past which a local activity's retry waits on a timer), the workflow task kept alive meanwhile.
const { taintNodeStart: taintNodeStartHere } = proxyLocalActivities<Activities>({ startToCloseTimeout: '1m', retry });

export interface TaintNodeResult {
  node: string;
  replaced: string[];
}

export async function taintNodeWorkflow(input: TaintNodeInput): Promise<TaintNodeResult> {
  const tooBig = pastLimits(input, CARRIED_LIMITS);
  if (tooBig) throw refused(`the start input: ${tooBig}`);
  const node = typeof input?.node === 'string' ? input.node : '';
  const id = workflowInfo().workflowId;
  const badName = nodeNameProblem(node);
  if (badName) throw refused(`${badName} (${preview(input?.node, 80)})`);
  if (id !== nodeWorkflowId(node)) throw refused(`the workflow of node ${node} runs as ${nodeWorkflowId(node)} only, not as ${preview(id, 80)}`);
  const carried = carriedData(node, carriedFromOwnRun(input?.data));
  // The data this run acts on (undefined until the first read, for a new run).
  let d: NodeTaintData | undefined = carried;
  const slots = getExternalWorkflowHandle(SLOTS_WORKFLOW_ID);
  // Set as the workflow starts to end: from then on it holds and asks for no slot.
  const ending = { now: false };
  let continuing = false;
  try {
    continuing = await runNode(node, carried, (data) => (d = data), slots, ending);
  } catch (err) {
    // Cancelled (from the Web UI, or the feature was disabled), or failed
    // (refused, or a bug): clear every condition this workflow set and give
    // back its slots, whatever the ending, so nothing outlives the workflow.
    if (d) {
      ending.now = true;
      await cleanUp(d, slots);
    }
    throw err;
  }
  if (continuing && d) {
    await condition(allHandlersFinished);
    return await continueAsNew<typeof taintNodeWorkflow>({ node: d.node, data: d });
  }
  return { node, replaced: d ? Object.values(d.pods).filter((p) => p.state === 'Replaced').map((p) => `${p.namespace}/${p.name}`) : [] };
}

/**
 * An ending node workflow gives its slots and requests back before it clears its pods'
 * conditions, so that clears that keep failing (a 403, an API server away) never hold the
 * cluster's slots; before, it gave them back after its last clear. docs/upgrading.md.
 */
export const TAINT_GIVE_BACK_FIRST_PATCH = 'taint-give-back-first';

/** Gives the node's slots and requests back, and clears the conditions set, in a non-cancellable scope; errors are logged. */
async function cleanUp(d: NodeTaintData, slots: ReturnType<typeof getExternalWorkflowHandle>): Promise<void> {
  await CancellationScope.nonCancellable(async () => {
    const first = patched(TAINT_GIVE_BACK_FIRST_PATCH);
    if (first) await withdraw(d.node, slots);
    await clearAll(d, first);
    if (!first) await withdraw(d.node, slots);
  });
}

/** Tells the coordinator the node is ending (it asks the workflow itself what it still holds: nothing). */
async function withdraw(node: string, slots: ReturnType<typeof getExternalWorkflowHandle>): Promise<void> {
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
  const writes: ConditionWrite[] = Object.values(d.pods)
    .filter((p) => p.written.detected !== undefined || p.written.replacing !== undefined)
    .map((p) => ({ uid: p.uid, namespace: p.namespace, name: p.name, detected: null, replacing: null }));
  if (writes.length === 0) return;
  const untilDone = patched(TAINT_CLEAR_UNTIL_DONE_PATCH);
  for (;;) {
    try {
      await kube.writeTaintConditions({ node: d.node, writes });
      for (const w of writes) markWritten(d, w);
      return;
    } catch (err) {
      log.warn('clearing the taint conditions failed', { node: d.node, error: failureMessage(err), ...(untilDone ? { retryInMs: STEP_RETRY_MS } : {}) });
      if (!untilDone || refusalOf(err, [TAINT_REFUSED])) return;
      setCurrentDetails(`ending: clearing the taint conditions of ${writes.length} pod(s) on node ${d.node} failed (${failureMessage(err)}); ` +
        `tried again every ${STEP_RETRY_MS / 1000} s until they are cleared.${givenBack ? ' Its replacement slots are given back already.' : ''} ` +
        'Terminating the workflow ends the tries and leaves the conditions on the pods');
      await sleep(STEP_RETRY_MS);
    }
  }
}

/** Runs the node until it is done (false) or should continue as new (true). */
async function runNode(
  node: string, carried: NodeTaintData | undefined, publish: (d: NodeTaintData) => void, slots: ReturnType<typeof getExternalWorkflowHandle>,
  ending: { now: boolean },
): Promise<boolean> {
  let d: NodeTaintData | undefined = carried;
  let dirty = true;
  // Grants that land before the first read are kept (for a resumed run, in its carried data).
  const early: string[] = [];
  setHandler(replacementGrantedSignal, (m) => {
    const { uids, why } = grantedUids(m);
    noted('replacementsGranted', why);
    if (d) noteGrants(d, uids);
    else if (early.length + uids.length <= NODE_MESSAGE_BOUNDS.uids) early.push(...uids);
    dirty = true;
  });
  // What the coordinator believes before it frees a slot this node gave back: nothing once ending.
  setHandler(nodeSlotsQuery, () => (d && !ending.now ? nodeSlots(d) : { held: [], asking: [] }));
  // Answered from the first workflow task on (a run continued as new is queried while it reads the node).
  setHandler(nodeStatusQuery, () => (d ? statusRows(d) : []));
  // The watcher's first sight of each taint (a hint, for taints without timeAdded).
  const seenHints = new Map<string, number>();
  let recheck = false;
  const onTaints = (m: unknown) => {
    const { taints, why } = taintHints(m);
    noted('nodeTaints', why);
    for (const t of taints) seenHints.set(taintId(t), t.seenAt);
    recheck = true;
    dirty = true;
  };
  // A new run reads, lists and marks in one activity, with the hints of the signals it was started with
  // (their handler set first, so that they are taken in before the activity is asked).
  const startsListing = !carried && patched(TAINT_START_LIST_PATCH);
  if (startsListing) {
    setHandler(nodeTaintsSignal, onTaints);
    // Those signals are read with the node; one that comes while the activity runs has the node read again.
    recheck = false;
  }
  // Refuses (non-retryably) when the worker has no taint replacement configured, or the name is no node's.
  const first: TaintNodeStartResult = startsListing
    ? await (patched(TAINT_START_LOCAL_PATCH)
      // Dated with this task's time: the local activity's answer comes back within this task.
      ? taintNodeStartHere({ node, hints: Object.fromEntries(seenHints), at: Date.now() })
      : taintNodeStart({ node, hints: Object.fromEntries(seenHints) }))
    : await taintNodeState({ node });
  if (!carried && first.taints.length === 0) {
    // A new workflow for a node without a configured taint: nothing it could do (a run carried
    // over by continue-as-new goes on, to clear its pods' conditions once the taint has gone).
    throw refused(`node ${node} carries none of the configured taints (${first.settings.taintReplacementOptions.map((o) => o.key).join(', ')})`);
  }
  const machine = new NodeMachine(carried ? { ...carried, settings: first.settings } : newNodeTaintData(node, first.settings));
  const data = machine.data;
  d = data;
  publish(data);
  noteGrants(data, early);
  let listNeeded = true;
  let stepRetryAt: number | undefined;
  let resendAt: number | undefined;
  /** Replacement activities under way, by pod. */
  const running = new Map<string, Promise<void>>();
  let taskFailure: unknown;

  const observe = (state: { taints: MatchedTaint[]; settings: TaintSettings }) => {
    if (data.taints.length === 0 && state.taints.length > 0) listNeeded = true;
    const now = Date.now();
    const taints = state.taints.map((t) => {
      const hint = seenHints.get(taintId(t));
      return hint === undefined ? t : { ...t, seenAt: believedSeenAt(hint, now) };
    });
    observeTaints(data, taints, state.settings, now);
  };
  if (startsListing) {
    // The taints carry the first sights the activity decided the mark with: taken as they are.
    observeTaints(data, first.taints, first.settings, Date.now());
    if (first.pods) {
      listNeeded = false;
      reconcilePods(data, first.pods, first.listedAt!);
      if (first.mark) for (const uid of first.written ?? []) markWritten(data, { uid, namespace: '', name: '', ...first.mark }, first.marked?.[uid]);
    }
  } else {
    setHandler(nodeTaintsSignal, onTaints);
    // The signals delivered with the start were sent before `first` was read.
    observe(first);
    recheck = false;
  }
  setHandler(podsChangedSignal, () => {
    listNeeded = true;
    dirty = true;
  });
  // A fresh coordinator asks: the slots held are told to it, the pods queued ask again. An ask
  // not answered before continue-as-new is carried over (data.announce), never lost.
  let announce = carried?.announce === true;
  setHandler(announceSlotsSignal, () => {
    announce = true;
    dirty = true;
  });

  /**
   * Runs one activity of the node's own steps. A refusal (or a cancellation)
   * ends the workflow; any other failure (its retries exhausted) is logged and
   * the step is tried again after STEP_RETRY_MS.
   */
  const step = async <T>(what: string, call: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await call();
    } catch (err) {
      if (isCancellation(err) || refusalOf(err, [TAINT_REFUSED])) throw err;
      log.warn(`${what} failed; trying again in ${STEP_RETRY_MS / 1000} s`, { node, error: failureMessage(err) });
      stepRetryAt = Date.now() + STEP_RETRY_MS;
      return undefined;
    }
  };

  const launch = (op: ReplaceOp) => {
    const pod = data.pods[op.uid]!;
    const target = { namespace: pod.namespace, name: pod.name, uid: pod.uid };
    const task = (async () => {
      if (op.kind === 'evict') {
        // Its own activity: the eviction is in the history the moment it is done.
        let r: EvictOutcome;
        try {
          r = await kube.evictPod({ node, ...target, ...(pod.observed ? { observed: true } : {}) });
        } catch (err) {
          if (isCancellation(err)) throw err;
          const refusal = refusalOf(err, [TAINT_REFUSED]);
          r = refusal ? { outcome: 'refused', message: refusal.message } : { outcome: 'failed', message: failureMessage(err) };
        }
        evictDone(data, op.uid, r, Date.now());
      } else {
        let r: 'replaced' | 'pending' | { failed: string };
        try {
          r = await waiting.awaitReplacement({
            ...target, controllerUid: pod.controllerUid!, ...(pod.controller ? { controller: pod.controller } : {}),
            ...(pod.createdAt !== undefined ? { createdAt: pod.createdAt } : {}), waitMs: op.waitMs,
          });
        } catch (err) {
          if (isCancellation(err)) throw err;
          r = { failed: failureMessage(err) };
        }
        awaitDone(data, op.uid, r, Date.now());
      }
    })()
      .catch((err: unknown) => {
        if (!isCancellation(err)) taskFailure ??= err;
      })
      .finally(() => {
        running.delete(op.uid);
        dirty = true;
      });
    running.set(op.uid, task);
  };

  /** Answers a fresh coordinator's announceSlots: what this node holds, and its queued pods asked for again. */
  const announceHeld = async () => {
    if (!announce || (resendAt !== undefined && Date.now() < resendAt)) return;
    askFor(data, Object.values(data.pods).filter((p) => p.state === 'Queued').map((p) => p.uid));
    const held = holders(data).map((uid) => {
      const pod = data.pods[uid]!;
      return { node, uid, pod: `${pod.namespace}/${pod.name}`, requestedAt: Date.now() };
    });
    try {
      if (held.length > 0) await slots.signal(slotsHeldSignal, { node, held });
      announce = false;
    } catch (err) {
      if (isCancellation(err)) throw err;
      // The coordinator is not there (yet): the outbox's resend timer brings us back.
      resendAt = Date.now() + RESEND_MS;
    }
  };

  /** Delivers the outbox to the coordinator: one signal each way, however many pods (signals are billed). */
  const flush = async () => {
    const out = outboxOf(data);
    if (out.request.length === 0 && out.release.length === 0) return;
    if (resendAt !== undefined && Date.now() < resendAt) return;
    try {
      if (out.request.length > 0) {
        const uids = [...out.request];
        const requests = uids.filter((uid) => data.pods[uid]).map((uid) => {
          const pod = data.pods[uid]!;
          return { node, uid, pod: `${pod.namespace}/${pod.name}`, requestedAt: Date.now() };
        });
        // At most SLOT_BOUNDS.requestsPerSignal a signal (one, for any node a kubelet runs).
        for (let i = 0; i < requests.length; i += SLOT_BOUNDS.requestsPerSignal) {
          await slots.signal(requestReplacementSignal, { node, requests: requests.slice(i, i + SLOT_BOUNDS.requestsPerSignal) });
        }
        const sent = new Set(uids);
        out.request = out.request.filter((u) => !sent.has(u));
      }
      if (out.release.length > 0) {
        const uids = [...out.release];
        for (let i = 0; i < uids.length; i += SLOT_BOUNDS.requestsPerSignal) {
          await slots.signal(releaseReplacementSignal, { node, uids: uids.slice(i, i + SLOT_BOUNDS.requestsPerSignal) });
        }
        const sent = new Set(uids);
        out.release = out.release.filter((u) => !sent.has(u));
      }
      resendAt = undefined;
    } catch (err) {
      if (isCancellation(err)) throw err;
      // The coordinator is started by the watcher before any node workflow; if
      // it is not there (yet), the messages stay in the outbox for later.
      resendAt = Date.now() + RESEND_MS;
    }
  };

  for (;;) {
    dirty = false;
    if (taskFailure) throw taskFailure;
    if (stepRetryAt !== undefined && Date.now() >= stepRetryAt) stepRetryAt = undefined;
    const stepsPaused = stepRetryAt !== undefined;
    if (recheck && !stepsPaused) {
      recheck = false;
      const state = await step('reading the node', () => taintNodeState({ node }));
      if (state) observe(state);
      else recheck = true;
    }
    if (listNeeded && data.taints.length > 0 && stepRetryAt === undefined) {
      listNeeded = false;
      // The pods the list finds new get their first mark from the listing activity itself:
      // its list is their re-read, and their mark needs no activity (nor workflow task) of its own.
      const listedAt = Date.now();
      const first = patched(TAINT_LIST_MARKS_PATCH) ? firstMark(data, listedAt) : undefined;
      const mark = first && { known: Object.keys(data.pods), ...first };
      const listed = await step('listing the pods', () => kube.listTaintPods({ node, ...(mark ? { mark } : {}) }));
      if (listed && Array.isArray(listed)) reconcilePods(data, listed, Date.now());
      else if (listed) {
        reconcilePods(data, listed.pods, mark ? listedAt : Date.now());
        if (mark) for (const uid of listed.written) markWritten(data, { uid, namespace: '', name: '', ...first! }, listed.marked[uid]);
      } else listNeeded = true;
    }
    const decision = machine.decide(Date.now());
    const writes = decision.writes;
    let written = true;
    if (writes.length > 0) {
      const done = stepRetryAt === undefined ? await step('writing the conditions', () => kube.writeTaintConditions({ node, writes })) : undefined;
      if (done) {
        for (const w of writes) markWritten(data, w, done.marked?.[w.uid]);
        // A mark just became visible: its deadline counts from now on.
        dirty = true;
      } else {
        written = false;
      }
    }
    const replacements = machine.settle(decision, written, new Set(running.keys()), Date.now());
    // Continuing as new: no new activity; those under way finish first (each is bounded).
    const continuing = workflowInfo().continueAsNewSuggested;
    if (!continuing) for (const op of replacements.ops) launch(op);
    await announceHeld();
    await flush();
    const out = outboxOf(data);
    const quiet = running.size === 0 && out.request.length === 0 && out.release.length === 0 && (data.granted ?? []).length === 0;
    if (decision.done && quiet && !dirty) return false;
    if (continuing && running.size === 0) {
      if (announce) data.announce = true;
      else delete data.announce;
      return true;
    }
    if (dirty) continue;
    const next = [decision.nextAt, replacements.nextAt, stepRetryAt, out.request.length + out.release.length > 0 || announce ? resendAt : undefined]
      .filter((t): t is number => t !== undefined);
    // The Web UI's Current Details (records no command).
    setCurrentDetails(nodeDetails(data, running.size, next.length > 0 ? Math.min(...next) : undefined, stepRetryAt !== undefined));
    if (next.length === 0) await condition(() => dirty);
    else await condition(() => dirty, Math.max(1, Math.min(...next) - Date.now()));
  }
}

export interface TaintReplacementsInput {
  data?: SlotData;
}

/**
 * A give-back (releaseReplacements, withdrawNode) frees a slot only once the node's workflow
 * itself, asked by an activity (taintNodeSlots: its slots query, or a describe when it has
 * ended), no longer holds it: anyone can send the message. Before, the message freed it.
 * docs/upgrading.md.
 */
export const TAINT_VERIFY_GIVE_BACK_PATCH = 'taint-verify-give-back';

/** Nodes whose workflow is asked what it holds at once. */
const VERIFY_AT_ONCE = 16;

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
  const verifies = patched(TAINT_VERIFY_GIVE_BACK_PATCH);
  let dirty = true;
  let settingsStale = true;
  let countsStale = true;
  let retryAt: number | undefined;
  const changed = () => {
    dirty = true;
  };

  setHandler(slotSettingsSignal, () => {
    settingsStale = true;
    changed();
  });
  setHandler(nodeCountsSignal, () => {
    countsStale = true;
    changed();
  });
  setHandler(requestReplacementSignal, (m) => {
    noted('requestReplacements', takeEach(m, 'requests', SLOT_BOUNDS.requestsPerSignal, (r, node) => sameNode(r, node) ?? s.request(r, Date.now())));
    changed();
  });
  setHandler(releaseReplacementSignal, (m) => {
    if (verifies) noted('releaseReplacements', pastLimits(m) ?? s.giveBackHint(fieldOf(m, 'node')));
    else {
      noted('releaseReplacements', takeEach(m, 'uids', SLOT_BOUNDS.requestsPerSignal, (uid) => {
        if (typeof uid === 'string') s.release(uid);
        return undefined;
      }));
    }
    changed();
  });
  setHandler(withdrawNodeSignal, (m) => {
    const why = pastLimits(m);
    if (verifies || why) noted('withdrawNode', why ?? s.giveBackHint(fieldOf(m, 'node')));
    else if (!nodeNameProblem(fieldOf(m, 'node'))) s.withdraw(fieldOf(m, 'node') as string);
    changed();
  });
  setHandler(slotsHeldSignal, (m) => {
    noted('slotsHeld', takeEach(m, 'held', SLOT_BOUNDS.requestsPerSignal, (h, node) => sameNode(h, node) ?? s.adopt(h, Date.now())));
    changed();
  });
  setHandler(slotsStatusQuery, () => ({ ...s.toData(), breakerOpen: s.breakerOpen() }));

  /** Reads settings or counts; refusals end the workflow, other failures are retried later. */
  const read = async (what: string, call: () => Promise<SlotSettings | { taintedNodes: number; totalNodes: number }>): Promise<boolean> => {
    try {
      const v = await call();
      if ('taintedNodes' in v) s.setCounts(v);
      else s.setSettings(v);
      return true;
    } catch (err) {
      if (isCancellation(err) || refusalOf(err, [TAINT_REFUSED])) throw err;
      log.warn(`${what} failed; trying again in ${STEP_RETRY_MS / 1000} s`, { error: failureMessage(err) });
      retryAt = Date.now() + STEP_RETRY_MS;
      return false;
    }
  };

  /** Sends grants (new ones, or again to check their holders); a holder that has ended gets its slots taken back. */
  const send = async (grants: Grant[]) => {
    await Promise.all([...byNode(grants)].map(async ([node, uids]) => {
      try {
        await getExternalWorkflowHandle(nodeWorkflowId(node)).signal(replacementGrantedSignal, { uids });
      } catch (err) {
        if (isCancellation(err)) throw err;
        // The node's workflow has ended (the server says so): nobody will use or release these slots.
        for (const uid of uids) s.release(uid, node);
        changed();
      }
    }));
  };

  /** Asks the workflows of nodes said to have given slots back what they hold; frees the rest. */
  const checkHolders = async () => {
    await Promise.all([...s.verify].slice(0, VERIFY_AT_ONCE).map(async (node) => {
      try {
        s.holderFound(node, await kube.taintNodeSlots({ node }));
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (refusalOf(err, [TAINT_REFUSED])) s.verify.delete(node);
        else retryAt = Date.now() + STEP_RETRY_MS;
        log.warn('asking a node workflow for the slots it holds failed', { node, error: failureMessage(err) });
      }
      changed();
    }));
  };

  for (;;) {
    dirty = false;
    if (retryAt !== undefined && Date.now() >= retryAt) retryAt = undefined;
    if (settingsStale && retryAt === undefined) settingsStale = !(await read('reading the settings', () => taintSlotSettings()));
    if (countsStale && retryAt === undefined) countsStale = !(await read('counting the nodes', () => taintNodeCounts()));
    if (s.verify.size > 0 && retryAt === undefined) await checkHolders();
    // Grants whose holder may have ended without giving them back (terminated,
    // timed out, failed before it could): sent again; see slots.ts.
    await send(s.grantsToCheck(Date.now()));
    await send(s.decideGrants(Date.now()));
    // Nodes refused for room: asked to ask again now that there is room.
    await Promise.all(s.overflowDue().map((node) => getExternalWorkflowHandle(nodeWorkflowId(node)).signal(announceSlotsSignal).catch((err: unknown) => {
      if (isCancellation(err)) throw err;
    })));
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      // Requests, releases and grants that land from here on are in `s` (handlers
      // update it) or make the server reject this ending, so none is lost.
      await continueAsNew<typeof taintReplacementsWorkflow>({ data: s.toData() });
    }
    if (dirty) continue;
    // The Web UI's Current Details (records no command).
    setCurrentDetails(slotsDetails(s, s.breakerOpen(), settingsStale || countsStale));
    const next = [s.nextCheckAt(), retryAt].filter((t): t is number => t !== undefined);
    if (next.length === 0) await condition(() => dirty);
    else await condition(() => dirty, Math.max(1, Math.min(...next) - Date.now()));
  }
}

/** A refusal of the workflow's own input: it ends the workflow, nothing retried. */
function refused(what: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`refused: ${what}; nothing was changed`, TAINT_REFUSED);
}

/** What a handler could not take, said once per message (the reason only: never the value). */
function noted(what: string, why: string | undefined): void {
  if (why) log.warn(`${what} refused: ${why}`);
}
