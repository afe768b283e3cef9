// The durable pause honoured by the weeder, end to end: `tend pause weeder` is acknowledged
// while a Service is down and its dependants crash-loop; the Service comes back, and a burst of
// deletions falls due: none is made while paused (each is held, shown by the window), and
// `tend resume weeder` makes them within seconds.
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { runTend, TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { temporalCli } from '../harness/temporal.ts';
import { waitFor } from '../harness/wait.ts';
import { dbBack, dbWithDependants, deletedOf, dependantsCrashLooping, weederConfigFile } from '../harness/weeder.ts';
import { DEFAULT_TEND_NAMESPACE } from '../../src/config/weeder.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import { SAFETY_WORKFLOW_ID } from '../../src/safety/messages.ts';
import { stopSignal, windowQuery } from '../../src/weeder/messages.ts';
import { ReadinessStore } from '../../src/weeder/record.ts';
import type { WeederResult } from '../../src/weeder/window.ts';

const DEPENDANTS = 4;

/** No pause left from elsewhere, and none left behind: the pause is one per Temporal namespace. */
const endPause = () => temporalCli(['workflow', 'terminate', '--workflow-id', SAFETY_WORKFLOW_ID, '--reason', 'test reset']).catch(() => undefined);

describe('pause: the weeder deletes nothing while paused, and what fell due goes out on resume (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let temporal: Client | undefined;

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'pause-weeder');
    await endPause();
  });
  after(async () => {
    await endPause();
    await tend?.stop();
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube, ns);
  });

  it('paused while the Service is down: its return deletes nothing, each deletion held and shown; resume deletes them within seconds', async () => {
    const section = await dbWithDependants(kube, ns, DEPENDANTS);
    const config = await weederConfigFile({ watchDuration: '4m', ...section });
    tend = new TendProcess(['run', '--config', config]);
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
    await waitFor('tend to start its worker and the weeder watch',
      () => /worker started/.test(tend!.output) && /weeder watching/.test(tend!.output), { timeoutMs: 120_000 });
    await waitFor('the watcher to record db ready',
      async () => (await new ReadinessStore(kube, DEFAULT_TEND_NAMESPACE).read(ns, 'db'))?.readiness === 'ready', { timeoutMs: 60_000 });

    const pods = await dependantsCrashLooping(kube, ns, DEPENDANTS);
    const uids = new Set(pods.map((p) => p.metadata!.uid!));
    const paused = await runTend(['pause', 'weeder', '--reason', 'storm drill', '--config', config], { timeoutMs: 60_000 });
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /^paused: weeder/);
    await dbBack(kube, ns);

    // Every deletion falls due and is held: the window shows them, with the pause.
    const h = temporal.workflow.getHandle(`weeder/${ns}/db`);
    let seen = '';
    const state = await waitFor(`the ${DEPENDANTS} deletions held by the pause`, async () => {
      const s = await h.query(windowQuery);
      seen = JSON.stringify({ held: s.held, weeded: s.weeded, pending: s.pending });
      return s.held?.length === DEPENDANTS && s;
    }, { timeoutMs: 90_000 }).catch((err: Error) => {
      throw new Error(`${err.message}; last seen: ${seen}`);
    });
    assert.deepEqual(new Set(state.held!.map((p) => p.uid)), uids);
    for (const p of state.held!) assert.match(p.reason, /^weeder: paused since .* storm drill/);
    assert.deepEqual(state.weeded, [], 'deleted while paused');
    const details = (await h.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
    assert.match(details, new RegExp(`Paused: ${DEPENDANTS} deletion\\(s\\) held .*storm drill.*; they go out within a second of tend resume weeder`));
    // Their deletions were due and judged, and the pods are the same, none being deleted: nothing deleted them.
    assert.deepEqual(await deletedOf(kube, ns, pods), [], 'pods deleted while paused');

    const resumed = await runTend(['resume', 'weeder', '--config', config], { timeoutMs: 60_000 });
    assert.equal(resumed.code, 0, resumed.stderr);
    const at = Date.now();
    const deleted = await waitFor(`the ${DEPENDANTS} held pods deleted after the resume`, async () => {
      const gone = await deletedOf(kube, ns, pods);
      return gone.length === DEPENDANTS && gone;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    console.log(`      deleted within ${Date.now() - at} ms of tend resume weeder's answer`);
    assert.deepEqual(new Set(deleted.map((p) => p.metadata!.uid!)), uids);

    await h.signal(stopSignal, { reason: 'test over' });
    const result = await waitFor('the window to complete', async () =>
      (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined, { timeoutMs: 60_000 });
    assert.deepEqual(new Set(result.weeded.map((p) => p.uid)), uids);
    assert.deepEqual(result.held, [], 'held when the window closed, yet deleted');
  });
});
