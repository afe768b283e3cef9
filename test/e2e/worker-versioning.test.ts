// Worker Deployment Versioning end to end: a worker of build v1 with open runs (the repair queue
// and an entry mid-watch), then a worker of build v2 that makes itself current; v1 stops, the
// runs go on and finish on v2, and a v1 worker started again leaves the newer v2 current.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { TendProcess } from '../harness/cli.ts';
import { waitFor } from '../harness/wait.ts';
import { add, repairWorld, resetRepairQueue, temporalCli, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import { repairEntryWorkflowId, REPAIR_QUEUE_WORKFLOW_ID } from '../../src/repair/messages.ts';

const TASK_QUEUE = 'tend-versioning-e2e';
const DEPLOYMENT = `tend-upgrade-${process.pid}`;

describe('worker versioning: an upgrade with open runs (e2e)', function () {
  this.timeout(400_000);
  let world: RepairWorld;
  const workers: TendProcess[] = [];

  type Config = { temporal: Record<string, unknown> };
  /** A config of this world for build `buildId` (the CLI uses the world's own, unversioned). */
  const configFor = (buildId: string) => {
    const config = parse(readFileSync(world.config, 'utf8')) as Config;
    config.temporal.deployment = { name: DEPLOYMENT, buildId };
    const file = world.config.replace(/\.yaml$/, `-${buildId}.yaml`);
    writeFileSync(file, stringify(config));
    return file;
  };
  const startWorker = async (buildId: string, expect: RegExp) => {
    const w = new TendProcess(['worker', '--config', configFor(buildId)]);
    workers.push(w);
    await waitFor(`worker ${buildId}: ${expect.source}`, () => {
      if (w.exited) throw new Error(`worker ${buildId} exited: ${w.output}`);
      return expect.test(w.output);
    }, { timeoutMs: 180_000 });
    return w;
  };
  const deployment = async () => JSON.parse((await temporalCli(['worker', 'deployment', 'describe', '--name', DEPLOYMENT, '--output', 'json'])).stdout) as
    { routingConfig?: { currentVersionBuildID?: string } };
  const currentBuild = async () => (await deployment()).routingConfig?.currentVersionBuildID;
  /** The build a workflow's last workflow task ran on, as the server records it. */
  const runsOn = async (workflowId: string) => {
    const { stdout } = await temporalCli(['workflow', 'describe', '--workflow-id', workflowId, '--output', 'json']);
    const d = JSON.parse(stdout) as { workflowExecutionInfo?: { versioningInfo?: { behavior?: string; deploymentVersion?: { buildId?: string } } } };
    return d.workflowExecutionInfo?.versioningInfo;
  };

  before(async () => {
    await resetRepairQueue();
    world = repairWorld();
    const config = parse(readFileSync(world.config, 'utf8')) as Config;
    config.temporal.taskQueue = TASK_QUEUE;
    writeFileSync(world.config, stringify(config));
  });
  after(async () => {
    for (const w of workers) await w.stop();
  });

  it('v1 makes itself the current version when the deployment has none', async () => {
    const v1 = await startWorker('v1', /this version is now current/);
    assert.match(v1.output, new RegExp(`"deployment":"${DEPLOYMENT}","buildId":"v1"`));
    assert.equal(await currentBuild(), 'v1');
  });

  it('v2 takes over open runs: the entry mid-watch and the queue finish on v2 after v1 stops', async () => {
    const waiting = await add(world, 'wait-heal', '192.0.2.71');
    const entryId = repairEntryWorkflowId(waiting.index);
    await waitFor('the entry is watching on v1', async () => (await queueEntry(waiting.index))?.step_status === 'watching', { timeoutMs: 90_000 });
    assert.equal((await runsOn(entryId))?.deploymentVersion?.buildId, 'v1');

    await startWorker('v2', /this version is now current/);
    assert.equal(await currentBuild(), 'v2');
    await workers[0]!.stop();

    world.healthy('192.0.2.71');
    const done = await waitFor('the waiting entry succeeded', async () => {
      const e = await queueEntry(waiting.index);
      return e?.status === 'succeeded' && e;
    }, { timeoutMs: 120_000 });
    assert.equal(done.status, 'succeeded');
    // A new entry on the same queue run, started and finished on v2.
    const next = await add(world, 'heal', '192.0.2.72');
    await waitFor('the new entry succeeded', async () => (await queueEntry(next.index))?.status === 'succeeded', { timeoutMs: 120_000 });
    for (const id of [entryId, repairEntryWorkflowId(next.index), REPAIR_QUEUE_WORKFLOW_ID]) {
      const info = await runsOn(id);
      assert.equal(info?.deploymentVersion?.buildId, 'v2', `${id}: ${JSON.stringify(info)}`);
      assert.match(info?.behavior ?? '', /AUTO_UPGRADE/, `${id}: ${JSON.stringify(info)}`);
    }
  });

  it('an old v1 worker started again leaves the newer v2 current, and says how to roll back', async () => {
    const again = await startWorker('v1', /this version is not made current/);
    assert.match(again.output, /version v2, newer than this one, is current/);
    assert.match(again.output, new RegExp(`temporal worker deployment set-current-version --namespace default --deployment-name ${DEPLOYMENT} --build-id v1`));
    assert.equal(await currentBuild(), 'v2');
  });
});
