// An App deleted while the watcher is down: the informer's first list does
// not have it, so no delete event comes; the watcher finds its workflow still
// running and signals the deletion, and the workflow ends.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { sandbox } from '../harness/hooks.ts';
import { APPS_TASK_QUEUE, appObject, createApp, deleteApp, getApp, settled, webProcess, writeAppsConfig } from '../harness/apps.ts';
import { connectClient } from '../../src/temporal/connection.ts';

describe('App revisions: a deletion the watcher missed (e2e)', function () {
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

  before(async () => {
    ns = await tempNamespace(kube(), 'apps-del');
    dir = await mkdtemp(join(tmpdir(), 'tend-apps-del-'));
    config = await writeAppsConfig(dir, [ns]);
    await startTend();
  });
  after(async () => {
    await tend?.stop();
    await deleteNamespace(kube(), ns);
    await rm(dir, { recursive: true, force: true });
  });

  it('an App deleted while the watcher is down: its workflow ends once the watcher is back', async () => {
    await createApp(kube(), appObject(ns, 'missed', [webProcess(1)]));
    await waitFor('settled', async () => settled(await getApp(kube(), ns, 'missed')), { timeoutMs: 90_000 });
    await tend!.stop();
    await deleteApp(kube(), ns, 'missed');
    await waitFor('the App gone', async () => getApp(kube(), ns, 'missed').then(() => false, () => true));
    await startTend();
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
