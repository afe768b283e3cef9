// The sandbox is real: the scheduler binds pods, the endpointslice controller
// writes slices from pod readiness, the node lifecycle controller taints a
// silent node, and the simulated kubelet follows kubelet's back-off.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import type { KubeClients } from '../../src/kube/client.ts';
import { admin, deleteNamespace, deployment, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { sandbox } from '../harness/hooks.ts';
import { runTend } from '../harness/cli.ts';
import { waitFor } from '../harness/wait.ts';
import { testSettings, testStateDir } from '../harness/env.ts';
import { up } from '../../src/sandbox/sandbox.ts';
import { applyObjects } from '../../src/sandbox/bootstrap.ts';
import { statusOf } from '../../src/kube/client.ts';
import { parseConfig } from '../../src/config/load.ts';
import { rbacObjects } from '../../src/rbac/generate.ts';

function crashLooping(pod: k8s.V1Pod): k8s.V1ContainerStatus | undefined {
  return pod.status?.containerStatuses?.find((c) => c.state?.waiting?.reason === 'CrashLoopBackOff');
}

async function sliceEndpoints(kube: KubeClients, namespace: string, svc: string) {
  const slices = await kube.discovery.listNamespacedEndpointSlice({
    namespace, labelSelector: `kubernetes.io/service-name=${svc}`,
  });
  return slices.items;
}

describe('sandbox (real control plane, simulated kubelet)', function () {
  let kube: KubeClients;
  let ns: string;

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'sandbox');
  });
  after(async () => deleteNamespace(kube, ns));

  it('schedules a Deployment\'s pods onto simulated nodes and makes them Ready', async () => {
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'web', replicas: 3 }) });
    const pods = await waitFor('3 web pods Ready', async () => {
      const p = await podsOf(kube, ns, 'app=web');
      return p.length === 3 && p.every(isReady) && p;
    });
    const nodes = new Set((await kube.core.listNode({ labelSelector: 'sim.tend.dev/node=true' })).items.map((n) => n.metadata!.name));
    for (const p of pods) {
      assert.ok(nodes.has(p.spec!.nodeName!), `pod ${p.metadata!.name} bound to a simulated node (got ${p.spec!.nodeName})`);
      assert.equal(p.status!.phase, 'Running');
      assert.match(p.status!.podIP ?? '', /^\d+\.\d+\.\d+\.\d+$/);
      assert.equal(p.status!.containerStatuses![0]!.ready, true);
    }
    assert.equal(new Set(pods.map((p) => p.status!.podIP)).size, 3, 'every pod has its own IP');
    const d = await waitFor('Deployment status to report 3 ready replicas', async () => {
      const dep = await kube.apps.readNamespacedDeployment({ namespace: ns, name: 'web' });
      return dep.status?.readyReplicas === 3 && dep;
    });
    assert.equal(d.status!.availableReplicas, 3);
  });

  it('turns a Service\'s EndpointSlice ready through the real endpointslice controller', async () => {
    await kube.core.createNamespacedService({ namespace: ns, body: service(ns, 'web', { app: 'web' }) });
    const slices = await waitFor('an EndpointSlice with 3 ready endpoints', async () => {
      const s = await sliceEndpoints(kube, ns, 'web');
      const ready = s.flatMap((x) => x.endpoints ?? []).filter((e) => e.conditions?.ready !== false);
      return ready.length === 3 && s;
    });
    assert.equal(slices[0]!.metadata!.labels!['endpointslice.kubernetes.io/managed-by'], 'endpointslice-controller.k8s.io');
  });

  it('crash-loops a dependant with growing back-off while its Service has no ready endpoint, and recovers after', async () => {
    const scale = sandbox().settings.timeScale;
    await kube.core.createNamespacedService({ namespace: ns, body: service(ns, 'upstream', { app: 'upstream' }) });
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'upstream', replicas: 0 }) });
    await kube.apps.createNamespacedDeployment({
      namespace: ns,
      body: deployment({ namespace: ns, name: 'dependant', replicas: 1, annotations: { 'sim.tend.dev/depends-on': 'upstream' } }),
    });

    // Record each restart as it happens: the gaps between them must grow.
    const restarts: number[] = [];
    await waitFor('3 restarts in CrashLoopBackOff', async () => {
      const [pod] = await podsOf(kube, ns, 'app=dependant');
      const cs = pod && crashLooping(pod);
      if (cs && !restarts.includes(cs.restartCount)) restarts.push(cs.restartCount);
      return cs && cs.restartCount >= 3 && cs;
    }, { timeoutMs: 120_000 * scale + 30_000, intervalMs: 100 });
    const [pod] = await podsOf(kube, ns, 'app=dependant');
    assert.equal(isReady(pod!), false, 'a crash-looping pod is not Ready');
    const cs = pod!.status!.containerStatuses![0]!;
    assert.equal(cs.lastState?.terminated?.exitCode, 1);
    assert.match(cs.state!.waiting!.message ?? '', /back-off \S+ restarting failed container/);

    // Each crash leaves its run in lastState.terminated for the whole back-off
    // that follows; the gap between one run's end and the next run's start is
    // the back-off kubelet applied.
    const runs = new Map<string, { startedAt: number; finishedAt: number }>();
    await waitFor('three more crashes to measure back-off', async () => {
      const [p] = await podsOf(kube, ns, 'app=dependant');
      const term = p?.status?.containerStatuses?.[0]?.lastState?.terminated;
      if (term?.startedAt && term.finishedAt) {
        runs.set(String(term.startedAt), { startedAt: new Date(term.startedAt).getTime(), finishedAt: new Date(term.finishedAt).getTime() });
      }
      return runs.size >= 3;
    }, { timeoutMs: 700_000 * scale + 30_000, intervalMs: 100 });
    const ordered = [...runs.values()].sort((a, b) => a.startedAt - b.startedAt);
    const gaps = ordered.slice(1).map((r, i) => r.startedAt - ordered[i]!.finishedAt);
    assert.ok(gaps[1]! > gaps[0]! * 1.5, `back-off grows: ${gaps.join(' ms, ')} ms`);

    await kube.apps.patchNamespacedDeploymentScale(
      { namespace: ns, name: 'upstream', body: [{ op: 'replace', path: '/spec/replicas', value: 1 }] },
    );
    const recovered = await waitFor('the dependant to run and be Ready once upstream is ready', async () => {
      const [p] = await podsOf(kube, ns, 'app=dependant');
      return p && isReady(p) && p;
    }, { timeoutMs: 320_000 * scale + 30_000 });
    assert.ok(recovered.status!.containerStatuses![0]!.restartCount >= 4, 'it was the same pod, restarted, not a new one');
  });

  it('crash-loops an init container told to, or while its upstream has no ready endpoint, as a kubelet reports it', async () => {
    const scale = sandbox().settings.timeScale;
    const withInit = (name: string, annotations: Record<string, string>) => {
      const d = deployment({ namespace: ns, name, replicas: 1, annotations });
      d.spec!.template.spec!.initContainers = [{ name: 'wait-for-db', image: 'registry.example/wait:1' }];
      return d;
    };
    await kube.core.createNamespacedService({ namespace: ns, body: service(ns, 'db', { app: 'db' }) });
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 0 }) });
    await kube.apps.createNamespacedDeployment({
      namespace: ns, body: withInit('waits', { 'sim.tend.dev/depends-on': 'db', 'sim.tend.dev/init-depends-on': 'wait-for-db' }),
    });
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: withInit('broken', { 'sim.tend.dev/fail-init': 'wait-for-db' }) });

    const initLooping = (p: k8s.V1Pod | undefined) => {
      const cs = p?.status?.initContainerStatuses?.[0];
      return cs?.state?.waiting?.reason === 'CrashLoopBackOff' && cs.restartCount >= 2 ? p : undefined;
    };
    for (const app of ['waits', 'broken']) {
      const pod = await waitFor(`${app}: its init container in CrashLoopBackOff, restarted twice`, async () =>
        initLooping((await podsOf(kube, ns, `app=${app}`))[0]), { timeoutMs: 120_000 * scale + 30_000, intervalMs: 100 });
      const init = pod.status!.initContainerStatuses![0]!;
      assert.equal(init.name, 'wait-for-db');
      assert.equal(init.lastState?.terminated?.exitCode, 1);
      assert.match(init.state!.waiting!.message ?? '', /back-off \S+ restarting failed container=wait-for-db/);
      assert.equal(pod.status!.phase, 'Pending');
      const initialized = pod.status!.conditions!.find((c) => c.type === 'Initialized');
      assert.deepEqual([initialized?.status, initialized?.reason], ['False', 'ContainersNotInitialized']);
      assert.equal(pod.status!.containerStatuses![0]!.state?.waiting?.reason, 'PodInitializing');
    }

    // The upstream comes up: the waiting init container completes on its next run and the app starts.
    await kube.apps.patchNamespacedDeploymentScale(
      { namespace: ns, name: 'db', body: [{ op: 'replace', path: '/spec/replicas', value: 1 }] },
    );
    const ready = await waitFor('waits: initialised and Ready once db is ready', async () => {
      const [p] = await podsOf(kube, ns, 'app=waits');
      return p && isReady(p) && p;
    }, { timeoutMs: 320_000 * scale + 30_000 });
    assert.equal(ready.status!.initContainerStatuses![0]!.state?.terminated?.exitCode, 0);
    const [broken] = await podsOf(kube, ns, 'app=broken');
    assert.equal(broken!.status!.phase, 'Pending', 'fail-init keeps failing whatever the Services do');
  });

  it('deletes a namespace whose pods depend on a Service in it, within a bounded time', async () => {
    // The Service and its slices go with the namespace while the pods are in
    // their grace period: that must not cancel their kill.
    const doomed = await tempNamespace(kube, 'doomed');
    await kube.core.createNamespacedService({ namespace: doomed, body: service(doomed, 'upstream', { app: 'upstream' }) });
    await kube.apps.createNamespacedDeployment({ namespace: doomed, body: deployment({ namespace: doomed, name: 'upstream', replicas: 1 }) });
    await kube.apps.createNamespacedDeployment({
      namespace: doomed,
      body: deployment({ namespace: doomed, name: 'dependant', replicas: 3, annotations: { 'sim.tend.dev/depends-on': 'upstream' } }),
    });
    await waitFor('upstream and 3 dependants Ready', async () => {
      const p = await podsOf(kube, doomed, 'app in (upstream,dependant)');
      return p.length === 4 && p.every(isReady);
    }, { timeoutMs: 60_000 });
    await kube.core.deleteNamespace({ name: doomed });
    // Pods are killed after at most 1 kubelet second (scaled); the namespace
    // controller then finishes within seconds. Minutes means pods were stuck.
    await waitFor(`namespace ${doomed} gone`, async () => {
      try {
        await kube.core.readNamespace({ name: doomed });
        return false;
      } catch (err) {
        return statusOf(err) === 404;
      }
    }, { timeoutMs: 60_000, intervalMs: 500 });
  });

  it('gets the real node.kubernetes.io/unreachable taint when a node\'s heartbeats stop, and loses it when they resume', async () => {
    const node = `sim-${sandbox().settings.nodes}`;
    const taintOf = async () => (await kube.core.readNode({ name: node })).spec?.taints?.find((t) => t.key === 'node.kubernetes.io/unreachable');
    const stop = await runTend(['sandbox', 'node', 'stop', node, '--state-dir', testStateDir]);
    assert.equal(stop.code, 0, stop.stderr);
    try {
      const taint = await waitFor(`taint node.kubernetes.io/unreachable on ${node}`, taintOf, {
        timeoutMs: (sandbox().settings.nodeMonitorGraceSeconds + 30) * 1000,
      });
      assert.ok(['NoSchedule', 'NoExecute'].includes(taint.effect));
      const ready = (await kube.core.readNode({ name: node })).status!.conditions!.find((c) => c.type === 'Ready');
      assert.equal(ready!.status, 'Unknown', 'the node lifecycle controller set Ready=Unknown');
    } finally {
      const start = await runTend(['sandbox', 'node', 'start', node, '--state-dir', testStateDir]);
      assert.equal(start.code, 0, start.stderr);
    }
    await waitFor(`${node} untainted and Ready again`, async () => !(await taintOf()), { timeoutMs: 60_000 });
  });

  it('starts with a Node left stopped: says it is stopped, and `tend sandbox node start` brings it back', async function () {
    this.timeout(240_000);
    const node = `sim-${sandbox().settings.nodes}`;
    const readyOf = async () => (await kube.core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status;
    const stop = await runTend(['sandbox', 'node', 'stop', node, '--state-dir', testStateDir]);
    assert.equal(stop.code, 0, stop.stderr);
    try {
      await waitFor(`${node} no longer Ready`, async () => (await readyOf()) !== 'True', {
        timeoutMs: (sandbox().settings.nodeMonitorGraceSeconds + 30) * 1000,
      });
      // The kubelet's start-up check is what `tend sandbox up` (npm start) waits on when it runs already.
      const started = Date.now();
      const again = await runTend(['sandbox', 'up', '--state-dir', testStateDir], { timeoutMs: 120_000 });
      assert.equal(again.code, 0, again.stderr);
      assert.ok(Date.now() - started < 45_000, `sandbox up took ${Date.now() - started} ms: it waited for the stopped node`);
      assert.match(again.stderr, new RegExp(`node ${node} is stopped \\(sim\\.tend\\.dev/heartbeat=stopped\\).*tend sandbox node start ${node}`));
    } finally {
      const start = await runTend(['sandbox', 'node', 'start', node, '--state-dir', testStateDir]);
      assert.equal(start.code, 0, start.stderr);
    }
    await waitFor(`${node} Ready again`, async () => (await readyOf()) === 'True', { timeoutMs: 60_000 });
  });

  it('applies the rights generated for its own tend.yaml, and removes generated rights it no longer needs', async function () {
    this.timeout(120_000);
    const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1' };
    // A generated grant an earlier configuration needed and the current one does not.
    await applyObjects(sandbox().kubeconfig, [{
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole',
      metadata: { name: 'tend-stale-grant', labels: { 'rbac.tend.dev/generated': 'true', 'rbac.tend.dev/name': 'tend' } },
      rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['create'] }],
    } as object]);
    const said: string[] = [];
    await up({ stateDir: testStateDir, settings: testSettings, progress: (m) => said.push(m) });
    assert.ok(said.some((m) => /applied \d+ RBAC objects generated for .*tend\.yaml; removed \d+ .*ClusterRole\/\/tend-stale-grant/.test(m)), said.join('\n'));
    const stale = await kube.custom.getClusterCustomObject({ ...rbac, plural: 'clusterroles', name: 'tend-stale-grant' }).then(() => 200, (e) => statusOf(e));
    assert.equal(stale, 404, 'the stale grant is gone');
    // The sandbox's tend.yaml lists demo in apps.namespaces: its Role is there, bound to tend's ServiceAccount.
    const binding = await kube.custom.getNamespacedCustomObject({ ...rbac, plural: 'rolebindings', namespace: 'demo', name: 'tend-apps' }) as
      { roleRef: { kind: string; name: string }; subjects: { kind: string; name: string; namespace: string }[] };
    assert.deepEqual([binding.roleRef.kind, binding.roleRef.name], ['Role', 'tend-apps']);
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'tend', namespace: 'tend-system' }]);
  });

  it("leaves another tend's generated rights alone (another --name), and removes an older version's only when they are its own", async function () {
    this.timeout(120_000);
    const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1' };
    const other = `other-${ns}`;
    // Another tend's rights, as `tend rbac --name <other>` generates them, and one of an older version (no name label).
    const others = rbacObjects(parseConfig('apps: {}\n', 'other.yaml'), { name: other });
    const legacy = (name: string) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole',
      metadata: { name, labels: { 'rbac.tend.dev/generated': 'true', 'rbac.tend.dev/capability': 'weeder' } },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
    });
    // The sandbox's weeder is namespaced: a cluster-wide tend-weeder is what an older tend.yaml needed.
    const mine = legacy('tend-weeder');
    const theirs = legacy(`${other}-weeder`);
    const ambiguous = legacy('tend-node-repair');
    const gone = async (name: string) => kube.custom.getClusterCustomObject({ ...rbac, plural: 'clusterroles', name }).then(() => false, (e) => statusOf(e) === 404);
    try {
      await applyObjects(sandbox().kubeconfig, [...others, mine, theirs, ambiguous] as object[]);
      await up({ stateDir: testStateDir, settings: testSettings, progress: () => undefined });
      for (const o of others) {
        const plural = `${o.kind.toLowerCase()}s`;
        const found = await kube.custom.getClusterCustomObject({ ...rbac, plural, name: o.metadata.name }).then(() => true, () => false);
        assert.ok(found, `${o.kind} ${o.metadata.name} of tend ${other} is still there`);
      }
      assert.equal(await gone(`${other}-weeder`), false, "another tend's object of an older version stays");
      assert.equal(await gone('tend-node-repair'), false, 'an older object that could be tend-node\'s stays');
      assert.equal(await gone('tend-weeder'), true, "the sandbox's own object of an older version, no longer needed, is gone");
    } finally {
      for (const o of [...others, mine, theirs, ambiguous]) {
        const plural = `${o.kind.toLowerCase()}s`;
        await kube.custom.deleteClusterCustomObject({ ...rbac, plural, name: o.metadata.name }).catch(() => undefined);
      }
    }
  });
});
