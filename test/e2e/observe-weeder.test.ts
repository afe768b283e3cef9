// Observe mode for the weeder, end to end, and the switch to act without a restart: a Service
// goes ready with crash-looping dependants in observe mode; nothing is deleted, each deletion act
// mode would make is recorded (a WouldDelete Event on the pod, tend_weeder_would_delete_total,
// the window's state and Web UI details); then the same running tend's configuration is switched
// to act, and exactly the pods it recorded (still crash-looping) are deleted at once.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { Client, Connection } from '@temporalio/client';
import { TendProcess } from '../harness/cli.ts';
import { httpPortBlock } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { counterFor, metricsOf } from '../harness/metrics.ts';
import { waitFor } from '../harness/wait.ts';
import { dbBack, dbWithDependants, deletedOf, dependantsCrashLooping, weederConfigFile } from '../harness/weeder.ts';
import { DEFAULT_TEND_NAMESPACE } from '../../src/config/weeder.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import { stopSignal, windowQuery } from '../../src/weeder/messages.ts';
import { ReadinessStore } from '../../src/weeder/record.ts';
import type { WeederResult } from '../../src/weeder/window.ts';

const DEPENDANTS = 3;

describe('observe mode: the weeder records the deletions it would make, then makes them when switched to act (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let temporal: Client | undefined;

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'observe-weeder');
  });
  after(async () => {
    await tend?.stop();
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube, ns);
  });

  it('observe: nothing deleted, every deletion recorded once; act: exactly those pods deleted, at once', async () => {
    const section = await dbWithDependants(kube, ns, DEPENDANTS);
    const config = await weederConfigFile({ mode: 'observe', watchDuration: '4m', ...section });
    const http = `127.0.0.1:${httpPortBlock + 48}`;
    tend = new TendProcess(['run', '--config', config, '--http-address', http]);
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
    await waitFor('tend to start its worker and the weeder watch',
      () => /worker started/.test(tend!.output) && /weeder watching/.test(tend!.output), { timeoutMs: 120_000 });
    // The watcher records db ready, so that db's return is a transition.
    await waitFor('the watcher to record db ready',
      async () => (await new ReadinessStore(kube, DEFAULT_TEND_NAMESPACE).read(ns, 'db'))?.readiness === 'ready', { timeoutMs: 60_000 });
    const metric = async () => counterFor(await metricsOf(http), 'tend_weeder_would_delete_total', ns);

    const pods = await dependantsCrashLooping(kube, ns, DEPENDANTS);
    const uids = new Set(pods.map((p) => p.metadata!.uid!));
    await dbBack(kube, ns);

    // Observe: each deletion recorded on its pod, none made.
    const wouldDelete = async () => (await kube.events.listNamespacedEvent({ namespace: ns })).items
      .filter((e) => e.reason === 'WouldDelete' && e.regarding?.kind === 'Pod');
    const recorded = await waitFor(`a WouldDelete Event for each of the ${DEPENDANTS} pods`, async () => {
      const events = await wouldDelete();
      return events.length >= DEPENDANTS && events;
    }, { timeoutMs: 90_000 });
    assert.deepEqual(new Set(recorded.map((e) => e.regarding!.uid)), uids, 'the recorded pods are not the crash-looping ones');
    for (const e of recorded) {
      assert.equal(e.action, 'Observe');
      assert.match(e.note ?? '', new RegExp(`^would delete pod ${ns}/api-[a-z0-9-]+: CrashLoopBackOff \\(api\\) while ${ns}/db became ready$`));
      assert.equal(e.related?.kind, 'Service');
      assert.equal(e.related?.name, 'db');
    }
    const h = temporal.workflow.getHandle(`weeder/${ns}/db`);
    const state = await waitFor('the window to list them as observed', async () => {
      const s = await h.query(windowQuery);
      return s.observed?.length === DEPENDANTS && s;
    }, { timeoutMs: 30_000 });
    assert.deepEqual(new Set(state.observed!.map((p) => p.uid)), uids);
    assert.deepEqual(state.weeded, [], 'observe mode deleted');
    const details = (await h.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
    assert.match(details, /Observe mode, nothing deleted; would have deleted: /);
    for (const p of pods) assert.ok(details.includes(`${ns}/${p.metadata!.name}`), `${p.metadata!.name} in the details: ${details}`);
    assert.equal(await metric(), DEPENDANTS);
    // The pods are the same, none being deleted: and they still crash-loop (they crash until deleted).
    assert.deepEqual(await deletedOf(kube, ns, pods), [], 'pods deleted in observe mode');

    // Act, by the same tend reading its configuration again: what observe mode recorded is deleted at once.
    await writeFile(config, (await readFile(config, 'utf8')).replace('mode: observe', 'mode: act'));
    await waitFor('tend to see the mode change', () => tend!.logs.includes('mode changed: weeder now acts'), { timeoutMs: 30_000 });
    const switched = Date.now();
    const deleted = await waitFor(`the ${DEPENDANTS} recorded pods deleted`, async () => {
      const gone = await deletedOf(kube, ns, pods);
      return gone.length === DEPENDANTS && gone;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    console.log(`      deleted ${Date.now() - switched} ms after tend logged the switch to act`);
    assert.deepEqual(new Set(deleted.map((p) => p.metadata!.uid!)), new Set(recorded.map((e) => e.regarding!.uid!)),
      'act mode deleted other pods than observe mode recorded');
    assert.equal(await metric(), DEPENDANTS, 'act mode counted would-deletions');
    assert.equal((await wouldDelete()).length, DEPENDANTS, 'act mode recorded WouldDelete Events');

    await h.signal(stopSignal, { reason: 'test over' });
    const result = await waitFor('the window to complete', async () =>
      (await h.describe()).status.name === 'COMPLETED' ? (await h.result()) as WeederResult : undefined, { timeoutMs: 60_000 });
    assert.deepEqual(new Set(result.observed.map((p) => p.uid)), uids);
    assert.deepEqual(new Set(result.weeded.map((p) => p.uid)), uids);
    assert.ok(result.weeded.every((p) => /recorded in observe mode at .*; deleted once the weeder acted/.test(p.note ?? '')), JSON.stringify(result.weeded));
  });
});
