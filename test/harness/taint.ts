// Helpers for the taint replacement end-to-end tests: a tend config with a
// taintReplacement section, tainting nodes as `kubectl taint` would, reading
// pod conditions, and `tend taint status -o json`.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type * as k8s from '@kubernetes/client-node';
import type { KubeClients } from '../../src/kube/client.ts';
import type { TaintStatus } from '../../src/starters/taint-commands.ts';
import { runTend, TendProcess } from './cli.ts';
import { testStateDir } from './env.ts';
import { deleteNamespace, grantConfiguredRights } from './kube.ts';
import { waitFor } from './wait.ts';
import { sandbox } from './hooks.ts';

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

/** Labels that make a test's pods (and only them) managed. */
export const managedLabel = (ns: string) => ({ 'taint-test': ns });

/** `tend run` with this taintReplacement section (managing the namespace's labelled pods), once its watch has synced. */
export async function startTaintTend(ns: string, section: Record<string, unknown>): Promise<{ config: string; tend: TendProcess }> {
  const config = await taintConfig({ podSelector: { matchLabels: managedLabel(ns) }, namespaces: [ns], ...section });
  const tend = new TendProcess(['run', '--config', config]);
  await waitFor('tend to start its worker and taint watch',
    () => tend.output.includes('taint watch synced') && tend.output.includes('worker started'), { timeoutMs: 30_000 });
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
    await waitFor('the node workflows to end', async () => (await taintStatusJson(t.config!)).nodes.length === 0, { timeoutMs: t.settleMs })
      .catch((err: Error) => process.stderr.write(`cleanup: ${err.message}\n`));
  }
  await t.tend?.stop();
  await deleteNamespace(t.kube, t.ns);
}
