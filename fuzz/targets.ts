// What the message fuzzer sends to: every workflow type the worker hosts
// (src/workflows/index.ts), each with its handlers (the names come from each
// capability's messages.ts, so a renamed or added handler is fuzzed as it is),
// a valid template of each message, and the forged values a writer to the
// namespace could send. A message is made from a template by one family of
// generate.ts; the run's facts (running entries, pods, generations) come in a
// Context read before each batch.
import * as repairMessages from '../src/repair/messages.ts';
import * as taintMessages from '../src/taint/messages.ts';
import * as weederMessages from '../src/weeder/messages.ts';
import * as appsMessages from '../src/apps/messages.ts';
import * as safetyMessages from '../src/safety/messages.ts';
import * as nodeRepairMessages from '../src/noderepair/messages.ts';
import * as taintSlots from '../src/taint/slots.ts';
import * as weederWindow from '../src/weeder/window.ts';
import { MESSAGE_LIMITS } from '../src/checks/limits.ts';
import { appWorkflowId } from '../src/apps/types.ts';
import * as workflows from '../src/workflows/index.ts';
import {
  around, AWKWARD_STRINGS, boundaryAt, type Bound, type Draw, type Family, nested, pathsOf, randomJson, setAt, sized, wrongTypeOf,
} from './generate.ts';

export type Kind = 'signal' | 'update' | 'query' | 'start';

/** What the run knows when it makes a batch: read from the cluster and Temporal just before. */
export interface Context {
  taskQueue: string;
  /** The namespace the configuration names (every capability's). */
  namespace: string;
  /** A namespace the configuration does not name. */
  outside: string;
  nodes: { name: string; address: string }[];
  /** The weeder's Service and the App. */
  service: string;
  app: string;
  appGeneration: number;
  appUid?: string;
  /** Entries of the repair queue: every index it lists, and the running ones with their queue chain. */
  repairIndexes: string[];
  runningEntries: { index: string; queue: string }[];
  /** The queue's chain (its first run id), when it runs. */
  queueChain?: string;
  /** Managed pods, with their node and uid. */
  pods: { node: string; uid: string; pod: string }[];
  /** Grants the coordinator has in flight. */
  inFlight: { node: string; uid: string; pod: string }[];
  /** Workflow ids running on tend's task queue now, by workflow type: per-object messages go to one of them when there is one. */
  running: Record<string, string[]>;
  seed: number;
}

/** One message to send. */
export interface Message {
  /** The workflow type's row in the report. */
  type: string;
  handler: string;
  kind: Kind;
  workflowId: string;
  args: unknown[];
  family: Family;
  note: string;
  /** For a start: the workflow type started, its task queue. */
  start?: { workflowType: string; taskQueue: string };
  /** An operator's command (a pause, a stop, a delete): sent broken only; one taken anyway is undone by the run. */
  operator?: boolean;
}

/** A handler of a workflow type: its name and kind, its valid template and its forged values. */
export interface HandlerSpec {
  name: string;
  kind: Kind;
  /** The arguments of a valid message (undefined: the handler takes none). */
  valid?: (c: Context, d: Draw) => unknown[];
  /**
   * Valid messages that only an operator sends and that change what tend does (a pause, a stop,
   * a delete): never sent as they are, only broken (their validity is not what is fuzzed).
   */
  operator?: boolean;
  /** Well-formed, forged values: reports for other entries, huge generations, give-backs, grants. */
  forged?: (c: Context, d: Draw) => { args: unknown[]; note: string }[];
}

export interface TargetSpec {
  /** The row's name: the workflow id's pattern. */
  type: string;
  /** The registered workflow function's name. */
  workflowType: string;
  /** The workflow id a message goes to (undefined: none to send to now). */
  id: (c: Context, d: Draw) => string | undefined;
  /** Where a hand start goes: tend's own id for it and someone else's. */
  startIds: (c: Context, d: Draw) => string[];
  handlers: HandlerSpec[];
  /** A valid start input and forged ones. */
  startInputs: (c: Context, d: Draw) => { args: unknown[]; note: string }[];
}

