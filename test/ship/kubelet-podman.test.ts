// The sandbox kubelet's podman runtime (src/sandbox/kubelet/podman-pod.ts), against the real thing:
// a pod whose image matches `runImages` runs with podman on the host network, with its
// environment (values, ConfigMap and Secret keys, envFrom), its volumes (ConfigMap, Secret,
// emptyDir, the projected ServiceAccount token with ca.crt and namespace), KUBERNETES_SERVICE_*
// pointing at the sandbox's kube-apiserver (the token works there), its user and read-only root;
// its readiness follows the probe, an exit shows as a restart with its exit code, and deleting
// the pod removes its container. A pod of another image stays simulated.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { containersWithLabel, freePort, kubeletRunsImages, nodeImage } from './kubelet-runtime.ts';
import { POD_UID_LABEL } from '../../src/sandbox/kubelet/podman-spec.ts';

/** The container's program: a small HTTP server that reports what it was given and obeys the test. */
const program = `
const http = require('http'), https = require('https'), fs = require('fs');
const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
let ready = false;
const tryWrite = (f) => { try { fs.writeFileSync(f, 'x'); return true; } catch { return false; } };
const read = (f) => { try { return fs.readFileSync(f, 'utf8'); } catch (e) { return 'unreadable: ' + e.code; } };
function apiGet(path) {
  return new Promise((resolve) => {
    const req = https.get({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT, path,
      ca: fs.readFileSync(sa + '/ca.crt'), headers: { authorization: 'Bearer ' + fs.readFileSync(sa + '/token', 'utf8') } }, (res) => {
      let body = ''; res.on('data', (d) => body += d); res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', (e) => resolve({ status: 0, body: String(e) }));
  });
}
http.createServer(async (req, res) => {
  if (req.url === '/readyz') { res.writeHead(ready ? 200 : 503); res.end(); return; }
  if (req.url === '/ready') { ready = true; res.end('ok'); return; }
  if (req.url.startsWith('/exit/')) { res.end('bye'); setTimeout(() => process.exit(Number(req.url.slice(6))), 50); return; }
  const ns = read(sa + '/namespace');
  const api = await apiGet('/api/v1/namespaces/' + ns + '/pods/' + process.env.HOSTNAME);
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({
    uid: process.getuid(), gid: process.getgid(),
    env: { FROM_VALUE: process.env.FROM_VALUE, FROM_CM: process.env.FROM_CM, FROM_SECRET: process.env.FROM_SECRET, CM_colour: process.env.CM_colour,
      POD_NAMESPACE: process.env.POD_NAMESPACE, KUBERNETES_SERVICE_HOST: process.env.KUBERNETES_SERVICE_HOST, HOSTNAME: process.env.HOSTNAME },
    configFile: read('/etc/probe/settings.txt'), secretFile: read('/etc/probe-secret/password'),
    namespace: ns, caCert: read(sa + '/ca.crt').startsWith('-----BEGIN CERTIFICATE-----'), tokenLength: read(sa + '/token').length,
    rootWritable: tryWrite('/written'), scratchWritable: tryWrite('/scratch/written'),
    api: { status: api.status, name: api.status === 200 ? JSON.parse(api.body).metadata.name : api.body.slice(0, 200) },
  }));
}).listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`;

