// `tend node describe NODE` on the sandbox: a simulated Node stopped, Kubernetes taints it
// unreachable, taint replacement (configured for that taint) marks and replaces its managed pod;
// the command then shows, in time order, the taint/<node> run (found by TendNode, which the
// watcher sets) and taint's Events on the pod and on the Node. The real `tend run`, API server,
// controllers, simulated kubelet and Temporal.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { runTend, TendProcess } from '../harness/cli.ts';
import { testStateDir } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deployment, grantConfiguredRights, isReady, podsOf, tempNamespace } from '../harness/kube.ts';
import { cleanUpTaintTest, managedLabel, startTaintTend, taint, untaint } from '../harness/taint.ts';
import { temporalCli } from '../harness/temporal.ts';
import { waitFor } from '../harness/wait.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import type { NodeDescribe } from '../../src/starters/node-commands.ts';

const UNREACHABLE = 'node.kubernetes.io/unreachable';
/** A taint only the test with an older namespace's tend watches. */
const OLD_KEY = 'example.org/describe-old';

describe('tend node describe', function () {
  this.timeout(240_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string | undefined;
  const stoppedNodes = new Set<string>();

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'describe');
    ({ config, tend } = await startTaintTend(ns, { taintReplacementOptions: [{ key: UNREACHABLE, durationInSeconds: 2 }], taintReplacementTimeSeconds: 2 }));
  });
  after(async () => {
    await cleanUpTaintTest({ kube, ns, tend, config, tainted: new Set(), stoppedNodes, settleMs: 60_000 });
  });

  /** What an operator runs: the command with the cluster's admin kubeconfig, as kubectl would have it. */
  const describeNode = async (node: string): Promise<NodeDescribe> => {
    const r = await runTend(['node', 'describe', node, '-c', config!, '--kubeconfig', sandbox().kubeconfig, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as NodeDescribe;
  };

  it('a stopped Node: the taint/<node> run and taint\'s Events on its pod and on it, in time order', async () => {
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 1, labels: managedLabel(ns) }) });
    const [pod] = await waitFor('a ready pod of db', async () => {
      const pods = (await podsOf(kube, ns, 'app=db')).filter((p) => isReady(p) && !p.metadata?.deletionTimestamp);
      return pods.length === 1 && pods;
    }, { timeoutMs: 60_000 });
    const node = pod!.spec!.nodeName!;
    const onPod = `Pod ${ns}/${pod!.metadata!.name!}`;
    const t0 = Date.now();
    stoppedNodes.add(node);
    const stop = await runTend(['sandbox', 'node', 'stop', node, '--state-dir', testStateDir]);
    assert.equal(stop.code, 0, stop.stderr);

    const podReasons = ['TaintMarked', 'TaintReplacementDue', 'TaintReplacing', 'TaintEvicted'];
    const seen = await waitFor('taint\'s Events on the pod, the run and the Node\'s Event in tend node describe', async () => {
      const d = await describeNode(node);
      const ours = d.rows.filter((r) => r.source === `Event on ${onPod}`).map((r) => r.what.split(' ')[0]);
      return podReasons.every((reason) => ours.includes(reason)) &&
        d.rows.some((r) => r.source === `Event on Node ${node}` && r.what.startsWith('TaintReplacementsStarted')) && d;
    }, { timeoutMs: 120_000, intervalMs: 2000 });

    assert.equal(seen.node, node);
    const times = seen.rows.map((r) => Date.parse(r.time));
    assert.deepEqual(times, [...times].sort((a, b) => a - b), 'rows in time order');
    // This incident's run: started after the stop, found by TendNode (the watcher's) or its id.
    const started = seen.rows.find((r) => r.source === `workflow taint/${node}` && r.what === `taint/${node} started (taintNodeWorkflow)` && Date.parse(r.time) >= t0);
    assert.ok(started, `the taint/${node} run: ${JSON.stringify(seen.rows, null, 1)}`);
    assert.equal(started.capability, 'taint');
    const podRows = seen.rows.filter((r) => r.source === `Event on ${onPod}`);
    assert.deepEqual(podRows.map((r) => r.what.split(' ')[0]).filter((w) => podReasons.includes(w)), podReasons,
      `the pod's Events in the order taint wrote them: ${JSON.stringify(podRows, null, 1)}`);
    for (const r of podRows) {
      assert.equal(r.capability, 'taint', r.what);
      assert.ok(Date.parse(r.time) >= Date.parse(started.time), `${r.what} after the run started`);
    }
    assert.match(podRows[0]!.what, new RegExp(`^TaintMarked on ${onPod}: marked NodeTaintDetected: node ${node} has taint ${UNREACHABLE.replace('.', '\\.')}`));

    // The run carries TendNode: the Web UI's filter finds it.
    const { stdout } = await temporalCli(['workflow', 'list', '--query', `TendNode = "${node}" AND WorkflowId = "taint/${node}"`, '-o', 'json']);
    assert.match(stdout, new RegExp(`"taint/${node}"`), stdout);

    const back = await runTend(['sandbox', 'node', 'start', node, '--state-dir', testStateDir]);
    assert.equal(back.code, 0, back.stderr);
    stoppedNodes.delete(node);
  });

  it('with only a kubeconfig and TEMPORAL_*, on a namespace without TendNode: the runs by their ids, and a note saying why', async () => {
    const namespace = `describe-${Date.now()}`;
    await temporalCli(['operator', 'namespace', 'create', '--namespace', namespace]);
    const dir = await mkdtemp(join(tmpdir(), 'tend-describe-'));
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, 'xdg') };
    for (const k of Object.keys(env)) if (k.startsWith('TEMPORAL_') || k === 'TEND_CONFIG') delete env[k];
    const r = await waitFor('the new namespace to answer', async () => {
      const got = await runTend(['node', 'describe', 'sim-1', '--kubeconfig', sandbox().kubeconfig, '-o', 'json'],
        { env: { ...env, TEMPORAL_ADDRESS: sandbox().temporalAddress, TEMPORAL_NAMESPACE: namespace, TEND_SANDBOX_DIR: join(dir, 'no-sandbox') } });
      return (got.code === 0 || !/namespace/i.test(got.stderr)) && got;
    }, { timeoutMs: 30_000 });
    assert.equal(r.code, 0, r.stderr);
    const d = JSON.parse(r.stdout) as NodeDescribe;
    assert.deepEqual(d.rows.filter((row) => row.source.startsWith('workflow ')), [], 'no run in a new namespace');
    assert.ok(d.notes.some((n) => /no search attribute TendNode \(run `tend setup temporal`\)/.test(n)), JSON.stringify(d.notes));
  });

  it('a namespace set up by an older tend (no TendNode): taint/<node> still starts, without it, and tend says to run tend setup temporal', async () => {
    const namespace = `describe-old-${Date.now()}`;
    await temporalCli(['operator', 'namespace', 'create', '--namespace', namespace]);
    await waitFor('the older search attributes registered', () => temporalCli(['operator', 'search-attribute', 'create', '--namespace', namespace,
      '--name', 'TendCapability', '--type', 'Keyword', '--name', 'TendTarget', '--type', 'Keyword']).then(() => true, () => false), { timeoutMs: 30_000 });
    const dir = await mkdtemp(join(tmpdir(), 'tend-describe-'));
    const file = join(dir, 'tend.yaml');
    await writeFile(file, toYaml({
      temporal: { address: sandbox().temporalAddress, namespace, taskQueue: 'tend-describe-old' },
      kubernetes: { kubeconfig: sandbox().tendKubeconfig },
      taintReplacement: { podSelector: { matchLabels: managedLabel(ns) }, namespaces: [ns], taintReplacementOptions: [{ key: OLD_KEY, durationInSeconds: 3600 }] },
    }));
    await grantConfiguredRights(file);
    const old = new TendProcess(['run', '--config', file]);
    const node = 'sim-1';
    try {
      await waitFor('tend to start its worker and taint watch', () => old.output.includes('taint watch synced') && old.output.includes('worker started'), { timeoutMs: 120_000 });
      await taint(kube, node, { key: OLD_KEY, value: 'x', effect: 'NoSchedule' });
      await waitFor(`taint/${node} running in ${namespace}`, async () => {
        const { stdout } = await temporalCli(['workflow', 'list', '--namespace', namespace, '--query', `WorkflowId = "taint/${node}" AND ExecutionStatus = "Running"`, '-o', 'json']);
        return stdout.includes(`"taint/${node}"`);
      }, { timeoutMs: 60_000 });
      assert.match(old.output, /no search attribute TendNode: taint workflows start without it; run `tend setup temporal`/);
    } finally {
      await untaint(kube, node, OLD_KEY);
      await old.stop();
    }
  });

  it('a Node with nothing: an empty table and a line saying so, exit 0', async () => {
    const r = await runTend(['node', 'describe', 'no-such-node.example', '-c', config!, '--kubeconfig', sandbox().kubeconfig]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'TIME  CAPABILITY  WHAT');
    assert.match(r.stdout, /^nothing found for node no-such-node\.example/m);
    assert.deepEqual((await describeNode('no-such-node.example')).rows, []);
  });
});
