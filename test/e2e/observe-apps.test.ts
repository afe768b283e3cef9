// Observe mode and the pause for Apps, end to end. Observe: a new App and a rolling restart
// write nothing (no Deployment, no App annotation), and each write act mode makes is recorded
// (a WouldWrite Event, tend_apps_would_write_total); switched to act in the same running tend,
// exactly the recorded Deployment is created. Pause: a rolling restart sent while apps is paused
// writes nothing after the pause is acknowledged, and completes after the resume.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTend, TendProcess } from '../harness/cli.ts';
import { httpPortBlock } from '../harness/env.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { temporalCli } from '../harness/temporal.ts';
import { appObject, createApp, getApp, settled, workloadsOf, writeAppsConfig } from '../harness/apps.ts';
import { workloadName } from '../../src/apps/workloads.ts';
import { APP_REV } from '../../src/apps/types.ts';
import { SAFETY_WORKFLOW_ID } from '../../src/safety/messages.ts';
import { counterFor, metricsOf } from '../harness/metrics.ts';

const endPause = () => temporalCli(['workflow', 'terminate', '--workflow-id', SAFETY_WORKFLOW_ID, '--reason', 'test reset']).catch(() => undefined);

describe('observe mode and pause: Apps (e2e)', function () {
  this.timeout(300_000);
  const kube = () => admin();
  let ns: string;
  let dir: string;
  let config: string;
  let tend: TendProcess | undefined;
  const http = `127.0.0.1:${httpPortBlock + 48}`;
  const metric = async () => counterFor(await metricsOf(http), 'tend_apps_would_write_total', ns);
  const wouldWrite = async (name: string) => (await kube().events.listNamespacedEvent({ namespace: ns })).items
    .filter((e) => e.reason === 'WouldWrite' && (e.regarding?.name === name || e.regarding?.name?.startsWith(`${name}-`)));
  const setMode = async (mode: 'act' | 'observe') => {
    const text = (await readFile(config, 'utf8')).replace(/^mode: \w+\n/m, '');
    await writeFile(config, `mode: ${mode}\n${text}`);
    await waitFor(`tend to switch apps to ${mode}`, () => tend!.logs.includes(`mode changed: apps now ${mode === 'act' ? 'acts' : 'observes'}`), { timeoutMs: 30_000 });
  };

  before(async () => {
    ns = await tempNamespace(kube(), 'observe-apps');
    dir = await mkdtemp(join(tmpdir(), 'tend-apps-'));
    config = await writeAppsConfig(dir, [ns]);
    await writeFile(config, `mode: observe\n${await readFile(config, 'utf8')}`);
    await endPause();
    tend = new TendProcess(['run', '--config', config, '--http-address', http], { TEND_LOG_LEVEL: 'info' });
    await waitFor('tend to watch Apps', () => tend!.output.includes('watching Apps') && tend!.output.includes('worker started'), { timeoutMs: 60_000 });
  });
  after(async () => {
    await endPause();
    await tend?.stop();
    await deleteNamespace(kube(), ns);
    await rm(dir, { recursive: true, force: true });
  });

  it('observe: a new App and a rolling restart write nothing and record each write; act creates what was recorded', async () => {
    await createApp(kube(), appObject(ns, 'obs'));
    const created = await waitFor('a WouldWrite Event for the Deployment', async () => {
      const events = (await wouldWrite('obs')).filter((e) => /^would create Deployment /.test(e.note ?? ''));
      return events.length > 0 && events;
    }, { timeoutMs: 60_000 });
    assert.deepEqual(created.map((e) => e.note), [`would create Deployment ${ns}/${workloadName('obs', 'web', 0)}: App ${ns}/obs generation 1`]);
    assert.deepEqual(await workloadsOf(kube(), ns, 'obs'), [], 'observe mode created a Deployment');

    const restart = await runTend(['app', 'restart', `${ns}/obs`, '--strategy', 'rolling', '--config', config], { timeoutMs: 120_000 });
    assert.equal(restart.code, 0, restart.stderr);
    assert.match(restart.stdout, /observe mode, nothing restarted; would have: would set App .*obs to app-rev 1/);
    const a = await getApp(kube(), ns, 'obs');
    assert.equal(a.metadata.annotations?.[APP_REV], undefined, 'observe mode wrote the App');
    assert.equal(a.status, undefined, 'observe mode wrote the App\'s status');
    assert.ok((await metric()) >= 2, 'tend_apps_would_write_total did not count the writes');
    const recorded = new Set((await wouldWrite('obs')).filter((e) => /Deployment/.test(e.note ?? '')).map((e) => /Deployment (\S+?):/.exec(e.note!)![1]));

    // Act, in the same tend: what observe mode found to write is written, no new input needed.
    await setMode('act');
    const done = await waitFor('the App settled in act mode', async () => {
      const now = await getApp(kube(), ns, 'obs');
      return settled(now) && now;
    }, { timeoutMs: 90_000 });
    assert.equal(done.status?.actualState, 'STARTED');
    const made = new Set((await workloadsOf(kube(), ns, 'obs')).map((d) => `${ns}/${d.metadata!.name}`));
    assert.deepEqual(made, recorded, 'act mode wrote other Deployments than observe mode recorded');
  });

  it('pause: a rolling restart writes nothing while apps is paused, and completes after the resume', async () => {
    // In act mode (the test above switched it), a running App.
    await createApp(kube(), appObject(ns, 'held'));
    const before = await waitFor('App held settled', async () => {
      const a = await getApp(kube(), ns, 'held');
      return settled(a) && a;
    }, { timeoutMs: 90_000 });
    const [workload] = await workloadsOf(kube(), ns, 'held');
    const paused = await runTend(['pause', 'apps', '--reason', 'change freeze', '--config', config], { timeoutMs: 60_000 });
    assert.equal(paused.code, 0, paused.stderr);

    const restart = runTend(['app', 'restart', `${ns}/held`, '--strategy', 'rolling', '--timeout', '120', '--config', config], { timeoutMs: 180_000 });
    // Held: the workflow says so, and retries; nothing is written meanwhile.
    await waitFor('the reconcile held by the pause', () => tend!.logs.includes(`apps: paused: the reconcile of App ${ns}/held is held, nothing written`), { timeoutMs: 60_000 });
    const during = await getApp(kube(), ns, 'held');
    assert.equal(during.metadata.resourceVersion, before.metadata.resourceVersion, 'the App was written while paused');
    const [w] = await workloadsOf(kube(), ns, 'held');
    assert.equal(w?.metadata?.resourceVersion, workload?.metadata?.resourceVersion, 'the Deployment was written while paused');

    const resumed = await runTend(['resume', 'apps', '--config', config], { timeoutMs: 60_000 });
    assert.equal(resumed.code, 0, resumed.stderr);
    const r = await restart;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /runs on new, ready pods/);
    assert.equal((await getApp(kube(), ns, 'held')).metadata.annotations?.[APP_REV], '1');
  });
});