/**
 * The bounds every messages module exports, with where they come from: its numbers named like a
 * bound (MAX_*, *_LIMIT ...), and the numbers of its objects so named (NODE_MESSAGE_BOUNDS.taints, SAFETY_LIMITS.maxDepth).
 */
export function exportedBounds(): Record<string, Bound[]> {
  const named = /MAX|LIMIT|BOUND|MOST/i;
  const usable = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0 && v <= 2_000_000;
  const of = (file: string, mod: Record<string, unknown>) => Object.entries(mod).filter(([k]) => named.test(k)).flatMap(([k, v]): Bound[] => {
    if (usable(v)) return [{ name: `${file} ${k}`, value: v }];
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      return Object.entries(v).filter(([, x]) => usable(x)).map(([f, x]) => ({ name: `${file} ${k}.${f}`, value: x as number }));
    }
    return [];
  });
  const shared = of('src/checks/limits.ts', { MESSAGE_LIMITS });
  return {
    repair: [...of('src/repair/messages.ts', repairMessages), ...shared],
    // The coordinator's bounds live beside its slots, the armed announcement's beside the window.
    taint: [...of('src/taint/messages.ts', taintMessages), ...of('src/taint/slots.ts', taintSlots), ...shared],
    weeder: [...of('src/weeder/messages.ts', weederMessages), ...of('src/weeder/window.ts', weederWindow), ...shared],
    apps: [...of('src/apps/messages.ts', appsMessages), ...shared],
    safety: [...of('src/safety/messages.ts', safetyMessages), ...shared],
    node: [...of('src/noderepair/messages.ts', nodeRepairMessages), ...shared],
  };
}

const node = (c: Context, d: Draw) => (c.nodes.length ? d.pick(c.nodes).name : 'node-0');
const runningEntry = (c: Context, d: Draw) => (c.runningEntries.length ? d.pick(c.runningEntries) : undefined);
const podOn = (c: Context, d: Draw) => (c.pods.length ? d.pick(c.pods) : { node: node(c, d), uid: '00000000-0000-0000-0000-000000000000', pod: `${c.namespace}/x` });
const HUGE_GENERATION = 2 ** 53 - 1;
/** An id of no workflow of tend's: a new one each time, drawn from the run's generator. */
const other = (c: Context, d: Draw, what: string) => `fuzz-${c.seed}-${what}-${d.int(1_000_000_000)}`;
/** A running workflow of the type (its handlers are there to answer), else the id it would have. */
const runningOr = (c: Context, d: Draw, workflowType: string, otherwise: () => string) => {
  const ids = c.running[workflowType] ?? [];
  return ids.length ? d.pick(ids) : otherwise();
};
/** The weeder's workflow id (DESIGN.md): written out here, as its home module is moving. */
export const weederWorkflowId = (namespace: string, service: string) => `weeder/${namespace}/${service}`;

