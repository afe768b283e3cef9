// tend's KubeConfig reuses one connection pool for all its API calls, while
// the TLS settings stay the same.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { stringify as toYaml } from 'yaml';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { ConfigError } from '../../src/config/errors.ts';
import { writeKubeconfig } from '../harness/kubeconfig.ts';

const pem = (tag: string) => Buffer.from(`-----BEGIN CERTIFICATE-----\n${Buffer.from(tag).toString('base64')}\n-----END CERTIFICATE-----\n`).toString('base64');

describe('kube client: connection reuse', () => {
  let kc: k8s.KubeConfig;
  before(async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'tend-kc-')), 'kubeconfig');
    await writeFile(file, toYaml({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
      clusters: [{ name: 'k', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority-data': pem('ca-one') } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
    }));
    kc = loadKubeConfig({ kubeconfig: file });
  });
  const dispatcherOf = async () => {
    const ctx = new k8s.RequestContext('https://127.0.0.1:6443/api', k8s.HttpMethod.GET);
    await kc.applySecurityAuthentication(ctx);
    assert.equal(ctx.getHeaders().Authorization, 'Bearer t', 'the token on every call');
    return ctx.getDispatcher();
  };

  it('every call gets the same dispatcher (kept-alive connections), with the token on each', async () => {
    const [a, b] = [await dispatcherOf(), await dispatcherOf()];
    assert.ok(a, 'a dispatcher carrying the cluster CA');
    assert.equal(a, b);
  });
  it('new TLS settings (a rotated CA) get a new dispatcher', async () => {
    const before = await dispatcherOf();
    const cluster = kc.getCurrentCluster()!;
    (kc as unknown as { clusters: k8s.Cluster[] }).clusters = [{ ...cluster, caData: pem('ca-two') }];
    const after = await dispatcherOf();
    assert.ok(after);
    assert.notEqual(after, before);
    assert.equal(await dispatcherOf(), after);
  });
});

describe('kube client: a kubeconfig that cannot be used is a configuration error naming it', () => {
  it('a missing file, a folder and a file that is no kubeconfig', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tend-kc-'));
    const bad = join(dir, 'bad');
    writeFileSync(bad, '- just\n- a list\n');
    for (const [path, why] of [[join(dir, 'none'), /: file not found$/], [dir, /is a folder, not a file$/], [bad, /not a kubeconfig/]] as const) {
      assert.throws(() => loadKubeConfig({ kubeconfig: path }), (err: Error) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.ok(err.message.startsWith(`kubernetes.kubeconfig: ${path}: `), err.message);
        assert.match(err.message, why);
        return true;
      });
    }
  });
  it('a context the file does not have, with the ones it has', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tend-kc-'));
    const file = join(dir, 'kc');
    writeFileSync(file, [
      'apiVersion: v1', 'kind: Config', 'current-context: a',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: a, context: {cluster: c, user: u}}, {name: b, context: {cluster: c, user: u}}]',
    ].join('\n'));
    assert.equal(loadKubeConfig({ kubeconfig: file, context: 'b' }).getCurrentContext(), 'b');
    assert.throws(() => loadKubeConfig({ kubeconfig: file, context: 'prod' }),
      /^ConfigError: kubernetes\.context: no context "prod" in .*kc \(its contexts: a, b\)$/);
  });
});

describe('kube client: no kubeconfig given, what kubectl would use or a configuration error naming where it looked', () => {
  const saved: Record<string, string | undefined> = {};
  const names = ['HOME', 'KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT'];
  const dir = mkdtempSync(join(tmpdir(), 'tend-kc-implicit-'));
  const good = writeKubeconfig(join(dir, 'good'), 'https://127.0.0.1:6443');
  beforeEach(() => {
    for (const n of names) saved[n] = process.env[n];
    for (const n of names) delete process.env[n];
    process.env.HOME = join(dir, 'no-home');
  });
  afterEach(() => {
    for (const n of names) {
      if (saved[n] === undefined) delete process.env[n];
      else process.env[n] = saved[n];
    }
  });
  const refused = (message: RegExp) => assert.throws(() => loadKubeConfig({}), (err: Error) => {
    assert.ok(err instanceof ConfigError, String(err));
    assert.match(err.message, message);
    return true;
  });

  it('$KUBECONFIG, then ~/.kube/config', () => {
    process.env.KUBECONFIG = good;
    assert.equal(loadKubeConfig({}).getCurrentCluster()?.server, 'https://127.0.0.1:6443');
    delete process.env.KUBECONFIG;
    refused(/^kubernetes\.kubeconfig: not set, and ~\/\.kube\/config does not exist: give kubernetes\.kubeconfig or --kubeconfig$/);
  });
  it('a $KUBECONFIG that names no file, one that is no YAML, one without a cluster', () => {
    process.env.KUBECONFIG = join(dir, 'none');
    refused(/^kubernetes\.kubeconfig: not set, and KUBECONFIG=.*none does not exist/);
    const bad = join(dir, 'bad');
    writeFileSync(bad, 'not: [a kubeconfig');
    process.env.KUBECONFIG = bad;
    refused(/^kubernetes\.kubeconfig: not set, and KUBECONFIG=.*bad cannot be read: /);
    const empty = join(dir, 'empty');
    writeFileSync(empty, 'apiVersion: v1\nkind: Config\n');
    process.env.KUBECONFIG = empty;
    refused(/^kubernetes\.kubeconfig: not set, and KUBECONFIG=.*empty has no current-context naming a cluster$/);
  });
  it('in a Pod (KUBERNETES_SERVICE_HOST): its port and ServiceAccount files are checked, not left to fail a request', () => {
    process.env.KUBECONFIG = good;
    process.env.KUBERNETES_SERVICE_HOST = '10.0.0.1';
    refused(/in-cluster credentials \(KUBERNETES_SERVICE_HOST is set\) cannot be used: KUBERNETES_SERVICE_PORT is not set$/);
    process.env.KUBERNETES_SERVICE_PORT = 'https';
    refused(/KUBERNETES_SERVICE_PORT is "https", not a port$/);
    process.env.KUBERNETES_SERVICE_PORT = '443';
    refused(/cannot be used: \/var\/run\/secrets\/kubernetes\.io\/serviceaccount\/token and .*ca\.crt not found$/);
  });
});

describe('kube client: an API server that cannot be reached is named with the reason', () => {
  it('a refused connection: the server and ECONNREFUSED, no stack', async () => {
    const { unreachableError } = await import('../../src/kube/client.ts');
    // A port nothing listens on: bind one, note it, close it.
    const { createServer } = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `https://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const err = await kc.makeApiClient(k8s.CoreV1Api).listNamespace().then(() => undefined, (e: unknown) => e);
    const named = unreachableError(kc, err);
    assert.ok(named, `not recognised: ${String(err)}`);
    assert.match(named.message, new RegExp(`^cannot reach the Kubernetes API at https://127\\.0\\.0\\.1:${port}: ECONNREFUSED`));
    assert.equal(unreachableError(kc, new Error('404 Not Found')), undefined);
  });
});
