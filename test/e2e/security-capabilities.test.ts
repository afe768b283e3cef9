// Forged requests, as anyone who can write to tend's Temporal namespace could
// send them with the real `temporal` CLI, against a running `tend run`: the
// weeder, taint replacement, App and check workflows act only on what the
// worker's own configuration names. Each request is refused (the workflow
// fails non-retryably, or the signal is ignored) with a reason that says what
// and why, and nothing in the cluster changes.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { stringify as toYaml } from 'yaml';
import { runTend, TendProcess } from '../harness/cli.ts';
import { admin, deleteNamespace, deployment, grantConfiguredRights, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { sandbox } from '../harness/hooks.ts';
import { temporalCli } from '../harness/temporal.ts';
import { waitFor } from '../harness/wait.ts';
import { APP_GROUP, APP_PLURAL, APP_VERSION, LABEL_APP } from '../../src/apps/types.ts';
import type { SlotsStatus } from '../../src/taint/messages.ts';
import type { WindowSnapshot } from '../../src/weeder/window.ts';

const TASK_QUEUE = 'tend-security';
const TAINT_KEY = 'security.tend.dev/forged';

describe('security: forged requests to the weeder, taint, App and check workflows change nothing', function () {
  this.timeout(170_000);
  const kube = () => admin();
  let ns: string;
  let outside: string;
  let tend: TendProcess;
  let temporal: Client;
  let config: string;
  const run = `${Date.now().toString(36)}`;

  /** `temporal` as an attacker types it, against tend's task queue. */
  const cli = (args: string[]) => temporalCli(args);
  const cliFails = async (args: string[]): Promise<string> => {
    try {
      const r = await cli(args);
      return assert.fail(`expected temporal ${args.join(' ')} to fail; it printed ${r.stdout}`);
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      if (e.message.startsWith('expected temporal')) throw err;
      return `${e.stdout ?? ''}${e.stderr ?? ''}${e.message}`;
    }
  };
  /** The failure of a workflow the CLI started: its message, cause included. */
  const failureOf = async (workflowId: string, timeoutMs = 30_000): Promise<string> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`workflow ${workflowId} neither failed nor completed within ${timeoutMs / 1000}s`)), timeoutMs);
    });
    try {
      await Promise.race([temporal.workflow.getHandle(workflowId).result(), late]);
    } catch (err) {
      if (err instanceof Error && err.message.includes('neither failed nor completed')) throw err;
      assert.ok(err instanceof WorkflowFailedError, `workflow ${workflowId}: ${String(err)}`);
      let text = err.message;
      for (let c: unknown = err.cause; c; c = (c as { cause?: unknown }).cause) text += ` <- ${(c as Error).message}`;
      return text;
    } finally {
      clearTimeout(timer);
    }
    return assert.fail(`workflow ${workflowId} completed; it should have been refused`);
  };
  const start = (type: string, workflowId: string, input: unknown) =>
    cli(['workflow', 'start', '--type', type, '--task-queue', TASK_QUEUE, '--workflow-id', workflowId, '--input', JSON.stringify(input)]);
  const uids = async (namespace: string, selector: string) =>
    (await podsOf(kube(), namespace, selector)).filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata!.uid!).sort();
  const crashLooping = (p: k8s.V1Pod) => (p.status?.containerStatuses ?? []).some((s) => s.state?.waiting?.reason === 'CrashLoopBackOff');
  const taintConditions = (p: k8s.V1Pod) => (p.status?.conditions ?? []).filter((c) => c.type.startsWith('NodeTaint'));

  before(async () => {
    const k = kube();
    ns = await tempNamespace(k, 'sec');
    outside = await tempNamespace(k, 'sec-outside');
    const fail = { 'sim.tend.dev/fail': 'true' };
    for (const namespace of [ns, outside]) {
      // Service db, ready; a crash-looping pod the configured selector (role=api) does not match...
      await k.apps.createNamespacedDeployment({ namespace, body: deployment({ namespace, name: 'db', replicas: 1 }) });
      await k.core.createNamespacedService({ namespace, body: service(namespace, 'db', { app: 'db' }) });
      await k.apps.createNamespacedDeployment({ namespace, body: deployment({ namespace, name: 'victim', replicas: 1, labels: { role: 'victim' }, annotations: fail }) });
    }
    // ... and outside the configured namespaces, one it does match.
    await k.apps.createNamespacedDeployment({ namespace: outside, body: deployment({ namespace: outside, name: 'api', replicas: 1, labels: { role: 'api' }, annotations: fail }) });
    // An App outside apps.namespaces.
    await k.custom.createNamespacedCustomObject({
      group: APP_GROUP, version: APP_VERSION, plural: APP_PLURAL, namespace: outside,
      body: {
        apiVersion: `${APP_GROUP}/${APP_VERSION}`, kind: 'App', metadata: { name: 'web', namespace: outside },
        spec: { desiredState: 'STARTED', processes: [{ type: 'web', instances: 1, template: { metadata: { labels: { role: 'web' } }, spec: { containers: [{ name: 'web', image: 'registry.example/web:1' }] } } }] },
      },
    });
    const dir = await mkdtemp(join(tmpdir(), 'tend-security-'));
    config = join(dir, 'tend.yaml');
    await writeFile(config, toYaml({
      temporal: { address: sandbox().temporalAddress, taskQueue: TASK_QUEUE },
      kubernetes: { kubeconfig: sandbox().tendKubeconfig },
      weeder: { watchDuration: '20s', namespaces: [ns], servicesAndDependantSelectors: { db: { podSelectors: [{ matchLabels: { role: 'api' } }] } } },
      taintReplacement: {
        taintReplacementOptions: [{ key: TAINT_KEY, durationInSeconds: 0 }], taintReplacementTimeSeconds: 0, maxConcurrentReplacements: 2,
        podSelector: { matchLabels: { managed: 'by-tend' } }, namespaces: [ns],
      },
      apps: { namespaces: [ns] },
    }));
    await grantConfiguredRights(config);
    tend = new TendProcess(['run', '--config', config]);
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
    await waitFor('tend to start', () => /worker started/.test(tend.logs) && /weeder watching/.test(tend.logs), { timeoutMs: 60_000 });
    await waitFor('the victims to crash-loop', async () => {
      const pods = [...await podsOf(k, ns, 'role=victim'), ...await podsOf(k, outside, 'role in (victim,api)')];
      return pods.length === 3 && pods.every(crashLooping);
    }, { timeoutMs: 60_000 });
  });
  /** Long-lived workflows a test started: ended whatever the test's outcome. */
  const cleanups: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const c of cleanups) await c().catch(() => undefined);
    await tend?.stop();
    // The watcher started the cluster-wide coordinator on this test's task queue: end it, so
    // that the next tend (another task queue) starts its own.
    const slots = temporal?.workflow.getHandle('taint-replacements');
    if (slots && (await slots.describe().catch(() => undefined))?.taskQueue === TASK_QUEUE) await slots.terminate('security test done').catch(() => undefined);
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube(), ns);
    if (outside) await deleteNamespace(kube(), outside);
  });

  it('weederWorkflow for a Service or a namespace outside the configuration: refused, nothing deleted', async () => {
    const before = await uids(outside, 'role in (victim,api)');
    // Under the id the watcher would use (any other id is refused before anything else: its own id is checked first).
    await start('weederWorkflow', `weeder/${ns}/victim-svc`, { namespace: ns, service: 'victim-svc' });
    assert.match(await failureOf(`weeder/${ns}/victim-svc`),
      new RegExp(`refused: Service ${ns}/victim-svc is not configured: the worker's weeder.servicesAndDependantSelectors lists only db`));
    // A Service whose name is configured, in a namespace that is not: signal-with-start, as the watcher does.
    await cli(['workflow', 'signal-with-start', '--type', 'weederWorkflow', '--task-queue', TASK_QUEUE, '--workflow-id', `weeder/${outside}/db`,
      '--input', JSON.stringify({ namespace: outside, service: 'db', podSelectors: [{ matchLabels: { role: 'api' } }] }),
      '--signal-name', 'extend', '--signal-input', JSON.stringify({ seconds: 60 })]);
    assert.match(await failureOf(`weeder/${outside}/db`),
      new RegExp(`refused: Service ${outside}/db is not configured: namespace ${outside} is outside the worker's weeder.namespaces \\(${ns}\\)`));
    assert.deepEqual(await uids(outside, 'role in (victim,api)'), before);
  });

  it('weederWorkflow with forged podSelectors and junk signals: only the configured selectors weed, junk is ignored', async () => {
    const id = `weeder/${ns}/db`;
    const before = await uids(ns, 'role=victim');
    // The forged selector matches the crash-looping victim; the configured one (role=api) does not.
    await cli(['workflow', 'signal-with-start', '--type', 'weederWorkflow', '--task-queue', TASK_QUEUE, '--workflow-id', id,
      '--input', JSON.stringify({ namespace: ns, service: 'db', podSelectors: [{ matchLabels: { role: 'victim' } }], watchDuration: { text: '1h', ms: 3_600_000 } }),
      '--signal-name', 'extend', '--signal-input', JSON.stringify({ seconds: 30 })]);
    const handle = temporal.workflow.getHandle(id);
    const opened = await waitFor('the window to open', async () => {
      const w = await handle.query<WindowSnapshot>('window');
      return w.deadline > 0 && w;
    });
    // The window is 30 s (as asked), not the forged hour.
    assert.ok(opened.deadline <= Date.now() + 31_000, `deadline ${new Date(opened.deadline).toISOString()}`);
    for (const [name, input] of [
      ['extend', '"junk"'], ['extend', '{"seconds":"forever"}'], ['extend', '{"seconds":-5}'],
      ['arm', '[1,2]'], ['stop', '{"reason":{"rm":"-rf"}}'],
    ] as const) {
      await cli(['workflow', 'signal', '--workflow-id', id, '--name', name, '--input', input]);
    }
    await waitFor('the worker to log the ignored signals', () =>
      /extend signal ignored: its payload must be an object/.test(tend.logs) &&
      /extend signal ignored: seconds: must be a number above 0/.test(tend.logs) &&
      /extend signal ignored: seconds: Too small: expected number to be >0/.test(tend.logs) &&
      /arm signal ignored: its payload must be an object/.test(tend.logs) &&
      /stop signal ignored: reason: must be a string/.test(tend.logs));
    const after = await handle.query<WindowSnapshot>('window');
    assert.equal(after.deadline, opened.deadline, 'junk extended the window');
    assert.equal(after.transitions, opened.transitions);
    assert.equal(after.armed, undefined, 'junk armed the workflow');
    assert.equal(after.stopped, undefined, 'junk stopped the window');
    await cli(['workflow', 'signal', '--workflow-id', id, '--name', 'stop', '--input', '{"reason":"test done"}']);
    const result = await handle.result() as { weeded: unknown[] };
    assert.deepEqual(result.weeded, []);
    assert.deepEqual(await uids(ns, 'role=victim'), before, 'the forged selector\'s pod was deleted');
  });

  it('taintNodeWorkflow and a nodeTaints signal claiming a taint a node does not carry, forged selector: refused, no condition, no eviction', async () => {
    const node = (await kube().core.listNode()).items[0]!.metadata!.name!;
    assert.ok(!(await kube().core.readNode({ name: node })).spec?.taints?.some((t) => t.key === TAINT_KEY));
    const bare = (name: string, labels: Record<string, string>) => kube().core.createNamespacedPod({ namespace: ns, body: {
      metadata: { name, labels, ownerReferences: [] }, spec: { nodeName: node, containers: [{ name: 'c', image: 'registry.example/c:1' }] },
    } });
    await bare('unmanaged', { role: 'unmanaged' });
    await bare('managed', { managed: 'by-tend' });
    await waitFor('the pods to run', async () => (await podsOf(kube(), ns, 'role=unmanaged')).concat(await podsOf(kube(), ns, 'managed=by-tend')).every(isReady));
    const before = await uids(ns, 'role=unmanaged');
    const forgedSettings = {
      taintReplacementOptions: [{ key: '*', durationInSeconds: 0 }], taintReplacementTimeSeconds: 0, maxConcurrentReplacements: 100,
      podSelector: { matchLabels: { role: 'unmanaged' } },
    };
    const claimed = [{ key: TAINT_KEY, effect: 'NoSchedule', durationInSeconds: 0, matchedBy: TAINT_KEY, timeAdded: '2020-01-01T00:00:00Z', seenAt: 0 }];
    // Under another id: refused for that before anything is read.
    await start('taintNodeWorkflow', `forged-taint-${run}`, { node, settings: forgedSettings });
    assert.match(await failureOf(`forged-taint-${run}`), new RegExp(`refused: the workflow of node ${node} runs as taint/${node} only`));
    await start('taintNodeWorkflow', `taint/${node}`, { node, settings: forgedSettings });
    assert.match(await failureOf(`taint/${node}`), new RegExp(`refused: node ${node} carries none of the configured taints \\(${TAINT_KEY}\\)`));
    await cli(['workflow', 'signal-with-start', '--type', 'taintNodeWorkflow', '--task-queue', TASK_QUEUE, '--workflow-id', `taint/${node}`,
      '--input', JSON.stringify({ node, settings: forgedSettings }),
      '--signal-name', 'nodeTaints', '--signal-input', JSON.stringify({ taints: claimed, settings: forgedSettings })]);
    assert.match(await failureOf(`taint/${node}`), new RegExp(`refused: node ${node} carries none of the configured taints`));
    // Junk input: refused too, naming what is wrong.
    await start('taintNodeWorkflow', `forged-taint-junk-${run}`, 'sim-1; rm -rf /');
    assert.match(await failureOf(`forged-taint-junk-${run}`), /refused: the node's name is not 1 to 253 characters/);
    for (const p of [...await podsOf(kube(), ns, 'role=unmanaged'), ...await podsOf(kube(), ns, 'managed=by-tend')]) {
      assert.deepEqual(taintConditions(p), [], `${p.metadata!.name} got a condition`);
    }
    assert.deepEqual(await uids(ns, 'role=unmanaged'), before);
  });

  it('taintReplacementsWorkflow: forged settings in its input and signals do not change its limits', async () => {
    const forged = { data: { maxConcurrentReplacements: 1000, maxTaintedNodes: 1000, taintedNodes: 0, totalNodes: 1000, queue: [], inFlight: [], granted: 0, peakInFlight: 0 } };
    // Under another id: refused at once.
    await start('taintReplacementsWorkflow', `forged-slots-${run}`, forged);
    assert.match(await failureOf(`forged-slots-${run}`), /refused: the coordinator runs as taint-replacements only/);
    // Under its own id, with forged carried data (a hand start: the data is not its own run's, so it is not taken).
    const id = 'taint-replacements';
    await temporal.workflow.getHandle(id).terminate('test: a hand start in its place').catch(() => undefined);
    await start('taintReplacementsWorkflow', id, forged);
    const handle = temporal.workflow.getHandle(id);
    cleanups.push(() => handle.terminate('test done'));
    const nodes = (await kube().core.listNode()).items.length;
    const seen: number[] = [];
    // Until it has read the worker's settings and the Nodes it shows cautious defaults; never the forged values.
    const first = await waitFor('the coordinator to read its settings and counts', async () => {
      const q = await handle.query<SlotsStatus>('status');
      seen.push(q.maxConcurrentReplacements);
      return q.totalNodes === nodes && q;
    });
    assert.ok(!seen.includes(1000), `the forged limit was taken: ${seen.join(',')}`);
    assert.equal(first.maxConcurrentReplacements, 2);
    assert.equal(first.totalNodes, nodes);
    await cli(['workflow', 'signal', '--workflow-id', id, '--name', 'settings', '--input', JSON.stringify({ maxConcurrentReplacements: 1000, maxTaintedNodes: 1000 })]);
    await cli(['workflow', 'signal', '--workflow-id', id, '--name', 'nodeCounts', '--input', JSON.stringify({ taintedNodes: 0, totalNodes: 1000 })]);
    // Each "look again" costs one activity, reading the configuration and the Nodes: wait for both.
    await waitFor('the coordinator to look again', async () => {
      const { stdout } = await cli(['workflow', 'show', '--workflow-id', id, '--output', 'json']);
      const types = (JSON.parse(stdout) as { events: { eventType: string }[] }).events.map((e) => e.eventType.replace(/_/g, '').toLowerCase());
      const firstSignal = types.findIndex((t) => t.includes('workflowexecutionsignaled'));
      return firstSignal >= 0 && types.slice(firstSignal).filter((t) => t.includes('activitytaskcompleted')).length >= 2;
    });
    const after = await handle.query<SlotsStatus>('status');
    assert.equal(after.maxConcurrentReplacements, 2);
    assert.equal(after.maxTaintedNodes, '50%');
    assert.equal(after.totalNodes, nodes);
  });

  it('appWorkflow and its updates for an App outside apps.namespaces: refused, no Deployment', async () => {
    const id = `app/${outside}/web`;
    await start('appWorkflow', id, { namespace: outside, name: 'web' });
    const why = new RegExp(`refused: App ${outside}/web: namespace ${outside} is outside apps.namespaces \\(${ns}\\)`);
    assert.match(await failureOf(id), why);
    const update = await cliFails(['workflow', 'execute-update-with-start', '--type', 'appWorkflow', '--task-queue', TASK_QUEUE,
      '--workflow-id', id, '--id-conflict-policy', 'UseExisting', '--input', JSON.stringify({ namespace: outside, name: 'web' }),
      '--update-name', 'restart', '--update-input', JSON.stringify({ strategy: 'stop-start' })]);
    assert.match(update, why);
    assert.match(await failureOf(id), why);
    const cliRefusal = await runTend(['app', 'restart', `${outside}/web`, '--config', config]);
    assert.equal(cliRefusal.code, 2, cliRefusal.stderr);
    assert.match(cliRefusal.stderr, why);
    assert.deepEqual((await kube().apps.listNamespacedDeployment({ namespace: outside, labelSelector: LABEL_APP })).items, []);
  });

  it('checkWorkflow with junk input: ignores it and only reads', async () => {
    const { stdout } = await cli(['workflow', 'execute', '--type', 'checkWorkflow', '--task-queue', TASK_QUEUE,
      '--workflow-id', `forged-check-${run}`, '--input', JSON.stringify({ command: ['sh', '-c', 'touch /tmp/x'], namespace: outside }), '--output', 'json']);
    const result = (JSON.parse(stdout) as { result: { nodes: number; workerTaskQueue: string } }).result;
    assert.equal(result.workerTaskQueue, TASK_QUEUE);
    assert.equal(result.nodes, (await kube().core.listNode()).items.length);
  });
});