/** Every workflow type the worker hosts, with its handlers. */
export function targets(): TargetSpec[] {
  const repairQueue: TargetSpec = {
    type: 'repair-queue',
    workflowType: 'repairQueueWorkflow',
    id: () => repairMessages.REPAIR_QUEUE_WORKFLOW_ID,
    startIds: (c, d) => [repairMessages.REPAIR_QUEUE_WORKFLOW_ID, other(c, d, 'queue')],
    handlers: [
      {
        name: repairMessages.addUpdate.name, kind: 'update',
        // A machine type the configuration does not have: the add is refused by the worker's check, after the workflow took the update in.
        valid: (c, d) => [{ requests: [{ operation: 'fix', machine_type: 'fuzz-unknown', address: d.pick(c.nodes).address }] }],
        forged: (c) => [
          { args: [{ requests: Array.from({ length: 5000 }, (_, i) => ({ operation: 'fix', machine_type: 'fuzz-unknown', address: `10.${(i >> 8) & 255}.${i & 255}.1` })) }], note: '5,000 requests in one add' },
          { args: [{ requests: [{ operation: 'fix', machine_type: 'sim', address: c.nodes[0]?.address ?? '10.0.0.1', serial: sized(100_000) }] }], note: 'a 100,000-character serial' },
        ],
      },
      {
        name: repairMessages.deleteUpdate.name, kind: 'update', operator: true,
        valid: (c, d) => [{ index: c.repairIndexes.length ? d.pick(c.repairIndexes) : '1' }],
        forged: () => [
          { args: [{ index: '9999999999999999' }], note: 'an index past the safe integers' },
          { args: [{ index: '999999' }], note: 'an index never given' },
          { args: [{ index: '-1' }], note: 'a negative index' },
        ],
      },
      { name: repairMessages.deleteFinishedUpdate.name, kind: 'update', operator: true },
      { name: repairMessages.deleteUnfinishedUpdate.name, kind: 'update', operator: true },
      { name: repairMessages.enableUpdate.name, kind: 'update', valid: () => [] },
      { name: repairMessages.disableUpdate.name, kind: 'update', operator: true },
      { name: repairMessages.resetBackoffUpdate.name, kind: 'update', valid: () => [] },
      {
        name: nodeRepairMessages.requestNodeRepairUpdate.name, kind: 'update',
        // A Node of the cluster: the queue reads it and the worker's nodeRepair section itself (none here: not-configured).
        valid: (c, d) => [{ node: node(c, d) }],
        forged: () => [
          { args: [{ node: 'fuzz-no-such-node' }], note: 'a repair asked for a Node that does not exist' },
          { args: [{ node: 'x'.repeat(100_000) }], note: 'a 100,000-character Node name' },
          { args: [{ node: 'sim-1', address: '10.9.9.9', operation: 'reboot', machine_type: 'sim' }], note: 'an ask carrying its own entry' },
        ],
      },
      { name: repairMessages.listQuery.name, kind: 'query', valid: () => [] },
      { name: repairMessages.isEnabledQuery.name, kind: 'query', valid: () => [] },
      {
        name: repairMessages.entryReportSignal.name, kind: 'signal',
        valid: (c, d) => {
          const e = runningEntry(c, d);
          return [{ index: e?.index ?? '1', queue: e?.queue ?? c.queueChain ?? '', fields: { step_status: 'running' } }];
        },
        forged: (c, d) => {
          const e = runningEntry(c, d);
          const index = e?.index ?? (c.repairIndexes.length ? d.pick(c.repairIndexes) : '1');
          const queue = e?.queue ?? c.queueChain ?? '';
          return [
            { args: [{ index, queue, fields: { status: 'succeeded' } }], note: `entry ${index} reported succeeded by someone else` },
            { args: [{ index, queue, removed: true }], note: `entry ${index} reported removed by someone else` },
            { args: [{ index, queue, fields: { status: 'failed', step: 2 ** 40 } }], note: `entry ${index} reported failed at a huge step` },
            { args: [{ index: '9999999999999999', queue, fields: { status: 'succeeded' } }], note: 'a report for an index past the safe integers' },
            { args: [{ index, queue: 'another-queue', fields: { status: 'succeeded' } }], note: 'a report from another queue chain' },
            { args: [{ index, queue, fields: { address: '10.9.9.9', machine_type: 'other', operation: 'other' } }], note: 'a report rewriting the entry\'s keys' },
          ];
        },
      },
    ],
    startInputs: (c) => [
      { args: [], note: 'no input' },
      { args: [{ entries: [], nextIndex: 2 ** 53, enabled: true, closing: {} }], note: 'a huge nextIndex' },
      { args: [{ entries: [], nextIndex: 1, enabled: true, closing: {}, commands: ['sh', '-c', 'true'] }], note: 'an unknown field with a command' },
      { args: [{ entries: Array.from({ length: 9000 }, (_, i) => ({ index: String(i + 1), address: c.nodes[0]?.address ?? '10.0.0.1', machine_type: 'sim', operation: 'fix', status: 'succeeded' })), nextIndex: 9001, enabled: true, closing: {} }], note: '9,000 carried entries' },
    ],
  };

  const repairEntry: TargetSpec = {
    type: 'repair/<index>',
    workflowType: 'repairEntryWorkflow',
    id: (c, d) => {
      const e = runningEntry(c, d);
      return e ? repairMessages.repairEntryWorkflowId(e.index) : undefined;
    },
    startIds: (c, d) => [repairMessages.repairEntryWorkflowId(runningEntry(c, d)?.index ?? '999999'), repairMessages.repairEntryWorkflowId('999999'), other(c, d, 'entry')],
    handlers: [
      {
        name: repairMessages.setEnabledSignal.name, kind: 'signal', valid: () => [true],
        forged: () => [{ args: [false], note: 'a disable that the queue did not send' }],
      },
      { name: repairMessages.resetEntryBackoffSignal.name, kind: 'signal', valid: () => [] },
    ],
    startInputs: (c, d) => {
      const e = runningEntry(c, d);
      const base = { index: e?.index ?? '999999', address: c.nodes[0]?.address ?? '10.0.0.1', machine_type: 'sim', operation: 'fix', enabled: true, queue: e?.queue ?? c.queueChain ?? 'q' };
      return [
        { args: [base], note: 'a well-formed entry input, started by hand' },
        { args: [{ ...base, repair_command: ['sh', '-c', 'touch /tmp/fuzz-pwned'] }], note: 'an input with a command' },
        { args: [{ ...base, index: '9999999999999999' }], note: 'an index past the safe integers' },
      ];
    },
  };

  const slots: TargetSpec = {
    type: 'taint-replacements',
    workflowType: 'taintReplacementsWorkflow',
    id: () => taintMessages.SLOTS_WORKFLOW_ID,
    startIds: (c, d) => [taintMessages.SLOTS_WORKFLOW_ID, other(c, d, 'slots')],
    handlers: [
      {
        name: taintMessages.slotSettingsSignal.name, kind: 'signal', valid: () => [],
        forged: () => [{ args: [{ maxConcurrentReplacements: 1000, maxTaintedNodes: '100%' }], note: 'settings raising the limit to 1,000' }],
      },
      {
        name: taintMessages.nodeCountsSignal.name, kind: 'signal', valid: () => [],
        forged: () => [{ args: [{ taintedNodes: 0, totalNodes: 1e9 }], note: 'counts opening the breaker' }],
      },
      {
        name: taintMessages.requestReplacementSignal.name, kind: 'signal',
        valid: (c, d) => {
          const p = podOn(c, d);
          return [{ node: p.node, requests: [{ node: p.node, uid: p.uid, pod: p.pod, requestedAt: 0 }] }];
        },
        forged: (c, d) => {
          const p = podOn(c, d);
          return [
            { args: [{ node: p.node, requests: Array.from({ length: 5000 }, (_, i) => ({ node: p.node, uid: `fuzz-${i}`, pod: `${c.namespace}/fuzz-${i}`, requestedAt: i })) }], note: '5,000 requests in one signal' },
            { args: [{ node: 'not-this-node', requests: [{ node: p.node, uid: p.uid, pod: p.pod, requestedAt: 0 }] }], note: 'a request for another node\'s pod' },
          ];
        },
      },
      {
        name: taintMessages.releaseReplacementSignal.name, kind: 'signal',
        valid: () => [{ uids: ['fuzz-nobody'] }],
        forged: (c) => [{ args: [{ uids: c.inFlight.map((g) => g.uid) }], note: `a give-back of every slot in flight (${c.inFlight.length})` }],
      },
      {
        name: taintMessages.withdrawNodeSignal.name, kind: 'signal', valid: () => [{ node: 'fuzz-no-such-node' }],
        forged: (c) => c.inFlight.map((g) => ({ args: [{ node: g.node }], note: `a withdrawal of ${g.node}, which holds a slot` })),
      },
      {
        name: taintMessages.slotsHeldSignal.name, kind: 'signal',
        valid: (c, d) => [{ node: node(c, d), held: [] }],
        forged: (c, d) => {
          const p = podOn(c, d);
          return [{ args: [{ node: p.node, held: Array.from({ length: 50 }, (_, i) => ({ node: p.node, uid: `fuzz-held-${i}`, pod: `${c.namespace}/h${i}`, requestedAt: 0 })) }], note: '50 slots claimed held' }];
        },
      },
      { name: taintMessages.slotsStatusQuery.name, kind: 'query', valid: () => [] },
    ],
    startInputs: () => [
      { args: [{}], note: 'no carried data' },
      { args: [{ data: { queue: [], inFlight: [], maxConcurrentReplacements: 1000 } }], note: 'carried data with a raised limit' },
    ],
  };

  const taintNode: TargetSpec = {
    type: 'taint/<node>',
    workflowType: 'taintNodeWorkflow',
    id: (c, d) => runningOr(c, d, 'taintNodeWorkflow', () => taintMessages.nodeWorkflowId(node(c, d))),
    startIds: (c, d) => [taintMessages.nodeWorkflowId(node(c, d)), other(c, d, 'taint')],
    handlers: [
      {
        name: taintMessages.nodeTaintsSignal.name, kind: 'signal',
        valid: () => [{ taints: [] }],
        forged: () => [
          { args: [{ taints: [{ key: 'fuzz/forged', effect: 'NoSchedule', durationInSeconds: 0, matchedBy: '*', seenAt: 0 }] }], note: 'a taint the Node does not have, due at once' },
          { args: [{ taints: Array.from({ length: 5000 }, (_, i) => ({ key: `k${i}`, effect: 'NoSchedule', durationInSeconds: 0, matchedBy: '*' })) }], note: '5,000 taints' },
        ],
      },
      { name: taintMessages.podsChangedSignal.name, kind: 'signal', valid: () => [] },
      {
        name: taintMessages.replacementGrantedSignal.name, kind: 'signal', valid: () => [{ uids: ['fuzz-nobody'] }],
        forged: (c) => [{ args: [{ uids: c.pods.map((p) => p.uid) }], note: 'a grant the coordinator did not give, for every managed pod' }],
      },
      { name: taintMessages.announceSlotsSignal.name, kind: 'signal', valid: () => [] },
      { name: taintMessages.nodeStatusQuery.name, kind: 'query', valid: () => [] },
    ],
    startInputs: (c, d) => [
      { args: [{ node: node(c, d) }], note: 'a node of the cluster' },
      { args: [{ node: 'fuzz-no-such-node' }], note: 'a node that does not exist' },
      { args: [{ node: node(c, d), data: { granted: c.pods.map((p) => p.uid), seen: {} } }], note: 'carried grants for every managed pod' },
    ],
  };

  const weeder: TargetSpec = {
    type: 'weeder',
    workflowType: 'weederWorkflow',
    id: (c, d) => runningOr(c, d, 'weederWorkflow', () => weederWorkflowId(c.namespace, c.service)),
    startIds: (c, d) => [weederWorkflowId(c.namespace, c.service), weederWorkflowId(c.outside, 'kube-dns'), other(c, d, 'weeder')],
    handlers: [
      {
        name: weederMessages.extendSignal.name, kind: 'signal', valid: () => [{ seconds: 5, reason: 'fuzz' }],
        forged: () => [{ args: [{ seconds: 1e12 }], note: 'a window extended by 10^12 s' }, { args: [{ seconds: -1 }], note: 'a negative extension' }],
      },
      { name: weederMessages.armSignal.name, kind: 'signal', valid: () => [{ reason: 'fuzz' }] },
      { name: weederMessages.stopSignal.name, kind: 'signal', operator: true, valid: () => [{ reason: 'fuzz' }] },
      {
        name: weederMessages.armedWeedingSignal.name, kind: 'signal',
        valid: () => [{ token: 'fuzz-token', pods: [] }],
        forged: (c) => [{ args: [{ token: 'guessed', pods: c.pods.map((p) => ({ name: p.pod.split('/')[1], uid: p.uid })) }], note: 'an announcement with a guessed token' }],
      },
      { name: weederMessages.stopUpdate.name, kind: 'update', operator: true, valid: () => [{ reason: 'fuzz' }] },
      { name: weederMessages.windowQuery.name, kind: 'query', valid: () => [] },
    ],
    startInputs: (c) => [
      { args: [{ namespace: c.namespace, service: c.service }], note: 'the configured Service' },
      { args: [{ namespace: c.outside, service: 'kube-dns' }], note: 'a Service outside the configuration' },
      { args: [{ namespace: c.namespace, service: c.service, carried: { deadline: 2 ** 52, weeded: [], reported: [], failed: [] } }], note: 'a carried window with a far deadline' },
    ],
  };

  const app: TargetSpec = {
    type: 'app',
    workflowType: 'appWorkflow',
    id: (c) => appWorkflowId(c.namespace, c.app),
    startIds: (c, d) => [appWorkflowId(c.namespace, c.app), appWorkflowId(c.outside, 'x'), other(c, d, 'app')],
    handlers: [
      {
        name: appsMessages.appChangedSignal.name, kind: 'signal',
        valid: (c) => [{ generation: c.appGeneration, ...(c.appUid ? { uid: c.appUid } : {}) }],
        forged: (c) => [
          { args: [{ generation: HUGE_GENERATION, uid: c.appUid }], note: 'a huge generation' },
          { args: [{ generation: c.appGeneration, uid: c.appUid, stoppedGeneration: c.appGeneration }], note: 'stoppedGeneration = the current generation' },
          { args: [{ generation: c.appGeneration + 1, uid: 'another-uid' }], note: 'another App\'s uid' },
        ],
      },
      { name: appsMessages.appDeletedSignal.name, kind: 'signal', operator: true, forged: () => [{ args: [], note: 'an App deletion the watcher did not see' }] },
      { name: appsMessages.startUpdate.name, kind: 'update', valid: () => [] },
      { name: appsMessages.stopUpdate.name, kind: 'update', operator: true },
      {
        name: appsMessages.restartUpdate.name, kind: 'update', operator: true, valid: () => [{ strategy: 'rolling', timeoutSeconds: 60 }],
        forged: () => [{ args: [{ strategy: 'stop-start', timeoutSeconds: 2 ** 40 }], note: 'a restart waiting 2^40 s' }],
      },
      { name: appsMessages.appStateQuery.name, kind: 'query', valid: () => [] },
    ],
    startInputs: (c) => [
      { args: [{ namespace: c.namespace, name: c.app }], note: 'the configured App' },
      { args: [{ namespace: c.outside, name: 'x' }], note: 'an App outside the configuration' },
      { args: [{ namespace: c.namespace, name: c.app, historyLimit: 1 }], note: 'a history limit of 1' },
    ],
  };

  const safety: TargetSpec = {
    type: 'tend-safety',
    workflowType: 'safetyWorkflow',
    id: () => safetyMessages.SAFETY_WORKFLOW_ID,
    startIds: (c, d) => [safetyMessages.SAFETY_WORKFLOW_ID, other(c, d, 'safety')],
    handlers: [
      { name: safetyMessages.pauseUpdate.name, kind: 'update', operator: true, valid: () => [{ reason: 'fuzz', by: 'fuzz' }] },
      { name: safetyMessages.resumeUpdate.name, kind: 'update', valid: () => [{ by: 'fuzz' }] },
      { name: safetyMessages.pauseSignal.name, kind: 'signal', operator: true, valid: () => [{ reason: 'fuzz', by: 'fuzz' }] },
      { name: safetyMessages.resumeSignal.name, kind: 'signal', valid: () => [{ by: 'fuzz' }] },
      { name: safetyMessages.stateQuery.name, kind: 'query', valid: () => [] },
    ],
    startInputs: () => [
      { args: [], note: 'no input' },
      { args: [{ state: { revision: 2 ** 53, capabilities: {} } }], note: 'a malformed carried state' },
    ],
  };

  const nodeRepair: TargetSpec = {
    type: 'node/<name>',
    workflowType: 'nodeRepairWorkflow',
    id: (c, d) => runningOr(c, d, 'nodeRepairWorkflow', () => nodeRepairMessages.nodeRepairWorkflowId(node(c, d))),
    startIds: (c, d) => [nodeRepairMessages.nodeRepairWorkflowId(node(c, d)), other(c, d, 'node')],
    handlers: [
      { name: nodeRepairMessages.nodeChangedSignal.name, kind: 'signal', valid: () => [], forged: () => [{ args: [{ ready: false, since: 0 }], note: 'a change that claims the Node is down' }] },
      { name: nodeRepairMessages.nodeRepairStatusQuery.name, kind: 'query', valid: () => [] },
    ],
    startInputs: (c, d) => [
      { args: [{ node: node(c, d) }], note: 'a node of the cluster' },
      { args: [{ node: 'fuzz-no-such-node' }], note: 'a node that does not exist' },
      { args: [{ node: node(c, d), carried: { refusals: 0, queued: { index: '1', address: '10.9.9.9', operation: 'reboot' } } }], note: 'a carried entry that was never queued' },
    ],
  };

  const check: TargetSpec = {
    type: 'check',
    workflowType: 'checkWorkflow',
    id: () => undefined,
    startIds: (c, d) => [other(c, d, 'check')],
    handlers: [],
    startInputs: () => [{ args: [], note: 'no input' }, { args: [{ command: ['sh', '-c', 'true'] }], note: 'an input with a command' }],
  };

  const all = [repairQueue, repairEntry, slots, taintNode, nodeRepair, weeder, app, safety, check];
  // Every workflow the worker hosts has its row: a new one fails here, not silently unfuzzed.
  const hosted = Object.keys(workflows).sort();
  const covered = all.map((t) => t.workflowType).sort();
  if (hosted.join() !== covered.join()) throw new Error(`fuzz targets cover ${covered.join(', ')}; the worker hosts ${hosted.join(', ')}`);
  return all;
}

