// The repair queue's activities: find the Node behind an address, cordon and
// uncordon it (resourceVersion preconditions), drain it (evict or delete its
// pods), and run operator commands without a shell, the address appended.
// Long ones heartbeat, so a killed worker's attempt is retried and a
// cancellation (delete, disable) reaches them.
import { Context } from '@temporalio/activity';
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import type { RepairConfig } from '../config/repair.ts';
import type { KubeClients } from '../kube/client.ts';
import { errorMessage, isConflict, isNotFound, mergePatch } from '../kube/api.ts';
import { statusOf } from '../kube/client.ts';
import { toSelectorString, type LabelSelector } from '../config/label-selector.ts';
import { decideDrain, type PodView } from '../repair/decide.ts';
import { recordEvent } from '../kube/events.ts';
import { log } from '../log.ts';

/** On a Node tend cordoned for a repair: the entry's index. Only such a cordon is ever lifted by tend. */
export const REPAIR_CORDON_ANNOTATION = 'tend.dev/repair-cordoned';

export interface CommandInput {
  /** For logs and errors: repair_command, health_check_command, success_command. */
  what: string;
  command: string[];
  address: string;
  timeoutSeconds: number;
  retries?: number;
  intervalSeconds?: number;
}

export interface CommandResult {
  ok: boolean;
  output: string;
  error?: string;
  attempts: number;
}

export interface DrainInput {
  index: string;
  nodename: string;
  /** Epoch ms: past it, the drain gives up (eviction_timeout_seconds from the drain's start). */
  deadline: number;
  protectedNamespaces?: LabelSelector;
  protectedJobPods?: LabelSelector;
  evictRetries: number;
  evictIntervalSeconds: number;
}

export type DrainResult = { ok: true; evicted: number; deleted: number } | { ok: false; reason: string };

export interface WatchInput {
  command: string[];
  address: string;
  timeoutSeconds: number;
  /** Epoch ms: the watch ends then (one check when already past). */
  until: number;
  pollSeconds: number;
}

/**
 * Heartbeats while `work` runs, from its first second on: an activity that
 * ends sooner sends none (heartbeats are billed actions); the SDK throttles the
 * rest to one per 0.8 x heartbeatTimeout.
 */
async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), 1000);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

function cancelled(): AbortSignal {
  return Context.current().cancellationSignal;
}

/** One run of argv + address, no shell; resolves with its outcome, never throws for the command's own failure. */
export function runOnce(command: string[], address: string, timeoutSeconds: number, signal?: AbortSignal): Promise<{ ok: boolean; output: string; error?: string }> {
  const [file, ...args] = command;
  return new Promise((resolve) => {
    execFile(file!, [...args, address], { timeout: timeoutSeconds * 1000, killSignal: 'SIGKILL', maxBuffer: 1 << 20, signal, windowsHide: true },
      (err, stdout, stderr) => {
        if (!err) return resolve({ ok: true, output: String(stdout) });
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: unknown; signal?: string };
        const why = e.name === 'AbortError' ? 'cancelled'
          : e.killed && e.signal === 'SIGKILL' ? `timed out after ${timeoutSeconds}s`
            : e.code === 'ENOENT' ? `command not found: ${file}`
              : typeof e.code === 'number' ? `exit status ${e.code}` : e.message;
        resolve({ ok: false, output: String(stdout), error: `${[file, ...args, address].join(' ')}: ${why}${String(stderr).trim() ? `: ${String(stderr).trim().slice(0, 500)}` : ''}` });
      });
  });
}

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

