// What the message fuzzer works on: one namespace with something for each
// capability (a Service `db` and its crash-looping dependants `api` for the
// weeder, managed pods for taint replacement, an App `web`), a repair
// command that records its runs, one tend configuration with all four
// capabilities at small limits, and the normal operation each batch runs
// beside its messages: a repair of two Nodes, a tainted Node, an App
// restarted, a Service recovered. Each probe says whether the capability did
// its job within its usual time.
import type * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { mergePatch } from '../src/kube/api.ts';
import type { KubeClients } from '../src/kube/client.ts';
import { grantRightsFor } from '../src/sandbox/bootstrap.ts';
import type { SandboxInfo } from '../src/sandbox/sandbox.ts';
import { loadConfig } from '../src/config/load.ts';
import { queueUpdate } from '../src/starters/repair-commands.ts';
import { addUpdate, listQuery, REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId } from '../src/repair/messages.ts';
import { nodeWorkflowId } from '../src/taint/messages.ts';
import { resumeUpdate, SAFETY_WORKFLOW_ID } from '../src/safety/messages.ts';
import { LABEL_APP } from '../src/apps/types.ts';
import { appObject, createApp, getApp, patchAppSpec, settled, webProcess } from '../test/harness/apps.ts';
import { deployment, isReady, podsOf, service } from '../test/harness/kube.ts';
import { dbBack, dependantsCrashLooping, deletedOf } from '../test/harness/weeder.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../test/harness/wait.ts';
import { retry } from '../faults/world.ts';

export const TASK_QUEUE = 'tend-fuzz';
export const MAX_CONCURRENT_REPAIRS = 1;
export const MAX_CONCURRENT_REPLACEMENTS = 1;
const MANAGED = 'fuzz.tend.dev/managed';
export const DUE_TAINT = 'fuzz.tend.dev/due';
/** A taint due only in an hour: its Node's workflow runs the whole batch (marking, never evicting), for messages to reach. */
export const LATER_TAINT = 'fuzz.tend.dev/later';
const API_REPLICAS = 2;

export interface Setup {
  namespace: string;
  config: string;
  /** The file the repair command appends `start|end <ms> <address>` to. */
  runsFile: string;
  nodes: { name: string; address: string }[];
}

const live = (pods: k8s.V1Pod[]) => pods.filter((p) => !p.metadata?.deletionTimestamp);

