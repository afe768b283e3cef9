// An App deleted while the watcher is down: the informer's first list does
// not have it, so no delete event comes; the watcher finds its workflow still
// running and signals the deletion, and the workflow ends.
import assert from 'node:assert/strict';
import { admin } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { sandbox } from '../harness/hooks.ts';
import { APPS_TASK_QUEUE, appObject, createApp, deleteApp, getApp, settled, webProcess } from '../harness/apps.ts';
import { appsTend } from '../harness/apps-tend.ts';
import { connectClient } from '../../src/temporal/connection.ts';

describe('App revisions: a deletion the watcher missed (e2e)', function () {
  this.timeout(240_000);
  const kube = () => admin();
  const fixture = appsTend('apps-del');

  it('an App deleted while the watcher is down: its workflow ends once the watcher is back', async () => {
    const ns = fixture.ns;
    await createApp(kube(), appObject(ns, 'missed', [webProcess(1)]));
    await waitFor('settled', async () => settled(await getApp(kube(), ns, 'missed')), { timeoutMs: 90_000 });
    await fixture.tend!.stop();
    await deleteApp(kube(), ns, 'missed');
    await waitFor('the App gone', async () => getApp(kube(), ns, 'missed').then(() => false, () => true));
    await fixture.start();
    const client = await connectClient({ address: sandbox().temporalAddress, namespace: 'default', taskQueue: APPS_TASK_QUEUE });
    try {
      const handle = client.workflow.getHandle(`app/${ns}/missed`);
      await waitFor('the workflow completed', async () => (await handle.describe()).status.name === 'COMPLETED', { timeoutMs: 120_000 });
      assert.match(await handle.result(), /deleted/);
    } finally {
      await client.connection.close();
    }
  });
});