export function createRepairActivities(kube: KubeClients, config?: RepairConfig) {
  async function podsOn(nodename: string): Promise<PodView[]> {
    const list = await kube.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodename}` });
    return list.items.map(podView);
  }

  /** Sets spec.unschedulable with the Node's resourceVersion as precondition; re-reads on conflict. */
  async function setCordon(nodename: string, index: string, cordon: boolean): Promise<'changed' | 'unchanged' | 'gone'> {
    for (let attempt = 0; ; attempt++) {
      let node: k8s.V1Node;
      try {
        node = await kube.core.readNode({ name: nodename });
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
        if (mark !== index) return 'unchanged';
        body = { metadata: { resourceVersion: node.metadata!.resourceVersion, annotations: { [REPAIR_CORDON_ANNOTATION]: null } }, spec: { unschedulable: null } };
      }
      try {
        await kube.core.patchNode({ name: nodename, body, fieldManager: 'tend' }, mergePatch);
        log.info({ node: nodename, index, cordon }, cordon ? 'repair: cordoned node' : 'repair: uncordoned node');
        await nodeEvent(node, index, {
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

  /** An Event on the Node for `kubectl describe node`; never fails the activity. */
  async function nodeEvent(node: k8s.V1Node, index: string, e: { reason: string; action: string; note: string; dedupKey: string; type?: 'Normal' | 'Warning' }) {
    await recordEvent(kube, {
      regarding: { apiVersion: 'v1', kind: 'Node', name: node.metadata!.name!, uid: node.metadata?.uid },
      ...e,
    }).catch((err: unknown) => log.warn({ node: node.metadata!.name, index, error: errorMessage(err) }, 'repair: could not record an Event'));
  }

  async function protectedNamespaceNames(selector: LabelSelector | undefined): Promise<Set<string> | 'all'> {
    if (!selector) return 'all';
    const list = await kube.core.listNamespace({ labelSelector: toSelectorString(selector) });
    return new Set(list.items.map((n) => n.metadata!.name!));
  }

  return {
    /**
     * The worker's repair section. The queue takes its procedures from here,
     * never from a request, so that whoever may send updates to the queue
     * can only run the commands the worker's operator configured.
     */
    async repairConfig(): Promise<RepairConfig | undefined> {
      return config;
    },
    /**
     * An entry's first look at its machine, in one activity: the Node whose
     * InternalIP is the address ('' when none: repaired without a drain), and
     * whether the health check already says `true`.
     */
    async repairInspect(input: { address: string; command: string[]; timeoutSeconds: number }): Promise<{ nodename: string; healthy: boolean }> {
      return heartbeating(async () => {
        const nodes = await kube.core.listNode();
        const node = nodes.items.find((n) => n.status?.addresses?.some((a) => a.type === 'InternalIP' && a.address === input.address));
        const r = await runOnce(input.command, input.address, input.timeoutSeconds, cancelled());
        return { nodename: node?.metadata?.name ?? '', healthy: r.ok && r.output.trim() === 'true' };
      });
    },

    async repairUncordon(nodename: string, index: string): Promise<string> {
      if (!nodename) return 'unchanged';
      return setCordon(nodename, index, false);
    },

    /**
     * Cordons, then evicts or deletes the node's pods and waits until they are
     * gone. A running protected Job pod, an eviction refused past
     * evict_retries, or the deadline: uncordons and reports why, so the
     * workflow backs off. Running it twice is harmless: a cordon tend set is
     * recognised by its annotation, evicting a pod already going is skipped.
     */
    async repairDrain(input: DrainInput): Promise<DrainResult> {
      return heartbeating(async () => {
        const signal = cancelled();
        const giveUp = async (reason: string): Promise<DrainResult> => {
          await setCordon(input.nodename, input.index, false);
          const node = await kube.core.readNode({ name: input.nodename }).catch(() => undefined);
          if (node) {
            await nodeEvent(node, input.index, {
              type: 'Warning', reason: 'RepairDrainInterrupted', action: 'Drain',
              note: `repair queue entry ${input.index}: drain interrupted, node uncordoned, backing off: ${reason}`,
              dedupKey: `repair/${input.index}/drain/${input.deadline}`,
            });
          }
          log.info({ node: input.nodename, index: input.index, reason }, 'repair: drain interrupted');
          return { ok: false, reason };
        };
        if ((await setCordon(input.nodename, input.index, true)) === 'gone') return { ok: true, evicted: 0, deleted: 0 };
        const plan = decideDrain(await podsOn(input.nodename), input.protectedJobPods);
        if (plan.blockedBy.length > 0) {
          const p = plan.blockedBy[0]!;
          return giveUp(`running Job pod ${p.namespace}/${p.name} (${plan.blockedBy.length} in all)`);
        }
        const protectedNs = await protectedNamespaceNames(input.protectedNamespaces);
        let evicted = 0;
        let deleted = 0;
        const del = async (p: PodView) => {
          try {
            await kube.core.deleteNamespacedPod({ namespace: p.namespace, name: p.name, body: { preconditions: { uid: p.uid } } });
            deleted++;
          } catch (err) {
            if (!isNotFound(err) && !isConflict(err)) throw err;
          }
        };
        for (const p of plan.remove) await del(p);
        // Every pod gets its chance before a refusal interrupts the drain, so
        // unprotected pods are gone and the next attempt has less to do.
        const refused: string[] = [];
        for (const p of plan.evict) {
          for (let attempt = 1; ; attempt++) {
            if (signal.aborted) throw signal.reason;
            try {
              await kube.core.createNamespacedPodEviction({
                namespace: p.namespace, name: p.name,
                body: { metadata: { name: p.name, namespace: p.namespace }, deleteOptions: { preconditions: { uid: p.uid } } },
              });
              evicted++;
              break;
            } catch (err) {
              if (isNotFound(err) || isConflict(err)) break;
              if (statusOf(err) !== 429) throw err;
              const isProtected = protectedNs === 'all' || protectedNs.has(p.namespace);
              if (!isProtected) {
                await del(p);
                break;
              }
              if (attempt > input.evictRetries) {
                refused.push(`${p.namespace}/${p.name} (${attempt} time(s): ${errorMessage(err)})`);
                break;
              }
              await sleep(input.evictIntervalSeconds * 1000, undefined, { signal });
            }
          }
        }
        if (refused.length > 0) return giveUp(`eviction refused for ${refused.join(', ')}`);
        const waitFor = new Set(plan.waitFor.map((p) => p.uid));
        for (;;) {
          const left = (await podsOn(input.nodename)).filter((p) => waitFor.has(p.uid));
          if (left.length === 0) return { ok: true, evicted, deleted };
          if (Date.now() >= input.deadline) {
            return giveUp(`eviction timeout: ${left.length} pod(s) still on the node, e.g. ${left[0]!.namespace}/${left[0]!.name}`);
          }
          await sleep(Math.min(1000, Math.max(0, input.deadline - Date.now())), undefined, { signal });
        }
      });
    },

    /** Runs a command with its timeout, command_retries more times at command_interval on failure. */
    async repairRunCommand(input: CommandInput): Promise<CommandResult> {
      return heartbeating(async () => {
        const signal = cancelled();
        const retries = input.retries ?? 0;
        let last: { ok: boolean; output: string; error?: string } = { ok: false, output: '' };
        for (let attempt = 1; attempt <= retries + 1; attempt++) {
          last = await runOnce(input.command, input.address, input.timeoutSeconds, signal);
          if (signal.aborted) throw signal.reason;
          if (last.ok) return { ...last, attempts: attempt };
          log.warn({ what: input.what, error: last.error, attempt }, 'repair: command failed');
          if (attempt <= retries) await sleep((input.intervalSeconds ?? 0) * 1000, undefined, { signal });
        }
        return { ...last, attempts: retries + 1 };
      });
    },

    /** Polls the health check until it prints `true` or `until` passes. One activity per watch keeps actions low. */
    async repairWatchHealth(input: WatchInput): Promise<{ healthy: boolean; checks: number }> {
      return heartbeating(async () => {
        const signal = cancelled();
        for (let checks = 1; ; checks++) {
          const r = await runOnce(input.command, input.address, input.timeoutSeconds, signal);
          if (signal.aborted) throw signal.reason;
          if (r.ok && r.output.trim() === 'true') return { healthy: true, checks };
          const wait = Math.min(input.pollSeconds * 1000, input.until - Date.now());
          if (wait <= 0) return { healthy: false, checks };
          await sleep(wait, undefined, { signal });
        }
      });
    },
  };
}
