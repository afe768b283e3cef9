import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { advance, kubeletTiming, killPod, newPodSim } from '../../src/sandbox/kubelet/lifecycle.ts';
import type { PodInputs, PodSim } from '../../src/sandbox/kubelet/lifecycle.ts';
import { podStatus, statusDiffers, statusPatch, withTransitionTime } from '../../src/sandbox/kubelet/pod-status.ts';
import type { PodCondition, StatusContext } from '../../src/sandbox/kubelet/pod-status.ts';
import { rfc3339 } from '../../src/sandbox/kubelet/time.ts';

const timing = kubeletTiming(1);
const T0 = Date.parse('2025-06-01T12:00:00Z');
const healthy: PodInputs = { healthy: true, crashAfterMs: 1000 };
const unhealthy: PodInputs = { healthy: false, crashAfterMs: 1000 };

function pod(spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  return { metadata: { name: 'web-1', namespace: 'app', uid: 'u-1' }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }], ...spec } };
}

function ctx(now: number, previous: PodCondition[] = [], gates: StatusContext['readinessGates'] = []): StatusContext {
  return { now, hostIP: '10.88.0.1', podIP: '10.244.1.2', readinessGates: gates, previous };
}

const at = (p: PodSim, inputs: PodInputs, now: number) => advance(p, inputs, now, timing);
const cond = (conditions: PodCondition[], type: string) => conditions.find((c) => c.type === type)!;

describe('simulated pod status', () => {
  it('reports a pending pod with its containers being created', () => {
    const p = at(newPodSim(pod(), T0, timing), healthy, T0);
    const s = podStatus(p, healthy, ctx(T0));
    assert.equal(s.phase, 'Pending');
    assert.deepEqual(s.podIPs, [{ ip: '10.244.1.2' }]);
    assert.deepEqual(s.hostIPs, [{ ip: '10.88.0.1' }]);
    assert.equal(s.startTime, '2025-06-01T12:00:00Z');
    assert.deepEqual(s.containerStatuses, [
      { name: 'web', image: 'nginx:1.27', imageID: s.containerStatuses[0].imageID, ready: false, started: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } }, lastState: {} },
    ]);
    assert.match(s.containerStatuses[0].imageID, /^sim:\/\/sha256:[0-9a-f]{64}$/);
    assert.equal(s.initContainerStatuses, undefined);
    assert.deepEqual(cond(s.conditions, 'ContainersReady'), {
      type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [web]', lastTransitionTime: rfc3339(T0),
    });
  });

  it('reports the four kubelet conditions, and only those', () => {
    const p = at(newPodSim(pod(), T0, timing), healthy, T0 + 1000);
    const s = podStatus(p, healthy, ctx(T0 + 1000));
    assert.deepEqual(s.conditions.map((c) => [c.type, c.status]), [
      ['PodReadyToStartContainers', 'True'], ['Initialized', 'True'], ['ContainersReady', 'True'], ['Ready', 'True'],
    ]);
    assert.equal(s.phase, 'Running');
    const c = s.containerStatuses[0];
    assert.equal(c.ready, true);
    assert.equal(c.started, true);
    assert.match(c.containerID ?? '', /^sim:\/\/[0-9a-f]{64}$/);
    assert.deepEqual(c.state, { running: { startedAt: rfc3339(T0 + 500) } });
  });

  it('moves lastTransitionTime only when a condition’s status changes', () => {
    const previous: PodCondition[] = [{ type: 'Ready', status: 'True', lastTransitionTime: '2025-01-01T00:00:00Z' }];
    assert.equal(withTransitionTime({ type: 'Ready', status: 'True' }, previous, T0).lastTransitionTime, '2025-01-01T00:00:00Z');
    assert.equal(withTransitionTime({ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }, previous, T0).lastTransitionTime, rfc3339(T0));
    assert.equal(withTransitionTime({ type: 'Initialized', status: 'True' }, previous, T0).lastTransitionTime, rfc3339(T0));
  });

  it('reports CrashLoopBackOff the way the weeder looks for it', () => {
    const p = at(newPodSim(pod(), T0, timing), unhealthy, T0 + 4_500);
    const s = podStatus(p, unhealthy, ctx(T0 + 4_500));
    const c = s.containerStatuses[0];
    assert.equal(c.state.waiting?.reason, 'CrashLoopBackOff');
    assert.match(c.state.waiting?.message ?? '', /^back-off 10s restarting failed container=web pod=web-1_app\(u-1\)$/);
    assert.equal(c.restartCount, 1);
    assert.equal(c.ready, false);
    assert.equal(c.started, false);
    assert.deepEqual(c.lastState, {
      terminated: { exitCode: 1, reason: 'Error', startedAt: rfc3339(T0 + 2_500), finishedAt: rfc3339(T0 + 3_500), containerID: c.containerID },
    });
    assert.equal(s.phase, 'Running');
    assert.equal(cond(s.conditions, 'Ready').status, 'False');
  });

  it('lists init containers separately and holds Initialized until they complete', () => {
    const spec = { initContainers: [{ name: 'migrate', image: 'tool' }] };
    let p = at(newPodSim(pod(spec), T0, timing), healthy, T0 + 600);
    let s = podStatus(p, healthy, ctx(T0 + 600));
    assert.deepEqual(cond(s.conditions, 'Initialized'), {
      type: 'Initialized', status: 'False', reason: 'ContainersNotInitialized', message: 'containers with incomplete status: [migrate]', lastTransitionTime: rfc3339(T0 + 600),
    });
    assert.deepEqual(s.containerStatuses[0].state, { waiting: { reason: 'PodInitializing' } });
    assert.equal(s.initContainerStatuses?.[0].state.running !== undefined, true);
    p = at(p, healthy, T0 + 2_000);
    s = podStatus(p, healthy, ctx(T0 + 2_000, s.conditions));
    assert.equal(cond(s.conditions, 'Initialized').status, 'True');
    const init = s.initContainerStatuses![0];
    assert.equal(init.ready, true);
    assert.deepEqual(init.state.terminated && [init.state.terminated.exitCode, init.state.terminated.reason], [0, 'Completed']);
  });

  it('holds Ready for readiness gates', () => {
    const p = at(newPodSim(pod({ readinessGates: [{ conditionType: 'example.com/lb' }] }), T0, timing), healthy, T0 + 1000);
    let s = podStatus(p, healthy, ctx(T0 + 1000, [], [{ conditionType: 'example.com/lb' }]));
    assert.equal(cond(s.conditions, 'ContainersReady').status, 'True');
    assert.deepEqual(cond(s.conditions, 'Ready'), {
      type: 'Ready', status: 'False', reason: 'ReadinessGatesNotReady', message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.', lastTransitionTime: rfc3339(T0 + 1000),
    });
    s = podStatus(p, healthy, ctx(T0 + 1000, [], [{ conditionType: 'example.com/lb', status: 'True' }]));
    assert.equal(cond(s.conditions, 'Ready').status, 'True');
  });

  it('reports a killed pod as terminal', () => {
    const p = killPod(at(newPodSim(pod(), T0, timing), healthy, T0 + 5_000), T0 + 6_000);
    const s = podStatus(p, healthy, ctx(T0 + 6_000));
    assert.equal(s.phase, 'Succeeded');
    assert.deepEqual(s.conditions.map((c) => [c.type, c.status, c.reason]), [
      ['PodReadyToStartContainers', 'False', undefined], ['Initialized', 'True', undefined], ['ContainersReady', 'False', 'PodCompleted'], ['Ready', 'False', 'PodCompleted'],
    ]);
    assert.equal(s.containerStatuses[0].state.terminated?.reason, 'Completed');
  });

  it('is the same status for the same state, so unchanged statuses are not written', () => {
    const p = at(newPodSim(pod(), T0, timing), healthy, T0 + 1000);
    const first = podStatus(p, healthy, ctx(T0 + 1000));
    const again = podStatus(at(p, healthy, T0 + 9000), healthy, ctx(T0 + 9000, first.conditions));
    assert.equal(JSON.stringify(again), JSON.stringify(first));
  });
});

