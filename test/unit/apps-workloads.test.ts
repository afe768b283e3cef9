// Workload naming and the plan from existing to desired Deployments.
import assert from 'node:assert/strict';
import type { V1Deployment } from '@kubernetes/client-node';
import { desiredDeployments, planWorkloads, workloadName } from '../../src/apps/workloads.ts';
import { APP_REV, LABEL_WORKLOAD, SPEC_HASH, type App } from '../../src/apps/types.ts';
import { shortHash } from '../../src/apps/hash.ts';

const app: App = {
  apiVersion: 'tend.dev/v1alpha1', kind: 'App',
  metadata: { name: 'hello', namespace: 'demo', uid: 'u1', generation: 1 },
  spec: { desiredState: 'STARTED', processes: [
    { type: 'web', instances: 2, template: { metadata: { labels: { role: 'web' } }, spec: { containers: [{ name: 'web', image: 'x' }] } } },
    { type: 'worker', instances: 1, template: { spec: { containers: [{ name: 'w', image: 'x' }] } } },
  ] },
};

describe('apps: workloads', () => {
  it('names a workload from the App, the process type and a short hash of last-stop-app-rev', () => {
    assert.equal(workloadName('hello', 'web', 0), `hello-web-${shortHash('0')}`);
    assert.notEqual(workloadName('hello', 'web', 1), workloadName('hello', 'web', 0));
    assert.match(workloadName('hello', 'web', 7), /^hello-web-[0-9a-f]{8}$/);
  });

  it('keeps names within 63 characters (they are label values too)', () => {
    const n = workloadName('a'.repeat(50), 'b'.repeat(20), 12);
    assert.ok(n.length <= 63, n);
    assert.doesNotMatch(n, /--/);
  });

  it('desires one Deployment per process, carrying app-rev in the pod template and owned by the App', () => {
    const ds = desiredDeployments(app, { appRev: 4, lastStopRev: 2, desiredState: 'STARTED' });
    assert.deepEqual(ds.map((d) => d.metadata!.name), [workloadName('hello', 'web', 2), workloadName('hello', 'worker', 2)]);
    const [web] = ds;
    assert.equal(web!.spec!.replicas, 2);
    assert.equal(web!.spec!.template.metadata!.annotations![APP_REV], '4');
    assert.equal(web!.spec!.template.metadata!.labels!.role, 'web', "the template's own labels are kept");
    assert.equal(web!.spec!.selector.matchLabels![LABEL_WORKLOAD], web!.metadata!.name);
    assert.deepEqual(web!.metadata!.ownerReferences, [{ apiVersion: 'tend.dev/v1alpha1', kind: 'App', name: 'hello', uid: 'u1', controller: true }]);
  });

  it('desires nothing for a stopped App', () => {
    assert.deepEqual(desiredDeployments(app, { appRev: 4, lastStopRev: 2, desiredState: 'STOPPED' }), []);
  });

  it('a rolling restart changes the spec hash, a stop changes the name', () => {
    const [a] = desiredDeployments(app, { appRev: 4, lastStopRev: 2, desiredState: 'STARTED' });
    const [b] = desiredDeployments(app, { appRev: 5, lastStopRev: 2, desiredState: 'STARTED' });
    const [c] = desiredDeployments(app, { appRev: 5, lastStopRev: 3, desiredState: 'STARTED' });
    assert.equal(a!.metadata!.name, b!.metadata!.name);
    assert.notEqual(a!.metadata!.annotations![SPEC_HASH], b!.metadata!.annotations![SPEC_HASH]);
    assert.notEqual(b!.metadata!.name, c!.metadata!.name);
  });

  const existing = (d: V1Deployment, o: { uid?: string; owner?: string; hash?: string; deleting?: boolean } = {}): V1Deployment => ({
    ...d,
    metadata: {
      ...d.metadata, uid: o.uid ?? `d-${d.metadata!.name}`, resourceVersion: '9',
      annotations: { ...d.metadata!.annotations, ...(o.hash && { [SPEC_HASH]: o.hash }) },
      ownerReferences: [{ apiVersion: 'tend.dev/v1alpha1', kind: 'App', name: 'hello', uid: o.owner ?? 'u1' }],
      ...(o.deleting && { deletionTimestamp: new Date() }),
    },
  });

  const cases: { name: string; existing: (want: V1Deployment[], old: V1Deployment[]) => V1Deployment[]; create: number; replace: number; remove: string[] }[] = [
    { name: 'nothing yet: create every process', existing: () => [], create: 2, replace: 0, remove: [] },
    { name: 'all in place: nothing to do', existing: (want) => want.map((d) => existing(d)), create: 0, replace: 0, remove: [] },
    { name: 'old revision left: deleted, new created', existing: (_want, old) => old.map((d) => existing(d)), create: 2, replace: 0, remove: [workloadName('hello', 'web', 1), workloadName('hello', 'worker', 1)] },
    { name: 'spec changed: replaced', existing: (want) => want.map((d) => existing(d, { hash: 'changed' })), create: 0, replace: 2, remove: [] },
    { name: "another App's workload of the same label is left alone", existing: (_want, old) => [existing(old[0]!, { owner: 'someone-else' })], create: 2, replace: 0, remove: [] },
    { name: 'a workload already being deleted is not deleted again', existing: (_want, old) => [existing(old[0]!, { deleting: true })], create: 2, replace: 0, remove: [] },
  ];
  for (const c of cases) {
    it(`plan: ${c.name}`, () => {
      const want = desiredDeployments(app, { appRev: 4, lastStopRev: 2, desiredState: 'STARTED' });
      const old = desiredDeployments(app, { appRev: 3, lastStopRev: 1, desiredState: 'STARTED' });
      const plan = planWorkloads(c.existing(want, old), want, 'u1');
      assert.equal(plan.create.length, c.create);
      assert.equal(plan.replace.length, c.replace);
      assert.deepEqual(plan.remove.map((d) => d.metadata!.name).sort(), c.remove.sort());
      for (const r of plan.replace) assert.equal(r.metadata!.resourceVersion, '9', 'replaced with a resourceVersion precondition');
    });
  }

  it('plan: a stopped App has every workload removed', () => {
    const have = desiredDeployments(app, { appRev: 4, lastStopRev: 2, desiredState: 'STARTED' }).map((d) => existing(d));
    assert.equal(planWorkloads(have, [], 'u1').remove.length, 2);
  });
});