describe('the sandbox kubelet runs pods of the configured images with podman', function () {
  this.timeout(240_000);
  let kube: ReturnType<typeof admin>;
  let ns = '';
  let image = '';
  let port = 0;

  before(async function () {
    this.timeout(600_000);
    kube = admin();
    const rbac = kube.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    image = await nodeImage();
    await kubeletRunsImages(['localhost/tend-kubelet-test']);
    ns = await tempNamespace(kube, 'podman');
    port = await freePort();
    await kube.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'prober' } } });
    await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'read-pods' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] } });
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: {
      metadata: { name: 'prober-reads-pods' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-pods' },
      subjects: [{ kind: 'ServiceAccount', name: 'prober', namespace: ns }],
    } });
    await kube.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'probe-config' }, data: { greeting: 'hello', colour: 'green', 'settings.txt': 'level: 3\n' } } });
    await kube.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'probe-secret' }, stringData: { password: 's3cret', token: 'abc' } } });
  });

  after(async function () {
    this.timeout(120_000);
    if (ns) await deleteNamespace(kube, ns);
    await kubeletRunsImages([]);
  });

  const readPod = (name: string) => kube.core.readNamespacedPod({ name, namespace: ns });
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;

  function probePod(name: string): V1Pod {
    return {
      metadata: { name, namespace: ns },
      spec: {
        serviceAccountName: 'prober',
        terminationGracePeriodSeconds: 5,
        securityContext: { runAsUser: 1000, runAsGroup: 1000 },
        containers: [{
          name: 'probe',
          image,
          command: ['/usr/local/bin/node', '-e', program],
          env: [
            { name: 'PORT', value: String(port) },
            { name: 'FROM_VALUE', value: 'plain' },
            { name: 'FROM_CM', valueFrom: { configMapKeyRef: { name: 'probe-config', key: 'greeting' } } },
            { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 'probe-secret', key: 'token' } } },
            { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          ],
          envFrom: [{ prefix: 'CM_', configMapRef: { name: 'probe-config' } }],
          ports: [{ name: 'http', containerPort: port }],
          readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 1 },
          securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
          volumeMounts: [
            { name: 'config', mountPath: '/etc/probe', readOnly: true },
            { name: 'secret', mountPath: '/etc/probe-secret', readOnly: true },
            { name: 'scratch', mountPath: '/scratch' },
          ],
        }],
        volumes: [
          { name: 'config', configMap: { name: 'probe-config', items: [{ key: 'settings.txt', path: 'settings.txt' }] } },
          { name: 'secret', secret: { secretName: 'probe-secret' } },
          { name: 'scratch', emptyDir: {} },
        ],
      },
    };
  }

  it('runs the container as the pod says, reports its readiness and exits, and removes it with the pod', async () => {
    const created = await kube.core.createNamespacedPod({ namespace: ns, body: probePod('probe') });
    const uid = created.metadata!.uid!;

    const running = await waitFor('the pod running, not ready (its probe answers 503)', async () => {
      const pod = await readPod('probe');
      const c = pod.status?.containerStatuses?.[0];
      return pod.status?.phase === 'Running' && c?.state?.running && !c.ready ? pod : undefined;
    }, { timeoutMs: 60_000 });
    assert.match(running.status!.containerStatuses![0].containerID!, /^podman:\/\/[0-9a-f]{64}$/);
    assert.equal((await containersWithLabel(`${POD_UID_LABEL}=${uid}`)).length, 1, 'one podman container for the pod');

    const report = await waitFor('the container to answer', async () => (await fetch(url('/report'))).json() as Promise<Record<string, unknown>>);
    assert.deepEqual(report, {
      uid: 1000, gid: 1000,
      env: {
        FROM_VALUE: 'plain', FROM_CM: 'hello', FROM_SECRET: 'abc', CM_colour: 'green', POD_NAMESPACE: ns, KUBERNETES_SERVICE_HOST: '127.0.0.1', HOSTNAME: 'probe',
      },
      configFile: 'level: 3\n', secretFile: 's3cret', namespace: ns, caCert: true, tokenLength: (report as { tokenLength: number }).tokenLength,
      rootWritable: false, scratchWritable: true,
      api: { status: 200, name: 'probe' },
    });
    assert.ok((report as { tokenLength: number }).tokenLength > 100, 'a ServiceAccount token is mounted');

    await fetch(url('/ready'));
    await waitFor('the pod Ready once its probe answers 200', async () => {
      const pod = await readPod('probe');
      return pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    }, { timeoutMs: 30_000 });

    await fetch(url('/exit/3')).catch(() => undefined);
    const restarted = await waitFor('the container restarted after exiting 3', async () => {
      const c = (await readPod('probe')).status?.containerStatuses?.[0];
      return c?.restartCount === 1 && c.state?.running ? c : undefined;
    }, { timeoutMs: 60_000 });
    assert.equal(restarted.lastState?.terminated?.exitCode, 3);
    assert.equal(restarted.lastState?.terminated?.reason, 'Error');
    assert.notEqual(restarted.containerID, running.status!.containerStatuses![0].containerID, 'a new container');
    await waitFor('the new container to answer', async () => (await fetch(url('/readyz'))).status === 503);

    await kube.core.deleteNamespacedPod({ name: 'probe', namespace: ns });
    await waitFor('the pod gone', async () => {
      try {
        await readPod('probe');
        return false;
      } catch {
        return true;
      }
    }, { timeoutMs: 60_000 });
    await waitFor('its container removed', async () => (await containersWithLabel(`${POD_UID_LABEL}=${uid}`)).length === 0, { timeoutMs: 30_000 });
    await assert.rejects(fetch(url('/readyz')), 'nothing answers on its port');
  });

  it('plays a pod whose image is not under a prefix, as before', async () => {
    await kube.core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'played', namespace: ns }, spec: { containers: [{ name: 'app', image: 'example.org/app:1' }] } } });
    const status = await waitFor('the played pod running', async () => {
      const c = (await readPod('played')).status?.containerStatuses?.[0];
      return c?.state?.running ? c : undefined;
    });
    assert.match(status.containerID!, /^sim:\/\//);
  });
});