/** The namespace, its objects and tend's configuration (its rights granted as `tend rbac` would). */
export async function setUp(kube: KubeClients, info: SandboxInfo, dir: string): Promise<Setup> {
  const namespace = `fuzz-${randomBytes(3).toString('hex')}`;
  await kube.core.createNamespace({ body: { metadata: { name: namespace, labels: { 'fuzz.tend.dev/run': 'true' } } } });
  // Weeder: db and its dependants.
  await kube.apps.createNamespacedDeployment({ namespace, body: deployment({ namespace, name: 'db', replicas: 1 }) });
  await kube.core.createNamespacedService({ namespace, body: service(namespace, 'db', { app: 'db' }) });
  const api = deployment({ namespace, name: 'api', replicas: API_REPLICAS, labels: { role: 'api' }, annotations: { 'sim.tend.dev/depends-on': 'db' } });
  api.spec!.template.spec!.terminationGracePeriodSeconds = 0;
  await kube.apps.createNamespacedDeployment({ namespace, body: api });
  // Taint replacement: three managed pods.
  const managed = deployment({ namespace, name: 'managed', replicas: 3, labels: { [MANAGED]: 'true' } });
  managed.spec!.template.spec!.terminationGracePeriodSeconds = 0;
  await kube.apps.createNamespacedDeployment({ namespace, body: managed });
  await createApp(kube, appObject(namespace, 'web', [webProcess(1)]));

  const repairDir = join(dir, 'repair');
  mkdirSync(repairDir, { recursive: true });
  const runsFile = join(repairDir, 'runs');
  const script = join(repairDir, 'repair.sh');
  writeFileSync(script, [
    '#!/bin/sh',
    '# The fuzzer\'s repair command: records each run\'s start and end, so that runs at once can be counted.',
    `echo "start $(date +%s%3N) $1" >> '${runsFile}'`,
    'sleep 2',
    `echo "end $(date +%s%3N) $1" >> '${runsFile}'`,
    '',
  ].join('\n'), { mode: 0o755 });
  const nodes = (await kube.core.listNode({ labelSelector: 'sim.tend.dev/node=true' })).items
    .map((n) => ({ name: n.metadata!.name!, address: n.status!.addresses!.find((a) => a.type === 'InternalIP')!.address }));

  const config = join(dir, 'tend.yaml');
  await writeFile(config, toYaml({
    temporal: { address: info.temporalAddress, taskQueue: TASK_QUEUE },
    kubernetes: { kubeconfig: info.tendKubeconfig },
    // A minute's window: it is open while the batch's messages reach it.
    weeder: { watchDuration: '60s', namespaces: [namespace], servicesAndDependantSelectors: { db: { podSelectors: [{ matchLabels: { role: 'api' } }] } } },
    taintReplacement: {
      podSelector: { matchLabels: { [MANAGED]: 'true' } },
      namespaces: [namespace],
      taintReplacementOptions: [{ key: DUE_TAINT, durationInSeconds: 1 }, { key: LATER_TAINT, durationInSeconds: 3600 }],
      taintReplacementTimeSeconds: 1,
      maxConcurrentReplacements: MAX_CONCURRENT_REPLACEMENTS,
      breaker: { maxTaintedNodes: '100%' },
    },
    repair: {
      max_concurrent_repairs: MAX_CONCURRENT_REPAIRS,
      time_scale: 0.05,
      eviction_timeout_seconds: 200,
      state_dir: join(repairDir, 'state'),
      repair_procedures: [{
        machine_types: ['sim'],
        repair_operations: [{ operation: 'fix', repair_steps: [{ repair_command: ['sh', script], watch_seconds: 20, need_drain: true }], health_check_command: ['sh', '-c', 'echo true'] }],
      }],
    },
    apps: { namespaces: [namespace] },
  }));
  await grantRightsFor(info.kubeconfig, config, 'tend-fuzz');
  // The App's pod comes once tend runs: the others now.
  await waitFor('db, api and managed pods ready', async () => {
    const pods = live((await kube.core.listNamespacedPod({ namespace, labelSelector: `!${LABEL_APP}` })).items);
    return pods.length === 1 + API_REPLICAS + 3 && pods.every(isReady);
  }, { timeoutMs: 120_000 });
  return { namespace, config, runsFile, nodes };
}

/** tend-safety running, nothing paused (as `tend resume` leaves it): its messages are fuzzed too. */
export async function startSafety(client: Client): Promise<void> {
  await client.workflow.executeUpdateWithStart(resumeUpdate, {
    args: [{ by: 'fuzz' }],
    startWorkflowOperation: new WithStartWorkflowOperation('safetyWorkflow', { workflowId: SAFETY_WORKFLOW_ID, taskQueue: TASK_QUEUE, workflowIdConflictPolicy: 'USE_EXISTING' }),
  });
}

/**
 * How much longer than its usual time a probe begun at `from` may take, as of now: a hand start under
 * one of its capability's ids keeps tend's own workflow out while it runs (tend fails closed on it,
 * docs/security.md), and tend takes it up again at its watcher's next resync.
 */
export type Allowance = (from: number, ids?: string[]) => number;
const none: Allowance = () => 0;

/**
 * Calls `probe` until it returns something other than undefined/false; fails past `usualMs` plus what
 * `allowance` grants by then, saying so.
 */
async function within<T>(what: string, probe: () => Promise<T | undefined | false>, usualMs: number, allowance: Allowance, ids?: string[], intervalMs = 500): Promise<T> {
  const from = Date.now();
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined && v !== false) return v;
    const extra = allowance(from, ids);
    if (Date.now() > from + usualMs + extra) {
      throw new Error(`${what}: not within ${usualMs / 1000} s${extra ? ` (and ${Math.round(extra / 1000)} s more after a hand start under its ids)` : ''}`);
    }
    await sleep(intervalMs);
  }
}

