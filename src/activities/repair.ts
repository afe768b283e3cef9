// The repair queue's activities: find the Node behind an address, cordon and
// uncordon it (resourceVersion preconditions), drain it (evict or delete its
// pods), and run operator commands without a shell, the address appended, in
// process groups of their own (src/repair/process.ts). Long ones heartbeat, so
// a killed worker's attempt is retried and a cancellation (delete, disable)
// reaches them.
//
// Trust: every input arrives through Temporal and is checked
// (src/repair/validate.ts). Inputs are keys: (machine type, operation, step,
// which command). The argv, timeouts and drain settings are looked up in the
// worker's own `repair` section when the activity runs; a key that is not
// configured fails non-retryably, naming it, and nothing runs.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import type { RepairConfig } from '../config/repair.ts';
import type { KubeClients } from '../kube/client.ts';
import { mergePatch } from '../kube/api.ts';
import { deletePodIfSameUid, errorMessage, evictPod, isConflict, isNotFound, statusOf } from '../kube/writes.ts';
import { toSelectorString, type LabelSelector } from '../config/label-selector.ts';
import { decideDrain, drainLeft, type PodView } from '../repair/decide.ts';
import { namespaceProtected, nextEviction, timeoutReason, type EvictionAnswer } from '../repair/drain.ts';
import { keyName, lookupCommand, lookupOperation, planOf, requestProblems, type RepairPlan, type ResolvedCommand } from '../repair/procedure.ts';
import { runOnce as runGroup, stateDir, type RunResult } from '../repair/process.ts';
import { nodeGuardAccess, runGuarded } from '../repair/guarded.ts';
import { REFUSAL } from '../repair/messages.ts';
import { addInputSchema, check, entryKeyFields, entryKeySchema, indexSchema, MAX_REQUESTS_PER_ADD, type EntryKey } from '../repair/validate.ts';
import {
  array, integer, max, maxItems, min, number, oneOf, optional, strictObject, string, type Infer, type Shape,
} from '../checks/shape.ts';
import { log } from '../log.ts';
import { repairCommands } from '../metrics/registry.ts';
import { recordWould, waitForGates, writeHold, type SafetyGates, type WriteHold } from './safety-gate.ts';
import { activityOccurrence, noteEvent } from './events.ts';
import type { TendEvent } from '../kube/events.ts';
import { activityStop, stoppedBy } from '../temporal/worker-shutdown.ts';

/** One run of argv + address in its own process group (no entry lock): for benchmarks and tools. */
export function runOnce(command: string[], address: string, timeoutSeconds: number, signal?: AbortSignal): Promise<RunResult> {
  return runGroup({ argv: command, address, timeoutSeconds, signal });
}

/** On a Node tend cordoned for a repair: the entry's index. Only such a cordon is ever lifted by tend. */
export const REPAIR_CORDON_ANNOTATION = 'tend.dev/repair-cordoned';

/** The health check is polled this often during a watch (times time_scale). */
export const HEALTH_POLL_SECONDS = 10;

export type { EntryKey } from '../repair/validate.ts';

const stepSchema = number('step must be a step number', (n) => (Number.isSafeInteger(n) ? undefined : 'step must be a whole number'),
  (n) => (n >= 0 ? undefined : 'step must be 0 or more'), max(10_000));
const epochMs = number('must be a time in epoch milliseconds', integer, min(0));

/** How long an activity asked again after a paused answer waits in place for the resume (ms); 0: answers `paused` at once. */
const holdSchema = optional(number('holdMs must be a number of milliseconds', integer, min(0), max(3_600_000)));

const commandInputSchema = strictObject({
  ...entryKeyFields,
  step: stepSchema,
  kind: oneOf(['repair_command', 'success_command'], 'kind must be repair_command or success_command'),
  /** Runs of this command already done before a pause held the next one: the retries go on from there. */
  after: optional(number('after must be a number of runs', integer, min(0), max(1000))),
  holdMs: holdSchema,
});
export type CommandInput = Infer<typeof commandInputSchema>;

const watchInputSchema = strictObject({ ...entryKeyFields, step: stepSchema, until: epochMs });
export type WatchInput = Infer<typeof watchInputSchema>;

const drainInputSchema = strictObject({ ...entryKeyFields, step: stepSchema, deadline: epochMs });
export type DrainInput = Infer<typeof drainInputSchema>;

const uncordonInputSchema = strictObject({ index: entryKeyFields.index, address: entryKeyFields.address, holdMs: holdSchema });

const queueSettingsInputSchema = strictObject({
  entries: array(strictObject({ index: indexSchema, machine_type: string(), operation: string() }), undefined, maxItems(100_000)),
});

