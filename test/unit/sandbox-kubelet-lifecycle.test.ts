import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { podStatus } from '../../src/sandbox/kubelet/pod-status.ts';
import {
  advance,
  containerReady,
  kubeletTiming,
  killPod,
  newPodSim,
  nextWake,
  podPhase,
} from '../../src/sandbox/kubelet/lifecycle.ts';
import type { ContainerSim, PodInputs, PodSim, Timing } from '../../src/sandbox/kubelet/lifecycle.ts';

const timing: Timing = kubeletTiming(1);
const healthy: PodInputs = { healthy: true, crashAfterMs: 1000 };
const unhealthy: PodInputs = { healthy: false, crashAfterMs: 1000 };

function pod(spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  return {
    metadata: { name: 'web-1', namespace: 'app', uid: 'u-1' },
    spec: { containers: [{ name: 'web', image: 'nginx' }], ...spec },
  };
}

/** Drives a pod the way the runner does: from wake to wake, with the inputs of the moment. */
function run(p: PodSim, inputs: (t: number) => PodInputs, until: number, from = 0): PodSim {
  let now = from;
  p = advance(p, inputs(now), now, timing);
  for (;;) {
    const wake = nextWake(p, now);
    if (wake === undefined || wake > until) break;
    now = wake;
    p = advance(p, inputs(now), now, timing);
  }
  return advance(p, inputs(until), until, timing);
}

const app = (p: PodSim, name = 'web'): ContainerSim => p.containers.find((c) => c.name === name)!;