/** A probe's outcome: the capability did its job within its usual time, or why not. */
export interface ProbeResult {
  capability: 'repair' | 'taint' | 'apps' | 'weeder';
  ok: boolean;
  detail: string;
}

/** Repair: two Nodes queued at once; both entries end succeeded within 150 s. */
export async function probeRepair(client: Client, s: Setup, batch: number, allowance: Allowance = none): Promise<ProbeResult> {
  const config = await loadConfig({ file: s.config });
  const picked = [s.nodes[batch % s.nodes.length]!, s.nodes[(batch + 1) % s.nodes.length]!];
  const added = await queueUpdate(client, config, addUpdate, { requests: picked.map((n) => ({ operation: 'fix', machine_type: 'sim', address: n.address })) });
  const indexes = added.map((e) => e.index);
  let last = '';
  try {
    await within(`entries ${indexes.join(', ')} finished`, async () => {
      const list = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(listQuery);
      const mine = indexes.map((i) => list.find((e) => e.index === i));
      last = mine.map((e, k) => `${indexes[k]} ${e ? `${e.status}${e.step_status ? `/${e.step_status}` : ''}` : 'gone'}`).join(', ');
      return mine.every((e) => e && (e.status === 'succeeded' || e.status === 'failed'));
    }, 150_000, allowance, indexes.map(repairEntryWorkflowId));
  } catch (err) {
    return { capability: 'repair', ok: false, detail: `${(err as Error).message}: ${last}` };
  }
  const failed = last.split(', ').filter((x) => !/ succeeded/.test(x));
  return failed.length
    ? { capability: 'repair', ok: false, detail: `entries did not succeed: ${failed.join(', ')}` }
    : { capability: 'repair', ok: true, detail: `entries ${indexes.join(', ')} succeeded` };
}

async function editTaints(kube: KubeClients, node: string, edit: (t: k8s.V1Taint[]) => k8s.V1Taint[]) {
  await retry(`taints of ${node}`, async () => {
    const n = await kube.core.readNode({ name: node });
    n.spec = { ...n.spec, taints: edit(n.spec?.taints ?? []) };
    await kube.core.replaceNode({ name: node, body: n });
  });
}
export const untaint = (kube: KubeClients, node: string) => editTaints(kube, node, (ts) => ts.filter((t) => t.key !== DUE_TAINT && t.key !== LATER_TAINT));
/** The later taint on a Node (PreferNoSchedule: the Node still takes pods the others cannot). */
export const taintLater = (kube: KubeClients, node: string) =>
  editTaints(kube, node, (ts) => [...ts.filter((t) => t.key !== LATER_TAINT), { key: LATER_TAINT, value: 'x', effect: 'PreferNoSchedule' }]);
export const untaintLater = (kube: KubeClients, node: string) => editTaints(kube, node, (ts) => ts.filter((t) => t.key !== LATER_TAINT));

/** Taint: the Node with most managed pods tainted; every managed pod on it replaced within 90 s, then the taint removed. */
export async function probeTaint(kube: KubeClients, s: Setup, allowance: Allowance = none): Promise<ProbeResult> {
  const managedPods = async () => live((await kube.core.listNamespacedPod({ namespace: s.namespace, labelSelector: `${MANAGED}=true` })).items);
  const pods = await waitFor('three managed pods ready', async () => {
    const p = await managedPods();
    return p.length === 3 && p.every(isReady) && p;
  }, { timeoutMs: 60_000 }).catch(() => undefined);
  if (!pods) return { capability: 'taint', ok: false, detail: 'the managed pods were not ready to begin with (within 60 s)' };
  const count = new Map<string, number>();
  for (const p of pods) count.set(p.spec!.nodeName!, (count.get(p.spec!.nodeName!) ?? 0) + 1);
  const node = [...count.entries()].sort((a, b) => b[1] - a[1])[0]![0];
  await editTaints(kube, node, (ts) => [...ts.filter((t) => t.key !== DUE_TAINT), { key: DUE_TAINT, value: 'x', effect: 'NoSchedule' }]);
  try {
    await within(`the managed pods on ${node} all replaced`, async () => {
      const p = await managedPods();
      return !p.some((x) => x.spec?.nodeName === node) && p.filter(isReady).length === 3;
    }, 90_000, allowance, [nodeWorkflowId(node)]);
    return { capability: 'taint', ok: true, detail: `${count.get(node)} managed pod(s) on ${node} replaced` };
  } catch (err) {
    return { capability: 'taint', ok: false, detail: (err as Error).message };
  } finally {
    await editTaints(kube, node, (ts) => ts.filter((t) => t.key !== DUE_TAINT));
  }
}