/** Which bounds apply to a target. */
const boundsOf = (type: string, bounds: Record<string, Bound[]>): Bound[] =>
  type.startsWith('repair') ? bounds.repair! : type.startsWith('taint') ? bounds.taint! : type === 'weeder' ? bounds.weeder! : type === 'app' ? bounds.apps! : type === 'tend-safety' ? bounds.safety! : type.startsWith('node') ? bounds.node! : [];

/**
 * The arguments of one message of `family` for a handler: a broken or forged variant of its valid
 * template. An operator's command is never sent valid: its variants are all broken (undefined when
 * the family cannot break it).
 */
export function argsFor(spec: HandlerSpec | { valid?: HandlerSpec['valid']; forged?: HandlerSpec['forged']; operator?: boolean },
  family: Family, type: string, c: Context, d: Draw, bounds: Record<string, Bound[]>): { args: unknown[]; note: string } | undefined {
  const valid = spec.valid?.(c, d) ?? [];
  const first = valid[0];
  // A broken operator's command must stay broken: an awkward reason, one more argument or a size
  // within its bound can leave it a valid pause or stop (what an operator may send is not fuzzed).
  if (spec.operator && !OPERATOR_FAMILIES.includes(family)) return undefined;
  switch (family) {
    case 'valid':
      return spec.operator ? undefined : { args: valid, note: 'valid' };
    case 'forged': {
      const f = spec.forged?.(c, d) ?? [];
      return f.length ? d.pick(f) : undefined;
    }
    case 'random':
      return { args: [randomJson(d, 4)], note: 'random JSON' };
    case 'arity':
      return d.chance(0.5) ? { args: [...valid, randomJson(d, 2)], note: 'one argument too many' } : { args: [first, first, first], note: 'three arguments' };
    case 'deep': {
      const as = d.pick(['array', 'object'] as const);
      const inner = d.chance(0.5) ? sized(2) : 0;
      const deep = nested(5000, inner, as);
      const paths = pathsOf(first, 30);
      const path = d.pick(paths);
      return { args: [setAt(first, path, deep)], note: `${as}s nested 5,000 deep at ${path.length ? path.join('.') : 'the top'}` };
    }
    case 'huge': {
      const paths = pathsOf(first, 30);
      const path = d.pick(paths);
      const which = d.int(3);
      const value = which === 0 ? Array.from({ length: 200_000 }, (_, i) => i) : which === 1 ? sized(1_500_000) : Array.from({ length: 20_000 }, () => ({ a: sized(50) }));
      const what = ['an array of 200,000 numbers', 'a 1.5 M-character string', '20,000 objects'][which]!;
      return { args: [setAt(first, path, value)], note: `${what} at ${path.length ? path.join('.') : 'the top'}` };
    }
    case 'wrong-type': {
      const paths = pathsOf(first, 30);
      const path = d.pick(paths);
      return { args: [setAt(first, path, wrongTypeOf(d, path.length ? (first as Record<string, unknown>)[String(path[0])] : first))], note: `a wrong type at ${path.length ? path.join('.') : 'the top'}` };
    }
    case 'unicode': {
      const paths = pathsOf(first, 30).filter((p) => typeof getString(first, p) === 'string');
      const s = d.pick(AWKWARD_STRINGS) + (d.chance(0.3) ? sized(d.int(600), '\u0000\ud800😀') : '');
      if (!paths.length) return { args: [s], note: 'an awkward string instead of the payload' };
      const path = d.pick(paths);
      return { args: [setAt(first, path, s)], note: `an awkward string at ${path.join('.') || 'the top'}` };
    }
    case 'boundary': {
      const bs = boundsOf(type, bounds);
      if (!bs.length) return undefined;
      const b = d.pick(bs);
      const n = d.pick(around(b.value));
      const path = d.pick(pathsOf(first, 30));
      // A depth bound is met by nesting; every other by a length or a count.
      const value = /depth/i.test(b.name) ? setAt(first, path, nested(n, 'x', d.pick(['array', 'object'] as const))) : boundaryAt(first, path, n, d);
      return { args: [value], note: `${n} (${b.name} is ${b.value}) at ${path.length ? path.join('.') : 'the top'}` };
    }
  }
}

