// Taint replacement's Kubernetes work: list the managed pods on a node, write
// their NodeTaint* conditions, evict, and wait for a ready replacement. Each
// is idempotent: writes carry the pod's UID, so a retried write never lands on
// a newer pod of the same name.
import { breakerFromFaultDomains, taintReplacementActive, type TaintReplacementConfig } from '../config/taint-replacement.ts';
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { dns1123SubdomainProblem } from '../config/kube-names.ts';
import { matches } from '../config/label-selector.ts';
import { matchingTaints, type MatchedTaint } from '../taint/match.ts';
import {
  DETECTED, NODE_MESSAGE_BOUNDS, NODE_WORKFLOW_TYPE, nodeSlotsQuery, nodeWorkflowId, REPLACING, SLOTS_WORKFLOW_ID, SLOTS_WORKFLOW_TYPE,
  slotsStatusQuery, TAINT_REFUSED, type SlotSettings,
} from '../taint/messages.ts';
import { impostor } from '../temporal/identity.ts';
import { preview } from '../checks/preview.ts';
import { GRANT_CHECK_SECONDS, SLOT_BOUNDS } from '../taint/slots.ts';
import type * as k8s from '@kubernetes/client-node';
import { statusOf, type KubeClients } from '../kube/client.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { pool } from '../pool.ts';
import { errorMessage, isConflict, isNotFound } from '../kube/api.ts';
import { listPages, type PodQuery } from '../kube/prepared.ts';
import { evictPod as evictPodOnce, type EvictOutcome } from '../kube/writes.ts';
import { toSelectorString, type LabelSelector } from '../config/label-selector.ts';
import {
  listingTime, startMark, type ConditionWrite, type ListedPod, type OwnerRef, type TaintSettings,
} from '../taint/node.ts';
import { controllerWhole } from '../taint/replace.ts';
import { faultDomainCounts, foundationDBRefusal, toleratesConfigured, type NodeTaint } from '../taint/pod-rules.ts';
import { nodeOfId, untaintedRefusal, type NodeFirstRead } from '../taint/node-machine.ts';
import { anyValue, maxLength, minLength, object, optional, parse, string } from '../checks/shape.ts';
import { taintEvictions, taintPodsMarked, taintReplacementsDone } from '../metrics/registry.ts';
import { recordWould, writeHold, type SafetyGates } from './safety-gate.ts';
import { activityOccurrence, callingWorkflow, noteEvent } from './events.ts';
import { log } from '../log.ts';

export { DETECTED, REPLACING, TAINT_REFUSED };

/**
 * Names the node only: which pods are managed (podSelector, namespaces) comes
 * from the worker's configuration when the activity runs.
 */
export interface ListTaintPodsInput {
  node: string;
  /**
   * The first mark of the pods it lists that are not `known` yet (the node
   * workflow's firstMark): written as they are listed, when the node carries a
   * configured taint, so that the list is their re-read. Absent: list only.
   */
  mark?: { known: string[] } & Pick<ConditionWrite, 'detected' | 'replacing'>;
}

/** What listTaintPods answers when asked to mark: the pods, and those it marked. */
export interface ListedAndMarked {
  pods: ListedPod[];
  /** UIDs of the pods the mark was written on. */
  written: string[];
  /** uid -> the NodeTaintReplacing lastTransitionTime written, when the mark set it. */
  marked: Record<string, number>;
}

export interface TaintNodeStartInput {
  node: string;
  /** The watcher's first sight of each taint without timeAdded (taint id -> ms), from the start's signal: a hint. */
  hints?: Record<string, number>;
  /**
   * The workflow's time when it asked (ms), for a local activity: its result reaches the workflow
   * in the same workflow task, whose time is still the task's start, so the listing is dated then
   * (else the workflow would see a mark from its future and decide it again). Believed at most
   * SEEN_AT_TRUST_MS back and never ahead of the worker's clock; without it, the worker's now.
   */
  at?: number;
}

/** taintNodeStart's answer: what the node workflow's first read takes (src/taint/node-machine.ts). */
export type TaintNodeStartResult = NodeFirstRead;

/**
 * The handle of tend's own workflow running under `id` (of `type`, on `taskQueue`), 'not running'
 * when none runs there, or why what runs there is not tend's (src/temporal/identity.ts).
 */
async function runningTends(client: Client, id: string, type: string, taskQueue: string): Promise<WorkflowHandle | 'not running' | string> {
  const handle = client.workflow.getHandle(id);
  let found;
  try {
    found = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'not running';
    throw err;
  }
  if (found.status.name !== 'RUNNING') return 'not running';
  return impostor(id, { type: found.type, taskQueue: found.taskQueue }, { type, taskQueues: [taskQueue] }) ?? handle;
}

/** What taintNodeSlots finds of a node's workflow: whether it runs, and the slots it holds and asks for. */
export interface NodeSlotsFound {
  running: boolean;
  held: string[];
  asking: string[];
  /** Of those held, the ones whose eviction found them granted at the coordinator (what it may adopt). */
  confirmed: { uid: string; pod: string }[];
  /** Why what runs under the node's workflow id is not tend's (then it counts as not running). */
  impostor?: string;
}

const uidList = (v: unknown): string[] => (Array.isArray(v) ? v.slice(0, NODE_MESSAGE_BOUNDS.uids) : [])
  .filter((u): u is string => typeof u === 'string' && u.length <= NODE_MESSAGE_BOUNDS.uidChars);