export interface CommandResult {
  ok: boolean;
  /** Observe mode: the command was recorded, not run; the entry goes on as if it exited 0. */
  observed?: true;
  /** Paused before a run (why): nothing ran; asked again with `after` = runs, not counted as a failure. */
  paused?: string;
  /** With `paused`: the runs done before it (their failures count towards command_retries). */
  runs?: number;
  /**
   * A few words, never the argv, the address or anything the command printed (the history is
   * read by every Web UI viewer): `exit code 3; output: tend repair-queue logs 7`. The output
   * itself is in the entry's log file on the worker's host (docs/repair.md).
   */
  output: string;
  /** Why the last run failed, in the same few words. */
  error?: string;
  /** The last run's exit code; absent when it did not exit by itself (timed out, cancelled, killed, not found). */
  exitCode?: number;
  attempts: number;
  /**
   * A run an earlier attempt of this activity started and never reported the
   * end of (its worker died): recorded in the result, so the entry's history
   * says so. Its end was waited for and its exit code taken (`adopted`) when
   * it was this worker's host; elsewhere it ran again.
   */
  cutOff?: { run: number; startedAt: string; adopted?: true };
}

/** An Event on the entry's Node (src/kube/events.ts), less the Node. */
type NodeEvent = Omit<TendEvent, 'regarding' | 'related'>;

/** What a command activity heartbeats as each run starts: Temporal keeps it for the next attempt. */
interface RunStarted { run: number; startedAt: string }

/**
 * `observed`: observe mode recorded the cordon, evictions and deletions, and did none (the entry goes on as if
 * drained). `held`: the eviction timeout passed while repair was paused: the cordon is kept, no back-off counts,
 * and the drain starts again with a new timeout (docs/repair.md).
 */
export type DrainResult =
  | { ok: true; evicted: number; deleted: number; observed?: { cordon: boolean; evict: number; delete: number } }
  | { ok: false; reason: string; held?: true; cordonKept?: true; observed?: true };

/** What repairUncordon did: `observed` in observe mode (recorded), `paused` while repair is paused (asked again). */
export type UncordonOutcome = 'changed' | 'unchanged' | 'gone' | 'observed' | 'paused';

/** Thrown inside a drain when the eviction timeout passes while a write waits for the resume. */
class HeldOut extends Error {
  readonly what: string;
  constructor(what: string) {
    super(`held: ${what}`);
    this.what = what;
  }
}

/** Refuses an input, non-retryably, with the reason: nothing has run. */
function parsed<T>(schema: Shape<T>, value: unknown, what: string): T {
  const r = check(schema, value, what);
  if (!r.ok) throw ApplicationFailure.nonRetryable(`refused: ${r.reason}`, 'InvalidRepairInput');
  return r.value;
}

function notConfigured(problem: string): never {
  throw ApplicationFailure.nonRetryable(`refused: ${problem}`, 'RepairNotConfigured');
}

/**
 * Heartbeats while `work` runs, from its first second on: an activity that
 * ends sooner sends none (heartbeats are billed actions); the SDK throttles the
 * rest to one per 0.8 x heartbeatTimeout.
 */