function getString(v: unknown, path: (string | number)[]): unknown {
  let x = v;
  for (const p of path) x = x !== null && typeof x === 'object' ? (x as Record<string | number, unknown>)[p] : undefined;
  return x;
}

/** The families that break any message: a wrong type, nesting, a size past every bound, random JSON. */
const OPERATOR_FAMILIES: readonly Family[] = ['wrong-type', 'deep', 'huge', 'random'];

/** How often each family is drawn (valid messages keep the handlers' ordinary paths in the mix). */
const WEIGHTS: [Family, number][] = [
  ['valid', 2], ['random', 2], ['boundary', 2], ['deep', 1], ['huge', 1], ['wrong-type', 2], ['unicode', 2], ['forged', 3], ['arity', 1],
];

export function drawFamily(d: Draw): Family {
  const total = WEIGHTS.reduce((n, [, w]) => n + w, 0);
  let r = d.next() * total;
  for (const [f, w] of WEIGHTS) {
    r -= w;
    if (r < 0) return f;
  }
  return 'valid';
}

/** Every (type, handler) pair, hand starts included, in a fixed order: the messages are drawn over them evenly. */
export function slotsOf(ts: TargetSpec[]): { target: TargetSpec; handler?: HandlerSpec }[] {
  return ts.flatMap((t) => [...t.handlers.map((h) => ({ target: t, handler: h })), { target: t }]);
}

