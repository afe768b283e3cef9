// The namespace's singletons (tend-safety, taint-replacements, repair-queue) outlive the tend that
// started them: tend A (task queue A) starts all three, holding a pause and a disabled repair
// queue with an entry; A stops; tend B (task queue B, same namespace) takes each over once no
// worker has polled A's task queue for a while (src/workers/singletons.ts), carrying what it held,
// and then resumes, pauses and grants taint slots (a tainted Node's pod is replaced). While A
// runs, B leaves them alone.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { runTend, TendProcess } from '../harness/cli.ts';
import { admin, grantConfiguredRights, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { temporalCli } from '../harness/temporal.ts';
import { repairWorld, resetRepairQueue, type RepairWorld } from '../harness/repair.ts';
import { cleanUpTaintTest, managedLabel, readPod, readyPodsOn, taint } from '../harness/taint.ts';
import { SAFETY_WORKFLOW_ID } from '../../src/safety/messages.ts';
import { SLOTS_WORKFLOW_ID } from '../../src/taint/messages.ts';
import { REPAIR_QUEUE_WORKFLOW_ID } from '../../src/repair/messages.ts';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import { STALE_POLL_MS } from '../../src/workers/singletons.ts';

const MAINTENANCE = 'example.org/maintenance';
const QA = 'tend-single-a';
const QB = 'tend-single-b';

/** Where the singleton runs now, or undefined when it does not. */
async function taskQueueOf(id: string): Promise<string | undefined> {
  const { stdout } = await temporalCli(['workflow', 'describe', '--workflow-id', id, '--output', 'json']).catch(() => ({ stdout: '' }));
  if (!stdout) return undefined;
  const d = JSON.parse(stdout) as { workflowExecutionInfo?: { status?: string; taskQueue?: string } };
  return /RUNNING/.test(d.workflowExecutionInfo?.status ?? '') ? d.workflowExecutionInfo?.taskQueue : undefined;
}

const end = (id: string) => temporalCli(['workflow', 'terminate', '--workflow-id', id, '--reason', 'test reset']).catch(() => undefined);

describe('singletons: a live tend takes over those of a tend that is gone (e2e, two tends)', function () {
  this.timeout(600_000);
  let kube: KubeClients;
  let ns: string;
  let world: RepairWorld;
  let configA: string;
  let configB: string;
  let tendA: TendProcess | undefined;
  let tendB: TendProcess | undefined;
  const tainted = new Set<string>();

  /** A's configuration with a repair and a taintReplacement section, and B's: the same on another task queue. */
  const writeConfigs = async () => {
    world = repairWorld();
    const base = parse(readFileSync(world.config, 'utf8')) as Record<string, unknown> & { temporal: { taskQueue: string } };
    base.taintReplacement = {
      podSelector: { matchLabels: managedLabel(ns) }, namespaces: [ns],
      taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 1, maxConcurrentReplacements: 1,
    };
    const write = async (taskQueue: string, file: string) => {
      writeFileSync(file, stringify({ ...base, temporal: { ...base.temporal, taskQueue } }));
      await grantConfiguredRights(file);
      return file;
    };
    configA = await write(QA, `${world.dir}/a.yaml`);
    configB = await write(QB, `${world.dir}/b.yaml`);
  };
  const started = (t: TendProcess) => waitFor(`tend ${t.args.join(' ')} started`, () => {
    if (t.exited) throw new Error(`tend exited: ${t.output.slice(-3000)}`);
    return t.output.includes('worker started') && t.output.includes('taint watch synced');
  }, { timeoutMs: 180_000 });
  const list = async (config: string) => {
    const r = await runTend(['repair-queue', 'list', '--config', config], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as RepairQueueEntry[] | null) ?? [];
  };

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'singletons');
    await resetRepairQueue();
    for (const id of [SAFETY_WORKFLOW_ID, SLOTS_WORKFLOW_ID]) await end(id);
    await writeConfigs();
  });
  after(async () => {
    await tendA?.stop();
    for (const id of [SAFETY_WORKFLOW_ID, REPAIR_QUEUE_WORKFLOW_ID]) await end(id);
    await resetRepairQueue();
    await cleanUpTaintTest({ kube, ns, tend: tendB, config: configB, tainted, settleMs: 30_000 });
  });

  it('with tend A stopped, tend B pauses, resumes, keeps the repair queue\'s entries and grants taint slots', async () => {
    tendA = new TendProcess(['run', '--config', configA]);
    await started(tendA);
    // What A's singletons hold: a pause, a disabled queue with one entry (queued: nothing starts it).
    const paused = await runTend(['pause', '--reason', 'drill before the move', '--config', configA], { timeoutMs: 120_000 });
    assert.equal(paused.code, 0, paused.stderr);
    const revision = Number(/revision (\d+)/.exec(paused.stdout)?.[1]);
    for (const args of [['disable'], ['add', 'heal', 'sim', '192.0.2.61']]) {
      const r = await runTend(['repair-queue', args[0]!, '--config', configA, ...args.slice(1)], { timeoutMs: 120_000 });
      assert.equal(r.code, 0, r.stderr);
    }
    const before = await list(configA);
    assert.deepEqual(before.map((e) => [e.address, e.status]), [['192.0.2.61', 'queued']]);
    await waitFor('A\'s coordinator on A\'s task queue', async () => (await taskQueueOf(SLOTS_WORKFLOW_ID)) === QA, { timeoutMs: 60_000 });
    for (const id of [SAFETY_WORKFLOW_ID, REPAIR_QUEUE_WORKFLOW_ID]) assert.equal(await taskQueueOf(id), QA, id);

    // B beside a live A takes nothing over.
    tendB = new TendProcess(['run', '--config', configB]);
    await started(tendB);
    await waitFor('B to leave A\'s singletons to A', () => tendB!.logs.includes(`runs on task queue "${QA}", which a worker polls: left to that tend`), { timeoutMs: 60_000 });
    for (const id of [SAFETY_WORKFLOW_ID, SLOTS_WORKFLOW_ID, REPAIR_QUEUE_WORKFLOW_ID]) assert.equal(await taskQueueOf(id), QA, id);

    // A stops: B takes each over once A's task queue has had no poll for a while, carrying what it held.
    const stoppedAt = Date.now();
    await tendA.stop();
    // Once A's task queue has had no poll for 90 s, a command that finds the repair queue there says
    // so and waits for the take-over (B reads it last, through a short-lived worker: it is still there).
    await waitFor('A\'s task queue without a poll for 90 s', async () => {
      const { stdout } = await temporalCli(['task-queue', 'describe', '--task-queue', QA, '--task-queue-type', 'workflow', '--output', 'json']);
      const polls = [...stdout.matchAll(/"identity":\s*"([^"]*)",[^}]*?"lastAccessTime":\s*"([^"]+)"/g)].filter((m) => !m[1]!.startsWith('tend-takeover')).map((m) => Date.parse(m[2]!));
      return Date.now() - Math.max(0, ...polls) > STALE_POLL_MS + 1000;
    }, { timeoutMs: 150_000, intervalMs: 1000 });
    const waited = await runTend(['repair-queue', 'list', '--config', configB], { timeoutMs: 300_000 });
    assert.equal(waited.code, 0, waited.stderr);
    assert.match(waited.stderr, new RegExp(`repair-queue runs on task queue "${QA}", which no worker has polled .*waiting up to \\d+ s for the live tend on task queue "${QB}" to take it over`));
    assert.match(waited.stderr, new RegExp(`repair-queue was taken over: it runs on task queue "${QB}"`));
    assert.deepEqual((JSON.parse(waited.stdout) as RepairQueueEntry[]).map((e) => [e.index, e.address, e.status]), before.map((e) => [e.index, e.address, e.status]));
    await waitFor('B to take the three singletons over', async () =>
      (await Promise.all([SAFETY_WORKFLOW_ID, SLOTS_WORKFLOW_ID, REPAIR_QUEUE_WORKFLOW_ID].map(taskQueueOf))).every((q) => q === QB), { timeoutMs: 240_000, intervalMs: 2000 });
    const tookMs = Date.now() - stoppedAt;
    for (const id of [SAFETY_WORKFLOW_ID, SLOTS_WORKFLOW_ID, REPAIR_QUEUE_WORKFLOW_ID]) {
      assert.match(tendB.logs, new RegExp(`singleton take-over: ${id} ran on task queue "${QA}".*started again on "${QB}" carrying`), id);
    }
    process.stderr.write(`      taken over ${Math.round(tookMs / 1000)} s after tend A stopped\n`);

    // The pause, its reason and revision, carried; B pauses and resumes.
    const status = await runTend(['pause', 'status', '--config', configB, '-o', 'json']);
    assert.equal(status.code, 0, status.stderr);
    const st = JSON.parse(status.stdout) as { revision: number; capabilities: Record<string, { paused: boolean; reason?: string }> };
    for (const c of ['weeder', 'taint', 'apps', 'repair']) {
      assert.equal(st.capabilities[c]?.paused, true, status.stdout);
      assert.equal(st.capabilities[c]?.reason, 'drill before the move');
    }
    assert.equal(st.revision, revision);
    const resumeB = await runTend(['resume', '--config', configB], { timeoutMs: 120_000 });
    assert.equal(resumeB.code, 0, resumeB.stderr);
    assert.match(resumeB.stdout, /^resumed: /);
    const pauseB = await runTend(['pause', '--reason', 'B pauses', '--config', configB], { timeoutMs: 120_000 });
    assert.equal(pauseB.code, 0, pauseB.stderr);
    const again = await runTend(['resume', '--config', configB], { timeoutMs: 120_000 });
    assert.equal(again.code, 0, again.stderr);

    // The repair queue's entry and its disabled flag, carried.
    assert.deepEqual((await list(configB)).map((e) => [e.index, e.address, e.status]), before.map((e) => [e.index, e.address, e.status]));
    const enabled = await runTend(['repair-queue', 'is-enabled', '--config', configB]);
    assert.equal(enabled.stdout.trim(), 'false', enabled.stderr);

    // B's coordinator grants: a tainted Node's managed pod is replaced.
    const [pod] = await readyPodsOn(kube, ns, 'db', 'sim-2', 1);
    tainted.add(`sim-2|${MAINTENANCE}`);
    await taint(kube, 'sim-2', { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });
    await waitFor('the tainted Node\'s pod replaced', async () => {
      const now = await readPod(kube, ns, pod!.metadata!.name!);
      return !now || now.metadata?.uid !== pod!.metadata!.uid || !!now.metadata?.deletionTimestamp;
    }, { timeoutMs: 90_000 });
  });
});
