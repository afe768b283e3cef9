// computeStatus: actualState from ready instances, the Ready condition, instances per process across revisions.
import assert from 'node:assert/strict';
import type { V1Deployment } from '@kubernetes/client-node';
import { computeStatus } from '../../src/apps/status.ts';
import { desiredDeployments } from '../../src/apps/workloads.ts';
import type { RevisionDecision } from '../../src/apps/revisions.ts';
import type { App, DesiredState } from '../../src/apps/types.ts';

const now = new Date('2026-01-01T00:00:00Z');
const app = (desiredState: DesiredState, instances = 2): App => ({
  apiVersion: 'tend.dev/v1alpha1', kind: 'App',
  metadata: { name: 'hello', namespace: 'demo', uid: 'u1', generation: 3 },
  spec: { desiredState, processes: [{ type: 'web', instances, template: { spec: { containers: [{ name: 'web', image: 'x' }] } } }] },
});
const revs = (desiredState: DesiredState, appRev = 4, lastStopRev = 2): RevisionDecision => ({ appRev, lastStopRev, desiredState });

/** The workload of `r`, with its rollout at `ready` of `replicas` (updated = ready), observed or not. */
function workload(r: RevisionDecision, o: { ready: number; replicas?: number; updated?: number; stale?: boolean; instances?: number }): V1Deployment {
  const [d] = desiredDeployments(app('STARTED', o.instances ?? 2), { ...r, desiredState: 'STARTED' });
  return {
    ...d, metadata: { ...d!.metadata, generation: 2 },
    status: { observedGeneration: o.stale ? 1 : 2, replicas: o.replicas ?? o.ready, readyReplicas: o.ready, updatedReplicas: o.updated ?? o.ready },
  };
}

interface Case {
  name: string;
  app: App;
  revs: RevisionDecision;
  workloads: V1Deployment[];
  problem?: string;
  want: { actualState: string; settled: boolean; ready: string; reason: string; readyInstances?: number; revisions?: number };
}

const cases: Case[] = [
  { name: 'started, rolled out: STARTED, Ready', app: app('STARTED'), revs: revs('STARTED'), workloads: [workload(revs('STARTED'), { ready: 2 })],
    want: { actualState: 'STARTED', settled: true, ready: 'True', reason: 'Running', readyInstances: 2, revisions: 1 } },
  { name: 'started, no workload yet: STARTING', app: app('STARTED'), revs: revs('STARTED'), workloads: [],
    want: { actualState: 'STARTING', settled: false, ready: 'False', reason: 'RollingOut', readyInstances: 0, revisions: 0 } },
  { name: 'started, 1 of 2 ready: STARTING', app: app('STARTED'), revs: revs('STARTED'), workloads: [workload(revs('STARTED'), { ready: 1 })],
    want: { actualState: 'STARTING', settled: false, ready: 'False', reason: 'RollingOut', readyInstances: 1 } },
  { name: 'started, old revision still there: STARTING, both counted', app: app('STARTED'), revs: revs('STARTED'),
    workloads: [workload(revs('STARTED'), { ready: 2 }), workload(revs('STARTED', 3, 1), { ready: 2 })],
    want: { actualState: 'STARTING', settled: false, ready: 'False', reason: 'RollingOut', readyInstances: 2, revisions: 2 } },
  { name: 'rolling: old pods still counted in replicas', app: app('STARTED'), revs: revs('STARTED'), workloads: [workload(revs('STARTED'), { ready: 3, replicas: 3, updated: 2 })],
    want: { actualState: 'STARTING', settled: false, ready: 'False', reason: 'RollingOut' } },
  { name: 'rolling: the Deployment has not observed its new template yet', app: app('STARTED'), revs: revs('STARTED'), workloads: [workload(revs('STARTED'), { ready: 2, stale: true })],
    want: { actualState: 'STARTING', settled: false, ready: 'False', reason: 'RollingOut' } },
  { name: 'rolling: the workload still has the previous app-rev', app: app('STARTED'), revs: revs('STARTED', 5), workloads: [workload(revs('STARTED', 4), { ready: 2 })],
    want: { actualState: 'STARTING', settled: false, ready: 'False', reason: 'RollingOut' } },
  { name: 'scaled to 0: STARTED', app: app('STARTED', 0), revs: revs('STARTED'), workloads: [workload(revs('STARTED'), { ready: 0, instances: 0 })],
    want: { actualState: 'STARTED', settled: true, ready: 'True', reason: 'Running', readyInstances: 0 } },
  { name: 'stopped, workloads gone: STOPPED, Ready', app: app('STOPPED'), revs: revs('STOPPED'), workloads: [],
    want: { actualState: 'STOPPED', settled: true, ready: 'True', reason: 'Stopped', readyInstances: 0 } },
  { name: 'stopped, a workload left: STOPPING', app: app('STOPPED'), revs: revs('STOPPED'), workloads: [workload(revs('STARTED'), { ready: 2 })],
    want: { actualState: 'STOPPING', settled: false, ready: 'False', reason: 'Stopping' } },
  { name: 'a workload the API server refused: InvalidSpec, not settled', app: app('STARTED'), revs: revs('STARTED'), workloads: [], problem: 'spec.template.spec.containers: Required value',
    want: { actualState: 'STARTING', settled: false, ready: 'False', reason: 'InvalidSpec' } },
];

describe('apps: computeStatus', () => {
  for (const c of cases) {
    it(c.name, () => {
      const { status, settled } = computeStatus({ app: c.app, revs: c.revs, workloads: c.workloads, problem: c.problem, now });
      const ready = status.conditions!.find((x) => x.type === 'Ready')!;
      assert.equal(status.actualState, c.want.actualState);
      assert.equal(settled, c.want.settled);
      assert.equal(ready.status, c.want.ready);
      assert.equal(ready.reason, c.want.reason);
      assert.equal(status.observedGeneration, 3);
      assert.equal(status.observedDesiredState, c.revs.desiredState);
      if (c.want.readyInstances !== undefined) assert.equal(status.processes![0]!.readyInstances, c.want.readyInstances);
      if (c.want.revisions !== undefined) assert.equal(status.processes![0]!.revisions.length, c.want.revisions);
    });
  }

  it('keeps the Ready condition\'s lastTransitionTime while its status holds', () => {
    const first = computeStatus({ app: app('STARTED'), revs: revs('STARTED'), workloads: [workload(revs('STARTED'), { ready: 2 })], now }).status;
    const later = computeStatus({ app: { ...app('STARTED'), status: first }, revs: revs('STARTED'), workloads: [workload(revs('STARTED'), { ready: 2 })], now: new Date('2026-02-01T00:00:00Z') }).status;
    assert.equal(later.conditions![0]!.lastTransitionTime, now.toISOString());
  });
});
