// Helpers for the taint replacement end-to-end tests: a tend config with a
// taintReplacement section, tainting nodes as `kubectl taint` would, reading
// pod conditions, and `tend taint status -o json`.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import type * as k8s from '@kubernetes/client-node';
import type { KubeClients } from '../../src/kube/client.ts';
import type { TaintStatus } from '../../src/starters/taint-commands.ts';
import { runTend, TendProcess } from './cli.ts';
import { testStateDir } from './env.ts';
import { deleteNamespace, deployment, grantConfiguredRights, isReady, podsOf } from './kube.ts';
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { nodeSlotsOf } from '../../src/activities/taint.ts';
import { listingTime, startMark } from '../../src/taint/node.ts';
import { waitFor } from './wait.ts';
import { taintStatusNow, terminateRunning } from './in-process-reads.ts';
import { sandbox } from './hooks.ts';
import { SLOTS_WORKFLOW_ID } from '../../src/taint/messages.ts';

export const TASK_QUEUE = 'tend-taint';

export async function taintConfig(taintReplacement: Record<string, unknown>, taskQueue = TASK_QUEUE): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tend-taint-'));
  const file = join(dir, 'tend.yaml');
  await writeFile(file, toYaml({
    temporal: { address: sandbox().temporalAddress, taskQueue },
    kubernetes: { kubeconfig: sandbox().tendKubeconfig },
    taintReplacement,
  }));
  await grantConfiguredRights(file);
  return file;
}

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  timeAdded?: Date;
}

/** Read, change, replace a Node; retried on conflict (the kubelet writes Nodes too). */
async function editNode(kube: KubeClients, name: string, edit: (taints: k8s.V1Taint[]) => k8s.V1Taint[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const n = await kube.core.readNode({ name });
    n.spec = { ...n.spec, taints: edit(n.spec?.taints ?? []) };
    try {
      await kube.core.replaceNode({ name, body: n });
      return;
    } catch (err) {
      if (attempt > 10) throw err;
    }
  }
}

/** `kubectl taint node NODE key=value:effect` (replaces a taint with the same key and effect). */
export async function taint(kube: KubeClients, node: string, t: Taint): Promise<void> {
  await editNode(kube, node, (taints) => [
    ...taints.filter((x) => !(x.key === t.key && x.effect === t.effect)),
    { key: t.key, value: t.value, effect: t.effect, ...(t.timeAdded ? { timeAdded: t.timeAdded } : {}) },
  ]);
}

/** `kubectl taint node NODE key-` */
export async function untaint(kube: KubeClients, node: string, key: string): Promise<void> {
  await editNode(kube, node, (taints) => taints.filter((x) => x.key !== key));
}

export function condition(pod: k8s.V1Pod | undefined, type: string): k8s.V1PodCondition | undefined {
  return pod?.status?.conditions?.find((c) => c.type === type && c.status === 'True');
}

export async function readPod(kube: KubeClients, namespace: string, name: string): Promise<k8s.V1Pod | undefined> {
  try {
    return await kube.core.readNamespacedPod({ namespace, name });
  } catch {
    return undefined;
  }
}

