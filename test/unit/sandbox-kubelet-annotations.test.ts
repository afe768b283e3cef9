import assert from 'node:assert/strict';
import { failingInits, heartbeatStopped, parseDependsOn, podBehaviour, unknownInitNames } from '../../src/sandbox/kubelet/annotations.ts';

describe('simulated kubelet annotations', () => {
  it('reads a dependency in the pod namespace or another', () => {
    assert.deepEqual(parseDependsOn('etcd', 'app'), ['app/etcd']);
    assert.deepEqual(parseDependsOn('db/etcd', 'app'), ['db/etcd']);
    assert.deepEqual(parseDependsOn(' etcd , db/cache ,', 'app'), ['app/etcd', 'db/cache']);
    assert.deepEqual(parseDependsOn(undefined, 'app'), []);
  });

  it('defaults a pod to healthy, crashing after 1 s when it must', () => {
    assert.deepEqual(podBehaviour({ namespace: 'app' }), { dependsOn: [], fail: false, crashAfterSeconds: 1, exitAfterSeconds: undefined, failInits: [], initDependsOn: [] });
  });

  it('reads fail, crash-after and exit-after', () => {
    const b = podBehaviour({
      namespace: 'app',
      annotations: {
        'sim.tend.dev/fail': 'True',
        'sim.tend.dev/crash-after-seconds': '2.5',
        'sim.tend.dev/exit-after-seconds': '30',
        'sim.tend.dev/depends-on': 'etcd',
      },
    });
    assert.deepEqual(b, { dependsOn: ['app/etcd'], fail: true, crashAfterSeconds: 2.5, exitAfterSeconds: 30, failInits: [], initDependsOn: [] });
  });

  it('ignores numbers it cannot use', () => {
    const b = podBehaviour({ annotations: { 'sim.tend.dev/crash-after-seconds': '-1', 'sim.tend.dev/exit-after-seconds': 'soon' } });
    assert.equal(b.crashAfterSeconds, 1);
    assert.equal(b.exitAfterSeconds, undefined);
  });

  it('reads the init containers told to fail, and those waiting for the depends-on Services', () => {
    const b = podBehaviour({
      namespace: 'app',
      annotations: { 'sim.tend.dev/fail-init': ' migrate , seed,migrate', 'sim.tend.dev/init-depends-on': 'wait-for-db', 'sim.tend.dev/depends-on': 'db' },
    });
    assert.deepEqual([b.failInits, b.initDependsOn, b.dependsOn], [['migrate', 'seed'], ['wait-for-db'], ['app/db']]);
  });

  it('fails init-depends-on containers only while the Services are not ready; fail-init ones always', () => {
    const b = { failInits: ['migrate'], initDependsOn: ['wait-for-db'] };
    assert.deepEqual(failingInits(b, false), ['migrate', 'wait-for-db']);
    assert.deepEqual(failingInits(b, true), ['migrate']);
    assert.deepEqual(failingInits({ failInits: [], initDependsOn: [] }, false), []);
  });

  it('names annotated containers that are no init container of the pod (sidecars excluded)', () => {
    const inits = [{ name: 'wait-for-db' }, { name: 'proxy', restartPolicy: 'Always' }];
    assert.deepEqual(unknownInitNames({ failInits: ['proxy', 'web'], initDependsOn: ['wait-for-db'] }, inits), ['proxy', 'web']);
    assert.deepEqual(unknownInitNames({ failInits: [], initDependsOn: ['wait-for-db'] }, inits), []);
  });

  it('stops heartbeats only for "stopped"', () => {
    assert.equal(heartbeatStopped({ annotations: { 'sim.tend.dev/heartbeat': 'stopped' } }), true);
    assert.equal(heartbeatStopped({ annotations: { 'sim.tend.dev/heartbeat': 'running' } }), false);
    assert.equal(heartbeatStopped({}), false);
  });
});
