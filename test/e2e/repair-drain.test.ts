// Draining for a repair on the sandbox: PodDisruptionBudgets in protected and
// unprotected namespaces, a running Job pod, a drain abandoned by `disable`,
// a running entry deleted (CLI) or cancelled (`temporal workflow cancel`), an
// eviction refused for good (the entry fails), and a retried drain that waits
// for a pod a finalizer holds:
// the node is always uncordoned, nothing is left half-done.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import {
  add, entries, nodeUnschedulable, pinned, podGone, release, repairWorld, resetRepairQueue, rq, stuckPod, temporalCli, type RepairWorld,
} from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import type { KubeClients } from '../../src/kube/client.ts';

describe('repair queue drains (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let world: RepairWorld;
  let tend: TendProcess;
  let prot: string;
  let unprot: string;

  before(async () => {
    kube = admin();
    await resetRepairQueue();
    // A drain held by a stuck pod lasts 30 s before its eviction timeout: time for the tests to act on it under load.
    // CKE's back-off (300 s + a random share of 300 s x count) at this scale: 6 to 12 s the first time, 6 to 18 s the second.
    world = repairWorld({ eviction_timeout_seconds: 1500, time_scale: 0.02 });
    prot = await tempNamespace(kube, 'rq-prot');
    await kube.core.patchNamespace({ name: prot, body: [{ op: 'add', path: '/metadata/labels/repair.tend.dev~1protected', value: 'true' }] });
    unprot = await tempNamespace(kube, 'rq-unprot');
    tend = new TendProcess(['run', '--config', world.config]);
    await waitFor('worker started', () => tend.output.includes('worker started'), { timeoutMs: 180_000 });
  });
  after(async () => {
    await tend?.stop();
    for (const ns of [prot, unprot]) {
      for (const p of (await kube.core.listNamespacedPod({ namespace: ns })).items) await release(kube, ns, p.metadata!.name!);
      await deleteNamespace(kube, ns);
    }
  });

  /** How many times the repair command ran for an address (each run appends a line). */
  const commandRuns = (address: string) => {
    const f = join(world.dir, `${address}.log`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').length : 0;
  };

  // The waits read the queue in-process (test/harness/in-process-reads.ts): a CLI process per probe would
  // slow the drains they wait for; what the CLI prints is checked where it is the subject.
  const runningPod = (ns: string, app: string) => waitFor(`${ns}/${app} running`, async () =>
    (await kube.core.listNamespacedPod({ namespace: ns, labelSelector: `app=${app}` })).items.find((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp));

  it('a PodDisruptionBudget blocks eviction in a protected namespace: back off, uncordon, succeed once the budget allows; unprotected pods are deleted', async () => {
    const pdb = (ns: string): k8s.V1PodDisruptionBudget => ({ metadata: { name: 'keep', namespace: ns }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } } });
    for (const ns of [prot, unprot]) {
      await kube.apps.createNamespacedDeployment({ namespace: ns, body: pinned(ns, 'db', 'sim-1') });
      await kube.policy.createNamespacedPodDisruptionBudget({ namespace: ns, body: pdb(ns) });
    }
    const protPod = await runningPod(prot, 'db');
    const unprotPod = await runningPod(unprot, 'db');
    await waitFor('budgets observed', async () => (await Promise.all([prot, unprot].map((ns) => kube.policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'keep' }))))
      .every((b) => b.status?.observedGeneration === b.metadata?.generation && b.status?.currentHealthy === 1));

    const e = await add(world, 'drain', '10.88.0.1');
    // Backing off: the entry waits with a back-off count, and the node is schedulable meanwhile.
    const backing = await waitFor('back-off with the node uncordoned', async () => {
      const x = await queueEntry(e.index);
      return x && x.drain_backoff_count >= 1 && x.step_status === 'waiting' && !(await nodeUnschedulable('sim-1')) && x;
    }, { timeoutMs: 60_000 });
    assert.equal(backing.nodename, 'sim-1');
    assert.equal(backing.status, 'processing');
    assert.notEqual(backing.drain_backoff_expire, '0001-01-01T00:00:00Z');
    // CKE's back-off: 300 s + a random share of 300 s x count, here x 0.02: 6 to 12 s after the transition for the first.
    const first = await waitFor('the first back-off', async () => {
      const x = await queueEntry(e.index);
      return x && x.drain_backoff_count >= 1 && x.step_status === 'waiting' && x;
    });
    const wait = Date.parse(first.drain_backoff_expire) - Date.parse(first.last_transition_time!);
    const count = first.drain_backoff_count;
    assert.ok(wait >= 6000 && wait < (300 + 300 * count) * 0.02 * 1000, `back-off ${count}: ${wait} ms after its transition`);
    await waitFor('the unprotected pod deleted despite its budget', () => podGone(kube, unprot, unprotPod.metadata!.uid!));
    assert.ok(!(await podGone(kube, prot, protPod.metadata!.uid!)), 'the protected pod was not deleted');
    const events = await kube.events.listNamespacedEvent({ namespace: 'default', fieldSelector: 'regarding.name=sim-1' });
    // This run's Event (indexes restart with each queue, and an earlier run on this sandbox left its own).
    const interrupted = events.items.find((ev) => ev.reason === 'RepairDrainInterrupted' && ev.note?.includes(`entry ${e.index}:`) && ev.note.includes(`${prot}/`));
    assert.ok(interrupted, `an Event on the Node says why the drain was interrupted: ${JSON.stringify(events.items.map((ev) => ev.note))}`);
    assert.match(interrupted.note!, new RegExp(`eviction refused for ${prot}/db-`));

    // The budget allows one disruption: the next attempt evicts and the repair goes on.
    await kube.policy.patchNamespacedPodDisruptionBudget({ namespace: prot, name: 'keep', body: [{ op: 'replace', path: '/spec/minAvailable', value: 0 }] });
    const done = await waitFor('succeeded', async () => (await queueEntry(e.index))?.status === 'succeeded' && queueEntry(e.index), { timeoutMs: 90_000 });
    assert.ok(done!.drain_backoff_count >= 1);
    assert.ok(await podGone(kube, prot, protPod.metadata!.uid!), 'the protected pod was evicted');
    assert.equal(await nodeUnschedulable('sim-1'), false, 'uncordoned after the repair');
    for (const ns of [prot, unprot]) await kube.apps.deleteNamespacedDeployment({ namespace: ns, name: 'db' });
  });

  it('a running Job pod blocks the drain (uncordon, retry later) until it finishes', async () => {
    await kube.kc.makeApiClient(k8s.BatchV1Api).createNamespacedJob({
      namespace: unprot,
      body: {
        metadata: { name: 'batch' },
        spec: {
          template: {
            metadata: { annotations: { 'sim.tend.dev/exit-after-seconds': '150' } },
            spec: { restartPolicy: 'Never', nodeSelector: { 'kubernetes.io/hostname': 'sim-2' }, containers: [{ name: 'c', image: 'registry.example/job:1' }] },
          },
        },
      },
    });
    const jobPod = await waitFor('job pod running', async () => (await kube.core.listNamespacedPod({ namespace: unprot, labelSelector: 'job-name=batch' })).items.find((p) => p.status?.phase === 'Running'));
    const e = await add(world, 'drain', '10.88.0.2');
    await waitFor('back-off on the Job pod', async () => {
      const x = await queueEntry(e.index);
      return x && x.drain_backoff_count >= 1 && !(await nodeUnschedulable('sim-2'));
    }, { timeoutMs: 30_000 });
    assert.ok(!(await podGone(kube, unprot, jobPod.metadata!.uid!)), 'the Job pod was left alone');
    const done = await waitFor('succeeded after the job', async () => {
      const x = await queueEntry(e.index);
      return x?.status !== 'processing' && x;
    }, { timeoutMs: 90_000 });
    assert.equal(done.status, 'succeeded');
    const finished = (await kube.core.readNamespacedPod({ namespace: unprot, name: jobPod.metadata!.name! })).status?.phase;
    assert.equal(finished, 'Succeeded', 'the Job pod finished on its own, it was not killed');
    assert.equal(await nodeUnschedulable('sim-2'), false);
  });

  it('an eviction refused for good (two budgets over one pod) fails the entry with the reason and uncordons the node', async () => {
    await kube.apps.createNamespacedDeployment({ namespace: prot, body: pinned(prot, 'multi', 'sim-1') });
    for (const name of ['multi-a', 'multi-b']) {
      await kube.policy.createNamespacedPodDisruptionBudget({ namespace: prot, body: { metadata: { name, namespace: prot }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'multi' } } } } });
    }
    await runningPod(prot, 'multi');
    world.broken('10.88.0.1');
    const before = commandRuns('10.88.0.1');
    const e = await add(world, 'drain', '10.88.0.1');
    const failed = await waitFor('failed', async () => {
      const x = await queueEntry(e.index);
      return x?.status === 'failed' && x;
    }, { timeoutMs: 60_000 });
    assert.equal(failed.drain_backoff_count ?? 0, 0, 'not a budget saying "not now": no back-off');
    await waitFor('sim-1 uncordoned', async () => !(await nodeUnschedulable('sim-1')));
    await waitFor('the reason logged', () => tend.logs.includes('more than one PodDisruptionBudget'), { timeoutMs: 10_000 });
    assert.equal(commandRuns('10.88.0.1'), before, 'the repair command ran');
    await kube.apps.deleteNamespacedDeployment({ namespace: prot, name: 'multi' });
    for (const name of ['multi-a', 'multi-b']) await kube.policy.deleteNamespacedPodDisruptionBudget({ namespace: prot, name });
    assert.equal((await rq(world, ['delete', e.index])).code, 0);
  });

  it('a drain retried after a disable waits for a pod a finalizer holds: no repair command while it is on the node', async () => {
    world.broken('10.88.0.2');
    const before = commandRuns('10.88.0.2');
    const held = await stuckPod(kube, unprot, 'held-1', 'sim-2');
    const e = await add(world, 'drain', '10.88.0.2');
    await waitFor('the held pod evicted (Terminating)', async () =>
      (await queueEntry(e.index))?.step_status === 'draining' &&
      Boolean((await kube.core.readNamespacedPod({ namespace: unprot, name: 'held-1' })).metadata?.deletionTimestamp));
    assert.equal((await rq(world, ['disable'])).code, 0);
    await waitFor('abandoned', async () => (await queueEntry(e.index))?.step_status === 'waiting');
    assert.equal((await rq(world, ['enable'])).code, 0);
    // The retried drain finds the pod still on the node (held by its finalizer): it waits for it until its eviction timeout, and backs off again.
    await waitFor('the retried drain timed out on the held pod', async () => ((await queueEntry(e.index))?.drain_backoff_count ?? 0) >= 2, { timeoutMs: 90_000 });
    assert.ok(!(await podGone(kube, unprot, held.metadata!.uid!)), 'the held pod is still there');
    assert.equal(commandRuns('10.88.0.2'), before, 'the repair command ran while a pod was still on the node');
    await release(kube, unprot, 'held-1');
    await waitFor('succeeded', async () => (await queueEntry(e.index))?.status === 'succeeded', { timeoutMs: 90_000 });
    assert.equal(await nodeUnschedulable('sim-2'), false);
  });

  it('disabling the queue abandons an ongoing drain (uncordon, back to waiting, the back-off counted as CKE does); enabling resumes it', async () => {
    await stuckPod(kube, unprot, 'stuck-1', 'sim-3');
    const e = await add(world, 'drain', '10.88.0.3');
    const draining = await waitFor('draining with sim-3 cordoned', async () => {
      const x = await queueEntry(e.index);
      return x?.step_status === 'draining' && (await nodeUnschedulable('sim-3')) && x;
    }, { timeoutMs: 90_000 });
    assert.equal((await rq(world, ['disable'])).code, 0);
    const waiting = await waitFor('abandoned', async () => {
      const x = await queueEntry(e.index);
      return x?.step_status === 'waiting' && !(await nodeUnschedulable('sim-3')) && x;
    });
    // (Under load the drain may have timed out once already before the disable landed: that one counts too.)
    // ckecli leaves drain_backoff_count out while it is 0 (omitempty).
    const before = draining.drain_backoff_count ?? 0;
    assert.ok(waiting.drain_backoff_count === before + 1 || waiting.drain_backoff_count === before + 2,
      `CKE: an abandoned drain counts as a failed one (${draining.drain_backoff_count} -> ${waiting.drain_backoff_count})`);
    assert.ok(waiting.drain_backoff_count >= 1);
    assert.notEqual(waiting.drain_backoff_expire, '0001-01-01T00:00:00Z');
    assert.equal(waiting.status, 'processing');
    await release(kube, unprot, 'stuck-1');
    assert.equal((await queueEntry(e.index))!.step_status, 'waiting', 'a disabled queue starts no drain');
    assert.equal((await rq(world, ['enable'])).code, 0);
    const done = await waitFor('succeeded', async () => (await queueEntry(e.index))?.status === 'succeeded', { timeoutMs: 60_000 });
    assert.ok(done);
    assert.equal(await nodeUnschedulable('sim-3'), false);
  });

  it('deleting a running entry, or cancelling its workflow with the temporal CLI, cancels it cleanly and uncordons the node', async () => {
    for (const [i, how] of (['tend repair-queue delete', 'temporal workflow cancel'] as const).entries()) {
      world.broken('10.88.0.3');
      // A fresh pod each time: the last one is terminating already.
      await stuckPod(kube, unprot, `stuck-del-${i}`, 'sim-3');
      const e = await add(world, 'drain', '10.88.0.3');
      await waitFor(`${how}: draining`, async () => (await queueEntry(e.index))?.step_status === 'draining' && nodeUnschedulable('sim-3'), { timeoutMs: 90_000 });
      if (how === 'tend repair-queue delete') {
        const r = await rq(world, ['delete', e.index]);
        assert.equal(r.code, 0, r.stderr);
      } else {
        await temporalCli(['workflow', 'cancel', '--workflow-id', `repair/${e.index}`]);
      }
      await waitFor(`${how}: entry gone and sim-3 uncordoned`, async () => (await queueEntry(e.index)) === undefined && !(await nodeUnschedulable('sim-3')));
      const desc = await temporalCli(['workflow', 'describe', '--workflow-id', `repair/${e.index}`, '-o', 'json']);
      assert.match(desc.stdout, /CANCELED/, `${how}: the entry's workflow ends Canceled`);
      const node = await kube.core.readNode({ name: 'sim-3' });
      assert.equal(node.metadata?.annotations?.['tend.dev/repair-cordoned'], undefined, 'no cordon mark left behind');
    }
    for (const i of [0, 1]) await release(kube, unprot, `stuck-del-${i}`);
    assert.deepEqual((await entries(world)).filter((x) => x.status !== 'succeeded'), []);
  });
});