const holdShape = object({ uid: string(undefined, minLength(1), maxLength(NODE_MESSAGE_BOUNDS.uidChars)), pod: optional(anyValue) });
/** The confirmed holds a node's answer names, well formed (the coordinator adopts only those it also holds: slots.ts holderFound). */
const holdList = (v: unknown): { uid: string; pod: string }[] => (Array.isArray(v) ? v.slice(0, NODE_MESSAGE_BOUNDS.uids) : [])
  .flatMap((h: unknown) => {
    const r = parse(holdShape, h);
    return r.ok ? [{ uid: r.value.uid, pod: typeof r.value.pod === 'string' ? r.value.pod.slice(0, SLOT_BOUNDS.podChars) : '' }] : [];
  });

/**
 * The slots the node's workflow holds and asks for, asked of the workflow itself (its slots
 * query), or none when it is not running: ended, never started, or not tend's (another type,
 * or another task queue than `taskQueue`'s, under its id). What the coordinator believes
 * before it frees a slot (docs/taint.md).
 */
export async function nodeSlotsOf(client: Client, node: string, taskQueue: string): Promise<NodeSlotsFound> {
  const none = { running: false, held: [], asking: [], confirmed: [] };
  const found = await runningTends(client, nodeWorkflowId(node), NODE_WORKFLOW_TYPE, taskQueue);
  if (found === 'not running') return none;
  if (typeof found === 'string') return { ...none, impostor: found };
  const slots = await found.query(nodeSlotsQuery);
  return { running: true, held: uidList(slots?.held), asking: uidList(slots?.asking), confirmed: holdList(slots?.confirmed) };
}

/**
 * Why the coordinator has not granted the pod's slot to the node, or undefined when it has:
 * asked of `taint-replacements` itself (its status query), after checking that it is tend's.
 * A node workflow's grant arrives as a signal, which anyone who may signal can forge: the
 * eviction is asked only for a slot the coordinator holds as given (docs/security.md).
 */
export async function ungranted(client: Client, node: string, uid: string, taskQueue: string): Promise<string | undefined> {
  const found = await runningTends(client, SLOTS_WORKFLOW_ID, SLOTS_WORKFLOW_TYPE, taskQueue);
  if (found === 'not running') return `${SLOTS_WORKFLOW_ID} is not running: no slot is granted`;
  if (typeof found === 'string') return found;
  const status = await found.query(slotsStatusQuery);
  const inFlight: unknown[] = Array.isArray(status?.inFlight) ? status.inFlight : [];
  const granted = inFlight.some((g) => typeof g === 'object' && g !== null && (g as { node?: unknown }).node === node && (g as { uid?: unknown }).uid === uid);
  return granted ? undefined : `${SLOTS_WORKFLOW_ID} holds no slot granted to this pod on node ${node}: waiting for its grant`;
}

/** The settings of a taintReplacement section that a node workflow decides with. */
function settingsOf(c: TaintReplacementConfig): TaintSettings {
  return {
    taintReplacementOptions: c.taintReplacementOptions,
    taintReplacementTimeSeconds: c.taintReplacementTimeSeconds,
    maxConcurrentReplacements: c.maxConcurrentReplacements,
    podSelector: c.podSelector,
    ...(c.namespaces ? { namespaces: c.namespaces } : {}),
  };
}

/** A mark asked for a node whose taint has lifted meanwhile: not a refusal (the workflow goes on), not worth a retry. */
export const TAINT_UNTAINTED = 'TaintNodeUntainted';

const refuse = (what: string): never => {
  throw ApplicationFailure.nonRetryable(`refused: ${what}; nothing was changed`, TAINT_REFUSED);
};

/**
 * An eviction's outcome; 'paused': not asked, evictions are paused (`tend pause`); 'observed': not
 * asked, recorded (observe mode); 'ungranted': not asked, the coordinator holds no such grant.
 */
export type EvictResult = EvictOutcome | { outcome: 'paused' | 'observed' | 'ungranted'; message: string };

export interface AwaitReplacementInput {
  namespace: string;
  name: string;
  uid: string;
  controllerUid: string;
  controller?: OwnerRef;
  /** How long this call waits before answering 'pending' (the workflow calls again). */
  waitMs: number;
  /** The evicted pod's creationTimestamp (ms), when known: its replacement is created after it. */
  createdAt?: number;
}

const selectorOf = (s: TaintSettings['podSelector']) => toSelectorString(s as LabelSelector);

const podTarget = (p: { namespace: string; name: string; uid: string }) => ({ apiVersion: 'v1', kind: 'Pod', namespace: p.namespace, name: p.name, uid: p.uid });
const nodeTarget = (node: string) => ({ apiVersion: 'v1', kind: 'Node', name: node });
const taintKeys = (taints: readonly MatchedTaint[]) => taints.map((t) => `${t.key}${t.effect ? `:${t.effect}` : ''}`).join(', ');

/** A Kubernetes timestamp (a Date, or a string from a raw object) in ms; undefined when absent or unreadable. */
function timeOf(t: Date | string | undefined): number | undefined {
  if (t === undefined) return undefined;
  const ms = new Date(t as string).getTime();
  return Number.isFinite(ms) ? ms : undefined;
}

function conditionTime(pod: k8s.V1Pod, type: string): number | undefined {
  const c = pod.status?.conditions?.find((x) => x.type === type && x.status === 'True');
  if (!c?.lastTransitionTime) return undefined;
  const t = new Date(c.lastTransitionTime as unknown as string).getTime();
  return Number.isFinite(t) ? t : undefined;
}

