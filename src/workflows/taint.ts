// Taint replacement, as two kinds of workflow:
//  - `taint/<node>` (taintNodeWorkflow): one per node carrying a configured
//    taint. Marks the managed pods on it, sleeps on a durable timer until the
//    next deadline, and replaces due pods once the coordinator grants a slot.
//  - `taint-replacements` (taintReplacementsWorkflow): the cluster-wide slots
//    (maxConcurrentReplacements) and the breaker.
// Decisions live in src/taint (pure, unit-tested); these only act on them.
import {
  allHandlersFinished, CancellationScope, condition, continueAsNew, getExternalWorkflowHandle, isCancellation,
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

export interface TaintNodeInput {
  node: string;
  settings: TaintSettings;
  /** State carried over by continue-as-new. */
  data?: NodeTaintData;
}

export interface TaintNodeResult {
  node: string;
  replaced: string[];
}

export async function taintNodeWorkflow(input: TaintNodeInput): Promise<TaintNodeResult> {
  const d = input.data ?? newNodeTaintData(input.node, input.settings);
  let dirty = true;
  let listNeeded = true;
  const granted: string[] = [];
  const tasks = new Map<string, Promise<void>>();
  let taskFailure: unknown;

  setHandler(nodeTaintsSignal, (m) => {
    if (d.taints.length === 0 && m.taints.length > 0) listNeeded = true;
    observeTaints(d, m.taints, m.settings, Date.now());
    dirty = true;
  });
  setHandler(podsChangedSignal, () => {
    listNeeded = true;
    dirty = true;
  });
  setHandler(replacementGrantedSignal, ({ uids }) => {
    granted.push(...uids);
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
      const result = await kube.evictPod({ namespace: pod.namespace, name: pod.name, uid });
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
        podSelector: d.settings.podSelector, waitMs: REPLACEMENT_WAIT_MS,
      })) === 'replaced';
    }
    if (!replaced) pod.lastError = `no ready replacement within ${IN_FLIGHT_TIMEOUT_MS / 60_000} minutes; slot given back`;
    pod.state = 'Replaced';
    await tellSlots(() => slots.signal(releaseReplacementSignal, { uids: [uid] }));
  };

  const write = async (writes: ConditionWrite[]) => {
    if (writes.length === 0) return;
    await kube.writeTaintConditions(writes);
    for (const w of writes) markWritten(d, w);
  };

  try {
    for (;;) {
      dirty = false;
      if (taskFailure) throw taskFailure;
      if (listNeeded && d.taints.length > 0) {
        listNeeded = false;
        const listed = await kube.listTaintPods({ node: d.node, podSelector: d.settings.podSelector, namespaces: d.settings.namespaces });
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
        return await continueAsNew<typeof taintNodeWorkflow>({ node: d.node, settings: d.settings, data: d });
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
  const s = input.data ?? emptySlots();
  let dirty = true;

  setHandler(slotSettingsSignal, (m) => {
    s.maxConcurrentReplacements = m.maxConcurrentReplacements;
    s.maxTaintedNodes = m.maxTaintedNodes;
    dirty = true;
  });
  setHandler(nodeCountsSignal, (m) => {
    s.taintedNodes = m.taintedNodes;
    s.totalNodes = m.totalNodes;
    dirty = true;
  });
  setHandler(requestReplacementSignal, ({ requests }) => {
    for (const r of requests) requestSlot(s, r);
    dirty = true;
  });
  setHandler(releaseReplacementSignal, ({ uids }) => {
    for (const uid of uids) releaseSlot(s, uid);
    dirty = true;
  });
  setHandler(withdrawNodeSignal, ({ node }) => {
    withdrawNode(s, node);
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
