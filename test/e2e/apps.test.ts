// App revisions end to end on the sandbox: the App CRD, `tend run` under
// tend's own ServiceAccount, the real `tend app` CLI and the real `temporal`
// CLI. A stop + start always rolls the pods; a rolling restart keeps the
// workload; a deleted App takes its workloads; a worker killed between the
// stop and the start still ends with the App on new pods.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTend, TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { sandbox } from '../harness/hooks.ts';
import {
  allPodUids, APPS_TASK_QUEUE, appObject, createApp, deleteApp, getApp, patchAppSpec, readyPodsOf, settled, temporalCli, webProcess,
  workloadsOf, writeAppsConfig,
} from '../harness/apps.ts';
import { workloadName } from '../../src/apps/workloads.ts';
import { APP_REV, LAST_STOP_APP_REV, type App } from '../../src/apps/types.ts';
import { connectClient } from '../../src/temporal/connection.ts';
import { appWorkflowStartOptions } from '../../src/starters/apps-watch.ts';
import { statusOf } from '../../src/kube/client.ts';

describe('App revisions (e2e)', function () {
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
  const app = (name: string) => getApp(kube(), ns, name);
  const waitSettled = (name: string, timeoutMs = 90_000) =>
    waitFor(`App ${name} settled`, async () => {
      const a = await app(name);
      return settled(a) && a;
    }, { timeoutMs });
  const tendApp = (args: string[], timeoutMs = 200_000) => runTend(['app', ...args, '--config', config], { timeoutMs });
  const rev = (a: App, key: string) => Number(a.metadata.annotations?.[key]);
  /** The App runs only on `workload`, with `instances` ready pods none of which is in `old`. */
  const runsOnNewPods = async (name: string, workload: string, instances: number, old: Set<string>) => {
    const deployments = (await workloadsOf(kube(), ns, name)).map((d) => d.metadata!.name);
    assert.deepEqual(deployments, [workload]);
    const ready = await readyPodsOf(kube(), ns, workload);
    assert.equal(ready.length, instances, `ready pods of ${workload}`);
    for (const p of ready) assert.ok(!old.has(p.metadata!.uid!), `pod ${p.metadata!.name} is new`);
  };

  before(async () => {
    ns = await tempNamespace(kube(), 'apps');
    dir = await mkdtemp(join(tmpdir(), 'tend-apps-'));
    config = await writeAppsConfig(dir, [ns]);
    await startTend();
  });
  after(async () => {
    await tend?.stop();
    await deleteNamespace(kube(), ns);
    await rm(dir, { recursive: true, force: true });
  });

  it('runs a new App: one Deployment per process named by revision, owned by the App; status and printer columns', async () => {
    await createApp(kube(), appObject(ns, 'first', [webProcess(2), webProcess(1, 'worker')]));
    const a = await waitSettled('first');
    assert.equal(a.status?.actualState, 'STARTED');
    assert.equal(a.metadata.annotations?.[APP_REV], '0');
    assert.equal(a.metadata.annotations?.[LAST_STOP_APP_REV], '0');
    const names = (await workloadsOf(kube(), ns, 'first')).map((d) => d.metadata!.name).sort();
    assert.deepEqual(names, [workloadName('first', 'web', 0), workloadName('first', 'worker', 0)].sort());
    const web = (await workloadsOf(kube(), ns, 'first')).find((d) => d.metadata!.name === workloadName('first', 'web', 0))!;
    assert.equal(web.metadata?.ownerReferences?.[0]?.uid, a.metadata.uid);
    assert.deepEqual(a.status?.processes?.map((p) => [p.type, p.instances, p.readyInstances]), [['web', 2, 2], ['worker', 1, 1]]);
    assert.equal((await readyPodsOf(kube(), ns, workloadName('first', 'web', 0))).length, 2);
    // kubectl's printer columns: desired, actual, revision, ready.
    const table = await kube().custom.listNamespacedCustomObject({ group: 'tend.dev', version: 'v1alpha1', plural: 'apps', namespace: ns }) as { items: App[] };
    assert.ok(table.items.some((x) => x.metadata.name === 'first'));
    const r = await tendApp(['status', `${ns}/first`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /desired STARTED, actual STARTED, revision 0/);
    assert.match(r.stdout, /process web: 2\/2 ready/);
  });

  it('stop -> start through the CLI: a new Deployment name, the old one gone, new pods Ready', async () => {
    await createApp(kube(), appObject(ns, 'cycle'));
    await waitSettled('cycle');
    const old = await allPodUids(kube(), ns, 'cycle');
    const stop = await tendApp(['stop', `${ns}/cycle`]);
    assert.equal(stop.code, 0, stop.stderr);
    assert.match(stop.stdout, /stop applied/);
    const start = await tendApp(['start', `${ns}/cycle`]);
    assert.equal(start.code, 0, start.stderr);
    const a = await waitSettled('cycle');
    assert.equal(rev(a, LAST_STOP_APP_REV), 1);
    assert.equal(rev(a, APP_REV), 1);
    await runsOnNewPods('cycle', workloadName('cycle', 'web', 1), 2, old);
  });

  it('restart is stop + start and returns only when the App runs on new, ready pods', async () => {
    await createApp(kube(), appObject(ns, 'restart'));
    await waitSettled('restart');
    const old = await allPodUids(kube(), ns, 'restart');
    const r = await tendApp(['restart', `${ns}/restart`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /runs on new, ready pods/);
    // The progress while it waited, on stderr, one line per change: from the start to the new workload's pods ready.
    const progress = r.stderr.split('\n').filter((l) => new RegExp(`^${ns}/restart \\(\\d+s\\): actual `).test(l));
    assert.ok(progress.length >= 2, r.stderr);
    assert.match(progress.at(-1)!, new RegExp(`actual STARTED, web 2/2 ready on ${workloadName('restart', 'web', 1)}`), r.stderr);
    // Checked at once, no waiting: the command returned only when this held.
    const a = await app('restart');
    assert.equal(a.status?.actualState, 'STARTED');
    assert.equal(rev(a, LAST_STOP_APP_REV), 1);
    await runsOnNewPods('restart', workloadName('restart', 'web', 1), 2, old);
    const events = await kube().events.listNamespacedEvent({ namespace: ns, fieldSelector: 'regarding.name=restart' });
    assert.ok(events.items.some((e) => e.reason === 'Stopped' && /app-rev 1, last-stop-app-rev 1/.test(e.note ?? '')),
      `an Event on the App says why it rolled: ${JSON.stringify(events.items.map((e) => e.note))}`);
  });

  it('a rolling restart keeps the workload name and rolls its pods', async () => {
    await createApp(kube(), appObject(ns, 'rolling'));
    await waitSettled('rolling');
    const old = await allPodUids(kube(), ns, 'rolling');
    const r = await tendApp(['restart', '--strategy', 'rolling', `${ns}/rolling`]);
    assert.equal(r.code, 0, r.stderr);
    const a = await app('rolling');
    assert.equal(rev(a, APP_REV), 1);
    assert.equal(rev(a, LAST_STOP_APP_REV), 0, 'a rolling restart does not move last-stop-app-rev');
    const workload = workloadName('rolling', 'web', 0);
    await runsOnNewPods('rolling', workload, 2, old);
    const [d] = await workloadsOf(kube(), ns, 'rolling');
    assert.equal(d!.spec?.template?.metadata?.annotations?.[APP_REV], '1', 'the pod template carries app-rev');
  });

  it('scales a process when its instances change, on the same workload', async () => {
    await createApp(kube(), appObject(ns, 'scale', [webProcess(1)]));
    await waitSettled('scale');
    await patchAppSpec(kube(), ns, 'scale', { processes: [webProcess(3)] });
    const a = await waitFor('3 ready instances', async () => {
      const x = await app('scale');
      return settled(x) && x.status?.processes?.[0]?.readyInstances === 3 && x;
    }, { timeoutMs: 60_000 });
    assert.equal(a.status?.processes?.[0]?.workload, workloadName('scale', 'web', 0));
    assert.equal((await readyPodsOf(kube(), ns, workloadName('scale', 'web', 0))).length, 3);
    await patchAppSpec(kube(), ns, 'scale', { processes: [webProcess(0)] });
    await waitFor('0 instances', async () => {
      const x = await app('scale');
      return settled(x) && x.status?.processes?.[0]?.instances === 0;
    }, { timeoutMs: 60_000 });
  });

  it('two restarts in quick succession: both return, each stop counted, one workload left on new pods', async () => {
    await createApp(kube(), appObject(ns, 'twice'));
    await waitSettled('twice');
    const old = await allPodUids(kube(), ns, 'twice');
    const [r1, r2] = await Promise.all([tendApp(['restart', `${ns}/twice`]), tendApp(['restart', `${ns}/twice`])]);
    assert.equal(r1.code, 0, r1.stderr);
    assert.equal(r2.code, 0, r2.stderr);
    const a = await app('twice');
    assert.equal(rev(a, LAST_STOP_APP_REV), 2);
    await runsOnNewPods('twice', workloadName('twice', 'web', 2), 2, old);
  });

  it('stop + start made with kubectl, back to back, still rolls the pods', async () => {
    await createApp(kube(), appObject(ns, 'kubectl'));
    await waitSettled('kubectl');
    const old = await allPodUids(kube(), ns, 'kubectl');
    await patchAppSpec(kube(), ns, 'kubectl', { desiredState: 'STOPPED' });
    await patchAppSpec(kube(), ns, 'kubectl', { desiredState: 'STARTED' });
    const a = await waitFor('a new revision, running', async () => {
      const x = await app('kubectl');
      return settled(x) && rev(x, LAST_STOP_APP_REV) === 1 && x;
    }, { timeoutMs: 90_000 });
    assert.equal(a.status?.actualState, 'STARTED');
    await runsOnNewPods('kubectl', workloadName('kubectl', 'web', 1), 2, old);
  });

  it('stop + start made with kubectl while the watcher is down: seen only as their result, still rolls the pods', async () => {
    await createApp(kube(), appObject(ns, 'away'));
    await waitSettled('away');
    const old = await allPodUids(kube(), ns, 'away');
    await tend!.stop();
    await patchAppSpec(kube(), ns, 'away', { desiredState: 'STOPPED' });
    await patchAppSpec(kube(), ns, 'away', { desiredState: 'STARTED' });
    await startTend();
    await waitFor('a new revision, running', async () => {
      const x = await app('away');
      return settled(x) && rev(x, LAST_STOP_APP_REV) === 1;
    }, { timeoutMs: 90_000 });
    await runsOnNewPods('away', workloadName('away', 'web', 1), 2, old);
  });

  it('an App deleted and created again while the watcher is down runs as the new App', async () => {
    await createApp(kube(), appObject(ns, 'reborn'));
    const before = await waitSettled('reborn');
    await tend!.stop();
    await deleteApp(kube(), ns, 'reborn');
    await waitFor('the old App gone', async () => getApp(kube(), ns, 'reborn').then(() => false, () => true));
    await createApp(kube(), appObject(ns, 'reborn', [webProcess(1)]));
    await startTend();
    const after = await waitSettled('reborn');
    assert.notEqual(after.metadata.uid, before.metadata.uid);
    await waitFor('only the new App\'s workload', async () => {
      const ds = await workloadsOf(kube(), ns, 'reborn');
      return ds.length === 1 && ds[0]!.metadata?.ownerReferences?.[0]?.uid === after.metadata.uid;
    }, { timeoutMs: 60_000 });
    assert.equal((await readyPodsOf(kube(), ns, workloadName('reborn', 'web', 0))).length, 1);
  });

  it('refuses a bad spec: unknown desiredState and negative instances by the schema, a bad pod template in status', async () => {
    const refused = async (body: object, pattern: RegExp) => {
      const err = await createApp(kube(), body).then(() => undefined, (e: unknown) => e);
      assert.ok(err, 'refused');
      assert.equal(statusOf(err), 422);
      assert.match(String((err as { body?: unknown }).body), pattern);
    };
    await refused(appObject(ns, 'bad-state', [webProcess(1)], 'RUNNING'), /desiredState.*supported values.*STARTED/);
    await refused(appObject(ns, 'bad-instances', [webProcess(-1)]), /instances.*greater than or equal to 0/);
    await refused(appObject(ns, 'a'.repeat(34)), /at most 33 characters/);
    await refused(appObject(ns, 'twins', [webProcess(1), webProcess(2)]), /Duplicate value/);
    await createApp(kube(), appObject(ns, 'bad-template', [{ type: 'web', instances: 1, template: { spec: { containers: [] } } }]));
    const a = await waitFor('the problem in status', async () => {
      const x = await app('bad-template');
      return x.status?.conditions?.find((c) => c.type === 'Ready' && c.reason === 'InvalidSpec') && x;
    }, { timeoutMs: 60_000 });
    assert.match(a.status!.conditions!.find((c) => c.type === 'Ready')!.message, /containers/);
    const r = await tendApp(['restart', `${ns}/bad-template`, '--timeout', '30']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /spec is refused/);
  });

  it('the CLI refuses bad arguments with exit 2 and a missing App with a clear message', async () => {
    const bad = await tendApp(['restart', 'no-slash']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /NAMESPACE\/NAME/);
    const strategy = await tendApp(['restart', '--strategy', 'fast', `${ns}/x`]);
    assert.equal(strategy.code, 2);
    // Not found is the cluster's answer, not a usage error: exit 1, as kubectl's NotFound.
    const missing = await tendApp(['restart', `${ns}/nope`]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not found/);
  });

  it('the documented temporal CLI lines: update restart, signal appChanged, query state', async () => {
    await createApp(kube(), appObject(ns, 'temporal'));
    await waitSettled('temporal');
    const id = `app/${ns}/temporal`;
    const old = await allPodUids(kube(), ns, 'temporal');
    const u = await temporalCli(['workflow', 'update', 'execute', '--workflow-id', id, '--name', 'restart', '--input', '{"strategy":"rolling"}']);
    assert.match(u.stdout, /runs on new, ready pods/);
    await runsOnNewPods('temporal', workloadName('temporal', 'web', 0), 2, old);
    const generation = (await app('temporal')).metadata.generation;
    await temporalCli(['workflow', 'signal', '--workflow-id', id, '--name', 'appChanged', '--input', JSON.stringify({ generation })]);
    const q = await temporalCli(['workflow', 'query', '--workflow-id', id, '--name', 'state', '--output', 'json']);
    assert.match(q.stdout, /"settledSeq"/);
    // appDeleted for an App that still exists: the reconcile finds it, nothing is deleted.
    await temporalCli(['workflow', 'signal', '--workflow-id', id, '--name', 'appDeleted']);
    await waitFor('the signal handled', async () => {
      const state = await temporalCli(['workflow', 'query', '--workflow-id', id, '--name', 'state', '--output', 'json']);
      return !/"deleted":\s*true/.test(state.stdout);
    });
    await runsOnNewPods('temporal', workloadName('temporal', 'web', 0), 2, old);
    const stop = await temporalCli(['workflow', 'update', 'execute', '--workflow-id', id, '--name', 'stop']);
    assert.match(stop.stdout, /stop applied/);
    await waitFor('stopped', async () => {
      const x = await app('temporal');
      return settled(x) && x.status?.actualState === 'STOPPED' && (await workloadsOf(kube(), ns, 'temporal')).length === 0;
    });
    await temporalCli(['workflow', 'update', 'execute', '--workflow-id', id, '--name', 'start']);
    await waitSettled('temporal');
    const bad = await temporalCli(['workflow', 'update', 'execute', '--workflow-id', id, '--name', 'restart', '--input', '{"strategy":"sideways"}'])
      .then(() => undefined, (e: { stderr?: string }) => e);
    assert.match(bad?.stderr ?? '', /strategy must be stop-start or rolling/);
  });

  it('continues-as-new when its history grows, keeping its state', async () => {
    const client = await connectClient({ address: sandbox().temporalAddress, namespace: 'default', taskQueue: APPS_TASK_QUEUE });
    try {
      await createApp(kube(), appObject(ns, 'long', [webProcess(1)]));
      await waitSettled('long');
      // The watcher's run replaced by one with a small history limit (started before the App
      // existed, a run would find nothing and end); the watcher's signal-with-start finds it running.
      const first = await client.workflow.start('appWorkflow', {
        ...appWorkflowStartOptions(ns, 'long', APPS_TASK_QUEUE), args: [{ namespace: ns, name: 'long', historyLimit: 40 }],
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      });
      for (let i = 0; i < 4; i++) {
        const r = await tendApp(['restart', '--strategy', 'rolling', `${ns}/long`]);
        assert.equal(r.code, 0, r.stderr);
      }
      const handle = client.workflow.getHandle(`app/${ns}/long`);
      const d = await handle.describe();
      assert.notEqual(d.runId, first.firstExecutionRunId, 'a new run');
      assert.equal((await client.workflow.getHandle(`app/${ns}/long`, first.firstExecutionRunId).describe()).status.name, 'CONTINUED_AS_NEW');
      const state = await handle.query<{ appliedSeq: number; last?: { lastSeen?: { appRev: number } } }>('state');
      assert.equal(state.appliedSeq, 4, 'command numbering carried over');
      assert.equal(state.last?.lastSeen?.appRev, 4);
      const a = await app('long');
      assert.equal(rev(a, APP_REV), 4);
      assert.ok(settled(a));
    } finally {
      await client.connection.close();
    }
  });

  it('an App deleted: its workloads are deleted and its workflow ends', async () => {
    await createApp(kube(), appObject(ns, 'gone'));
    await waitSettled('gone');
    await deleteApp(kube(), ns, 'gone');
    await waitFor('workloads deleted', async () => (await workloadsOf(kube(), ns, 'gone')).length === 0, { timeoutMs: 30_000 });
    const client = await connectClient({ address: sandbox().temporalAddress, namespace: 'default', taskQueue: 'tend-apps' });
    try {
      await waitFor('the workflow completed', async () => (await client.workflow.getHandle(`app/${ns}/gone`).describe()).status.name === 'COMPLETED', { timeoutMs: 30_000 });
    } finally {
      await client.connection.close();
    }
  });

  it('worker killed between the stop and the start of a restart: the App still ends up on new pods', async () => {
    await createApp(kube(), appObject(ns, 'killed'));
    await waitSettled('killed');
    const old = await allPodUids(kube(), ns, 'killed');
    const restart = tendApp(['restart', `${ns}/killed`]);
    await waitFor('the stop applied', async () => {
      const x = await app('killed');
      return rev(x, LAST_STOP_APP_REV) === 1;
    }, { timeoutMs: 60_000, intervalMs: 50 });
    await tend!.stop('SIGKILL');
    await startTend();
    const r = await restart;
    assert.equal(r.code, 0, r.stderr);
    const a = await waitSettled('killed');
    assert.equal(rev(a, LAST_STOP_APP_REV), 1, 'stopped once, not twice');
    await runsOnNewPods('killed', workloadName('killed', 'web', 1), 2, old);
  });
});