/** A pod that is managed and still running on its node: not terminating, not finished. */
function live(pod: k8s.V1Pod): boolean {
  return !pod.metadata?.deletionTimestamp && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}

/** Reads and writes one activity has in flight at once. */
export const WRITES_AT_ONCE = 20;

/**
 * Pods per LIST page. Flow control estimates a LIST from the cache by the
 * page's size (a page of 50 pods about 2 seats), one without a limit by the
 * size of every pod of the cluster (capped at 10 seats).
 */
export const LIST_PAGE = 50;

/** After a 429 (the API server's flow control has no room for the request): the wait before it goes again, and the most tries. */
const THROTTLED_WAIT_MS = 1000;
const THROTTLED_TRIES = 20;
/**
 * A request that the API server's flow control refuses (429) waits and goes again, up to
 * THROTTLED_TRIES times, inside the activity: failing the activity would have Temporal
 * retry all of it (every read and write before) after its own backoff. (Not for an eviction,
 * whose 429 is a PodDisruptionBudget's answer.)
 */
async function unthrottled<T>(request: () => Promise<T>): Promise<T> {
  for (let throttled = 1; ; throttled++) {
    try {
      return await request();
    } catch (err) {
      if (statusOf(err) !== 429 || throttled >= THROTTLED_TRIES) throw err;
      // About THROTTLED_WAIT_MS, spread (0.5 to 1.5 times) so that requests refused together do not come back together.
      await sleep(THROTTLED_WAIT_MS * (0.5 + Math.random()));
    }
  }
}