describe('simulated container lifecycle', () => {
  it('creates, starts and readies a plain pod', () => {
    let p = newPodSim(pod(), 0, timing);
    assert.equal(podPhase(p), 'Pending');
    assert.deepEqual(app(p).state, { kind: 'waiting', reason: 'ContainerCreating', startAt: 500 });
    p = run(p, () => healthy, 10_000);
    assert.equal(podPhase(p), 'Running');
    assert.equal(app(p).state.kind, 'running');
    assert.equal(containerReady(app(p), healthy, 10_000), true);
    assert.equal(nextWake(p, 10_000), undefined, 'nothing more happens to a healthy pod');
  });

  it('waits for a readiness probe’s initial delay', () => {
    const p = run(newPodSim(pod({ containers: [{ name: 'web', image: 'nginx', readinessProbe: { initialDelaySeconds: 5 } }] }), 0, timing), () => healthy, 600);
    assert.equal(containerReady(app(p), healthy, 600), false);
    assert.equal(nextWake(p, 600), 5_500);
    assert.equal(containerReady(app(p), healthy, 5_500), true);
  });

  it('runs init containers to completion in order before the app containers', () => {
    const spec = { initContainers: [{ name: 'a', image: 'busybox' }, { name: 'b', image: 'busybox' }] };
    let p = newPodSim(pod(spec), 0, timing);
    p = run(p, () => healthy, 1_000);
    assert.equal(app(p, 'a').state.kind, 'running');
    assert.equal(app(p, 'b').state.kind, 'waiting');
    assert.deepEqual(app(p).state, { kind: 'waiting', reason: 'PodInitializing' });
    assert.equal(podPhase(p), 'Pending');
    p = run(p, () => healthy, 2_000, 1_000);
    const a = app(p, 'a').state;
    assert.ok(a.kind === 'terminated');
    assert.deepEqual([a.exitCode, a.reason, a.startedAt, a.finishedAt, a.syncAt], [0, 'Completed', 500, 1_500, undefined]);
    assert.equal(app(p, 'b').state.kind, 'running');
    p = run(p, () => healthy, 3_000, 2_000);
    assert.equal(app(p, 'b').state.kind, 'terminated');
    assert.equal(app(p).state.kind, 'running');
    assert.equal(podPhase(p), 'Running');
  });

  it('crash-loops a dependant on the kubelet schedule: at once, then 10 s, 20 s, 40 s …', () => {
    let p = newPodSim(pod(), 0, timing);
    const starts: number[] = [];
    const waits: string[] = [];
    let now = 0;
    p = advance(p, unhealthy, now, timing);
    while (now < 400_000) {
      const wake = nextWake(p, now)!;
      now = wake;
      const before = app(p);
      p = advance(p, unhealthy, now, timing);
      const after = app(p);
      if (after.state.kind === 'running' && before.state.kind !== 'running') starts.push(after.state.startedAt);
      if (after.state.kind === 'waiting' && before.state.kind !== 'waiting') waits.push(after.state.message ?? '');
    }
    // Each run lasts 1 s, the kubelet notices the exit 1 s later; the first
    // restart is immediate, then each one waits out a doubled back-off
    // counted from the exit.
    const gaps = starts.slice(1).map((s, i) => s - starts[i] - 1_000);
    assert.deepEqual(gaps.slice(0, 7), [1_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000]);
    assert.match(waits[0], /^back-off 10s restarting failed container=web pod=web-1_app\(u-1\)$/);
    assert.match(waits[5], /^back-off 5m0s /);
    assert.equal(app(p).restartCount, starts.length - 1);
  });

  it('shows the exit, then CrashLoopBackOff with the exit as lastState', () => {
    let p = run(newPodSim(pod(), 0, timing), () => unhealthy, 1_500);
    assert.deepEqual({ ...app(p).state, containerID: undefined }, { kind: 'terminated', exitCode: 1, reason: 'Error', startedAt: 500, finishedAt: 1_500, containerID: undefined, syncAt: 2_500 });
    assert.equal(podPhase(p), 'Running', 'a restartable container keeps the pod Running');
    p = run(p, () => unhealthy, 4_500, 1_500);
    const c = app(p);
    assert.equal(c.state.kind, 'waiting');
    assert.equal(c.state.kind === 'waiting' && c.state.reason, 'CrashLoopBackOff');
    assert.equal(c.lastState?.exitCode, 1);
    assert.equal(c.lastState?.finishedAt, 3_500);
    assert.equal(c.restartCount, 1);
    assert.equal(containerReady(c, unhealthy, 4_500), false);
  });

  it('does not restart early when the dependency recovers during back-off', () => {
    const recoverAt = 20_000; // during the 20 s back-off that ends at 34 500
    const inputs = (t: number) => (t < recoverAt ? unhealthy : healthy);
    let p = run(newPodSim(pod(), 0, timing), inputs, 34_000);
    assert.equal(app(p).state.kind, 'waiting');
    p = run(p, inputs, 40_000, 34_000);
    const c = app(p);
    assert.equal(c.state.kind, 'running');
    assert.equal(c.state.kind === 'running' && c.state.startedAt, 34_500);
    assert.equal(containerReady(c, healthy, 40_000), true);
    p = run(p, inputs, 1_000_000, 40_000);
    assert.equal(app(p).state.kind, 'running', 'and then it keeps running');
  });

  it('crashes a running container whose dependency goes away', () => {
    let p = run(newPodSim(pod(), 0, timing), () => healthy, 60_000);
    assert.equal(app(p).state.kind, 'running');
    p = run(p, () => unhealthy, 61_000, 60_000);
    const exited = app(p).state;
    assert.ok(exited.kind === 'terminated');
    assert.equal(exited.finishedAt, 61_000);
    p = run(p, () => unhealthy, 62_000, 61_000);
    assert.equal(app(p).state.kind, 'running', 'first crash: restarted at once');
    assert.equal(app(p).restartCount, 1);
  });

  it('forgives a container that ran 10 minutes before crashing again', () => {
    const inputs = (t: number) => (t < 100_000 || t >= 800_000 ? unhealthy : healthy);
    let p = run(newPodSim(pod(), 0, timing), inputs, 100_000);
    const entry = app(p).backoff;
    assert.ok(entry && entry.delayMs >= 40_000, 'deep in back-off');
    // Healthy from 100 s; it restarts when its back-off ends and then runs
    // for over 10 minutes before the dependency vanishes at 800 s.
    p = run(p, inputs, 800_000, 100_000);
    assert.equal(app(p).state.kind, 'running');
    p = run(p, inputs, 802_500, 800_000);
    assert.equal(app(p).state.kind, 'running', 'restarted at once: the old back-off expired');
    assert.equal(app(p).backoff?.delayMs, 10_000);
  });

  it('crash-loops unconditionally when told to fail, and stops when told not to', () => {
    let p = run(newPodSim(pod(), 0, timing), () => unhealthy, 50_000);
    assert.ok(app(p).restartCount >= 3);
    const wake = nextWake(p, 50_000)!;
    p = run(p, () => healthy, wake + 5_000, 50_000);
    assert.equal(app(p).state.kind, 'running');
  });

  it('finishes a run-to-completion pod after exit-after-seconds', () => {
    const inputs: PodInputs = { healthy: true, crashAfterMs: 1000, exitAfterMs: 5_000 };
    let p = newPodSim(pod({ restartPolicy: 'Never' }), 0, timing);
    p = run(p, () => inputs, 5_000);
    assert.equal(podPhase(p), 'Running');
    p = run(p, () => inputs, 6_000, 5_000);
    assert.equal(podPhase(p), 'Succeeded');
    const done = app(p).state;
    assert.equal(done.kind === 'terminated' && done.reason, 'Completed');
    assert.equal(nextWake(p, 6_000), undefined);
  });

  it('ignores exit-after-seconds for restartPolicy Always', () => {
    const inputs: PodInputs = { healthy: true, crashAfterMs: 1000, exitAfterMs: 5_000 };
    const p = run(newPodSim(pod(), 0, timing), () => inputs, 100_000);
    assert.equal(app(p).state.kind, 'running');
  });

  it('fails a restartPolicy Never pod whose container crashes', () => {
    const p = run(newPodSim(pod({ restartPolicy: 'Never' }), 0, timing), () => unhealthy, 10_000);
    assert.equal(podPhase(p), 'Failed');
    assert.equal(app(p).restartCount, 0);
  });

  it('restarts only failures under OnFailure', () => {
    const p = run(newPodSim(pod({ restartPolicy: 'OnFailure' }), 0, timing), () => unhealthy, 10_000);
    assert.equal(podPhase(p), 'Running');
    assert.ok(app(p).restartCount >= 1);
  });

  it('keeps a sidecar running beside the app and stops it when the app is done', () => {
    const spec = { restartPolicy: 'Never' as const, initContainers: [{ name: 'proxy', image: 'envoy', restartPolicy: 'Always' }] };
    const inputs: PodInputs = { healthy: true, crashAfterMs: 1000, exitAfterMs: 5_000 };
    let p = run(newPodSim(pod(spec), 0, timing), () => inputs, 1_000);
    assert.equal(app(p, 'proxy').state.kind, 'running');
    assert.equal(app(p).state.kind, 'running', 'the app starts once the sidecar has started');
    p = run(p, () => inputs, 10_000, 1_000);
    assert.equal(podPhase(p), 'Succeeded');
    assert.equal(app(p, 'proxy').state.kind, 'terminated');
  });

  it('kills every container when the pod is deleted', () => {
    let p = run(newPodSim(pod({ containers: [{ name: 'web', image: 'nginx' }, { name: 'dep', image: 'x' }] }), 0, timing), () => healthy, 5_000);
    p = killPod(p, 6_000);
    assert.equal(p.killed, true);
    assert.deepEqual(
      p.containers.map((c) => c.state.kind === 'terminated' && [c.state.exitCode, c.state.reason, c.state.finishedAt]),
      [[0, 'Completed', 6_000], [0, 'Completed', 6_000]],
    );
    assert.equal(podPhase(p), 'Succeeded');
    assert.equal(nextWake(p, 6_000), undefined);
    assert.equal(advance(p, unhealthy, 99_000, timing), p, 'nothing moves after the kill');
  });

  it('reports containers that never ran as lost when killed', () => {
    const p = killPod(run(newPodSim(pod(), 0, timing), () => unhealthy, 4_500), 4_600);
    const s = app(p).state;
    assert.equal(s.kind === 'terminated' && s.reason, 'ContainerStatusUnknown');
    assert.equal(podPhase(p), 'Failed');
  });

  it('scales every kubelet duration', () => {
    const fast = kubeletTiming(0.1);
    assert.deepEqual(fast, { timeScale: 0.1, createMs: 50, initRunMs: 100, syncMs: 100, backoff: { initialMs: 1_000, maxMs: 30_000 } });
  });
});

