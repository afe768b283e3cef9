// What the browser lane looks at: one tend (a worker and a watcher, apart, as a Deployment runs
// them) with every capability, and a run of each long-lived workflow caught mid-way: a weeder
// window open, a taint node whose only pod holds a replacement slot (its eviction blocked by a
// PodDisruptionBudget), an App, and a repair entry draining a cordoned Node (a pod a finalizer
// holds keeps the drain going).
import { writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type * as k8s from '@kubernetes/client-node';
import { allCapabilities } from '../harness/all-capabilities.ts';
import { appObject, createApp, settled, getApp, webProcess } from '../harness/apps.ts';
import { runTend, TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, deployment, grantConfiguredRights, isReady, podsOf, tempNamespace } from '../harness/kube.ts';
import { add, entry, nodeUnschedulable, release, repairWorld, resetRepairQueue, stuckPod, temporalCli, type RepairWorld } from '../harness/repair.ts';
import { condition, managedLabel, readPod, taint, taintStatusJson, untaint } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';
import { dbBack, dbWithDependants, deletedOf, dependantsCrashLooping } from '../harness/weeder.ts';
import { SLOTS_WORKFLOW_ID } from '../../src/taint/messages.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';

export const TASK_QUEUE = 'tend-browser';
export const TAINT_KEY = 'example.org/maintenance';
/** The tainted node, and the node the repair entry drains (its InternalIP is the entry's address). */
export const TAINTED_NODE = 'sim-1';
export const REPAIR_NODE = 'sim-3';
export const REPAIR_ADDRESS = '10.88.0.3';

export class BrowserWorld {
  kube!: KubeClients;
  config = '';
  repair!: RepairWorld;
  weederNs = '';
  taintNs = '';
  appsNs = '';
  repairNs = '';
  worker?: TendProcess;
  watcher?: TendProcess;
  /** The dependants the weeder window deleted. */
  weeded: k8s.V1Pod[] = [];
  /** The dependants crash-looping while db is down, before tend starts. */
  private looping: k8s.V1Pod[] = [];
  /** The taint node's pod that holds a slot. */
  taintPod?: k8s.V1Pod;
  entry?: RepairQueueEntry;
  private tainted = false;

  async setUp(): Promise<void> {
    this.kube = admin();
    await resetRepairQueue();
    // Runs an interrupted run of this lane left behind would hold the ids.
    const { stdout } = await temporalCli(['workflow', 'list', '--query', `TaskQueue="${TASK_QUEUE}" AND ExecutionStatus="Running"`, '--output', 'json']);
    for (const w of stdout.trim() ? (JSON.parse(stdout) as { execution: { workflowId: string } }[]) : []) {
      await temporalCli(['workflow', 'terminate', '--workflow-id', w.execution.workflowId, '--reason', 'test reset']).catch(() => undefined);
    }
    await temporalCli(['workflow', 'terminate', '--workflow-id', SLOTS_WORKFLOW_ID, '--reason', 'test reset']).catch(() => undefined);
    [this.weederNs, this.taintNs, this.appsNs, this.repairNs] = await Promise.all(['ui-weeder', 'ui-taint', 'ui-apps', 'ui-repair'].map((p) => tempNamespace(this.kube, p)));
    const weeder = await dbWithDependants(this.kube, this.weederNs, 2);
    // A drain held by its stuck pod lasts eviction_timeout_seconds x time_scale: 10 minutes, past the lane's end.
    this.repair = repairWorld({ eviction_timeout_seconds: 12_000 });
    const config = allCapabilities({
      taskQueue: TASK_QUEUE, kubeconfig: sandbox().tendKubeconfig, weeder, taintNs: this.taintNs, taintKey: TAINT_KEY, appsNs: this.appsNs, world: this.repair,
    }) as { weeder: { watchDuration: string }; taintReplacement: { maxConcurrentReplacements: number } };
    // The window stays open while the lane looks at it; one slot, held by the blocked pod.
    config.weeder.watchDuration = '10m';
    config.taintReplacement.maxConcurrentReplacements = 1;
    this.config = join(await mkdtemp(join(tmpdir(), 'tend-browser-')), 'tend.yaml');
    writeFileSync(this.config, stringify(config));
    await grantConfiguredRights(this.config);
    // db down and its dependants crash-looping before tend first looks: its window is then armed
    // only, and db's return is answered by the armed watch alone (no open window's lane beside it).
    this.looping = await dependantsCrashLooping(this.kube, this.weederNs, 2);
    this.repair = { ...this.repair, config: this.config };
    this.worker = new TendProcess(['worker', '--config', this.config]);
    this.watcher = new TendProcess(['watcher', '--config', this.config]);
    await waitFor('the worker polling and the watcher synced', () =>
      this.worker!.output.includes('worker started') && this.watcher!.output.includes('taint watch synced'), { timeoutMs: 180_000 });
    await Promise.all([this.openWindow(), this.holdSlot(), this.startApp(), this.drain()]);
    // tend-safety, with something to show: the weeder paused (its window has weeded already).
    const paused = await runTend(['pause', 'weeder', '--reason', 'browser lane: the weeder window is looked at, not acted on', '--config', this.config]);
    if (paused.code !== 0) throw new Error(`tend pause weeder: exit ${paused.code}: ${paused.stderr}`);
  }

  /** db down, its dependants crash-looping, db back: the window opens and weeds them. */
  private async openWindow(): Promise<void> {
    const looping = this.looping;
    const windowOf = async () => {
      const { stdout } = await temporalCli(['workflow', 'query', '--workflow-id', `weeder/${this.weederNs}/db`, '--name', 'window', '-o', 'json']);
      // The CLI prints an empty list as null.
      return (JSON.parse(stdout) as { queryResult: { armed?: { since: number; until: number } | null; weeded: { uid: string }[] | null }[] }).queryResult[0]!;
    };
    await waitFor('db\'s window armed', async () => !!(await windowOf()).armed, { timeoutMs: 60_000 });
    await dbBack(this.kube, this.weederNs);
    await waitFor('both dependants weeded', async () => (await deletedOf(this.kube, this.weederNs, looping)).length === 2, { timeoutMs: 90_000 });
    // And recorded by the window (the armed watch's answer, which its details show).
    const uids = looping.map((p) => p.metadata!.uid!);
    await waitFor('both deletions in the window\'s record', async () => {
      const weeded = ((await windowOf()).weeded ?? []).map((p) => p.uid);
      return uids.every((u) => weeded.includes(u));
    }, { timeoutMs: 90_000 });
    this.weeded = looping;
  }

  /** One managed pod on the tainted node, a budget that refuses its eviction: it holds the only slot. */
  private async holdSlot(): Promise<void> {
    const ns = this.taintNs;
    const body = deployment({ namespace: ns, name: 'db', replicas: 1, labels: managedLabel(ns) });
    body.spec!.template.spec!.nodeSelector = { 'kubernetes.io/hostname': TAINTED_NODE };
    await this.kube.apps.createNamespacedDeployment({ namespace: ns, body });
    const [pod] = await waitFor('the db pod ready', async () => {
      const pods = (await podsOf(this.kube, ns, 'app=db')).filter(isReady);
      return pods.length === 1 && pods;
    }, { timeoutMs: 60_000 });
    this.taintPod = pod;
    await this.kube.policy.createNamespacedPodDisruptionBudget({
      namespace: ns, body: { metadata: { name: 'db', namespace: ns }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } } },
    });
    await waitFor('the budget observed', async () => {
      const b = await this.kube.policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'db' });
      return b.status?.observedGeneration === b.metadata?.generation && b.status?.currentHealthy === 1;
    });
    this.tainted = true;
    await taint(this.kube, TAINTED_NODE, { key: TAINT_KEY, value: 'x', effect: 'NoSchedule' });
    await waitFor('the pod holding the slot, its eviction refused by the budget', async () => {
      const s = await taintStatusJson(this.config);
      const row = s.pods.find((p) => p.pod === pod!.metadata!.name);
      return row?.state === 'Blocked' && s.slots?.inFlight.some((g) => g.uid === pod!.metadata!.uid) && row;
    }, { timeoutMs: 90_000 });
  }

  private async startApp(): Promise<void> {
    await createApp(this.kube, appObject(this.appsNs, 'web', [webProcess(1)]));
    await waitFor('the App running', async () => settled(await getApp(this.kube, this.appsNs, 'web')), { timeoutMs: 90_000 });
  }

  /** A repair entry draining the repair node: cordoned, its stuck pod holding the drain. */
  private async drain(): Promise<void> {
    this.repair.broken(REPAIR_ADDRESS);
    await stuckPod(this.kube, this.repairNs, 'stuck', REPAIR_NODE);
    const e = await add(this.repair, 'drain', REPAIR_ADDRESS);
    this.entry = await waitFor('the entry draining, its node cordoned', async () => {
      const x = await entry(this.repair, e.index);
      return x?.step_status === 'draining' && (await nodeUnschedulable(REPAIR_NODE)) && x;
    }, { timeoutMs: 90_000 });
  }

  /** Whether the taint pod carries either of tend's conditions. */
  async taintMarked(): Promise<boolean> {
    const p = await readPod(this.kube, this.taintNs, this.taintPod!.metadata!.name!);
    return Boolean(condition(p, 'NodeTaintDetected') || condition(p, 'NodeTaintReplacing'));
  }

  async tearDown(): Promise<void> {
    if (!this.kube) return;
    if (this.tainted) await untaint(this.kube, TAINTED_NODE, TAINT_KEY).catch(() => undefined);
    if (this.repairNs) await release(this.kube, this.repairNs, 'stuck');
    await Promise.all([this.watcher, this.worker].map((p) => p?.stop()));
    await temporalCli(['workflow', 'terminate', '--workflow-id', SLOTS_WORKFLOW_ID, '--reason', 'test over']).catch(() => undefined);
    await resetRepairQueue();
    await Promise.all([this.weederNs, this.taintNs, this.appsNs, this.repairNs].filter(Boolean).map((ns) => deleteNamespace(this.kube, ns)));
  }
}