describe('simulated pod status patch', () => {
  it('deletes a reason and message a condition no longer has, and names the pod by UID', () => {
    const p = at(newPodSim(pod(), T0, timing), healthy, T0 + 1000);
    const patch = statusPatch('u-1', podStatus(p, healthy, ctx(T0 + 1000)));
    assert.deepEqual(patch.metadata, { uid: 'u-1' });
    assert.deepEqual(patch.status.conditions.find((c) => c.type === 'Ready'), {
      type: 'Ready', status: 'True', reason: null, message: null, lastTransitionTime: rfc3339(T0 + 1000),
    });
  });
});

describe('noticing another writer of pod status', () => {
  const p = at(newPodSim(pod(), T0, timing), healthy, T0 + 1000);
  const written = podStatus(p, healthy, ctx(T0 + 1000));

  it('sees the same status read back, whatever shape its times take', () => {
    const readBack = JSON.parse(JSON.stringify(written)) as typeof written;
    readBack.conditions.push({ type: 'PodScheduled', status: 'True', lastTransitionTime: '2025-01-01T00:00:00Z' });
    assert.equal(statusDiffers(readBack, written), false);
  });

  it('sees the node lifecycle controller marking the pod not ready', () => {
    const marked = {
      ...written,
      conditions: written.conditions.map((c) => (c.type === 'Ready' ? { ...c, status: 'False' as const } : c)),
    };
    assert.equal(statusDiffers(marked, written), true);
    assert.equal(statusDiffers(undefined, written), true);
  });
});