/**
 * The next message: a (type, handler) pair drawn evenly, a family drawn by weight, tried again
 * (with another family) when that family cannot make one for the pair.
 */
export function nextMessage(ts: TargetSpec[], c: Context, d: Draw, bounds: Record<string, Bound[]>, otherQueue: string): Message | undefined {
  const all = slotsOf(ts);
  for (let attempt = 0; attempt < 20; attempt++) {
    const { target, handler } = d.pick(all);
    if (!handler) {
      const inputs = target.startInputs(c, d);
      const family = drawFamily(d);
      const base = d.pick(inputs);
      const made = family === 'valid' || family === 'forged' ? base
        : argsFor({ valid: () => base.args }, family, target.type, c, d, bounds);
      if (!made) continue;
      const workflowId = d.pick(target.startIds(c, d));
      const taskQueue = d.chance(0.8) ? c.taskQueue : otherQueue;
      return {
        type: target.type, handler: 'start', kind: 'start', workflowId, args: made.args, family,
        note: `${made.note}${family === 'valid' || family === 'forged' ? '' : ` (from: ${base.note})`}, on ${taskQueue === c.taskQueue ? 'tend\'s task queue' : 'another task queue'}`,
        start: { workflowType: target.workflowType, taskQueue },
      };
    }
    const workflowId = target.id(c, d);
    if (!workflowId) continue;
    // Forgeries are what a writer to the namespace would try first: a handler that has them gets them often.
    const family = handler.forged && d.chance(0.3) ? 'forged' : drawFamily(d);
    const made = argsFor(handler, family, target.type, c, d, bounds);
    if (!made) continue;
    return { type: target.type, handler: handler.name, kind: handler.kind, workflowId, args: made.args, family, note: made.note, ...(handler.operator && { operator: true }) };
  }
  return undefined;
}
