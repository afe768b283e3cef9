// Two of everything: two watchers and two workers (separate processes, one configuration, one
// task queue), as a Deployment of two replicas runs them. Each capability's scenario ends as with
// one of each, and kube-apiserver's audit log shows no action done twice: each dependant deleted
// once, each pod evicted once, each repair command run once, each Deployment created once. Then one
// watcher and one worker are killed (SIGKILL) as a node is tainted: the survivors finish the
// replacement, each pod still evicted once, and the stall against the same scenario before is
// printed.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { allCapabilities } from '../harness/all-capabilities.ts';
import { runTend, TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, grantConfiguredRights, tempNamespace } from '../harness/kube.ts';
import { SLOTS_WORKFLOW_ID } from '../../src/taint/messages.ts';
import { waitFor } from '../harness/wait.ts';
import { dbBack, dbWithDependants, deletedOf, dependantsCrashLooping } from '../harness/weeder.ts';
import { readPod, readyPodsOn, taint, taintStatusFor, untaint } from '../harness/taint.ts';
import { appObject, createApp, getApp, settled, webProcess, workloadsOf } from '../harness/apps.ts';
import { add, repairWorld, resetRepairQueue, temporalCli, tendWrites, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import type { Write } from '../../faults/audit.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const KEY = 'example.org/two-replicas';
const TASK_QUEUE = 'tend-two';

describe('two watchers and two workers: every capability, no action done twice (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let writes: Awaited<ReturnType<typeof tendWrites>>;
  let config: string;
  let world: RepairWorld;
  let weederNs: string;
  let taintNs: string;
  let appsNs: string;
  const watchers: TendProcess[] = [];
  const workers: TendProcess[] = [];
  const tainted: string[] = [];
  /** How long the first taint replacement took, from the taint to both pods evicted (ms). */
  let baselineMs = 0;

  before(async () => {
    kube = admin();
    writes = await tendWrites();
    await resetRepairQueue();
    // Workflows an interrupted run of this test left on its task queue would hold its node ids.
    const { stdout } = await temporalCli(['workflow', 'list', '--query', `TaskQueue="${TASK_QUEUE}" AND ExecutionStatus="Running"`, '--output', 'json']);
    for (const w of stdout.trim() ? (JSON.parse(stdout) as { execution: { workflowId: string } }[]) : []) {
      await temporalCli(['workflow', 'terminate', '--workflow-id', w.execution.workflowId, '--reason', 'test reset']).catch(() => undefined);
    }
    // So would a taint coordinator left on another queue (it has one id for the whole cluster).
    await temporalCli(['workflow', 'terminate', '--workflow-id', SLOTS_WORKFLOW_ID, '--reason', 'test reset']).catch(() => undefined);
    [weederNs, taintNs, appsNs] = await Promise.all(['two-weeder', 'two-taint', 'two-apps'].map((p) => tempNamespace(kube, p)));
    const weeder = await dbWithDependants(kube, weederNs, 2);
    world = repairWorld();
    config = join(await mkdtemp(join(tmpdir(), 'tend-two-')), 'tend.yaml');
    writeFileSync(config, stringify(allCapabilities({ taskQueue: TASK_QUEUE, kubeconfig: sandbox().tendKubeconfig, weeder, taintNs, taintKey: KEY, appsNs, world })));
    await grantConfiguredRights(config);
    // The queue's commands (add, list) through this configuration: its task queue.
    world = { ...world, config };
    for (let i = 0; i < 2; i++) {
      watchers.push(new TendProcess(['watcher', '--config', config]));
      workers.push(new TendProcess(['worker', '--config', config]));
    }
    await waitFor('two workers polling and two watchers synced', () =>
      workers.every((w) => w.output.includes('worker started')) && watchers.every((w) => w.output.includes('taint watch synced')),
    { timeoutMs: 180_000 });
  });
  after(async () => {
    // The taints gone, the node workflows clear their pods' conditions and end before tend stops
    // and the namespaces (with the rights to those pods) go.
    for (const node of tainted) await untaint(kube, node, KEY).catch(() => undefined);
    if (workers.some((w) => !w.exited)) {
      await waitFor('the node workflows to end', async () => (await taintStatusFor(config)).nodes.length === 0, { timeoutMs: 60_000 })
        .catch((err: Error) => process.stderr.write(`cleanup: ${err.message}\n`));
    }
    await Promise.all([...watchers, ...workers].map((p) => p.stop()));
    // The coordinator (one id for the whole sandbox), left on this file's task queue, would grant no slot to the next file's tend.
    await temporalCli(['workflow', 'terminate', '--workflow-id', SLOTS_WORKFLOW_ID, '--reason', 'test over']).catch(() => undefined);
    await Promise.all([weederNs, taintNs, appsNs].map((ns) => deleteNamespace(kube, ns)));
    await resetRepairQueue();
  });

  /** What tend asked of kube-apiserver since `from`, by verb, resource and object name (any answer: a refused second try counts too). */
  const asked = async (from: number, namespace: string | undefined, verb: string, resource: string): Promise<Asked> => {
    const all = (await writes(from)).filter((w) => w.verb === verb && `${w.resource}${w.subresource ? `/${w.subresource}` : ''}` === resource &&
      (namespace === undefined || w.namespace === namespace));
    return Object.assign(all.map(nameOf), { writes: all });
  };
  type Asked = string[] & { writes: Write[] };
  const nameOf = (w: Write) => w.name ?? String((w.body as { metadata?: { name?: string } } | undefined)?.metadata?.name ?? '');
  /** Each name asked for once; past that, every request for a name asked twice, when and with what answer. */
  const once = (names: Asked, what: string) => {
    const counts = new Map<string, number>();
    for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
    const twice = [...counts].filter(([, c]) => c > 1);
    const requests = names.writes.filter((w) => counts.get(nameOf(w))! > 1)
      .map((w) => `${nameOf(w)}: received ${new Date(w.at).toISOString()}, answered ${w.code} after ${w.done - w.at} ms`);
    assert.deepEqual(twice, [], `${what} done more than once:\n${requests.join('\n')}`);
  };

  it('weeder: each crash-looping dependant deleted once', async () => {
    const since = Date.now();
    const looping = await dependantsCrashLooping(kube, weederNs, 2);
    await dbBack(kube, weederNs);
    await waitFor('both dependants deleted', async () => (await deletedOf(kube, weederNs, looping)).length === 2, { timeoutMs: 90_000 });
    const deletes = await asked(since, weederNs, 'delete', 'pods');
    assert.deepEqual(new Set(deletes), new Set(looping.map((p) => p.metadata!.name!)));
    once(deletes, 'a dependant\'s deletion');
  });

  const replaceOn = async (node: string, name: string) => {
    const pods = await readyPodsOn(kube, taintNs, name, node, 2);
    const t0 = Date.now();
    tainted.push(node);
    await taint(kube, node, { key: KEY, value: 'x', effect: 'NoSchedule' });
    return { pods, t0 };
  };
  const evicted = async (pods: k8s.V1Pod[]) => waitFor('both pods evicted', async () => {
    const now = await Promise.all(pods.map((p) => readPod(kube, taintNs, p.metadata!.name!)));
    return now.every((n, i) => !n || n.metadata?.uid !== pods[i]!.metadata!.uid || !!n.metadata?.deletionTimestamp);
  }, { timeoutMs: 120_000 });

  it('taint: each pod on a tainted node evicted once', async () => {
    const since = Date.now();
    const { pods, t0 } = await replaceOn('sim-1', 'db');
    await evicted(pods);
    baselineMs = Date.now() - t0;
    const evictions = await asked(since, taintNs, 'create', 'pods/eviction');
    assert.deepEqual(new Set(evictions), new Set(pods.map((p) => p.metadata!.name!)));
    once(evictions, 'an eviction');
    await untaint(kube, 'sim-1', KEY);
  });

  it('apps: a restart creates each new Deployment once and deletes each old one once', async () => {
    await createApp(kube, appObject(appsNs, 'web', [webProcess(1)]));
    await waitFor('the App settled', async () => settled(await getApp(kube, appsNs, 'web')), { timeoutMs: 90_000 });
    const before = (await workloadsOf(kube, appsNs, 'web')).map((d) => d.metadata!.name!);
    const since = Date.now();
    const r = await runTend(['app', 'restart', `${appsNs}/web`, '--config', config], { timeoutMs: 180_000 });
    assert.equal(r.code, 0, r.stderr);
    const after = (await workloadsOf(kube, appsNs, 'web')).map((d) => d.metadata!.name!);
    assert.notDeepEqual(after, before, 'the restart left the same Deployment');
    const created = await asked(since, appsNs, 'create', 'deployments');
    const deleted = await asked(since, appsNs, 'delete', 'deployments');
    assert.deepEqual(new Set(created), new Set(after));
    assert.deepEqual(new Set(deleted), new Set(before));
    once(created, 'a Deployment\'s creation');
    once(deleted, 'a Deployment\'s deletion');
  });

  it('repair: an entry\'s command runs once, and the entry succeeds', async () => {
    const e = await add(world, 'heal', '192.0.2.201');
    await waitFor('the entry succeeded', async () => (await queueEntry(e.index))?.status === 'succeeded', { timeoutMs: 120_000 });
    const runs = readFileSync(join(world.dir, '192.0.2.201.log'), 'utf8').trim().split('\n');
    assert.deepEqual(runs, ['heal']);
  });

  it('one watcher and one worker killed as a node is tainted: the others evict each pod once', async () => {
    const since = Date.now();
    const { pods, t0 } = await replaceOn('sim-2', 'db2');
    watchers[0]!.child.kill('SIGKILL');
    workers[0]!.child.kill('SIGKILL');
    await evicted(pods);
    const took = Date.now() - t0;
    console.log(`      two-replicas: replacement with one watcher and one worker killed: ${(took / 1000).toFixed(1)} s, ` +
      `against ${(baselineMs / 1000).toFixed(1)} s with both: stall ${((took - baselineMs) / 1000).toFixed(1)} s`);
    const evictions = await asked(since, taintNs, 'create', 'pods/eviction');
    assert.deepEqual(new Set(evictions), new Set(pods.map((p) => p.metadata!.name!)));
    once(evictions, 'an eviction');
  });
});
