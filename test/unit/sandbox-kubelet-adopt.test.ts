import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { adoptPodSim } from '../../src/sandbox/kubelet/adopt.ts';
import { advance, kubeletTiming } from '../../src/sandbox/kubelet/lifecycle.ts';

const timing = kubeletTiming(1);
const now = Date.parse('2025-06-01T12:10:00Z');

function pod(status: V1Pod['status']): V1Pod {
  return {
    metadata: { name: 'web-1', namespace: 'app', uid: 'u-1' },
    spec: { initContainers: [{ name: 'init', image: 'tool' }], containers: [{ name: 'web', image: 'nginx' }, { name: 'side', image: 'x' }] },
    status,
  };
}

describe('adopting pods from an earlier run', () => {
  it('leaves pods alone that no kubelet ran', () => {
    assert.equal(adoptPodSim(pod(undefined), now, timing), undefined);
    assert.equal(adoptPodSim(pod({ phase: 'Pending' }), now, timing), undefined);
  });

  it('keeps running containers running and restarts the ones in back-off now', () => {
    const sim = adoptPodSim(
      pod({
        phase: 'Running',
        startTime: new Date('2025-06-01T12:00:00Z'), // as a list call returns it
        initContainerStatuses: [
          { name: 'init', image: 'tool', imageID: '', ready: true, restartCount: 0, state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: new Date('2025-06-01T12:00:02Z') } } },
        ],
        containerStatuses: [
          { name: 'web', image: 'nginx', imageID: '', ready: true, restartCount: 2, containerID: 'sim://abc', state: { running: { startedAt: '2025-06-01T12:05:00Z' as unknown as Date } } },
          {
            name: 'side', image: 'x', imageID: '', ready: false, restartCount: 4,
            state: { waiting: { reason: 'CrashLoopBackOff' } },
            lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: new Date('2025-06-01T12:09:00Z'), containerID: 'sim://def' } },
          },
        ],
      }),
      now,
      timing,
    );
    assert.ok(sim);
    assert.equal(sim.startTime, Date.parse('2025-06-01T12:00:00Z'));
    const [init, web, side] = sim.containers;
    assert.equal(init.state.kind, 'terminated');
    assert.deepEqual(web.state, { kind: 'running', startedAt: Date.parse('2025-06-01T12:05:00Z'), containerID: 'sim://abc', readyAt: Date.parse('2025-06-01T12:05:00Z') });
    assert.equal(web.restartCount, 2);
    assert.deepEqual(side.state, { kind: 'waiting', reason: 'CrashLoopBackOff', startAt: now });
    const after = advance(sim, { healthy: true, crashAfterMs: 1000 }, now, timing);
    assert.equal(after.containers[2].state.kind, 'running');
    assert.equal(after.containers[2].restartCount, 5);
    assert.equal(after.containers[1].restartCount, 2, 'the running one is untouched');
  });
});
