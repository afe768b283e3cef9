import assert from 'node:assert/strict';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  containerEnv, containerMounts, endOfInspected, envParts, probeTally, probeUrl, restarts, runArgs, runsForReal, sourcesNeeded, volumeLayouts,
} from '../../src/sandbox/kubelet/podman-spec.ts';
import type { PodPlace, PodSources } from '../../src/sandbox/kubelet/podman-spec.ts';

const place: PodPlace = { apiserverHost: '127.0.0.1', apiserverPort: 17823, nodeName: 'sim-2', hostIP: '10.0.0.2' };
const sources: PodSources = {
  configMaps: new Map<string, Record<string, string>>([['cfg', { 'config.yaml': 'a: 1\n', other: 'x' }], ['env', { A: '1', B: '2' }]]),
  secrets: new Map([['sec', { key: 'k3y' }]]),
  token: 'TOKEN',
  caCert: 'PEM',
};

function pod(spec: Partial<V1Pod['spec']> & { containers?: V1Container[] }): V1Pod {
  return { metadata: { name: 'p', namespace: 'ns', uid: 'u-1' }, spec: { containers: [], ...spec } };
}

describe('sandbox kubelet podman-spec', () => {
  describe('runsForReal', () => {
    const cases = [
      { name: 'no prefixes: simulated', images: ['localhost/tend:1'], prefixes: [], real: false },
      { name: 'every image under a prefix', images: ['localhost/tend:1', 'localhost/tend-x:2'], prefixes: ['localhost/tend'], real: true },
      { name: 'one image not under a prefix', images: ['localhost/tend:1', 'busybox'], prefixes: ['localhost/tend'], real: false },
      { name: 'another prefix', images: ['tend:latest'], prefixes: ['localhost/tend'], real: false },
    ];
    for (const c of cases) {
      it(c.name, () => {
        assert.equal(runsForReal(pod({ containers: c.images.map((image, i) => ({ name: `c${i}`, image })) }), c.prefixes), c.real);
      });
    }
    it('an init container counts too', () => {
      assert.equal(runsForReal(pod({ initContainers: [{ name: 'i', image: 'other' }], containers: [{ name: 'c', image: 'localhost/tend:1' }] }), ['localhost/tend']), false);
    });
  });

  it('sourcesNeeded: the ConfigMaps, Secrets and token the pod refers to', () => {
    const p = pod({
      volumes: [
        { name: 'v1', configMap: { name: 'cfg' } },
        { name: 'v2', projected: { sources: [{ serviceAccountToken: { path: 'token' } }, { configMap: { name: 'kube-root-ca.crt' } }] } },
      ],
      containers: [{ name: 'c', env: [{ name: 'S', valueFrom: { secretKeyRef: { name: 'sec', key: 'key' } } }], envFrom: [{ configMapRef: { name: 'env' } }] }],
    });
    assert.deepEqual(sourcesNeeded(p), { configMaps: ['cfg', 'env', 'kube-root-ca.crt'], secrets: ['sec'], token: true });
  });

  describe('containerEnv', () => {
    it('KUBERNETES_SERVICE_* at the API server, envFrom with its prefix, then env (a later name wins)', () => {
      const c: V1Container = {
        name: 'c',
        envFrom: [{ prefix: 'X_', configMapRef: { name: 'env' } }],
        env: [
          { name: 'X_A', value: 'over' },
          { name: 'S', valueFrom: { secretKeyRef: { name: 'sec', key: 'key' } } },
          { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'OPT', valueFrom: { configMapKeyRef: { name: 'missing', key: 'k', optional: true } } },
        ],
      };
      const result = containerEnv(pod({ containers: [c] }), c, sources, place);
      assert.ok('env' in result);
      assert.deepEqual(Object.fromEntries(result.env), {
        HOSTNAME: 'p', KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '17823', KUBERNETES_SERVICE_PORT_HTTPS: '17823',
        KUBERNETES_PORT: 'tcp://127.0.0.1:17823', X_A: 'over', X_B: '2', S: 'k3y', NS: 'ns',
      });
    });
    const refusals = [
      { name: 'a missing ConfigMap', env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'missing', key: 'k' } } }], error: /configmap "missing" not found/ },
      { name: 'a missing key', env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 'sec', key: 'nope' } } }], error: /couldn't find key nope in secret ns\/sec/ },
      { name: 'an unsupported field', env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'status.phase' } } }], error: /unsupported fieldRef status.phase/ },
    ];
    for (const r of refusals) {
      it(`refuses ${r.name} (CreateContainerConfigError)`, () => {
        const c: V1Container = { name: 'c', env: r.env };
        const result = containerEnv(pod({ containers: [c] }), c, sources, place);
        assert.ok('error' in result);
        assert.match(result.error, r.error);
      });
    }
  });

  describe('volumeLayouts', () => {
    it('ConfigMap items, a whole Secret, an emptyDir and the projected ServiceAccount volume', () => {
      const layouts = volumeLayouts(pod({
        volumes: [
          { name: 'config', configMap: { name: 'cfg', items: [{ key: 'config.yaml', path: 'config.yaml' }] } },
          { name: 'secret', secret: { secretName: 'sec' } },
          { name: 'tmp', emptyDir: {} },
          { name: 'kube-api-access', projected: { sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
          ] } },
        ],
      }), sources, place);
      assert.deepEqual(layouts, [
        { name: 'config', files: [{ path: 'config.yaml', content: 'a: 1\n' }] },
        { name: 'secret', files: [{ path: 'key', content: 'k3y' }] },
        { name: 'tmp', files: [] },
        { name: 'kube-api-access', files: [{ path: 'token', content: 'TOKEN' }, { path: 'ca.crt', content: 'PEM' }, { path: 'namespace', content: 'ns' }] },
      ]);
    });
    it('a missing ConfigMap is an error, unless optional; an unsupported volume is an error', () => {
      assert.deepEqual(volumeLayouts(pod({ volumes: [{ name: 'v', configMap: { name: 'nope' } }] }), sources, place), [{ error: 'volume v: configmap "nope" not found' }]);
      assert.deepEqual(volumeLayouts(pod({ volumes: [{ name: 'v', configMap: { name: 'nope', optional: true } }] }), sources, place), [{ name: 'v', files: [] }]);
      assert.deepEqual(volumeLayouts(pod({ volumes: [{ name: 'v', hostPath: { path: '/' } }] }), sources, place),
        [{ error: 'volume v: only configMap, secret, emptyDir and projected volumes are supported' }]);
    });
  });

  it('containerMounts: read-only as asked, subPath inside the volume, an unknown volume refused', () => {
    const dirs = new Map([['config', '/pods/u/volumes/config']]);
    assert.deepEqual(containerMounts({ name: 'c', volumeMounts: [{ name: 'config', mountPath: '/etc/tend', readOnly: true }, { name: 'config', mountPath: '/f', subPath: 'a.yaml' }] }, dirs), [
      { source: '/pods/u/volumes/config', target: '/etc/tend', readOnly: true },
      { source: '/pods/u/volumes/config/a.yaml', target: '/f', readOnly: false },
    ]);
    assert.deepEqual(containerMounts({ name: 'c', volumeMounts: [{ name: 'x', mountPath: '/x' }] }, dirs), { error: 'volumeMount x: no such volume' });
    assert.deepEqual(containerMounts({ name: 'c', volumeMounts: [{ name: 'config', mountPath: '/x', subPath: '../../etc' }] }, dirs), { error: 'volumeMount config: bad subPath' });
  });

  it('runArgs: host network, no pull, the user, a read-only root, mounts, command as entrypoint and args after the image', () => {
    const c: V1Container = {
      name: 'tend', image: 'localhost/tend:1', command: ['/app/bin/tend'], args: ['run', '--config', '/etc/tend/config.yaml'],
      securityContext: { readOnlyRootFilesystem: true },
    };
    const p = pod({ securityContext: { runAsUser: 1000, runAsGroup: 1000 }, containers: [c] });
    assert.deepEqual(runArgs({ pod: p, container: c, name: 'k8s_tend', nodeName: 'sim-1', envFile: '/e', stopSeconds: 30, mounts: [{ source: '/s', target: '/t', readOnly: true }] }), [
      'run', '--detach', '--name', 'k8s_tend', '--pull', 'never', '--network', 'host',
      '--label', 'sim.tend.dev/pod-uid=u-1', '--label', 'sim.tend.dev/node-name=sim-1', '--env-file', '/e', '--stop-timeout', '30',
      '--user', '1000:1000', '--read-only', '--read-only-tmpfs=false', '--volume', '/s:/t:ro',
      '--entrypoint', '["/app/bin/tend"]', 'localhost/tend:1', 'run', '--config', '/etc/tend/config.yaml',
    ]);
  });

  it('envParts: a line per variable in the file; a value with a line break as an argument; a bad name refused', () => {
    assert.deepEqual(envParts([['A', '1'], ['B', 'x y'], ['C', 'two\nlines']]), { file: 'A=1\nB=x y\n', args: ['--env', 'C=two\nlines'] });
    assert.deepEqual(envParts([['A=B', '1']]), { error: 'env name "A=B" cannot be passed to podman' });
  });

  it('probeUrl: a named or numbered port on the host network; not an HTTP GET: none', () => {
    const c: V1Container = { name: 'c', ports: [{ name: 'http-metrics', containerPort: 9464 }] };
    assert.equal(probeUrl({ httpGet: { path: '/readyz', port: 'http-metrics' } }, c), 'http://127.0.0.1:9464/readyz');
    assert.equal(probeUrl({ httpGet: { path: 'healthz', port: 8080 as unknown as string } }, c), 'http://127.0.0.1:8080/healthz');
    assert.equal(probeUrl({ exec: { command: ['true'] } }, c), undefined);
    assert.equal(probeUrl({ httpGet: { port: 'nope' } }, c), undefined);
  });

  it('endOfInspected: running is no end; an exit with its code, reason and times', () => {
    assert.equal(endOfInspected({ Status: 'running', Running: true, ExitCode: 0 }, 'podman://x'), undefined);
    assert.deepEqual(endOfInspected({
      Status: 'exited', Running: false, ExitCode: 3,
      StartedAt: '2026-11-27T15:00:00.123456789Z', FinishedAt: '2026-11-27T15:00:05.5Z',
    }, 'podman://x'), { exitCode: 3, reason: 'Error', containerID: 'podman://x', startedAt: Date.parse('2026-11-27T15:00:00.123Z'), finishedAt: Date.parse('2026-11-27T15:00:05.5Z') });
    assert.equal(endOfInspected({ Status: 'exited', Running: false, ExitCode: 137, OOMKilled: true }, 'podman://x')?.reason, 'OOMKilled');
  });

  describe('probeTally', () => {
    const run = (results: boolean[], probe?: { successThreshold?: number; failureThreshold?: number }) =>
      results.reduce((t, ok) => probeTally(t, ok, probe), { ready: false, streak: 0 }).ready;
    const cases = [
      { name: 'one success makes it ready', results: [true], ready: true },
      { name: 'one failure after is not enough to unready', results: [true, false, false], ready: true },
      { name: 'three failures in a row unready it', results: [true, false, false, false], ready: false },
      { name: 'a success between failures starts the count again', results: [true, false, false, true, false, false], ready: true },
      { name: 'never ready before a success', results: [false, false], ready: false },
      { name: 'successThreshold 2: two in a row', results: [true, false, true], probe: { successThreshold: 2 }, ready: false },
      { name: 'successThreshold 2 reached', results: [true, true], probe: { successThreshold: 2 }, ready: true },
      { name: 'failureThreshold 1', results: [true, false], probe: { failureThreshold: 1 }, ready: false },
    ];
    for (const c of cases) it(c.name, () => assert.equal(run(c.results, c.probe), c.ready));
  });

  it('restarts: as the pod restart policy says', () => {
    assert.deepEqual([restarts(undefined, 0), restarts('Always', 0), restarts('OnFailure', 0), restarts('OnFailure', 1), restarts('Never', 1)], [true, true, false, true, false]);
  });
});
