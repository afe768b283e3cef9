// Taint replacement, as two kinds of workflow:
//  - `taint/<node>` (taintNodeWorkflow): one per node carrying a configured
//    taint. Marks the managed pods on it, sleeps on a durable timer until the
//    next deadline, and replaces due pods once the coordinator grants a slot.
//  - `taint-replacements` (taintReplacementsWorkflow): the cluster-wide slots
//    (maxConcurrentReplacements) and the breaker.
// Decisions live in src/taint (pure, unit-tested); these only act on them.
import {
  allHandlersFinished, ApplicationFailure, CancellationScope, condition, continueAsNew, getExternalWorkflowHandle, isCancellation,
  proxyActivities, setHandler, sleep, workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import {
  decideNode, evictionBackoffMs, IN_FLIGHT_TIMEOUT_MS, markWritten, newNodeTaintData, observeTaints, reconcilePods,
  statusRows, stillWanted, type ConditionWrite, type NodeTaintData, type TaintSettings,
} from '../taint/node.ts';
import {
  nodeCountsSignal, nodeStatusQuery, nodeTaintsSignal, nodeWorkflowId, podsChangedSignal, releaseReplacementSignal,
  replacementGrantedSignal, requestReplacementSignal, SLOTS_WORKFLOW_ID, slotSettingsSignal, slotsStatusQuery,
  withdrawNodeSignal,
} from '../taint/messages.ts';
import { taintId, type MatchedTaint } from '../taint/match.ts';
import { decideGrants, emptySlots, releaseSlot, requestSlot, slotBreakerOpen, withdrawNode, type SlotData } from '../taint/slots.ts';

const kube = proxyActivities<Activities>({
  startToCloseTimeout: '1m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

// awaitReplacement waits up to 30 s per call; no heartbeats (each would be a billed action).
const waiting = proxyActivities<Activities>({
  startToCloseTimeout: '90s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

const REPLACEMENT_WAIT_MS = 30_000;

/**
 * Names the node only. Its taints are read from the Node, and the settings
 * from the worker's configuration, by an activity (taintNodeState) at the
 * start and on every nodeTaints signal: a signal says "look again", nothing more.
 */
export interface TaintNodeInput {
  node: string;
  /** State carried over by continue-as-new (its settings are read afresh). */
  data?: NodeTaintData;
}

/** How far back a signal's seenAt (the watcher's first sight of a taint without timeAdded) is believed. */
const SEEN_AT_TRUST_MS = 5 * 60_000;

const { taintNodeState, taintSlotSettings, taintNodeCounts } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

export interface TaintNodeResult {
  node: string;
  replaced: string[];
}

export async function taintNodeWorkflow(input: TaintNodeInput): Promise<TaintNodeResult> {
  const node = typeof input?.node === 'string' ? input.node : '';
  // Refuses (non-retryably) when the worker has no taint replacement configured, or the name is no node's.
  const first = await taintNodeState({ node });
  const carried = input?.data;
  const resumed = !!carried && typeof carried === 'object' && carried.node === node && !!carried.pods && typeof carried.pods === 'object' &&
    Array.isArray(carried.taints) && !!carried.firstSeen && typeof carried.firstSeen === 'object';
  if (!resumed && first.taints.length === 0) {
    // A new workflow for a node without a configured taint: nothing it could do (a run carried
    // over by continue-as-new goes on, to clear its pods' conditions once the taint has gone).
    throw ApplicationFailure.nonRetryable(`refused: node ${node} carries none of the configured taints ` +
      `(${first.settings.taintReplacementOptions.map((o) => o.key).join(', ')}); nothing was changed`, 'TaintRefused');
  }
  const d = resumed ? { ...carried, settings: first.settings } : newNodeTaintData(node, first.settings);
  let dirty = true;
  let listNeeded = true;
  let recheck = false;
  // The watcher's first sight of each taint (a hint, for taints without timeAdded).
  const seenHints = new Map<string, number>();
  const granted: string[] = [];
  const tasks = new Map<string, Promise<void>>();
  let taskFailure: unknown;

  const observe = (state: { taints: MatchedTaint[]; settings: TaintSettings }) => {
    if (d.taints.length === 0 && state.taints.length > 0) listNeeded = true;
    const now = Date.now();
    const taints = state.taints.map((t) => {
      const hint = seenHints.get(taintId(t));
      return hint === undefined ? t : { ...t, seenAt: Math.max(hint, now - SEEN_AT_TRUST_MS) };
    });
    observeTaints(d, taints, state.settings, now);
  };
  setHandler(nodeTaintsSignal, (m) => {
    for (const t of Array.isArray(m?.taints) ? m.taints : []) {
      if (typeof t?.key === 'string' && typeof t.effect === 'string' && typeof t.seenAt === 'number' && Number.isFinite(t.seenAt)) {
        seenHints.set(taintId(t), t.seenAt);
      }
    }
    recheck = true;
    dirty = true;
  });
  // The signals delivered with the start were sent before `first` was read.
  observe(first);
  recheck = false;
  setHandler(podsChangedSignal, () => {
    listNeeded = true;
    dirty = true;
  });
  setHandler(replacementGrantedSignal, (m) => {
    granted.push(...(Array.isArray(m?.uids) ? m.uids.filter((u) => typeof u === 'string') : []));
    dirty = true;
  });
  setHandler(nodeStatusQuery, () => statusRows(d));

  const slots = getExternalWorkflowHandle(SLOTS_WORKFLOW_ID);
  // The coordinator is started by the watcher before any node workflow; if it
  // is not there (yet), try again shortly rather than lose the message.
  const tellSlots = async (send: () => Promise<void>) => {
    for (;;) {
      try {
        await send();
        return;
      } catch (err) {
        if (isCancellation(err)) throw err;
        await sleep('10s');
      }
    }
  };

  const replace = async (uid: string) => {
    const pod = d.pods[uid]!;
    pod.state = 'Evicting';
    for (;;) {
      if (!stillWanted(d, uid, Date.now())) {
        // The taint went (or moved its deadline) after the grant: give the slot back.
        pod.state = 'Replacing';
        await tellSlots(() => slots.signal(releaseReplacementSignal, { uids: [uid] }));
        return;
      }
      pod.attempts++;
      let result: Awaited<ReturnType<typeof kube.evictPod>>;
      try {
        result = await kube.evictPod({ node: d.node, namespace: pod.namespace, name: pod.name, uid });
      } catch (err) {
        // Refused (the pod or its node no longer what the configuration manages): not evicted; slot given back.
        const refusal = refusalOf(err);
        if (refusal === undefined) throw err;
        pod.lastError = refusal;
        pod.state = 'Replaced';
        await tellSlots(() => slots.signal(releaseReplacementSignal, { uids: [uid] }));
        return;
      }
      if (result.outcome === 'blocked') {
        const wait = evictionBackoffMs(pod.attempts);
        pod.state = 'Blocked';
        pod.lastError = result.message;
        pod.retryAt = Date.now() + wait;
        await sleep(wait);
        pod.state = 'Evicting';
        continue;
      }
      delete pod.retryAt;
      pod.evictedAt = Date.now();
      if (result.outcome === 'gone') pod.lastError = 'the pod was gone before its eviction';
      else delete pod.lastError;
      pod.state = 'Evicted';
      break;
    }
    let replaced = false;
    while (!replaced && Date.now() - pod.evictedAt! < IN_FLIGHT_TIMEOUT_MS) {
      replaced = (await waiting.awaitReplacement({
        namespace: pod.namespace, name: pod.name, uid, controllerUid: pod.controllerUid!,
        ...(pod.controller ? { controller: pod.controller } : {}),
        waitMs: REPLACEMENT_WAIT_MS,
      })) === 'replaced';
    }
    if (!replaced) pod.lastError = `no ready replacement within ${IN_FLIGHT_TIMEOUT_MS / 60_000} minutes; slot given back`;
    pod.state = 'Replaced';
    await tellSlots(() => slots.signal(releaseReplacementSignal, { uids: [uid] }));
  };

  const write = async (writes: ConditionWrite[]) => {
    if (writes.length === 0) return;
    await kube.writeTaintConditions({ node: d.node, writes });
    for (const w of writes) markWritten(d, w);
  };

  try {
    for (;;) {
      dirty = false;
      if (taskFailure) throw taskFailure;
      if (recheck) {
        recheck = false;
        observe(await taintNodeState({ node: d.node }));
      }
      if (listNeeded && d.taints.length > 0) {
        listNeeded = false;
        const listed = await kube.listTaintPods({ node: d.node });
        reconcilePods(d, listed, Date.now());
      }
      const decision = decideNode(d, Date.now());
      await write(decision.writes);
      for (const uid of decision.forget) delete d.pods[uid];
      // One signal each way per decision, however many pods: signals are billed.
      const release = [...decision.withdraw];
      if (decision.request.length > 0) {
        const requests = decision.request.map((uid) => {
          const pod = d.pods[uid]!;
          return { node: d.node, uid, pod: `${pod.namespace}/${pod.name}`, requestedAt: Date.now() };
        });
        await tellSlots(() => slots.signal(requestReplacementSignal, { node: d.node, requests }));
      }
      for (const uid of granted.splice(0)) {
        if (d.pods[uid]?.state === 'Queued' && !tasks.has(uid)) {
          tasks.set(uid, replace(uid)
            .catch((err: unknown) => {
              if (!isCancellation(err)) taskFailure = err;
            })
            .finally(() => {
              tasks.delete(uid);
              dirty = true;
            }));
        } else {
          release.push(uid);
        }
      }
      if (release.length > 0) await tellSlots(() => slots.signal(releaseReplacementSignal, { uids: release }));
      if (decision.done && tasks.size === 0 && granted.length === 0) break;
      if (tasks.size === 0 && workflowInfo().continueAsNewSuggested) {
        await condition(allHandlersFinished);
        return await continueAsNew<typeof taintNodeWorkflow>({ node: d.node, data: d });
      }
      if (dirty) continue;
      const timeout = decision.nextAt === undefined ? undefined : Math.max(1, decision.nextAt - Date.now());
      if (timeout === undefined) await condition(() => dirty);
      else await condition(() => dirty, timeout);
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled (from the Web UI, or the feature was disabled): clear every
    // condition this workflow set and give back its slots.
    await CancellationScope.nonCancellable(async () => {
      const writes: ConditionWrite[] = Object.values(d.pods)
        .filter((p) => p.written.detected !== undefined || p.written.replacing !== undefined)
        .map((p) => ({ uid: p.uid, namespace: p.namespace, name: p.name, detected: null, replacing: null }));
      await write(writes);
      await slots.signal(withdrawNodeSignal, { node: d.node }).catch(() => undefined);
    });
    throw err;
  }
  return { node: d.node, replaced: Object.values(d.pods).filter((p) => p.state === 'Replaced').map((p) => `${p.namespace}/${p.name}`) };
}

export interface TaintReplacementsInput {
  data?: SlotData;
}

/** The cluster-wide replacement slots: long-lived, continues as new as its history grows. */
export async function taintReplacementsWorkflow(input: TaintReplacementsInput = {}): Promise<void> {
  // The limits come from the worker's configuration (refused when it has no
  // taint replacement), the breaker's counts from the Nodes: the settings and
  // nodeCounts signals only say "look again".
  const carried = input?.data;
  const s = carried && typeof carried === 'object' && Array.isArray(carried.queue) && Array.isArray(carried.inFlight)
    ? carried : emptySlots();
  Object.assign(s, await taintSlotSettings(), await taintNodeCounts());
  let dirty = true;
  let settingsStale = false;
  let countsStale = false;

  setHandler(slotSettingsSignal, () => {
    settingsStale = true;
    dirty = true;
  });
  setHandler(nodeCountsSignal, () => {
    countsStale = true;
    dirty = true;
  });
  setHandler(requestReplacementSignal, (m) => {
    for (const r of Array.isArray(m?.requests) ? m.requests : []) {
      if (typeof r?.uid === 'string' && typeof r.node === 'string') requestSlot(s, { node: r.node, uid: r.uid, pod: String(r.pod), requestedAt: Number(r.requestedAt) || 0 });
    }
    dirty = true;
  });
  setHandler(releaseReplacementSignal, (m) => {
    for (const uid of Array.isArray(m?.uids) ? m.uids : []) if (typeof uid === 'string') releaseSlot(s, uid);
    dirty = true;
  });
  setHandler(withdrawNodeSignal, (m) => {
    if (typeof m?.node === 'string') withdrawNode(s, m.node);
    dirty = true;
  });
  setHandler(slotsStatusQuery, () => ({
    maxConcurrentReplacements: s.maxConcurrentReplacements,
    maxTaintedNodes: s.maxTaintedNodes,
    taintedNodes: s.taintedNodes,
    totalNodes: s.totalNodes,
    breakerOpen: slotBreakerOpen(s),
    queue: s.queue,
    inFlight: s.inFlight,
    granted: s.granted,
    peakInFlight: s.peakInFlight,
  }));

  for (;;) {
    await condition(() => dirty);
    dirty = false;
    if (settingsStale) {
      settingsStale = false;
      Object.assign(s, await taintSlotSettings());
    }
    if (countsStale) {
      countsStale = false;
      Object.assign(s, await taintNodeCounts());
    }
    const byNode = new Map<string, string[]>();
    for (const g of decideGrants(s, Date.now())) byNode.set(g.node, [...(byNode.get(g.node) ?? []), g.uid]);
    await Promise.all([...byNode].map(async ([node, uids]) => {
      try {
        await getExternalWorkflowHandle(nodeWorkflowId(node)).signal(replacementGrantedSignal, { uids });
      } catch {
        // The node's workflow has ended: nobody will use or release these slots.
        for (const uid of uids) releaseSlot(s, uid);
        dirty = true;
      }
    }));
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof taintReplacementsWorkflow>({ data: s });
    }
  }
}

/** The message of an activity's refusal (a non-retryable TaintRefused failure), or undefined for any other error. */
function refusalOf(err: unknown): string | undefined {
  const cause = err instanceof ApplicationFailure ? err : (err as { cause?: unknown })?.cause;
  return cause instanceof ApplicationFailure && cause.type === 'TaintRefused' ? cause.message : undefined;
}