export function createTaintActivities(kube: KubeClients, config?: TaintReplacementConfig, gates?: SafetyGates) {
  /** The worker's own taintReplacement section, or a refusal when it has none (or it is off). */
  const configured = (): TaintReplacementConfig => {
    if (!config || !taintReplacementActive(config)) {
      return refuse('taint replacement is not configured on this worker (no taintReplacement section, or disabled, or no taint keys)');
    }
    return config;
  };
  /**
   * For clearing conditions only: a taintReplacement section, even a disabled
   * one. Clearing is how a node workflow cleans up after the feature is turned
   * off; it writes nothing new, and only on pods the section still manages.
   */
  const sectionForCleanup = (): TaintReplacementConfig => config ?? refuse('taint replacement is not configured on this worker (no taintReplacement section)');
  const nodeName = (node: unknown): string => {
    if (typeof node !== 'string' || dns1123SubdomainProblem(node)) return refuse(`${preview(node, 80)} is not a node name`);
    return node;
  };
  /** Whether a pod is one the configuration manages: its podSelector, within its namespaces. */
  const managed = (c: TaintReplacementConfig, pod: k8s.V1Pod): boolean =>
    (!c.namespaces || c.namespaces.includes(pod.metadata?.namespace ?? '')) &&
    matches(c.podSelector as LabelSelector, pod.metadata?.labels ?? {});
  /**
   * The node's taints as it carries them, and those the configuration names (none when the node
   * is gone: `missing`). A prepared request (a LIST of the one name, as tend's rights on Nodes
   * are list and watch), its JSON read as it is: the marking's other reads are made the same way.
   */
  const readNode = async (c: TaintReplacementConfig, node: string): Promise<{ raw: NodeTaint[]; taints: MatchedTaint[]; missing: boolean }> => {
    const raw = await unthrottled(() => kube.nodes.taints(node));
    return { raw: raw ?? [], taints: matchingTaints(raw, c.taintReplacementOptions), missing: raw === undefined };
  };
  /** The node's taints that the configuration names (none when the node is gone). */
  const configuredTaints = async (c: TaintReplacementConfig, node: string): Promise<MatchedTaint[]> => (await readNode(c, node)).taints;
  /** Whether the configuration leaves the pod alone for tolerating the node's configured taints (toleratingPods: leave). */
  const leftTolerating = (c: TaintReplacementConfig, pod: k8s.V1Pod, raw: readonly NodeTaint[]): boolean =>
    c.toleratingPods === 'leave' && toleratesConfigured(pod.spec?.tolerations, raw, c.taintReplacementOptions);
  /**
   * Re-reads a pod an activity is about to change: undefined when it is gone
   * (or a namesake replaced it); refuses a pod the configuration does not
   * manage, one on another node, and (when `tainted`) one whose node carries no
   * configured taint. `listed`: the node's pods as one LIST just read them (by
   * UID); a pod found there is checked as listed, without a GET of its own.
   */
  const checkedPod = async (
    c: TaintReplacementConfig, node: string, target: { namespace: unknown; name: unknown; uid: unknown }, tainted: boolean,
    taintsOf: (n: string) => Promise<MatchedTaint[]>, listed?: ReadonlyMap<string, k8s.V1Pod>,
  ): Promise<k8s.V1Pod | undefined> => {
    if (typeof target.namespace !== 'string' || typeof target.name !== 'string' || typeof target.uid !== 'string') {
      return refuse(`a pod is named by namespace, name and uid (strings); got ${preview(target)}`);
    }
    const fromList = listed?.get(target.uid);
    let pod: k8s.V1Pod;
    if (fromList && fromList.metadata?.namespace === target.namespace && fromList.metadata?.name === target.name) {
      pod = fromList;
    } else {
      // Not in the node's list (gone, relabelled, another node's, or no list was read): asked for by name.
      try {
        const { namespace, name } = target;
        pod = await unthrottled(() => kube.core.readNamespacedPod({ namespace, name }));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    }
    if (pod.metadata?.uid !== target.uid) return undefined;
    const key = `${target.namespace}/${target.name}`;
    if (!managed(c, pod)) {
      refuse(`pod ${key} is not managed by taint replacement: it does not match the worker's taintReplacement.podSelector` +
        `${c.namespaces ? ` within namespaces ${c.namespaces.join(', ')}` : ''}`);
    }
    if (pod.spec?.nodeName !== node) refuse(`pod ${key} runs on node ${pod.spec?.nodeName ?? '(none)'}, not on ${node}`);
    if (tainted && (await taintsOf(node)).length === 0) refuse(untaintedRefusal(node, (await readNode(c, node)).missing, c.taintReplacementOptions));
    return pod;
  };

  /**
   * The managed pods on a node, in pages of LIST_PAGE. Served from the API
   * server's cache (by its node index), a LIST with a limit is estimated by
   * flow control at the seats of a page, where one without is estimated at
   * every pod of the cluster (10 seats, the most a LIST takes).
   */
  const listOnNode = (c: TaintReplacementConfig, node: string): Promise<k8s.V1Pod[]> => listManaged(c, node);

  /** Every managed pod (the cluster's, or its namespaces'; on `node` only, when given), in pages of LIST_PAGE. */
  const listManaged = async (c: TaintReplacementConfig, node?: string): Promise<k8s.V1Pod[]> => {
    const query = { labelSelector: selectorOf(c.podSelector), ...(node !== undefined ? { fieldSelector: `spec.nodeName=${node}` } : {}), limit: LIST_PAGE };
    const paged = async (q: PodQuery) => {
      const items: k8s.V1Pod[] = [];
      for await (const page of listPages(kube.pods.list, q, unthrottled)) items.push(...page.items);
      return items;
    };
    if (!c.namespaces) return paged(query);
    const lists = await Promise.all(c.namespaces.map((namespace) => paged({ namespace, ...query })));
    return lists.flat();
  };

  const controllerGone = async (namespace: string, owner: OwnerRef, uid: string): Promise<boolean> => {
    try {
      const obj = await kube.objects.read({ apiVersion: owner.apiVersion, kind: owner.kind, metadata: { name: owner.name, namespace } });
      return obj.metadata?.uid !== uid || !!obj.metadata?.deletionTimestamp;
    } catch (err) {
      // 403: a controller kind tend may not read; only the ready replacement (or the timeout) ends the wait.
      return isNotFound(err);
    }
  };

  /**
   * Whether the evicted pod's controller is whole again (controllerWhole, in
   * src/taint/replace.ts), from its pods as they are now: a ReplicaSet's or
   * StatefulSet's status may predate the eviction and still count the evicted
   * pod as ready, so only its desired count and selector are read from it.
   * A controller that is gone (or re-created) recreates nothing: the wait is over.
   */
  const replacementReady = async (input: AwaitReplacementInput, evictedCreatedAt: number | undefined): Promise<boolean> => {
    const owner = input.controller;
    let desired: number | undefined;
    let selector = selectorOf(configured().podSelector);
    if (owner?.apiVersion === 'apps/v1' && (owner.kind === 'ReplicaSet' || owner.kind === 'StatefulSet')) {
      let set: k8s.V1ReplicaSet | k8s.V1StatefulSet;
      try {
        set = owner.kind === 'ReplicaSet'
          ? await kube.apps.readNamespacedReplicaSet({ namespace: input.namespace, name: owner.name })
          : await kube.apps.readNamespacedStatefulSet({ namespace: input.namespace, name: owner.name });
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
      if (set.metadata?.uid !== input.controllerUid || set.metadata?.deletionTimestamp) return true;
      desired = set.spec?.replicas ?? 1;
      if (set.spec?.selector) selector = toSelectorString(set.spec.selector as LabelSelector);
    }
    const pods = await kube.core.listNamespacedPod({ namespace: input.namespace, labelSelector: selector });
    const mine = pods.items
      .filter((p) => p.metadata?.ownerReferences?.some((o) => o.controller && o.uid === input.controllerUid))
      .map((p) => ({
        uid: p.metadata?.uid ?? '',
        ...(timeOf(p.metadata?.creationTimestamp) !== undefined ? { createdAt: timeOf(p.metadata?.creationTimestamp)! } : {}),
        ready: !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        terminating: !!p.metadata?.deletionTimestamp || p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed',
      }));
    const createdAt = evictedCreatedAt ?? input.createdAt;
    if (controllerWhole({ evicted: { uid: input.uid, ...(createdAt !== undefined ? { createdAt } : {}) }, ...(desired !== undefined ? { desired } : {}), pods: mine })) {
      return true;
    }
    return desired === undefined && owner !== undefined && (await controllerGone(input.namespace, owner, input.controllerUid));
  };

  /**
   * Sets or removes the two conditions on pods already checked (checkedPod), with
   * a strategic merge patch of pods/status each, WRITES_AT_ONCE at a time. A 429
   * (flow control) waits and goes again; a pod gone or replaced by a namesake is
   * counted as gone.
   */
  const patchChecked = async (live: readonly { w: ConditionWrite; pod: k8s.V1Pod }[]) => {
    let written = 0;
    let gone = 0;
    /** uid -> the NodeTaintReplacing lastTransitionTime written: when the mark became visible. */
    const marked: Record<string, number> = {};
    /** The pods written. */
    const uids: string[] = [];
    const occurrence = activityOccurrence();
    await pool(live, WRITES_AT_ONCE, async ({ w, pod }) => {
      // NodeTaintReplacing says since when the pod is visibly marked, and the
      // taintReplacementTimeSeconds count from then: a write that comes late
      // (the worker was down when it was due) is dated when it is written, never
      // back-dated. A mark this decision (or a later one) already wrote keeps its time.
      let replacingSince: number | undefined;
      if (w.replacing) {
        const shown = conditionTime(pod, REPLACING);
        replacingSince = shown !== undefined && shown >= w.replacing.since ? shown : Math.max(w.replacing.since, Date.now());
      }
      const condition = (type: string, c: ConditionWrite['detected'], since = c?.since) =>
        c
          ? { type, status: 'True', reason: 'NodeTainted', message: c.message, lastTransitionTime: new Date(since!).toISOString() }
          : { type, $patch: 'delete' };
      const body = {
        metadata: { uid: w.uid },
        status: { conditions: [condition(DETECTED, w.detected), condition(REPLACING, w.replacing, replacingSince)] },
      };
      for (let attempt = 1; ; attempt++) {
        try {
          await unthrottled(() => kube.pods.patchStatus(w.namespace, w.name, body));
          written++;
          uids.push(w.uid);
          if (replacingSince !== undefined) marked[w.uid] = replacingSince;
          // Counted, and an Event on the pod, when a condition the pod did not show is set (a rewrite of a shown one is not a new mark).
          if (w.detected && conditionTime(pod, DETECTED) === undefined) {
            taintPodsMarked.inc({ condition: DETECTED });
            await noteEvent(kube, {
              regarding: podTarget(w), reason: 'TaintMarked', action: 'Mark',
              note: `marked ${DETECTED}: ${w.detected.message}`, dedupKey: `${occurrence}/${w.uid}/${DETECTED}`,
            });
          }
          if (w.replacing && conditionTime(pod, REPLACING) === undefined) {
            taintPodsMarked.inc({ condition: REPLACING });
            await noteEvent(kube, {
              regarding: podTarget(w), reason: 'TaintReplacementDue', action: 'Mark',
              note: `marked ${REPLACING}: ${w.replacing.message}`, dedupKey: `${occurrence}/${w.uid}/${REPLACING}`,
            });
          }
          return;
        } catch (err) {
          if (isNotFound(err)) {
            gone++;
            return;
          }
          if (!isConflict(err)) throw err;
          // 409 is either the UID precondition (a namesake replaced the pod)
          // or a write race the API server gave up retrying (the kubelet
          // writes status too): only the first means gone.
          const now = await unthrottled(() => kube.core.readNamespacedPod({ namespace: w.namespace, name: w.name })).catch(() => undefined);
          if (!now || now.metadata?.uid !== w.uid) {
            gone++;
            return;
          }
          if (attempt >= 5) throw err;
        }
      }
    });
    return { written, gone, marked, uids };
  };

  /**
   * An Event on each refused pod the workflow does not know yet (not in `known`), saying why it
   * is not replaced: a pod a FoundationDBCluster owns, while the configuration does not say it
   * may be evicted without FoundationDB's process exclusion.
   */
  const noteRefused = async (node: string, listed: readonly ListedPod[], known: readonly unknown[] | undefined): Promise<void> => {
    const knownSet = new Set(Array.isArray(known) ? known : []);
    const occurrence = activityOccurrence();
    await pool(listed.filter((p) => p.refused !== undefined && !knownSet.has(p.uid)), WRITES_AT_ONCE, async (p) => {
      await noteEvent(kube, {
        regarding: podTarget(p), type: 'Warning', reason: 'TaintReplacementRefused', action: 'Mark',
        note: `not replaced for the taint on node ${node}: ${p.refused!}`, dedupKey: `${occurrence}/${p.uid}/refused`,
      });
    });
  };

  /**
   * The node's managed pods, with the taint conditions they carry; with `mark`, the first mark is
   * written on those not `known` yet, while the node carries a configured taint (`taintsChecked`:
   * the caller has just read that it does).
   */
  const listAndMark = async (c: TaintReplacementConfig, node: string, mark: ListTaintPodsInput['mark'], taintsChecked: boolean, raw?: NodeTaint[]):
  Promise<ListedPod[] | ListedAndMarked> => {
    const taints = c.toleratingPods === 'leave' ? raw ?? (await readNode(c, node)).raw : [];
    const pods = (await listOnNode(c, node)).filter((p) => live(p) && !leftTolerating(c, p, taints));
    const listed = pods.map((pod) => {
      const controller = pod.metadata?.ownerReferences?.find((o) => o.controller);
      const refused = foundationDBRefusal(pod.metadata?.ownerReferences, c.evictFoundationDBPodsWithoutExclusion);
      const detectedSince = conditionTime(pod, DETECTED);
      const replacingSince = conditionTime(pod, REPLACING);
      const createdAt = timeOf(pod.metadata?.creationTimestamp);
      return {
        uid: pod.metadata!.uid!,
        namespace: pod.metadata!.namespace!,
        name: pod.metadata!.name!,
        ...(controller ? { controllerUid: controller.uid, controller: { apiVersion: controller.apiVersion, kind: controller.kind, name: controller.name } } : {}),
        ...(detectedSince !== undefined ? { detectedSince } : {}),
        ...(replacingSince !== undefined ? { replacingSince } : {}),
        ...(createdAt !== undefined ? { createdAt } : {}),
        ...(refused !== undefined ? { refused } : {}),
      };
    });
    if (mark !== undefined || taintsChecked) await noteRefused(node, listed, mark?.known);
    if (mark === undefined) return listed;
    const condition = (x: unknown) => x === null || (typeof x === 'object' && typeof (x as { since?: unknown }).since === 'number' &&
      Number.isFinite((x as { since: number }).since) && typeof (x as { message?: unknown }).message === 'string');
    if (!mark || typeof mark !== 'object' || !Array.isArray(mark.known) || !mark.detected || !condition(mark.detected) || !condition(mark.replacing ?? null)) {
      return refuse('mark must be { known: [uid], detected: { since, message }, replacing: { since, message } | null }');
    }
    const known = new Set(mark.known);
    const fresh = pods.filter((p) => !known.has(p.metadata?.uid ?? ''));
    // Listed with the configured podSelector, namespaces and node: each is managed and on this
    // node (checked again, as any write checks it); marked only while the node carries a
    // configured taint (else nothing is written, and the workflow decides again).
    if (fresh.length === 0 || (!taintsChecked && (await configuredTaints(c, node)).length === 0)) return { pods: listed, written: [], marked: {} };
    const checked = await Promise.all(fresh.map(async (pod) => {
      const w: ConditionWrite = {
        uid: pod.metadata!.uid!, namespace: pod.metadata!.namespace!, name: pod.metadata!.name!,
        detected: mark.detected, replacing: mark.replacing ?? null,
      };
      const same = await checkedPod(c, node, w, false, async () => [], new Map([[w.uid, pod]]));
      return same ? { w, pod: same } : undefined;
    }));
    const done = await patchChecked(checked.filter((x): x is { w: ConditionWrite; pod: k8s.V1Pod } => x !== undefined));
    if (done.uids.length > 0) {
      // Pods first marked on this node: its replacements have begun (again, for pods scheduled there since: counted in the Event's series).
      const observing = writeHold(gates, 'taint')?.kind === 'observe';
      await noteEvent(kube, {
        regarding: nodeTarget(node), reason: 'TaintReplacementsStarted', action: 'Mark',
        note: `taint replacement started: ${mark.detected!.message}; its managed pods are marked, then evicted as slots are granted` +
          (observing ? ' (observe mode: each eviction is recorded as WouldEvict, not asked)' : ''),
        dedupKey: `${activityOccurrence()}/started`,
      });
    }
    return { pods: listed, written: done.uids, marked: done.marked };
  };

  /**
   * After a replacement: an Event on the node when no managed pod with a controller is left on it
   * (those without one are never evicted). The node is the one the calling workflow (taint/<node>)
   * is for. Never fails the activity: a listing that fails is logged.
   */
  const noteReplacementsDone = async (): Promise<void> => {
    const node = nodeOfId(callingWorkflow()?.workflowId ?? '');
    if (!node) return;
    try {
      const c = configured();
      const taints = c.toleratingPods === 'leave' ? (await readNode(c, node)).raw : [];
      const left = (await listOnNode(c, node)).filter((p) => live(p) && !leftTolerating(c, p, taints) && p.metadata?.ownerReferences?.some((o) => o.controller));
      if (left.length > 0) return;
    } catch (err) {
      log.warn({ node, error: errorMessage(err) }, 'taint: could not list the pods left on the node for its TaintReplacementsDone Event');
      return;
    }
    await noteEvent(kube, {
      regarding: nodeTarget(node), reason: 'TaintReplacementsDone', action: 'Evict',
      note: `taint replacement done: no managed pod with a controller is left on node ${node}`, dedupKey: `${activityOccurrence()}/done`,
    });
  };

  return {
    /** The settings of the worker's own configuration that the coordinator keeps. */
    async taintSlotSettings(): Promise<SlotSettings> {
      const c = configured();
      return {
        maxConcurrentReplacements: c.maxConcurrentReplacements, maxTaintedNodes: c.breaker.maxTaintedNodes,
        ...(breakerFromFaultDomains(c) ? { faultDomains: true } : {}), grantCheckSeconds: GRANT_CHECK_SECONDS,
      };
    },

    /** The slots a node's workflow holds and asks for, as the workflow itself says (nodeSlotsOf). */
    async taintNodeSlots(input: { node: string }): Promise<NodeSlotsFound> {
      const ctx = Context.current();
      return nodeSlotsOf(ctx.client, nodeName(input?.node), ctx.info.taskQueue);
    },

    /**
     * The breaker's inputs, counted here: nodes carrying a configured taint, out of all nodes; with
     * FDB's maxFaultDomainsWithTaintedProcessGroups, out of the nodes holding managed pods (its fault domains).
     */
    async taintNodeCounts(): Promise<{ taintedNodes: number; totalNodes: number }> {
      const c = configured();
      const nodes = (await kube.core.listNode()).items;
      if (breakerFromFaultDomains(c)) {
        const taints = new Map(nodes.map((n) => [n.metadata?.name ?? '', n.spec?.taints ?? []]));
        const pods = (await listManaged(c)).filter(live).map((p) => ({ ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}) }));
        return faultDomainCounts(pods, (n) => taints.get(n), c.taintReplacementOptions);
      }
      return { taintedNodes: nodes.filter((n) => matchingTaints(n.spec?.taints, c.taintReplacementOptions).length > 0).length, totalNodes: nodes.length };
    },

    /**
     * A node's configured taints as the Node carries them now, and the
     * settings of the worker's configuration: what a node workflow decides
     * on. A signal only says "look again"; it is never taken for the truth.
     */
    async taintNodeState(input: { node: string }): Promise<{ taints: MatchedTaint[]; settings: TaintSettings; missing?: true }> {
      const c = configured();
      const read = await readNode(c, nodeName(input?.node));
      return { taints: read.taints, settings: settingsOf(c), ...(read.missing ? { missing: true } : {}) };
    },

    /**
     * A new node workflow's first step, in one activity: the node's configured
     * taints and the settings (as taintNodeState), and, when it carries one, its
     * managed pods listed and their first mark written (as listTaintPods with a
     * mark), the mark decided here from the taints as the workflow would decide
     * it. `hints`: the watcher's first sight of each taint (taint id -> ms), from
     * the signal the workflow was started with; believed at most SEEN_AT_TRUST_MS
     * back, as the workflow believes them. The taints come back with the first
     * sight used, so that the workflow keeps the same times.
     */
    async taintNodeStart(input: TaintNodeStartInput): Promise<TaintNodeStartResult> {
      const c = configured();
      const node = nodeName(input?.node);
      const hints = input?.hints ?? {};
      if (typeof hints !== 'object' || Array.isArray(hints)) return refuse('hints must be an object of taint id -> time (ms)');
      const at = input?.at;
      if (at !== undefined && (typeof at !== 'number' || !Number.isFinite(at))) return refuse('at must be a time in ms');
      const now = listingTime(at, Date.now());
      const settings = settingsOf(c);
      const read = await readNode(c, node);
      const { taints, mark } = startMark(node, read.taints, settings, hints as Record<string, unknown>, now);
      if (taints.length === 0) return { taints, settings, ...(read.missing ? { missing: true } : {}) };
      const listed = await listAndMark(c, node, mark && { known: [], ...mark }, true, read.raw);
      return { taints, settings, listedAt: now, ...(mark ? { mark } : {}), ...(Array.isArray(listed) ? { pods: listed, written: [], marked: {} } : listed) };
    },

    /** The managed pods on a node, with the taint conditions they already carry. */
    async listTaintPods(input: ListTaintPodsInput): Promise<ListedPod[] | ListedAndMarked> {
      const c = configured();
      return listAndMark(c, nodeName(input?.node), input?.mark, false);
    },

    /**
     * Sets or removes the two conditions on pods/status with a strategic merge
     * patch (conditions merge by type, so the kubelet's and the scheduler's
     * stay). A pod that is gone, or replaced by a namesake, is skipped.
     */
    async writeTaintConditions(input: { node: string; writes: ConditionWrite[] }): Promise<{ written: number; gone: number; marked: Record<string, number>; skipped?: number }> {
      const node = nodeName(input?.node);
      const writes = Array.isArray(input.writes) ? input.writes : refuse('writes must be a list');
      const c = writes.some((w) => w?.detected || w?.replacing) ? configured() : sectionForCleanup();
      let gone = 0;
      let skipped = 0;
      // Every pod is checked before any is written: a refusal of a mark changes nothing.
      let taints: Promise<MatchedTaint[]> | undefined;
      const taintsOf = (n: string) => (taints ??= configuredTaints(c, n));
      // The taint lifted between the workflow's reading and this write (a Node back a moment ago):
      // no mark is written, and the workflow is told so without a refusal, which would end it with
      // its conditions on; it reads the Node again (the watcher tells it) and clears them instead.
      if (writes.some((w) => w?.detected || w?.replacing) && (await taintsOf(node)).length === 0) {
        throw ApplicationFailure.nonRetryable(`node ${node} carries none of the configured taints any more: no mark written; read the node again`, TAINT_UNTAINTED);
      }
      // The re-read: one LIST of the node's managed pods rather than a GET per pod (a pod
      // missing from it is read by name, to tell gone from refused).
      const listed = writes.length > 1
        ? new Map((await listOnNode(c, node)).map((p) => [p.metadata?.uid ?? '', p]))
        : undefined;
      const live: { w: ConditionWrite; pod: k8s.V1Pod }[] = [];
      await pool(writes, WRITES_AT_ONCE, async (w) => {
        const setting = !!(w?.detected || w?.replacing);
        let pod: k8s.V1Pod | undefined;
        try {
          pod = await checkedPod(c, node, w ?? {}, setting, taintsOf, listed);
        } catch (err) {
          // A clear of a pod that is no longer this node's managed one (relabelled, or a namesake
          // elsewhere) is left alone, and the rest are cleared: one such pod must not keep the
          // conditions on every other pod once the workflow has ended. A mark is refused whole.
          if (setting || !(err instanceof ApplicationFailure) || err.type !== TAINT_REFUSED) throw err;
          log.warn({ node, pod: `${preview(w?.namespace, 80)}/${preview(w?.name, 260)}`, reason: err.message }, 'taint conditions: a clear left out');
          skipped++;
          return;
        }
        if (pod) live.push({ w, pod });
        else gone++;
      });
      const done = await patchChecked(live);
      return { written: done.written, gone: gone + done.gone, marked: done.marked, ...(skipped > 0 && { skipped }) };
    },

    /**
     * Asks for the pod's eviction (policy/v1), with a UID precondition. A
     * PodDisruptionBudget's refusal (429, or the 500 of a pod under two
     * budgets) is returned, not thrown: the workflow retries it with its own
     * back-off and shows it in its status.
     */
    async evictPod(input: { node: string; namespace: string; name: string; uid: string; observed?: boolean }): Promise<EvictResult> {
      const c = configured();
      const node = nodeName(input?.node);
      let taints: MatchedTaint[] = [];
      let raw: NodeTaint[] = [];
      const pod = await checkedPod(c, node, input, true, async (n) => ({ raw, taints } = await readNode(c, n)).taints);
      if (!pod) {
        taintEvictions.inc({ outcome: 'gone' });
        return { outcome: 'gone' };
      }
      // What the listing leaves alone is never evicted, whatever the workflow asks.
      const why = foundationDBRefusal(pod.metadata?.ownerReferences, c.evictFoundationDBPodsWithoutExclusion) ??
        (leftTolerating(c, pod, raw) ? 'it tolerates the node\'s configured taints, and taintReplacement.toleratingPods is leave' : undefined);
      if (why) {
        await noteEvent(kube, {
          regarding: podTarget(input), type: 'Warning', reason: 'TaintReplacementRefused', action: 'Evict',
          note: `not evicted from node ${node}: ${why}`, dedupKey: `${activityOccurrence()}/refused`,
        });
        return refuse(`pod ${input.namespace}/${input.name} is not evicted: ${why}`);
      }
      // Right before the write: observe mode records it; paused (or a pause state that cannot be
      // confirmed) asks nothing.
      const hold = writeHold(gates, 'taint');
      if (hold?.kind === 'observe') {
        const note = `would evict pod ${input.namespace}/${input.name} from node ${node}: tainted ${taints.map((t) => t.key).join(', ')}`;
        // Asked again while observing (the workflow says so): recorded once per pod.
        if (input.observed !== true) {
          taintEvictions.inc({ outcome: 'observed' });
          await recordWould(kube, {
            capability: 'taint', action: 'evict', note, dedupKey: `taint/${input.uid}`,
            regarding: { apiVersion: 'v1', kind: 'Pod', namespace: input.namespace, name: input.name, uid: input.uid },
          });
        }
        return { outcome: 'observed', message: `observe mode: ${note}` };
      }
      if (hold) {
        taintEvictions.inc({ outcome: 'paused' });
        return { outcome: 'paused', message: hold.message };
      }
      // Only on a slot the coordinator gave: a forged grant asks nothing, and its pod waits for a
      // slot again (replace.ts); a grant found here is what makes the pod's hold confirmed.
      const ctx = Context.current();
      const notGranted = await ungranted(ctx.client, node, input.uid, ctx.info.taskQueue);
      if (notGranted) {
        taintEvictions.inc({ outcome: 'ungranted' });
        return { outcome: 'ungranted', message: notGranted };
      }
      // UID-bound (a namesake is never evicted); a PodDisruptionBudget's refusal is 'blocked'.
      const occurrence = activityOccurrence();
      const tainted = taintKeys(taints);
      await noteEvent(kube, {
        regarding: podTarget(input), reason: 'TaintReplacing', action: 'Evict',
        note: `eviction asked: node ${node} has taint ${tainted}, and a replacement slot was granted`, dedupKey: `${occurrence}/asked`,
      });
      const result = await evictPodOnce(kube, { namespace: input.namespace, name: input.name, uid: input.uid });
      taintEvictions.inc({ outcome: result.outcome === 'blocked' ? 'refused' : result.outcome });
      if (result.outcome === 'evicted') {
        await noteEvent(kube, {
          regarding: podTarget(input), reason: 'TaintEvicted', action: 'Evict',
          note: `evicted from node ${node} (taint ${tainted}): its controller creates a replacement`, dedupKey: `${occurrence}/evicted`,
        });
      } else if (result.outcome === 'blocked') {
        // Asked again with back-off: each refusal with the same answer is counted in one Event's series.
        await noteEvent(kube, {
          regarding: podTarget(input), type: 'Warning', reason: 'TaintEvictionRefused', action: 'Evict',
          note: `eviction refused, asked again with back-off: ${result.message.slice(0, 300)}`, dedupKey: `${occurrence}/refused`,
        });
      }
      return result;
    },

    /**
     * Waits (up to waitMs) until the evicted pod is gone or terminating and a
     * pod of the same controller, created after it and not terminating, is
     * Ready: the end of "in flight".
     */
    async awaitReplacement(input: AwaitReplacementInput): Promise<'replaced' | 'pending'> {
      const deadline = Date.now() + input.waitMs;
      for (;;) {
        let oldGone = false;
        let createdAt: number | undefined;
        try {
          const old = await kube.core.readNamespacedPod({ namespace: input.namespace, name: input.name });
          oldGone = old.metadata?.uid !== input.uid || !!old.metadata?.deletionTimestamp;
          if (old.metadata?.uid === input.uid) createdAt = timeOf(old.metadata?.creationTimestamp);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          oldGone = true;
        }
        if (oldGone && (await replacementReady(input, createdAt))) {
          taintReplacementsDone.inc();
          await noteReplacementsDone();
          return 'replaced';
        }
        if (Date.now() >= deadline) return 'pending';
        await Context.current().sleep(2000);
      }
    },
  };
}