describe('simulated init containers that crash-loop', () => {
  const spec = { initContainers: [{ name: 'wait', image: 'busybox' }], containers: [{ name: 'web', image: 'nginx' }] };
  const failing: PodInputs = { healthy: true, crashAfterMs: 1000, failingInits: ['wait'] };
  const ctx = (now: number) => ({ now, hostIP: '10.0.0.1', podIP: '10.244.1.2', readinessGates: [], previous: [] });

  it('restarts a failing init container on the kubelet schedule and holds the app containers back', () => {
    // Starts at 0.5 s, exits 1 at 1.5 s, restarted at once at 2.5 s (the first crash), exits at 3.5 s,
    // then back-off 10 s from that exit.
    let p = run(newPodSim(pod(spec), 0, timing), () => failing, 5_000);
    const init = app(p, 'wait');
    assert.equal(init.restartCount, 1);
    assert.deepEqual(init.state, {
      kind: 'waiting', reason: 'CrashLoopBackOff', startAt: 13_500,
      message: 'back-off 10s restarting failed container=wait pod=web-1_app(u-1)',
    });
    assert.deepEqual([init.lastState?.exitCode, init.lastState?.reason, init.lastState?.finishedAt], [1, 'Error', 3_500]);
    assert.deepEqual(app(p).state, { kind: 'waiting', reason: 'PodInitializing' });
    assert.equal(podPhase(p), 'Pending');
    p = run(p, () => failing, 60_000, 5_000);
    assert.ok(app(p, 'wait').restartCount >= 3, 'it keeps crash-looping');
    assert.equal(app(p).state.kind, 'waiting');
  });

  it('reports what a kubelet reports: CrashLoopBackOff in initContainerStatuses, Pending, Initialized=False', () => {
    const p = run(newPodSim(pod(spec), 0, timing), () => failing, 5_000);
    const s = podStatus(p, failing, ctx(5_000));
    assert.equal(s.phase, 'Pending');
    const [init] = s.initContainerStatuses!;
    assert.equal(init!.name, 'wait');
    assert.equal(init!.state.waiting?.reason, 'CrashLoopBackOff');
    assert.match(init!.state.waiting?.message ?? '', /^back-off 10s restarting failed container=wait pod=/);
    assert.equal(init!.restartCount, 1);
    assert.equal(init!.ready, false);
    assert.deepEqual([init!.lastState.terminated?.exitCode, init!.lastState.terminated?.reason], [1, 'Error']);
    assert.equal(s.containerStatuses[0]!.state.waiting?.reason, 'PodInitializing');
    assert.equal(s.containerStatuses[0]!.restartCount, 0);
    const initialized = s.conditions.find((c) => c.type === 'Initialized');
    assert.deepEqual([initialized?.status, initialized?.reason, initialized?.message],
      ['False', 'ContainersNotInitialized', 'containers with incomplete status: [wait]']);
    assert.equal(s.conditions.find((c) => c.type === 'Ready')?.status, 'False');
  });

  it('completes on the first run after it stops failing (not before its back-off ends), and the app starts', () => {
    let p = run(newPodSim(pod(spec), 0, timing), () => failing, 5_000);
    p = run(p, () => healthy, 13_000, 5_000);
    assert.equal(app(p, 'wait').state.kind, 'waiting', 'still in back-off');
    p = run(p, () => healthy, 16_000, 13_000);
    const done = app(p, 'wait').state;
    assert.ok(done.kind === 'terminated');
    assert.deepEqual([done.exitCode, done.startedAt, done.finishedAt], [0, 13_500, 14_500]);
    assert.equal(app(p).state.kind, 'running');
    assert.equal(podPhase(p), 'Running');
  });

  it('fails the pod when a failing init container may not restart (restartPolicy Never)', () => {
    const p = run(newPodSim(pod({ ...spec, restartPolicy: 'Never' }), 0, timing), () => failing, 10_000);
    const s = app(p, 'wait').state;
    assert.ok(s.kind === 'terminated');
    assert.deepEqual([s.exitCode, s.syncAt, app(p, 'wait').restartCount], [1, undefined, 0]);
    assert.equal(podPhase(p), 'Failed');
  });

  it('fails a running init container that starts failing before it completes', () => {
    const quick: PodInputs = { ...failing, crashAfterMs: 200 };
    let p = run(newPodSim(pod(spec), 0, timing), () => healthy, 1_000);
    assert.equal(app(p, 'wait').state.kind, 'running');
    p = run(p, (t) => (t >= 1_000 ? quick : healthy), 1_300, 1_000);
    const s = app(p, 'wait').state;
    assert.ok(s.kind === 'terminated');
    assert.deepEqual([s.exitCode, s.finishedAt], [1, 1_200]);
  });

  it('leaves the init containers it does not name alone', () => {
    const two = { initContainers: [{ name: 'first', image: 'busybox' }, { name: 'wait', image: 'busybox' }], containers: [{ name: 'web', image: 'nginx' }] };
    const p = run(newPodSim(pod(two), 0, timing), () => failing, 5_000);
    const first = app(p, 'first').state;
    assert.ok(first.kind === 'terminated' && first.exitCode === 0);
    assert.equal(app(p, 'wait').restartCount, 1);
  });
});
