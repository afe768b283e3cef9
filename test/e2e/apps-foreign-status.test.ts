// An App whose status.observedGeneration someone else wrote (a controller the App came from, a
// script through the status subresource): at or above the App's generation, it does not hide
// the spec changes that follow, with tend running or started again after them. The watcher
// trusts an observedGeneration only when tend's own status writes hold it (docs/apps.md).
import assert from 'node:assert/strict';
import { admin } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { appObject, createApp, getApp, patchAppSpec, settled, webProcess, workloadsOf } from '../harness/apps.ts';
import { appsTend } from '../harness/apps-tend.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { APP_GROUP, APP_PLURAL, APP_VERSION } from '../../src/apps/types.ts';

describe('App revisions: a status.observedGeneration written by someone else (e2e)', function () {
  this.timeout(240_000);
  const kube = () => admin();
  const fixture = appsTend('apps-foreign');
  /** Writes status.observedGeneration through the status subresource, as another controller would. */
  const forgeObserved = async (name: string, observedGeneration: number) => {
    await kube().custom.patchNamespacedCustomObjectStatus({
      group: APP_GROUP, version: APP_VERSION, plural: APP_PLURAL, namespace: fixture.ns, name, body: { status: { observedGeneration } },
    }, mergePatch);
    assert.equal((await getApp(kube(), fixture.ns, name)).status?.observedGeneration, observedGeneration);
  };
  const replicas = async (name: string) => (await workloadsOf(kube(), fixture.ns, name)).map((d) => d.spec?.replicas);
  const waitReplicas = (name: string, want: number) =>
    waitFor(`the Deployment of ${name} at ${want} replicas`, async () => (await replicas(name))[0] === want, { timeoutMs: 60_000 });
  const createSettled = async (name: string) => {
    await createApp(kube(), appObject(fixture.ns, name, [webProcess(1)]));
    await waitFor(`${name} settled`, async () => settled(await getApp(kube(), fixture.ns, name)), { timeoutMs: 90_000 });
  };

  it('observedGeneration above the generation: an instances change still reaches the Deployment, tend running', async () => {
    await createSettled('above');
    assert.deepEqual(await replicas('above'), [1]);
    const generation = (await getApp(kube(), fixture.ns, 'above')).metadata.generation!;
    await forgeObserved('above', generation + 5);
    await patchAppSpec(kube(), fixture.ns, 'above', { processes: [webProcess(2)] });
    await waitReplicas('above', 2);
    // And the next change too (tend's status, written again, is trusted once more).
    await patchAppSpec(kube(), fixture.ns, 'above', { processes: [webProcess(3)] });
    await waitReplicas('above', 3);
  });

  it('observedGeneration at the generation of a change made while tend was stopped: acted on once tend is back', async () => {
    await createSettled('restarted');
    await fixture.tend!.stop();
    const changed = await patchAppSpec(kube(), fixture.ns, 'restarted', { processes: [webProcess(2)] });
    await forgeObserved('restarted', changed.metadata.generation!);
    await fixture.start();
    await waitReplicas('restarted', 2);
  });
});
