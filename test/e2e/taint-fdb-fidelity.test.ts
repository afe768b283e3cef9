// Taint replacement as the FoundationDB operator's users expect it, end to end on the sandbox:
// a pasted maxFaultDomainsWithTaintedProcessGroups: "10%" read as FDB reads it (of the nodes
// holding managed pods, rounded down, at least 1); pods a FoundationDBCluster owns refused with
// the reason in `tend taint status` and an Event; pods tolerating the taint left alone; a taint
// workflow for a Node that does not exist refused saying so.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deployment, isReady, podsOf, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { temporalCli } from '../harness/temporal.ts';
import {
  cleanUpTaintTest, condition, managedLabel, readPod, readyPodsOn, startTaintTend, taint, taintConfig, taintStatusFor, TASK_QUEUE, untaint,
} from '../harness/taint.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const MAINTENANCE = 'example.org/maintenance';
const FDB_GROUP = 'apps.foundationdb.org';
const CRD_NAME = `foundationdbclusters.${FDB_GROUP}`;

/** Evicted: gone, replaced by a namesake, or terminating. */
const evicted = (p: k8s.V1Pod | undefined, uid: string) => !p || p.metadata?.uid !== uid || !!p.metadata?.deletionTimestamp;

describe('taint replacement: maxFaultDomainsWithTaintedProcessGroups "10%" from a FoundationDBCluster manifest (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string | undefined;
  const tainted = new Set<string>();

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'taint-fdb-pct');
  });
  after(async () => {
    await cleanUpTaintTest({ kube, ns, tend, config, tainted, settleMs: 60_000 });
  });

  it('10% of 3 fault domains is 1 (rounded down, at least 1): one tainted node is replaced, two hold the breaker', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tend-fdb-pct-'));
    const manifest = join(dir, 'fdb-cluster.yaml');
    await writeFile(manifest, [
      `apiVersion: ${FDB_GROUP}/v1beta2`, 'kind: FoundationDBCluster', 'metadata:', '  name: sample', 'spec:', '  version: 7.1.26',
      '  automationOptions:', '    replacements:', '      enabled: true', '      maxConcurrentReplacements: 3',
      '      maxFaultDomainsWithTaintedProcessGroups: "10%"', '      taintReplacementTimeSeconds: 1', '      taintReplacementOptions:',
      `        - key: ${MAINTENANCE}`, '          durationInSeconds: 1', '',
    ].join('\n'));
    config = await taintConfig({ fromFile: manifest, podSelector: { matchLabels: managedLabel(ns) }, namespaces: [ns] });
    tend = new TendProcess(['run', '--config', config]);
    await waitFor('tend to start its worker and taint watch',
      () => tend!.output.includes('taint watch synced') && tend!.output.includes('worker started'), { timeoutMs: 120_000 });
    assert.match(tend.logs, /maxFaultDomainsWithTaintedProcessGroups: 10%: .*read as FDB reads it, over the nodes holding managed pods/);

    // Three fault domains: a managed pod on each simulated node.
    const [a] = await readyPodsOn(kube, ns, 'a', 'sim-1', 1);
    const [b] = await readyPodsOn(kube, ns, 'b', 'sim-2', 1);
    await readyPodsOn(kube, ns, 'c', 'sim-3', 1);
    for (const node of ['sim-1', 'sim-2']) {
      tainted.add(`${node}|${MAINTENANCE}`);
      await taint(kube, node, { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });
    }
    // Two of three tainted, above 1: held, both due and queued, nothing evicted.
    const held = await waitFor('both pods queued behind the breaker, 2 of 3 fault domains tainted', async () => {
      const s = await taintStatusFor(config!);
      const queued = [a, b].every((p) => s.pods.find((r) => r.pod === p!.metadata!.name)?.state === 'Queued');
      return queued && s.slots?.breakerOpen === true && s.slots.taintedNodes === 2 && s.slots.totalNodes === 3 && s.slots;
    }, { timeoutMs: 90_000 });
    assert.equal(held.maxTaintedNodes, '10%');
    for (const p of [a, b]) assert.ok(!evicted(await readPod(kube, ns, p!.metadata!.name!), p!.metadata!.uid!), `${p!.metadata!.name} evicted while the breaker is open`);

    // One tainted of three is within 10% as FDB reads it (at least 1); tend's own reading of 10% of all nodes would hold it.
    await untaint(kube, 'sim-2', MAINTENANCE);
    tainted.delete(`sim-2|${MAINTENANCE}`);
    await waitFor('the pod on sim-1 evicted', async () => evicted(await readPod(kube, ns, a!.metadata!.name!), a!.metadata!.uid!), { timeoutMs: 60_000 });
    const bNow = await readPod(kube, ns, b!.metadata!.name!);
    assert.ok(!evicted(bNow, b!.metadata!.uid!), 'the pod of the node whose taint went was evicted');
    // The replacement is pinned to sim-1: let it schedule, so that the node's workflow can end.
    await untaint(kube, 'sim-1', MAINTENANCE);
    tainted.delete(`sim-1|${MAINTENANCE}`);
  });
});

