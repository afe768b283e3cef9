// An App whose status.observedGeneration someone else wrote (a controller the App came from, a
// script through the status subresource): at or above the App's generation, it does not hide
// the spec changes that follow, with tend running or started again after them. The watcher
// trusts an observedGeneration only when tend's own status writes hold it (docs/apps.md).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { appObject, createApp, getApp, patchAppSpec, settled, webProcess, workloadsOf, writeAppsConfig } from '../harness/apps.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { APP_GROUP, APP_PLURAL, APP_VERSION } from '../../src/apps/types.ts';

describe('App revisions: a status.observedGeneration written by someone else (e2e)', function () {
  this.timeout(240_000);
  const kube = () => admin();
  let ns: string;
  let dir: string;
  let config: string;
  let tend: TendProcess | undefined;
  const startTend = async () => {
    tend = new TendProcess(['run', '--config', config], { TEND_LOG_LEVEL: 'info' });
    await waitFor('tend to watch Apps', () => tend!.output.includes('watching Apps') && tend!.output.includes('worker started'), { timeoutMs: 60_000 });
  };
  /** Writes status.observedGeneration through the status subresource, as another controller would. */
  const forgeObserved = async (name: string, observedGeneration: number) => {
    await kube().custom.patchNamespacedCustomObjectStatus({
      group: APP_GROUP, version: APP_VERSION, plural: APP_PLURAL, namespace: ns, name, body: { status: { observedGeneration } },
    }, mergePatch);
    assert.equal((await getApp(kube(), ns, name)).status?.observedGeneration, observedGeneration);
  };
  const replicas = async (name: string) => (await workloadsOf(kube(), ns, name)).map((d) => d.spec?.replicas);
  const waitReplicas = (name: string, want: number) =>
    waitFor(`the Deployment of ${name} at ${want} replicas`, async () => (await replicas(name))[0] === want, { timeoutMs: 60_000 });

  before(async () => {
    ns = await tempNamespace(kube(), 'apps-foreign');
    dir = await mkdtemp(join(tmpdir(), 'tend-apps-foreign-'));
    config = await writeAppsConfig(dir, [ns]);
    await startTend();
  });
  after(async () => {
    await tend?.stop();
    await deleteNamespace(kube(), ns);
    await rm(dir, { recursive: true, force: true });
  });

  it('observedGeneration above the generation: an instances change still reaches the Deployment, tend running', async () => {
    await createApp(kube(), appObject(ns, 'above', [webProcess(1)]));
    await waitFor('settled', async () => settled(await getApp(kube(), ns, 'above')), { timeoutMs: 90_000 });
    assert.deepEqual(await replicas('above'), [1]);
    const generation = (await getApp(kube(), ns, 'above')).metadata.generation!;
    await forgeObserved('above', generation + 5);
    await patchAppSpec(kube(), ns, 'above', { processes: [webProcess(2)] });
    await waitReplicas('above', 2);
    // And the next change too (tend's status, written again, is trusted once more).
    await patchAppSpec(kube(), ns, 'above', { processes: [webProcess(3)] });
    await waitReplicas('above', 3);
  });

  it('observedGeneration at the generation of a change made while tend was stopped: acted on once tend is back', async () => {
    await createApp(kube(), appObject(ns, 'restarted', [webProcess(1)]));
    await waitFor('settled', async () => settled(await getApp(kube(), ns, 'restarted')), { timeoutMs: 90_000 });
    await tend!.stop();
    const changed = await patchAppSpec(kube(), ns, 'restarted', { processes: [webProcess(2)] });
    await forgeObserved('restarted', changed.metadata.generation!);
    await startTend();
    await waitReplicas('restarted', 2);
  });
});