/** Apps: web stopped and started again (as kubectl would); it runs on new, ready pods within 60 s. */
export async function probeApps(kube: KubeClients, s: Setup, allowance: Allowance = none): Promise<ProbeResult> {
  const pods = async () => live((await kube.core.listNamespacedPod({ namespace: s.namespace, labelSelector: `${LABEL_APP}=web` })).items);
  const before = new Set((await pods()).map((p) => p.metadata!.uid!));
  await retry('stop App web', () => patchAppSpec(kube, s.namespace, 'web', { desiredState: 'STOPPED' }));
  await retry('start App web', () => patchAppSpec(kube, s.namespace, 'web', { desiredState: 'STARTED' }));
  try {
    await within('App web running again on new pods', async () => {
      const p = await pods();
      return settled(await getApp(kube, s.namespace, 'web')) && p.length === 1 && p.every((x) => isReady(x) && !before.has(x.metadata!.uid!));
    }, 60_000, allowance);
    return { capability: 'apps', ok: true, detail: 'App web restarted on a new pod' };
  } catch (err) {
    const app = await getApp(kube, s.namespace, 'web').catch(() => undefined);
    return { capability: 'apps', ok: false, detail: `${(err as Error).message} (status ${JSON.stringify(app?.status ?? null).slice(0, 300)})` };
  }
}

/** Weeder: db down until every api pod crash-loops, then back; every crash-looping api pod deleted within 30 s. */
export async function probeWeeder(kube: KubeClients, s: Setup, allowance: Allowance = none): Promise<ProbeResult> {
  let looping: k8s.V1Pod[];
  try {
    await waitFor('db and every api pod ready', async () => {
      const [db, api] = await Promise.all([podsOf(kube, s.namespace, 'app=db'), podsOf(kube, s.namespace, 'app=api')]);
      return db.some(isReady) && live(api).length === API_REPLICAS && live(api).every(isReady);
    }, { timeoutMs: 90_000 });
    looping = await dependantsCrashLooping(kube, s.namespace, API_REPLICAS);
  } catch (err) {
    await dbBack(kube, s.namespace);
    return { capability: 'weeder', ok: false, detail: `could not make the dependants crash-loop: ${(err as Error).message}` };
  }
  await dbBack(kube, s.namespace);
  try {
    await within('every crash-looping api pod deleted after db came back', async () => (await deletedOf(kube, s.namespace, looping)).length === looping.length, 30_000, allowance, undefined, 300);
    return { capability: 'weeder', ok: true, detail: `${looping.length} crash-looping api pods weeded after db came back` };
  } catch (err) {
    const gone = await deletedOf(kube, s.namespace, looping).catch(() => []);
    return { capability: 'weeder', ok: false, detail: `${(err as Error).message}: ${looping.length - gone.length} of ${looping.length} not deleted` };
  }
}

/** Nodes cordoned now (the probes uncordon nothing: tend does). */
export async function cordonedNodes(kube: KubeClients): Promise<string[]> {
  return (await kube.core.listNode({ labelSelector: 'sim.tend.dev/node=true' })).items.filter((n) => n.spec?.unschedulable).map((n) => n.metadata!.name!);
}

export async function uncordon(kube: KubeClients, node: string): Promise<void> {
  await retry('uncordon', () => kube.core.patchNode({ name: node, body: { spec: { unschedulable: null } } }, mergePatch));
}
