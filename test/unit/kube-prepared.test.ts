// The prepared requests (src/kube/prepared.ts) against a local HTTP server
// standing in for the API server: the weeder's pod DELETE (the UID
// precondition, the credentials client-node resolves, the same outcomes as
// deletePodIfSameUid) and the taint marking's pods/status patch and pod LIST
// and a Node's taints (what they send, how their answers and errors are read).
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { preparedNodes, preparedPodDelete, preparedPods, preparedRequests } from '../../src/kube/prepared.ts';
import { errorMessage, statusOf } from '../../src/kube/writes.ts';

interface Seen { method?: string; url?: string; auth?: string; type?: string; body: unknown; port?: number }

describe('prepared requests: the weeder\'s pod delete, the taint marking\'s pod patch and list', () => {
  let server: Server;
  let answers: { status: number; body: unknown }[] = [];
  let seen: Seen[] = [];
  let kc: k8s.KubeConfig;
  let token = 'first';

  const read = (req: IncomingMessage) => new Promise<string>((resolve) => {
    let s = '';
    req.on('data', (d) => (s += d));
    req.on('end', () => resolve(s));
  });

  before(async () => {
    server = createServer(async (req, res) => {
      const text = await read(req);
      if (req.url === '/version') {
        seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, body: undefined, port: req.socket.remotePort });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ gitVersion: 'v1.36.3' }));
        return;
      }
      seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, type: req.headers['content-type'], body: text ? JSON.parse(text) : undefined, port: req.socket.remotePort });
      const a = answers.shift() ?? { status: 500, body: { kind: 'Status', message: 'no answer prepared' } };
      res.writeHead(a.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(a.body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    kc = new k8s.KubeConfig();
    // A token that the test rotates: client-node reads it from the user on each resolution.
    const user = { name: 'u', get token() { return token; } } as unknown as k8s.User;
    kc.loadFromClusterAndUser({ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }, user);
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    answers = [];
    seen = [];
    token = 'first';
  });

  const pod = { namespace: 'ns 1', name: 'api-0', uid: 'uid-1' };

  const deletes = () => seen.filter((s) => s.url !== '/version');

  it('sends a DELETE of the pod with its UID as precondition and the resolved credentials', async () => {
    const del = preparedPodDelete(preparedRequests(kc));
    await del.prepare();
    answers.push({ status: 200, body: { kind: 'Pod', metadata: { name: 'api-0' } } });
    assert.deepEqual(await del.delete(pod), { outcome: 'deleted' });
    assert.equal(deletes().length, 1);
    assert.deepEqual({ ...deletes()[0]!, port: undefined }, {
      method: 'DELETE', url: '/api/v1/namespaces/ns%201/pods/api-0', auth: 'Bearer first', type: 'application/json',
      body: { preconditions: { uid: 'uid-1' } }, port: undefined,
    });
  });

  it('prepare opens an idle connection when the pool has none, and the DELETE goes over it', async () => {
    const del = preparedPodDelete(preparedRequests(kc));
    assert.equal(await del.prepare(), true, 'a new pool: a connection opened');
    assert.deepEqual(seen.map((s) => [s.method, s.url, s.auth]), [['GET', '/version', 'Bearer first']]);
    await new Promise((resolve) => setImmediate(resolve)); // undici counts the connection idle once its answer is processed
    assert.equal(await del.prepare(), false, 'an idle connection already: nothing sent');
    assert.equal(seen.length, 1);
    answers.push({ status: 200, body: {} });
    assert.deepEqual(await del.delete(pod), { outcome: 'deleted' });
    assert.equal(seen[1]!.port, seen[0]!.port, 'the DELETE went over the connection prepare opened');
  });

  it('202 is a deletion; 404 and 409 (the UID precondition failed) are gone', async () => {
    const del = preparedPodDelete(preparedRequests(kc));
    answers.push({ status: 202, body: {} }, { status: 404, body: { kind: 'Status', code: 404 } },
      { status: 409, body: { kind: 'Status', code: 409, message: 'Precondition failed: UID in precondition: uid-1, UID in object meta: uid-2' } });
    assert.deepEqual(await del.delete(pod), { outcome: 'deleted' }, 'resolved on first use when not prepared');
    assert.deepEqual(await del.delete(pod), { outcome: 'gone' });
    assert.deepEqual(await del.delete(pod), { outcome: 'gone' });
  });

  it('any other answer is thrown as client-node throws it: its status code and the Status message readable', async () => {
    const del = preparedPodDelete(preparedRequests(kc));
    answers.push({ status: 403, body: { kind: 'Status', code: 403, message: 'pods "api-0" is forbidden: by a webhook' } });
    const err = await del.delete(pod).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof k8s.ApiException);
    assert.equal(statusOf(err), 403);
    assert.equal(errorMessage(err), 'pods "api-0" is forbidden: by a webhook');
    answers.push({ status: 500, body: { kind: 'Status', code: 500, message: 'etcdserver: request timed out' } });
    await assert.rejects(del.delete(pod), (e: unknown) => statusOf(e) === 500);
  });

  it('a 401 (the token rotated since it was prepared) resolves the credentials afresh and sends once more', async () => {
    const del = preparedPodDelete(preparedRequests(kc));
    await del.prepare();
    token = 'second';
    answers.push({ status: 401, body: { kind: 'Status', code: 401 } }, { status: 200, body: {} });
    assert.deepEqual(await del.delete(pod), { outcome: 'deleted' });
    assert.deepEqual(deletes().map((s) => s.auth), ['Bearer first', 'Bearer second']);
    answers.push({ status: 401, body: { kind: 'Status', code: 401 } }, { status: 401, body: { kind: 'Status', code: 401 } });
    await assert.rejects(del.delete(pod), (e: unknown) => statusOf(e) === 401, 'a second 401 is thrown, not retried again');
    assert.equal(deletes().length, 4);
  });

  it('refuses a reference without namespace, name or UID before sending anything', async () => {
    const del = preparedPodDelete(preparedRequests(kc));
    await assert.rejects(del.delete({ ...pod, uid: '' }), /uid must be a non-empty string/);
    assert.equal(seen.length, 0);
  });

  it('pods.patchStatus sends a strategic merge patch of pods/status, and does not need the answer', async () => {
    const pods = preparedPods(preparedRequests(kc));
    answers.push({ status: 200, body: { kind: 'Pod', metadata: { name: 'db-0' } } });
    const body = { metadata: { uid: 'uid-1' }, status: { conditions: [{ type: 'NodeTaintDetected', status: 'True' }] } };
    assert.equal(await pods.patchStatus('shop', 'db-0', body), undefined);
    assert.deepEqual({ ...seen[0]!, port: undefined }, {
      method: 'PATCH', url: '/api/v1/namespaces/shop/pods/db-0/status', auth: 'Bearer first',
      type: 'application/strategic-merge-patch+json', body, port: undefined,
    });
  });

  it('pods.patchStatus throws a refusal as client-node does: 404, 409 and 429 readable by their status', async () => {
    const pods = preparedPods(preparedRequests(kc));
    for (const code of [404, 409, 429]) {
      answers.push({ status: code, body: { kind: 'Status', code, message: `refused with ${code}` } });
      const err = await pods.patchStatus('shop', 'db-0', {}).then(() => undefined, (e: unknown) => e);
      assert.equal(statusOf(err), code);
      assert.equal(errorMessage(err), `refused with ${code}`);
    }
  });

  it('pods.list sends the selectors, limit and continue token, and answers with client-node\'s name for the next token', async () => {
    const pods = preparedPods(preparedRequests(kc));
    const item = { metadata: { name: 'db-0', uid: 'uid-0', creationTimestamp: '2026-11-26T08:00:00Z' } };
    answers.push({ status: 200, body: { kind: 'PodList', metadata: { resourceVersion: '42', continue: 'next-page' }, items: [item] } });
    answers.push({ status: 200, body: { kind: 'PodList', metadata: { resourceVersion: '42' }, items: [] } });
    const first = await pods.list({ namespace: 'shop', labelSelector: 'app=db', fieldSelector: 'spec.nodeName=sim-1', limit: 50 });
    assert.deepEqual(first, { items: [item], metadata: { _continue: 'next-page', resourceVersion: '42' } });
    const last = await pods.list({ labelSelector: 'app=db', _continue: 'next-page' });
    assert.deepEqual(last, { items: [], metadata: { resourceVersion: '42' } });
    const urls = seen.map((s) => new URL(s.url!, 'http://x'));
    assert.equal(urls[0]!.pathname, '/api/v1/namespaces/shop/pods');
    assert.deepEqual(Object.fromEntries(urls[0]!.searchParams), { labelSelector: 'app=db', fieldSelector: 'spec.nodeName=sim-1', limit: '50' });
    assert.equal(urls[1]!.pathname, '/api/v1/pods', 'no namespace: every namespace');
    assert.deepEqual(Object.fromEntries(urls[1]!.searchParams), { labelSelector: 'app=db', continue: 'next-page' });
  });

  it('nodes.taints lists the one Node by name and answers its taints: [] without any, undefined when it is gone', async () => {
    const nodes = preparedNodes(preparedRequests(kc));
    const taint = { key: 'example.org/maintenance', effect: 'NoExecute', timeAdded: '2026-11-26T08:00:00Z' };
    answers.push({ status: 200, body: { kind: 'NodeList', items: [{ metadata: { name: 'sim-1' }, spec: { taints: [taint] } }] } });
    answers.push({ status: 200, body: { kind: 'NodeList', items: [{ metadata: { name: 'sim-1' }, spec: {} }] } });
    answers.push({ status: 200, body: { kind: 'NodeList', items: [] } });
    answers.push({ status: 200, body: { kind: 'NodeList', items: [{ metadata: { name: 'sim-2' }, spec: { taints: [taint] } }] } });
    assert.deepEqual(await nodes.taints('sim-1'), [taint], 'timeAdded as the API server wrote it');
    assert.deepEqual(await nodes.taints('sim-1'), []);
    assert.equal(await nodes.taints('sim-1'), undefined);
    assert.equal(await nodes.taints('sim-1'), undefined, 'another Node\'s taints are never taken for this one\'s');
    const url = new URL(seen[0]!.url!, 'http://x');
    assert.equal(seen[0]!.method, 'GET');
    assert.equal(url.pathname, '/api/v1/nodes');
    assert.deepEqual(Object.fromEntries(url.searchParams), { fieldSelector: 'metadata.name=sim-1' });
  });

  it('nodes.taints throws a refusal as client-node does: 403 and 429 readable by their status', async () => {
    const nodes = preparedNodes(preparedRequests(kc));
    for (const status of [403, 429]) {
      answers.push({ status, body: { kind: 'Status', code: status, message: `refused with ${status}` } });
      const err = await nodes.taints('sim-1').then(() => undefined, (e: unknown) => e);
      assert.equal(statusOf(err), status);
      assert.match(errorMessage(err), new RegExp(`refused with ${status}`));
    }
  });
});