describe('taint replacement: FoundationDBCluster pods, tolerating pods, a Node that does not exist (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string | undefined;
  let temporal: Client | undefined;
  const tainted = new Set<string>();

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'taint-fdb-own');
    // The FoundationDB operator's CRD, its schema left open: only the owner's kind and API group matter here.
    await kube.objects.create({
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: CRD_NAME },
      spec: {
        group: FDB_GROUP, scope: 'Namespaced',
        names: { plural: 'foundationdbclusters', singular: 'foundationdbcluster', kind: 'FoundationDBCluster', listKind: 'FoundationDBClusterList' },
        versions: [{ name: 'v1beta2', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    } as k8s.KubernetesObject).catch((err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err;
    });
  });
  after(async () => {
    await cleanUpTaintTest({ kube, ns, tend, config, tainted, settleMs: 60_000 });
    await temporal?.connection.close();
    await kube.objects.delete({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: CRD_NAME } }).catch(() => undefined);
  });

  it('refuses the FoundationDBCluster\'s pod (status and Event), leaves the tolerating pod alone, replaces the other', async () => {
    ({ config, tend } = await startTaintTend(ns, {
      taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 1 }], taintReplacementTimeSeconds: 1, maxConcurrentReplacements: 3,
      toleratingPods: 'leave',
    }));
    const cluster = await waitFor('a FoundationDBCluster created (its CRD established)', async () => kube.objects.create({
      apiVersion: `${FDB_GROUP}/v1beta2`, kind: 'FoundationDBCluster', metadata: { name: 'sample', namespace: ns }, spec: { version: '7.1.26' },
    } as k8s.KubernetesObject).catch(() => undefined), { timeoutMs: 30_000 });
    // As the FoundationDB operator creates its pods: owned directly by the FoundationDBCluster.
    await kube.core.createNamespacedPod({ namespace: ns, body: {
      metadata: {
        name: 'sample-storage-1', labels: { ...managedLabel(ns), app: 'fdb' },
        ownerReferences: [{ apiVersion: `${FDB_GROUP}/v1beta2`, kind: 'FoundationDBCluster', name: 'sample', uid: cluster.metadata!.uid!, controller: true }],
      },
      spec: { nodeName: 'sim-3', containers: [{ name: 'foundationdb', image: 'registry.example/fdb:7.1.26' }] },
    } });
    const tolerant = deployment({ namespace: ns, name: 'tolerant', replicas: 1, labels: managedLabel(ns) });
    tolerant.spec!.template.spec!.nodeSelector = { 'kubernetes.io/hostname': 'sim-3' };
    tolerant.spec!.template.spec!.tolerations = [{ key: MAINTENANCE, operator: 'Exists', effect: 'NoSchedule' }];
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: tolerant });
    const [plain] = await readyPodsOn(kube, ns, 'plain', 'sim-3', 1);
    const [fdb] = await waitFor('the FoundationDBCluster\'s pod ready', async () => {
      const ps = (await podsOf(kube, ns, 'app=fdb')).filter(isReady);
      return ps.length === 1 && ps;
    }, { timeoutMs: 60_000 });
    const [tol] = await waitFor('the tolerating pod ready', async () => {
      const ps = (await podsOf(kube, ns, 'app=tolerant')).filter(isReady);
      return ps.length === 1 && ps;
    }, { timeoutMs: 60_000 });

    tainted.add(`sim-3|${MAINTENANCE}`);
    await taint(kube, 'sim-3', { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });
    await waitFor('the plain pod evicted', async () => evicted(await readPod(kube, ns, plain!.metadata!.name!), plain!.metadata!.uid!), { timeoutMs: 90_000 });
    const row = await waitFor('the FoundationDBCluster\'s pod Refused in tend taint status', async () => {
      const r = (await taintStatusFor(config!)).pods.find((x) => x.pod === fdb!.metadata!.name);
      return r?.state === 'Refused' && r;
    }, { timeoutMs: 60_000 });
    assert.match(row.replaceAt, /^never: owned by FoundationDBCluster sample: tend evicts without excluding FoundationDB processes first; set taintReplacement\.evictFoundationDBPodsWithoutExclusion: true/);
    const event = await waitFor('a TaintReplacementRefused Event on the pod', async () => {
      const events = await kube.core.listNamespacedEvent({ namespace: ns, fieldSelector: `reason=TaintReplacementRefused,involvedObject.name=${fdb!.metadata!.name}` });
      return events.items[0];
    }, { timeoutMs: 30_000 });
    assert.equal(event.type, 'Warning');
    assert.match(event.message ?? '', /not replaced for the taint on node sim-3: owned by FoundationDBCluster sample/);

    const status = await taintStatusFor(config!);
    assert.ok(!status.pods.some((r) => r.pod === tol!.metadata!.name), `the tolerating pod is listed: ${JSON.stringify(status.pods)}`);
    const fdbNow = await readPod(kube, ns, fdb!.metadata!.name!);
    assert.ok(!evicted(fdbNow, fdb!.metadata!.uid!), 'the FoundationDBCluster\'s pod was evicted');
    assert.ok(condition(fdbNow, 'NodeTaintReplacing'), 'the refused pod is still marked, as FDB marks it');
    const tolNow = await readPod(kube, ns, tol!.metadata!.name!);
    assert.ok(!evicted(tolNow, tol!.metadata!.uid!), 'the tolerating pod was evicted');
    assert.equal(condition(tolNow, 'NodeTaintDetected'), undefined, 'the tolerating pod was marked');
  });

  it('a taint workflow for a Node that does not exist is refused saying so', async () => {
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
    const id = 'taint/no-such-node';
    await temporalCli(['workflow', 'start', '--type', 'taintNodeWorkflow', '--task-queue', TASK_QUEUE, '--workflow-id', id, '--input', JSON.stringify({ node: 'no-such-node' })]);
    const failure = await temporal.workflow.getHandle(id).result().then(
      () => assert.fail(`${id} completed; it should have been refused`),
      (err: unknown) => {
        assert.ok(err instanceof WorkflowFailedError, String(err));
        let text = err.message;
        for (let c: unknown = err.cause; c; c = (c as { cause?: unknown }).cause) text += ` <- ${(c as Error).message}`;
        return text;
      });
    assert.match(failure, /node no-such-node does not exist/);
    assert.doesNotMatch(failure, /carries none of the configured taints/);
  });
});