async function heartbeating<T>(work: () => Promise<T>, details: () => unknown = () => undefined): Promise<T> {
  const ctx = Context.current();
  // Each heartbeat replaces the details Temporal keeps: the latest are sent every time.
  const timer = setInterval(() => ctx.heartbeat(details()), 1000);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

// Watches, inspections and drains stop at once when the worker shuts down (they are retried on the
// next worker and resume where they were); repair and success commands run on through the grace time.
const cancelled = activityStop;
const stopped = stoppedBy;

function podView(p: k8s.V1Pod): PodView {
  return {
    namespace: p.metadata!.namespace!,
    name: p.metadata!.name!,
    uid: p.metadata!.uid!,
    phase: p.status?.phase,
    controllerKind: p.metadata?.ownerReferences?.find((o) => o.controller)?.kind,
    labels: p.metadata?.labels,
    deleting: Boolean(p.metadata?.deletionTimestamp),
  };
}

/**
 * The activities that run the operator's commands (repair, health check and
 * success commands, with their per-entry state files): where the commands run.
 * With repair.taskQueue set, the entry workflow sends them to that task queue,
 * polled by `tend worker --capabilities repair`; everything else (the plan,
 * Kubernetes reads, cordon, drain) stays on the main task queue.
 */
export const REPAIR_COMMAND_ACTIVITIES = ['repairRunCommand', 'repairWatchHealth'] as const;

/**
 * Which worker the activities are for: `main` (tend's task queue: they refuse
 * to run commands when repair.taskQueue sends them elsewhere), or `commands`
 * (the worker polling repair.taskQueue; Kubernetes, when it has a connection,
 * serves the guard on the entry's Node only).
 */
export type RepairRole = 'main' | 'commands';

/**
 * What the worker polling repair.taskQueue registers: the command activities only, guarded on the
 * entry's Node through `kube` when it has a connection (without one, per host only).
 */
export function repairCommandActivities(kube: KubeClients | undefined, config: RepairConfig | undefined, gates?: SafetyGates) {
  const all = createRepairActivities(kube, config, 'commands', gates);
  return Object.fromEntries(REPAIR_COMMAND_ACTIVITIES.map((name) => [name, all[name]])) as Pick<typeof all, (typeof REPAIR_COMMAND_ACTIVITIES)[number]>;
}

export function createRepairActivities(kube: KubeClients | undefined, config?: RepairConfig, role: RepairRole = 'main', gates?: SafetyGates) {
  /**
   * Asked right before every destructive write (cordon, eviction, deletion,
   * command, uncordon): undefined to write, observe (record it instead), or
   * paused once the pause has lasted until `until` (epoch ms): up to then the
   * write waits in place, asking again every 250 ms, so it goes out within
   * that once `tend resume repair` is acknowledged.
   */
  async function gate(until: number, signal?: AbortSignal): Promise<WriteHold | undefined> {
    return waitForGates(gates, 'repair', until, {
      waitsFor: (hold) => hold.kind === 'paused',
      sleep: async (ms) => {
        try {
          await sleep(ms, undefined, signal ? { signal } : undefined);
        } catch (err) {
          if (signal?.aborted) stopped(signal);
          throw err;
        }
      },
      onWait: (hold) => log.info({ reason: hold.message }, 'repair: paused: the next write waits for tend resume'),
    });
  }

  const nodeTarget = (node: k8s.V1Node) => ({ apiVersion: 'v1', kind: 'Node', name: node.metadata!.name!, uid: node.metadata?.uid });
  const podTarget = (p: PodView) => ({ apiVersion: 'v1', kind: 'Pod', namespace: p.namespace, name: p.name, uid: p.uid });

  function kubeOrRefuse(): KubeClients {
    if (!kube) notConfigured('this worker runs repair commands only (repair.taskQueue) and has no Kubernetes connection');
    return kube;
  }

  /** On the main worker when the commands run on a task queue of their own: nothing runs here. */
  function commandsHere(what: string): void {
    if (role === 'main' && config?.taskQueue) {
      notConfigured(`${what}: repair commands run on task queue "${config.taskQueue}" (repair.taskQueue), ` +
        'polled by `tend worker --capabilities repair`; this worker does not run them');
    }
  }

  /** The operation an entry's key names, in the worker's configuration as it is now. */
  function operationOf(key: EntryKey) {
    if (!config) notConfigured(`${keyName(key.machine_type, key.operation)}: the worker has no repair section in its configuration`);
    const lookup = lookupOperation(config, key.machine_type, key.operation);
    if ('problem' in lookup) notConfigured(`${keyName(key.machine_type, key.operation)} is not configured: ${lookup.problem}`);
    return lookup.operation;
  }

  function commandOf(key: EntryKey, step: number, kind: 'repair_command' | 'health_check_command' | 'success_command'): ResolvedCommand {
    const c = lookupCommand(config, key.machine_type, key.operation, step, kind);
    if ('problem' in c) notConfigured(c.problem);
    return c;
  }

  /**
   * One run of a configured command for an entry: its environment says which
   * entry, step and attempt it is; it waits for a run of the same entry left
   * behind by a killed worker on this host, and takes that run's end instead
   * of running again when it was of the same step and command.
   */
  function run(key: EntryKey, step: number, kind: string, c: ResolvedCommand, signal: AbortSignal, attempt: number): Promise<RunResult> {
    return runGroup({
      argv: c.argv, address: key.address, timeoutSeconds: c.timeoutSeconds, signal,
      env: { TEND_REPAIR_INDEX: key.index, TEND_REPAIR_STEP: String(step), TEND_REPAIR_ATTEMPT: String(attempt), TEND_REPAIR_COMMAND: kind },
      entry: { dir: stateDir(config?.state_dir), index: key.index, step, kind, run: attempt },
    });
  }

  /**
   * A repair or success command's run under the entry's guard on its Node
   * (src/repair/guard.ts): no other worker runs a command on that machine
   * meanwhile, and a retry finds the end of the run it was cut off from there.
   * The same on a command worker of its own (repair.taskQueue) given a
   * Kubernetes connection. No Node, or a command worker without a connection
   * (it said so at start-up), leaves the per-host record alone to guard it.
   */
  async function guardedRun(key: EntryKey & { step: number; kind: string }, c: ResolvedCommand, signal: AbortSignal, runNo: number, cutOffRun?: number): Promise<RunResult> {
    const node = kube ? await nodeOf(key.address) : undefined;
    const once = (s: AbortSignal) => run(key, key.step, key.kind, c, s, runNo);
    if (!node) {
      // On a command worker the cluster may not be the main worker's (another kubeconfig): said, not guessed.
      if (kube && role === 'commands') {
        log.warn({ index: key.index, step: key.step, kind: key.kind, address: key.address },
          'repair: no Node has this InternalIP in the cluster this command worker reaches; the command is guarded per host only');
      }
      return once(signal);
    }
    const want = { entry: key.index, step: key.step, kind: key.kind, run: runNo, ...(cutOffRun !== undefined ? { cutOffRun } : {}) };
    return runGuarded(nodeGuardAccess(kubeOrRefuse().core, node.metadata!.name!), want, signal, once, () => stopped(signal));
  }

  /** Every Node whose InternalIP is the address: the address is what was checked, never a node name from a message. */
  async function nodesAt(address: string): Promise<k8s.V1Node[]> {
    const nodes = await kubeOrRefuse().core.listNode();
    return nodes.items.filter((n) => n.status?.addresses?.some((a) => a.type === 'InternalIP' && a.address === address));
  }

  /**
   * The Node whose InternalIP is the address, or undefined. Two or more: refused, naming them; which
   * one a request meant is not for tend to guess (draining the first one found would drain the wrong
   * machine half the time).
   */
  async function nodeOf(address: string): Promise<k8s.V1Node | undefined> {
    const found = await nodesAt(address);
    if (found.length > 1) {
      // Node names are the API server's (DNS subdomains, at most 253 characters), not a message's.
      const names = found.slice(0, 5).map((n) => n.metadata?.name ?? '?').join(', ');
      notConfigured(`address ${address} is the InternalIP of ${found.length} Nodes (${names}${found.length > 5 ? ', ...' : ''}): ` +
        'which one to repair is ambiguous; give each Node its own InternalIP, or delete the stale Node object');
    }
    return found[0];
  }

  async function podsOn(nodename: string): Promise<PodView[]> {
    const list = await kubeOrRefuse().core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodename}` });
    return list.items.map(podView);
  }

  /**
   * Sets spec.unschedulable with the Node's resourceVersion as precondition; re-reads on conflict.
   * Through the gate: observe records it (`observed`); paused past `until` leaves it (`paused`).
   */
  async function setCordon(nodename: string, index: string, cordon: boolean, hold: { until: number; signal?: AbortSignal; observing?: boolean } = { until: 0 }): Promise<UncordonOutcome> {
    for (let attempt = 0; ; attempt++) {
      let node: k8s.V1Node;
      try {
        node = await kubeOrRefuse().core.readNode({ name: nodename });
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        throw err;
      }
      const mark = node.metadata?.annotations?.[REPAIR_CORDON_ANNOTATION];
      let body: object;
      if (cordon) {
        // Already cordoned by someone else (or by this entry): leave it, and never lift their cordon later.
        if (node.spec?.unschedulable) return 'unchanged';
        body = { metadata: { resourceVersion: node.metadata!.resourceVersion, annotations: { [REPAIR_CORDON_ANNOTATION]: index } }, spec: { unschedulable: true } };
      } else {
        // In observe mode a node this entry would have cordoned is not: act mode would lift that cordon here.
        const observedCordon = mark === undefined && !node.spec?.unschedulable && (hold.observing || writeHold(gates, 'repair')?.kind === 'observe');
        if (mark !== index && !observedCordon) return 'unchanged';
        body = { metadata: { resourceVersion: node.metadata!.resourceVersion, annotations: { [REPAIR_CORDON_ANNOTATION]: null } }, spec: { unschedulable: null } };
      }
      const held = hold.observing ? { kind: 'observe' as const, message: 'observing' } : await gate(hold.until, hold.signal);
      if (held?.kind === 'paused') return 'paused';
      if (held?.kind === 'observe') {
        await recordWould(kube, {
          capability: 'repair', action: cordon ? 'cordon' : 'uncordon', regarding: nodeTarget(node),
          note: `would ${cordon ? 'cordon' : 'uncordon'} node ${nodename}: repair queue entry ${index}${cordon ? ', to drain it' : ''}`,
          dedupKey: `repair/${index}/${cordon ? 'cordon' : 'uncordon'}/${node.metadata?.uid}`,
        });
        return 'observed';
      }
      // After a wait in place the Node may have changed: the resourceVersion precondition sends it round again.
      try {
        await kubeOrRefuse().core.patchNode({ name: nodename, body, fieldManager: 'tend' }, mergePatch);
        log.info({ node: nodename, index, cordon }, cordon ? 'repair: cordoned node' : 'repair: uncordoned node');
        await nodeEvent(node, {
          reason: cordon ? 'RepairCordoned' : 'RepairUncordoned', action: cordon ? 'Cordon' : 'Uncordon',
          note: `repair queue entry ${index}: ${cordon ? 'cordoned for a drain' : 'uncordoned'}`,
          // Before the patch: a retried attempt finds the patch done and records nothing.
          dedupKey: `repair/${index}/${cordon ? 'cordon' : 'uncordon'}/${node.metadata!.resourceVersion}`,
        });
        return 'changed';
      } catch (err) {
        if (isConflict(err) && attempt < 10) continue;
        if (isNotFound(err)) return 'gone';
        throw err;
      }
    }
  }

  /** An Event on the Node for `kubectl describe node` (docs/events.md); never fails the activity. */
  async function nodeEvent(node: k8s.V1Node, e: NodeEvent) {
    await noteEvent(kube, { regarding: nodeTarget(node), ...e });
  }

  /**
   * An Event on the Node whose InternalIP is the entry's address, when there is one (an address
   * that is no Node's, or a command worker without a Kubernetes connection, records none).
   */
  async function addressEvent(key: EntryKey, e: NodeEvent) {
    if (!kube) return;
    const node = await nodeOf(key.address).catch(() => undefined);
    if (node) await nodeEvent(node, e);
  }

  /**
   * The Event of a health check found true: the entry succeeds, once its success_command (when it
   * has one) has run; that command's own Event says how it ended.
   */
  function healthyEvent(key: EntryKey, when: string, dedupKey: string): NodeEvent {
    return operationOf(key).success_command
      ? { reason: 'RepairHealthy', action: 'HealthCheck', note: `repair queue entry ${key.index}: the health check is true ${when}; its success_command runs next`, dedupKey }
      : { reason: 'RepairSucceeded', action: 'HealthCheck', note: `repair queue entry ${key.index}: the health check is true ${when}; the entry succeeded`, dedupKey };
  }

  /** The Event of a health check found not true: the entry starts, goes on to its next step, or has failed. */
  function unhealthyEvent(key: EntryKey & { step: number }, first: boolean, dedupKey: string): NodeEvent {
    const steps = operationOf(key).repair_steps.length;
    const what = `repair queue entry ${key.index} (${keyName(key.machine_type, key.operation)})`;
    if (first) return { reason: 'RepairStarted', action: 'HealthCheck', note: `${what} started: the health check is not true; ${steps} step(s) to run`, dedupKey };
    if (key.step + 1 < steps) {
      return { type: 'Warning', reason: 'RepairUnhealthy', action: 'HealthCheck', note: `${what}: the health check is not true after step ${key.step}; step ${key.step + 1} follows`, dedupKey };
    }
    return { type: 'Warning', reason: 'RepairFailed', action: 'HealthCheck', note: `${what}: not healthy after the last of ${steps} step(s); the entry failed`, dedupKey };
  }

  /** The Event of a command's end (not of one observed or paused): succeeded, or the entry failed with it. */
  function commandEvent(key: EntryKey & { step: number; kind: string }, r: CommandResult, dedupKey: string): NodeEvent | undefined {
    if (r.observed || r.paused !== undefined) return undefined;
    const what = `repair queue entry ${key.index}: the ${key.kind} of step ${key.step}`;
    if (!r.ok) return { type: 'Warning', reason: 'RepairFailed', action: 'RunCommand', note: `${what} failed (${r.error ?? r.output}); the entry failed`, dedupKey };
    return key.kind === 'success_command'
      ? { reason: 'RepairSucceeded', action: 'RunCommand', note: `${what} exited 0; the entry succeeded`, dedupKey }
      : { reason: 'RepairCommandSucceeded', action: 'RunCommand', note: `${what} exited 0; the health watch follows`, dedupKey };
  }

  async function protectedNamespaceNames(selector: LabelSelector | undefined): Promise<Set<string> | 'all'> {
    if (!selector) return 'all';
    const list = await kubeOrRefuse().core.listNamespace({ labelSelector: toSelectorString(selector) });
    return new Set(list.items.map((n) => n.metadata!.name!));
  }

  return {
    /**
     * For the queue, when it may start entries: max_concurrent_repairs, and
     * which entries' keys are not configured (any more), with the reason.
     * Numbers and reasons only: no command reaches workflow history.
     */
    async repairQueueSettings(input: { entries: { index: string; machine_type: string; operation: string }[] }): Promise<{ max_concurrent_repairs: number; problems: Record<string, string>; time_scale: number }> {
      const { entries } = parsed(queueSettingsInputSchema, input, 'repairQueueSettings');
      const problems: Record<string, string> = {};
      for (const e of entries) {
        if (!config) {
          problems[e.index] = 'the worker has no repair section in its configuration';
          continue;
        }
        const lookup = lookupOperation(config, e.machine_type, e.operation);
        if ('problem' in lookup) problems[e.index] = `${keyName(e.machine_type, e.operation)} is not configured: ${lookup.problem}`;
      }
      return { max_concurrent_repairs: config?.max_concurrent_repairs ?? 1, problems, time_scale: config?.time_scale ?? 1 };
    },

    /** For `add`: every reason its requests cannot be queued, checked against the worker's configuration (empty: all can). */
    async repairCheckRequests(input: { requests: unknown[] }): Promise<string[]> {
      const { requests } = parsed(addInputSchema, input, 'add');
      return requests.flatMap((r, i) => requestProblems(config, r)
        .map((p) => (requests.length > 1 ? `request ${i + 1} of ${Math.min(requests.length, MAX_REQUESTS_PER_ADD)} (${r.address}): ${p}` : p)));
    },

    /**
     * An entry's first look at its machine, in one activity: its plan (the
     * numbers its workflow needs for timers, from the worker's configuration),
     * the Node whose InternalIP is the address ('' when none: repaired without
     * a drain), and whether the health check already says `true`.
     */
    async repairInspect(input: EntryKey): Promise<{ nodename: string; healthy: boolean; plan: RepairPlan }> {
      const key = parsed(entryKeySchema, input, 'repairInspect');
      commandsHere('repairInspect');
      const plan = planOf(config!, operationOf(key));
      const health = commandOf(key, 0, 'health_check_command');
      return heartbeating(async () => {
        const signal = cancelled(true);
        const node = await nodeOf(key.address);
        const r = await run(key, 0, 'health_check_command', health, signal, Context.current().info.attempt);
        if (signal.aborted) stopped(signal);
        const healthy = r.ok && r.stdout.trim() === 'true';
        if (node) {
          const occurrence = `${activityOccurrence()}/health`;
          await nodeEvent(node, healthy ? healthyEvent(key, 'before any step', occurrence) : unhealthyEvent({ ...key, step: 0 }, true, occurrence));
        }
        return { nodename: node?.metadata?.name ?? '', healthy, plan };
      });
    },

    /**
     * The task queue the entry's commands go to, from this worker's own
     * configuration (a local activity: it runs on the worker that runs the
     * entry's workflow). Never from a workflow input or a signal.
     */
    async repairCommandQueue(): Promise<{ taskQueue?: string }> {
      return config?.taskQueue ? { taskQueue: config.taskQueue } : {};
    },

    /**
     * repairInspect without the health check, for an entry whose commands run
     * on repair.taskQueue: its plan (numbers only) and the Node whose
     * InternalIP is the address ('' when none). The first health check is
     * then a repairWatchHealth on the commands' task queue.
     */
    async repairLocate(input: EntryKey): Promise<{ nodename: string; plan: RepairPlan }> {
      const key = parsed(entryKeySchema, input, 'repairLocate');
      const plan = planOf(config!, operationOf(key));
      const node = await nodeOf(key.address);
      return { nodename: node?.metadata?.name ?? '', plan };
    },

    /** Lifts the cordon this entry set on the address's Node; any other cordon stays. */
    async repairUncordon(input: Pick<EntryKey, 'index' | 'address'> & { holdMs?: number }): Promise<UncordonOutcome> {
      const key = parsed(uncordonInputSchema, input, 'repairUncordon');
      const at = await nodesAt(key.address);
      // Sharing its address with another Node (since the drain): the one this entry cordoned, if any.
      const node = at.length > 1 ? at.find((n) => n.metadata?.annotations?.[REPAIR_CORDON_ANNOTATION] === key.index) : at[0];
      if (!node) return 'unchanged';
      if (!key.holdMs) return setCordon(node.metadata!.name!, key.index, false);
      // Asked again after a paused answer: waits in place for the resume (heartbeating), up to holdMs.
      const until = Date.now() + key.holdMs;
      return heartbeating(() => setCordon(node.metadata!.name!, key.index, false, { until, signal: cancelled() }));
    },

    /**
     * Cordons, then evicts or deletes the node's pods and waits until they are
     * gone. A running protected Job pod, an eviction refused past
     * evict_retries, or the deadline: uncordons and reports why, so the
     * workflow backs off. Running it twice is harmless: a cordon tend set is
     * recognised by its annotation, evicting a pod already going is skipped.
     * The Node is the address's, the settings the worker's, and only a step
     * configured with need_drain drains.
     */
    async repairDrain(input: DrainInput): Promise<DrainResult> {
      const key = parsed(drainInputSchema, input, 'repairDrain');
      const op = operationOf(key);
      const step = op.repair_steps[key.step];
      if (!step) notConfigured(`${keyName(key.machine_type, key.operation)} has no step ${key.step}`);
      if (!step.need_drain) notConfigured(`step ${key.step} of ${keyName(key.machine_type, key.operation)} is not configured with need_drain`);
      const c = config!;
      // Never longer than the configured eviction timeout from now.
      const deadline = Math.min(key.deadline, Date.now() + c.eviction_timeout_seconds * c.time_scale * 1000);
      return heartbeating(async () => {
        const signal = cancelled(true);
        const node = await nodeOf(key.address);
        if (!node) return { ok: true, evicted: 0, deleted: 0 };
        const nodename = node.metadata!.name!;
        const index = key.index;
        /** Observe mode seen once: every later write of this drain is recorded too (it cordoned nothing). */
        let observing = false;
        const observed = { cordon: false, evict: 0, delete: 0 };
        const purpose = `repair queue entry ${index} drains node ${nodename}`;
        /** A write's turn: write (undefined), record it (observe), or the eviction timeout passed while paused. */
        const ask = async (what: string): Promise<'observe' | undefined> => {
          if (observing) return 'observe';
          const h = await gate(deadline, signal);
          if (h?.kind === 'paused') throw new HeldOut(what);
          if (h?.kind === 'observe') observing = true;
          return h?.kind;
        };
        const giveUp = async (reason: string): Promise<DrainResult> => {
          const lifted = await setCordon(nodename, index, false, { until: deadline, signal, observing });
          if (lifted === 'observed') return { ok: false, reason, observed: true };
          const n = await kubeOrRefuse().core.readNode({ name: nodename }).catch(() => undefined);
          if (n) {
            await nodeEvent(n, {
              type: 'Warning', reason: 'RepairDrainInterrupted', action: 'Drain',
              note: `repair queue entry ${index}: drain interrupted, ${lifted === 'paused' ? 'node still cordoned (repair is paused)' : 'node uncordoned'}, backing off: ${reason}`,
              dedupKey: `repair/${index}/drain/${key.deadline}`,
            });
          }
          log.info({ node: nodename, index, reason }, 'repair: drain interrupted');
          // Paused: the cordon stays until the resume (the entry lifts it then); the back-off counts as ever.
          return lifted === 'paused' ? { ok: false, reason, cordonKept: true } : { ok: false, reason };
        };
        const wait = async (ms: number) => {
          try {
            await sleep(ms, undefined, { signal });
          } catch {
            stopped(signal);
          }
        };
        try {
          const cordoned = await setCordon(nodename, index, true, { until: deadline, signal });
          if (cordoned === 'gone') return { ok: true, evicted: 0, deleted: 0 };
          if (cordoned === 'paused') throw new HeldOut('cordoning the node');
          if (cordoned === 'observed') observing = observed.cordon = true;
          const plan = decideDrain(await podsOn(nodename), c.protected_job_pods);
          if (plan.blockedBy.length > 0) {
            const p = plan.blockedBy[0]!;
            return await giveUp(`running Job pod ${p.namespace}/${p.name} (${plan.blockedBy.length} in all)`);
          }
          const protectedNs = await protectedNamespaceNames(c.protected_namespaces);
          let evicted = 0;
          let deleted = 0;
          const del = async (p: PodView, why: string) => {
            if (await ask(`deleting pod ${p.namespace}/${p.name}`) === 'observe') {
              observed.delete++;
              await recordWould(kube, {
                capability: 'repair', action: 'delete', regarding: podTarget(p), related: nodeTarget(node),
                note: `would delete pod ${p.namespace}/${p.name} from node ${nodename}: ${why}; ${purpose}`, dedupKey: `repair/${index}/delete/${p.uid}`,
              });
              return;
            }
            if ((await deletePodIfSameUid(kubeOrRefuse(), p)).outcome === 'deleted') deleted++;
          };
          for (const p of plan.remove) await del(p, 'it cannot be evicted');
          // Every pod gets its chance before a refusal interrupts the drain, so
          // unprotected pods are gone and the next attempt has less to do. What
          // follows each answer is the policy's (src/repair/drain.ts).
          const refused: string[] = [];
          for (const p of plan.evict) {
            for (let attempt = 1; ; attempt++) {
              if (signal.aborted) stopped(signal);
              if (await ask(`evicting pod ${p.namespace}/${p.name}`) === 'observe') {
                observed.evict++;
                await recordWould(kube, {
                  capability: 'repair', action: 'evict', regarding: podTarget(p), related: nodeTarget(node),
                  note: `would evict pod ${p.namespace}/${p.name} from node ${nodename}: ${purpose}`, dedupKey: `repair/${index}/evict/${p.uid}`,
                });
                break;
              }
              let answer: EvictionAnswer;
              let thrown: unknown;
              try {
                answer = await evictPod(kubeOrRefuse(), p);
              } catch (err) {
                thrown = err;
                const status = statusOf(err);
                answer = { outcome: 'error', ...(status !== undefined ? { status } : {}), message: errorMessage(err) };
              }
              const next = nextEviction({
                pod: p, answer, attempt, evictRetries: c.evict_retries, intervalMs: c.evict_interval * c.time_scale * 1000,
                namespaceProtected: namespaceProtected(p.namespace, protectedNs),
              });
              if (next.op === 'rethrow') throw thrown;
              // Refused for good (a webhook's 403, two budgets over one pod): retrying cannot help; the entry fails with the reason.
              if (next.op === 'refuse') {
                await nodeEvent(node, {
                  type: 'Warning', reason: 'RepairFailed', action: 'Drain',
                  note: `repair queue entry ${index}: the drain for step ${key.step} is refused for good (${next.why}); the entry failed`, dedupKey: `${activityOccurrence()}/refused`,
                });
                throw ApplicationFailure.nonRetryable(next.why, REFUSAL.drainRefused);
              }
              if (next.op === 'retry') {
                await wait(next.afterMs);
                continue;
              }
              if (next.op === 'next' && next.evicted) evicted++;
              if (next.op === 'delete') await del(p, next.why);
              if (next.op === 'give-up') refused.push(next.refused);
              break;
            }
          }
          if (refused.length > 0) return await giveUp(`eviction refused for ${refused.join(', ')}`);
          // Observe mode: nothing was evicted, so nothing is waited for; the entry goes on as if drained.
          if (observing) return { ok: true, evicted: 0, deleted: 0, observed };
          // CKE's check: done when no pod is left on the node but DaemonSet pods and pending or finished Job pods,
          // whoever started their deletion (an earlier attempt, an earlier drain) and whatever holds it (a finalizer).
          for (;;) {
            const left = drainLeft(await podsOn(nodename));
            if (left.length === 0) {
              await nodeEvent(node, {
                reason: 'RepairDrained', action: 'Drain',
                note: `repair queue entry ${index}: drained for step ${key.step} (${evicted} evicted, ${deleted} deleted)`, dedupKey: `${activityOccurrence()}/drained`,
              });
              return { ok: true, evicted, deleted };
            }
            if (Date.now() >= deadline) {
              return await giveUp(timeoutReason(left));
            }
            await wait(Math.min(1000, Math.max(0, deadline - Date.now())));
          }
        } catch (err) {
          if (!(err instanceof HeldOut)) throw err;
          // The pause, not the drain, used up its time: nothing is undone (a write now would break the pause) and nothing counts.
          const reason = `the eviction timeout passed while repair was paused, before ${err.what}; the node stays cordoned and the drain starts again with a new timeout, no back-off counted`;
          log.info({ node: nodename, index }, `repair: ${reason}`);
          return { ok: false, reason, held: true };
        }
      });
    },

    /**
     * Runs a step's repair_command (or the success_command) as configured:
     * its timeout, command_retries more times at command_interval on failure.
     * TEND_REPAIR_ATTEMPT counts every run of this command for this entry and
     * step: (activity attempt - 1) x (command_retries + 1) + the run within it.
     */
    async repairRunCommand(input: CommandInput): Promise<CommandResult> {
      const key = parsed(commandInputSchema, input, 'repairRunCommand');
      commandsHere('repairRunCommand');
      const c = commandOf(key, key.step, key.kind);
      const info = Context.current().info;
      const earlier = info.heartbeatDetails as Partial<RunStarted> | undefined;
      const cutOff: CommandResult['cutOff'] = info.attempt > 1 && typeof earlier?.run === 'number' && typeof earlier.startedAt === 'string'
        ? { run: earlier.run, startedAt: earlier.startedAt } : undefined;
      if (cutOff) {
        log.warn({ what: key.kind, index: key.index, step: key.step, ...cutOff, attempt: info.attempt },
          'repair: an earlier attempt started this command and its end was never recorded (its worker died); its run is waited for and adopted when it was on this host');
      }
      let started: RunStarted | undefined;
      const after = Math.min(key.after ?? 0, c.retries);
      const until = Date.now() + (key.holdMs ?? 0);
      const occurrence = activityOccurrence();
      const result = await heartbeating(async (): Promise<CommandResult> => {
        const signal = cancelled();
        const first = (info.attempt - 1) * (c.retries + 1);
        const told = (r: RunResult) => `${r.error ?? 'exit code 0'}; output: tend repair-queue logs ${key.index}`;
        let last: RunResult = { ok: false, stdout: '' };
        for (let attempt = after + 1; attempt <= c.retries + 1; attempt++) {
          const held = await gate(until, signal);
          if (held?.kind === 'paused') return { ok: false, output: '', attempts: attempt - 1, runs: attempt - 1, paused: held.message };
          if (held?.kind === 'observe') {
            const node = kube ? await nodeOf(key.address).catch(() => undefined) : undefined;
            await recordWould(node ? kube : undefined, {
              capability: 'repair', action: 'command',
              regarding: node ? nodeTarget(node) : { apiVersion: 'v1', kind: 'Node', name: key.address },
              note: `would run the ${key.kind} of step ${key.step} of ${keyName(key.machine_type, key.operation)} for ${key.address}: repair queue entry ${key.index}` +
                '; the entry goes on as if it exited 0',
              dedupKey: `repair/${key.index}/${key.kind}/${key.step}`,
              verb: key.kind,
            });
            return { ok: true, output: '', attempts: 0, observed: true };
          }
          // Recorded with Temporal as the run starts (the first heartbeat is sent at once): a retry after a dead worker knows.
          started = { run: first + attempt, startedAt: new Date().toISOString() };
          Context.current().heartbeat(started);
          if (key.kind === 'repair_command') {
            await addressEvent(key, {
              reason: 'RepairCommandRunning', action: 'RunCommand',
              note: `repair queue entry ${key.index}: running the repair_command of step ${key.step}`, dedupKey: `${occurrence}/run/${started.run}`,
            });
          }
          last = await guardedRun(key, c, signal, first + attempt, attempt === after + 1 ? cutOff?.run : undefined);
          if (signal.aborted) throw signal.reason;
          if (last.adopted && cutOff) cutOff.adopted = true;
          repairCommands.inc({ kind: key.kind, result: last.ok ? 'ok' : 'failed' });
          const result = {
            ok: last.ok, output: told(last), ...(last.error ? { error: told(last) } : {}), ...(last.exitCode !== undefined ? { exitCode: last.exitCode } : {}),
            ...(cutOff ? { cutOff } : {}),
          };
          if (last.ok) return { ...result, attempts: attempt };
          if (attempt > c.retries) return { ...result, attempts: attempt };
          await sleep(c.intervalSeconds * 1000, undefined, { signal });
        }
        return { ok: false, output: told(last), error: told(last), attempts: c.retries + 1, ...(cutOff ? { cutOff } : {}) };
      }, () => started);
      const ended = commandEvent(key, result, `${occurrence}/ended`);
      if (ended) await addressEvent(key, ended);
      return result;
    },

    /** Polls the health check until it prints `true` or `until` passes. One activity per watch keeps actions low. */
    async repairWatchHealth(input: WatchInput): Promise<{ healthy: boolean; checks: number }> {
      const key = parsed(watchInputSchema, input, 'repairWatchHealth');
      commandsHere('repairWatchHealth');
      const health = commandOf(key, key.step, 'health_check_command');
      const pollMs = HEALTH_POLL_SECONDS * config!.time_scale * 1000;
      return heartbeating(async () => {
        const signal = cancelled(true);
        for (let checks = 1; ; checks++) {
          const r = await run(key, key.step, 'health_check_command', health, signal, checks);
          if (signal.aborted) stopped(signal);
          // until 0: the entry's first look (its commands run on a task queue of their own), before any step.
          const occurrence = `${activityOccurrence()}/health`;
          if (r.ok && r.stdout.trim() === 'true') {
            await addressEvent(key, healthyEvent(key, key.until === 0 ? 'before any step' : `after step ${key.step}`, occurrence));
            return { healthy: true, checks };
          }
          const wait = Math.min(pollMs, key.until - Date.now());
          if (wait <= 0) {
            await addressEvent(key, unhealthyEvent(key, key.until === 0, occurrence));
            return { healthy: false, checks };
          }
          try {
            await sleep(wait, undefined, { signal });
          } catch {
            stopped(signal);
          }
        }
      });
    },
  };
}
