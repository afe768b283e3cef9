// The worker killed (SIGKILL) during a drain, during a repair command and
// during a watch: a new worker finishes each entry correctly. What may run
// twice is said in docs/repair.md: the repair command of an attempt whose
// worker died (retried after the heartbeat timeout), a drain's evictions
// (idempotent), a health check.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { add, entry, nodeUnschedulable, release, repairWorld, resetRepairQueue, stuckPod, type RepairWorld } from '../harness/repair.ts';
import type { KubeClients } from '../../src/kube/client.ts';

describe('repair queue survives a killed worker (e2e)', function () {
  this.timeout(180_000);
  let kube: KubeClients;
  let world: RepairWorld;
  let tend: TendProcess;
  let ns: string;

  const start = async () => {
    tend = new TendProcess(['run', '--config', world.config]);
    await waitFor('worker started', () => tend.output.includes('worker started'), { timeoutMs: 60_000 });
  };
  const log = (address: string) => {
    const f = join(world.dir, `${address}.log`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n') : [];
  };
  const finished = (index: string) => waitFor(`entry ${index} finished`, async () => {
    const e = await entry(world, index);
    return e && (e.status === 'succeeded' || e.status === 'failed') && e;
  }, { timeoutMs: 90_000 });

  before(async () => {
    kube = admin();
    await resetRepairQueue();
    world = repairWorld();
    ns = await tempNamespace(kube, 'rq-kill');
    await start();
  });
  after(async () => {
    await tend?.stop();
    await release(kube, ns, 'stuck-k');
    await deleteNamespace(kube, ns);
  });

  it('during a drain', async () => {
    await stuckPod(kube, ns, 'stuck-k', 'sim-1');
    world.broken('10.88.0.1');
    const e = await add(world, 'drain', '10.88.0.1');
    await waitFor('draining', async () => (await entry(world, e.index))?.step_status === 'draining' && nodeUnschedulable('sim-1'));
    await tend.stop('SIGKILL');
    await release(kube, ns, 'stuck-k');
    await start();
    const done = await finished(e.index);
    assert.equal(done.status, 'succeeded');
    assert.deepEqual(log('10.88.0.1'), ['heal']);
    assert.equal(await nodeUnschedulable('sim-1'), false);
  });

  it('during a repair command', async () => {
    const e = await add(world, 'slow', '192.0.2.80');
    // `slow` logs `start`, sleeps 4 s, logs `slow`: kill while it sleeps.
    await waitFor('the command started', () => log('192.0.2.80').includes('start'), { timeoutMs: 30_000 });
    assert.equal((await entry(world, e.index))!.status, 'processing');
    await tend.stop('SIGKILL');
    await start();
    const done = await finished(e.index);
    assert.equal(done.status, 'succeeded');
    // The killed worker's sh finishes on its own (an orphan); the retried attempt runs the command again.
    const runs = log('192.0.2.80');
    assert.ok(runs.filter((l) => l === 'start').length >= 2, `the command ran again after the kill: ${runs.join(',')}`);
    assert.ok(runs.includes('slow'), runs.join(','));
  });

  it('during a watch', async () => {
    const e = await add(world, 'wait-heal', '192.0.2.81');
    await waitFor('watching', async () => (await entry(world, e.index))?.step_status === 'watching');
    await tend.stop('SIGKILL');
    world.healthy('192.0.2.81');
    await start();
    const done = await finished(e.index);
    assert.equal(done.status, 'succeeded');
    assert.equal(done.step_status, 'watching');
    assert.deepEqual(log('192.0.2.81'), ['wait'], 'the repair command is not run again after a watch resumes');
  });
});
