// A stop + start made outside tend (kubectl, or any client writing
// spec.desiredState), back to back with no pause between the two writes,
// against the real API server: the pods roll exactly once, also when the start
// changes the process's instances in the same write.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { sandbox } from '../harness/hooks.ts';
import {
  allPodUids, APPS_TASK_QUEUE, appObject, createApp, getApp, patchAppSpec, readyPodsOf, settled, webProcess, workloadsOf, writeAppsConfig,
} from '../harness/apps.ts';
import { workloadName } from '../../src/apps/workloads.ts';
import { APP_REV, LAST_STOP_APP_REV, type App, type AppProcess } from '../../src/apps/types.ts';
import type { AppEntityData } from '../../src/apps/entity.ts';
import { connectClient } from '../../src/temporal/connection.ts';

const run = promisify(execFile);

describe('App revisions: stop + start written back to back outside tend (e2e)', function () {
  this.timeout(300_000);
  const kube = () => admin();
  let ns: string;
  let dir: string;
  let tend: TendProcess | undefined;
  let client: Client;

  const rev = (a: App, key: string) => Number(a.metadata.annotations?.[key]);
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', sandbox().kubeconfig, '-n', ns, ...args]);
  const kubectlPatch = (name: string, spec: object) => ['patch', 'apps.tend.dev', name, '--type', 'merge', '-p', JSON.stringify({ spec })];

  /**
   * Waits until the App's workflow has reconciled the App's latest generation
   * and the App has settled on it, so that nothing is left to move its revisions.
   */
  const waitDone = (name: string, generation: number) => waitFor(`App ${name} settled at generation ${generation}`, async () => {
    const a = await getApp(kube(), ns, name);
    if (!settled(a) || a.metadata.generation !== generation) return false;
    const state = await client.workflow.getHandle(`app/${ns}/${name}`).query<AppEntityData>('state');
    const seen = state.last?.lastSeen?.generation ?? 0;
    return seen >= generation && state.commands.length === 0 && state.pendingGeneration <= seen && a;
  }, { timeoutMs: 120_000 });

  const stoppedEvents = async (name: string) => {
    const events = await kube().events.listNamespacedEvent({ namespace: ns, fieldSelector: `regarding.name=${name}` });
    return events.items.filter((e) => e.reason === 'Stopped');
  };

  /** Rolled exactly once: both revisions up by one, one Stopped Event, only the new workload, every ready pod new. */
  const rolledOnce = async (name: string, instances: number, old: Set<string>) => {
    const created = await getApp(kube(), ns, name);
    const a = await waitDone(name, created.metadata.generation!);
    assert.equal(rev(a, LAST_STOP_APP_REV), 1, 'last-stop-app-rev moved exactly once');
    assert.equal(rev(a, APP_REV), 1, 'app-rev moved exactly once');
    const workload = workloadName(name, 'web', 1);
    assert.deepEqual((await workloadsOf(kube(), ns, name)).map((d) => d.metadata!.name), [workload]);
    const ready = await waitFor(`${instances} ready pods of ${workload}`, async () => {
      const pods = await readyPodsOf(kube(), ns, workload);
      return pods.length === instances && pods;
    }, { timeoutMs: 60_000 });
    for (const p of ready) assert.ok(!old.has(p.metadata!.uid!), `pod ${p.metadata!.name} is new`);
    const stops = await stoppedEvents(name);
    assert.equal(stops.length, 1, `one Stopped Event: ${JSON.stringify(stops.map((e) => e.note))}`);
  };

  const fresh = async (name: string, processes: AppProcess[] = [webProcess(2)]) => {
    const created = await createApp(kube(), appObject(ns, name, processes));
    await waitDone(name, created.metadata.generation!);
    return allPodUids(kube(), ns, name);
  };

  before(async () => {
    ns = await tempNamespace(kube(), 'apps-kubectl');
    dir = await mkdtemp(join(tmpdir(), 'tend-apps-kubectl-'));
    const config = await writeAppsConfig(dir, [ns]);
    tend = new TendProcess(['run', '--config', config], { TEND_LOG_LEVEL: 'info' });
    await waitFor('tend to watch Apps', () => tend!.output.includes('watching Apps') && tend!.output.includes('worker started'), { timeoutMs: 60_000 });
    client = await connectClient({ address: sandbox().temporalAddress, namespace: 'default', taskQueue: APPS_TASK_QUEUE });
  });
  after(async () => {
    await tend?.stop();
    await client?.connection.close();
    await deleteNamespace(kube(), ns);
    await rm(dir, { recursive: true, force: true });
  });

  it('API writes with no pause between them: STOPPED then STARTED rolls the pods once', async () => {
    for (const name of ['api-a', 'api-b', 'api-c']) {
      const old = await fresh(name);
      await patchAppSpec(kube(), ns, name, { desiredState: 'STOPPED' });
      await patchAppSpec(kube(), ns, name, { desiredState: 'STARTED' });
      await rolledOnce(name, 2, old);
    }
  });

  it('API writes with no pause between them: STOPPED, then STARTED with other instances, rolls the pods once', async () => {
    for (const name of ['scale-a', 'scale-b', 'scale-c']) {
      const old = await fresh(name);
      await patchAppSpec(kube(), ns, name, { desiredState: 'STOPPED' });
      await patchAppSpec(kube(), ns, name, { desiredState: 'STARTED', processes: [webProcess(3)] });
      await rolledOnce(name, 3, old);
    }
  });

  it('kubectl patch, back to back: a stop + start, and one that also changes instances, each roll the pods once', async () => {
    const old = await fresh('cli');
    await kubectl(kubectlPatch('cli', { desiredState: 'STOPPED' }));
    await kubectl(kubectlPatch('cli', { desiredState: 'STARTED' }));
    await rolledOnce('cli', 2, old);

    const oldScaled = await fresh('cli-scale');
    await kubectl(kubectlPatch('cli-scale', { desiredState: 'STOPPED' }));
    await kubectl(kubectlPatch('cli-scale', { desiredState: 'STARTED', processes: [webProcess(1)] }));
    await rolledOnce('cli-scale', 1, oldScaled);
  });
});