export async function taintStatusJson(config: string): Promise<TaintStatus> {
  const r = await runTend(['taint', 'status', '--config', config, '-o', 'json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as TaintStatus;
}

/**
 * What `tend taint status -o json --config CONFIG` prints, read in the test process for the
 * configuration's task queue: for the waits, which would otherwise start a tend process per probe.
 */
export async function taintStatusFor(config: string): Promise<TaintStatus> {
  const taskQueue = (parseYaml(readFileSync(config, 'utf8')) as { temporal: { taskQueue: string } }).temporal.taskQueue;
  return taintStatusNow(taskQueue);
}

/** Labels that make a test's pods (and only them) managed. */
export const managedLabel = (ns: string) => ({ 'taint-test': ns });

/** `tend run` with this taintReplacement section (managing the namespace's labelled pods), once its watch has synced. */
export async function startTaintTend(ns: string, section: Record<string, unknown>): Promise<{ config: string; tend: TendProcess }> {
  const config = await taintConfig({ podSelector: { matchLabels: managedLabel(ns) }, namespaces: [ns], ...section });
  const tend = new TendProcess(['run', '--config', config]);
  await waitFor('tend to start its worker and taint watch',
    () => tend.output.includes('taint watch synced') && tend.output.includes('worker started'), { timeoutMs: 120_000 });
  return { config, tend };
}

export interface TaintTestLeftovers {
  kube: KubeClients;
  ns: string;
  tend?: TendProcess;
  config?: string;
  /** `node|key` entries to untaint. */
  tainted: Set<string>;
  /** Simulated nodes whose heartbeats to resume. */
  stoppedNodes?: Set<string>;
  /** How long to wait for the node workflows to end once the taints are gone. */
  settleMs: number;
}

/**
 * After each taint test (a failed one's tend output is shown by the root hook): resume heartbeats,
 * remove taints and budgets, let the node workflows see it and end, so the
 * next test starts clean; then stop tend and delete the namespace.
 */
export async function cleanUpTaintTest(t: TaintTestLeftovers): Promise<void> {
  for (const node of t.stoppedNodes ?? []) await runTend(['sandbox', 'node', 'start', node, '--state-dir', testStateDir]);
  t.stoppedNodes?.clear();
  for (const entry of t.tainted) {
    const [node, key] = entry.split('|') as [string, string];
    await untaint(t.kube, node, key);
  }
  t.tainted.clear();
  await t.kube.policy.deleteCollectionNamespacedPodDisruptionBudget({ namespace: t.ns }).catch(() => undefined);
  if (t.config && t.tend && !t.tend.exited) {
    // Read in this process: a CLI process per probe would take its CPU from the tend it waits for.
    const config = t.config;
    await waitFor('the node workflows to end', async () => (await taintStatusFor(config)).nodes.length === 0, { timeoutMs: t.settleMs })
      .catch((err: Error) => process.stderr.write(`cleanup: ${err.message}\n`));
  }
  await t.tend?.stop();
  // The coordinator has one id for the whole sandbox: left running on this file's task queue, it
  // would grant no slot to the next file's tend, on another queue.
  await terminateRunning(`WorkflowId="${SLOTS_WORKFLOW_ID}"`, 'test over');
  await deleteNamespace(t.kube, t.ns);
}

// --- Stub activities for the workflow tests (test/workflows/taint*.test.ts) ---

export interface StubPod {
  uid: string;
  namespace: string;
  name: string;
}

/** What each stub eviction answers: 'evicted', 'blocked', or an error (thrown non-retryably, as an activity that gave up). */
export type StubEviction = 'evicted' | 'blocked' | 'fail' | 'refuse';

/**
 * The taint activities, scripted: one tainted node (or several) with managed
 * pods, conditions written to a record, evictions answered from a script.
 * Every call is recorded, with the stub's own clock.
 */
export class TaintStubs {
  taints = new Map<string, { key: string; effect: string; durationInSeconds: number; matchedBy: string }[]>();
  pods = new Map<string, StubPod[]>();
  settings = {
    taintReplacementOptions: [{ key: 'example.org/maintenance', durationInSeconds: 0 }],
    taintReplacementTimeSeconds: 0,
    maxConcurrentReplacements: 1,
    podSelector: { matchLabels: { app: 'db' } },
  };
  slotSettings = { maxConcurrentReplacements: 1, maxTaintedNodes: '100%' as string | number, grantCheckSeconds: 2 };
  /** Answers for the next evictions of a pod (by uid); when empty, 'evicted'. */
  evictions = new Map<string, StubEviction[]>();
  /** Whether awaitReplacement answers 'replaced' (else 'pending'). */
  replacementReady = true;
  /** How long a condition write takes before it lands (the mark becomes visible when it returns). */
  writeDelayMs = 0;
  /** When set, evictPod waits for this before answering (to cancel a workflow during an eviction). */
  evictGate: Promise<void> | undefined;
  /** When set, taintNodeState and taintNodeStart refuse (as a worker without taint replacement does). */
  refuseState = false;
  /** How many clears (every write null) fail outright, as when the API server cannot be reached. */
  clearFailures = 0;
  calls: { at: number; name: string; input: unknown; result?: unknown }[] = [];

  taint(node: string, pods: StubPod[]): void {
    this.taints.set(node, [{ key: 'example.org/maintenance', effect: 'NoSchedule', durationInSeconds: this.settings.taintReplacementOptions[0]!.durationInSeconds, matchedBy: 'example.org/maintenance' }]);
    this.pods.set(node, pods);
  }

  /** The node's pods as the listing answers them. */
  listed(node: string) {
    return (this.pods.get(node) ?? []).map((p) => ({ ...p, controllerUid: 'rs-uid', controller: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'db' } }));
  }

  callsOf(name: string): { at: number; name: string; input: unknown; result?: unknown }[] {
    return this.calls.filter((c) => c.name === name);
  }

  /** Evictions that were accepted, per pod. */
  evicted(uid: string): number {
    return this.callsOf('evictPod').filter((c) => (c.input as { uid: string }).uid === uid && (c.result as { outcome?: string })?.outcome === 'evicted').length;
  }

  /** Condition writes that cleared a pod's conditions. */
  cleared(uid: string): boolean {
    return this.callsOf('writeTaintConditions').some((c) =>
      (c.input as { writes: { uid: string; detected: unknown; replacing: unknown }[] }).writes.some((w) => w.uid === uid && w.detected === null && w.replacing === null));
  }

  activities(): Record<string, (input: never) => Promise<unknown>> {
    const record = <T>(name: string, input: unknown, result: T): T => {
      this.calls.push({ at: Date.now(), name, input, result });
      return result;
    };
    const refuse = (what: string) => ApplicationFailure.nonRetryable(`refused: ${what}; nothing was changed`, 'TaintRefused');
    return {
      taintNodeState: async (input: { node: string }) => {
        if (this.refuseState) throw refuse('taint replacement is not configured on this worker');
        return record('taintNodeState', input, { taints: this.taints.get(input.node) ?? [], settings: this.settings });
      },
      // Reads the node and lists its pods; marks none (the workflow writes the first mark itself).
      taintNodeStart: async (input: { node: string; hints?: Record<string, number>; at?: number }) => {
        if (this.refuseState) throw refuse('taint replacement is not configured on this worker');
        const now = listingTime(input.at, Date.now());
        const { taints, mark } = startMark(input.node, this.taints.get(input.node) ?? [], this.settings, input.hints ?? {}, now);
        if (taints.length === 0) return record('taintNodeStart', input, { taints, settings: this.settings });
        return record('taintNodeStart', input, { taints, settings: this.settings, listedAt: now, ...(mark ? { mark } : {}), pods: this.listed(input.node), written: [], marked: {} });
      },
      listTaintPods: async (input: { node: string }) => record('listTaintPods', input, this.listed(input.node)),
      writeTaintConditions: async (input: { node: string; writes: { uid: string; detected?: unknown; replacing: unknown }[] }) => {
        if (this.writeDelayMs > 0) await new Promise((r) => setTimeout(r, this.writeDelayMs));
        if (this.clearFailures > 0 && input.writes.every((w) => w.detected === null && w.replacing === null)) {
          this.clearFailures--;
          // Not retried by the activity's policy: the failure reaches the workflow at once, as after its last attempt.
          throw record('writeTaintConditions:failed', input, ApplicationFailure.nonRetryable('cannot reach the Kubernetes API: connection refused', 'KubeUnreachable'));
        }
        const at = Date.now();
        const marked = Object.fromEntries(input.writes.filter((w) => w.replacing).map((w) => [w.uid, at]));
        return record('writeTaintConditions', input, { written: input.writes.length, gone: 0, marked });
      },
      evictPod: async (input: { uid: string }) => {
        this.calls.push({ at: Date.now(), name: 'evictPod:start', input });
        if (this.evictGate) await this.evictGate;
        const next = this.evictions.get(input.uid)?.shift() ?? 'evicted';
        if (next === 'fail') {
          record('evictPod', input, { outcome: 'failed' });
          throw ApplicationFailure.nonRetryable('the API server answered 500: two PodDisruptionBudgets cover the pod', 'InternalError');
        }
        if (next === 'refuse') {
          record('evictPod', input, { outcome: 'refused' });
          throw refuse('pod is not managed by taint replacement');
        }
        return record('evictPod', input, next === 'blocked'
          ? { outcome: 'blocked', message: 'Cannot evict pod as it would violate the pod\'s disruption budget.' }
          : { outcome: 'evicted' });
      },
      awaitReplacement: async (input: { waitMs: number }) => {
        if (!this.replacementReady) await new Promise((r) => setTimeout(r, Math.min(input.waitMs, 300)));
        return record('awaitReplacement', input, this.replacementReady ? 'replaced' : 'pending');
      },
      taintSlotSettings: async () => record('taintSlotSettings', {}, { ...this.slotSettings }),
      taintNodeCounts: async () => record('taintNodeCounts', {}, { taintedNodes: this.taints.size, totalNodes: 10 }),
      // The real one: it asks the node's workflow on the test's dev server.
      taintNodeSlots: async (input: { node: string }) =>
        record('taintNodeSlots', input, await nodeSlotsOf(Context.current().client, input.node, Context.current().info.taskQueue)),
    };
  }
}

/** A Deployment of `replicas` managed pods pinned to `node` (nodeSelector), and its pods once all are ready. */
export async function readyPodsOn(kube: KubeClients, ns: string, name: string, node: string, replicas: number): Promise<k8s.V1Pod[]> {
  const body = deployment({ namespace: ns, name, replicas, labels: managedLabel(ns) });
  body.spec!.template.spec!.nodeSelector = { 'kubernetes.io/hostname': node };
  await kube.apps.createNamespacedDeployment({ namespace: ns, body });
  return waitFor(`${replicas} ready pod(s) of ${name} on ${node}`, async () => {
    const ps = (await podsOf(kube, ns, `app=${name}`)).filter((p) => isReady(p) && !p.metadata?.deletionTimestamp);
    return ps.length === replicas && ps;
  }, { timeoutMs: 60_000 });
}

/** A PodDisruptionBudget of `minAvailable` over the pods labelled app=`app`, once the disruption controller has observed it. */
export async function budget(kube: KubeClients, namespace: string, app: string, minAvailable: number): Promise<void> {
  await kube.policy.createNamespacedPodDisruptionBudget({
    namespace, body: { metadata: { name: app }, spec: { minAvailable, selector: { matchLabels: { app } } } },
  });
  await waitFor(`the PDB ${app} to be observed`, async () =>
    (await kube.policy.readNamespacedPodDisruptionBudget({ namespace, name: app })).status?.observedGeneration === 1);
}
