// src/http/address.ts, src/http/health.ts, src/http/server.ts and src/http/worker-state.ts.
// tend's HTTP port: the address flag's parsing, the health checks, and the
// server's answers (on a loopback port of the kernel's choosing).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { parseListenAddress, type ListenAddress } from '../../src/http/address.ts';
import { Health } from '../../src/http/health.ts';
import { ListenError, startHttpServer, type RunningHttpServer } from '../../src/http/server.ts';
import { workerCheckOf } from '../../src/http/worker-state.ts';

describe('http: --http-address', () => {
  const good: [string, { host: string; port: number }][] = [
    ['0.0.0.0:9464', { host: '0.0.0.0', port: 9464 }],
    ['127.0.0.1:19484', { host: '127.0.0.1', port: 19484 }],
    ['localhost:1', { host: 'localhost', port: 1 }],
    ['[::]:9464', { host: '::', port: 9464 }],
    ['[::1]:65535', { host: '::1', port: 65535 }],
  ];
  for (const [text, want] of good) {
    it(`takes ${text}`, () => {
      const a = parseListenAddress(text);
      assert.ok(!('problem' in a), JSON.stringify(a));
      assert.deepEqual({ host: a.host, port: a.port }, want);
    });
  }
  const bad: [string, RegExp][] = [
    ['9464', /not HOST:PORT/],
    [':9464', /not HOST:PORT/],
    ['http://0.0.0.0:9464', /not HOST:PORT/],
    ['0.0.0.0:', /not HOST:PORT/],
    ['0.0.0.0:0', /port must be from 1 to 65535/],
    ['0.0.0.0:70000', /port must be from 1 to 65535/],
    ['::1:9464', /not HOST:PORT/],
  ];
  for (const [text, why] of bad) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      const a = parseListenAddress(text);
      assert.ok('problem' in a);
      assert.match(a.problem, why);
      assert.ok(a.problem.includes(JSON.stringify(text)), a.problem);
    });
  }
});

describe('http: health checks', () => {
  it('is neither alive nor ready with nothing registered (start-up)', () => {
    const h = new Health();
    assert.equal(h.liveness().ok, false);
    assert.equal(h.readiness().ok, false);
  });

  it('is ready only when every check is ready, alive when every one is alive, and names the ones that are not', () => {
    const h = new Health();
    const worker = h.settable('worker', { alive: true, ready: false, reason: 'starting' });
    const informer = h.settable('informer taint/nodes', { alive: true, ready: true });
    assert.deepEqual(h.liveness(), { ok: true, problems: [] });
    assert.deepEqual(h.readiness(), { ok: false, problems: ['worker: starting'] });
    worker.set({ alive: true, ready: true });
    assert.deepEqual(h.readiness(), { ok: true, problems: [] });
    informer.set({ alive: false, ready: false });
    assert.deepEqual(h.liveness(), { ok: false, problems: ['informer taint/nodes: not alive'] });
    assert.deepEqual(h.readiness(), { ok: false, problems: ['informer taint/nodes: not ready'] });
    informer.remove();
    assert.equal(h.readiness().ok, true);
  });

  it('a check that throws counts as down, with its error', () => {
    const h = new Health();
    h.register('broken', () => { throw new Error('boom'); });
    assert.deepEqual(h.liveness(), { ok: false, problems: ['broken: check failed: boom'] });
  });

  it("maps the SDK Worker's states", () => {
    assert.deepEqual(workerCheckOf('RUNNING'), { alive: true, ready: true });
    for (const s of ['INITIALIZED', 'STOPPING', 'DRAINING', 'DRAINED']) {
      assert.equal(workerCheckOf(s).alive, true, s);
      assert.equal(workerCheckOf(s).ready, false, s);
    }
    for (const s of ['STOPPED', 'FAILED']) assert.equal(workerCheckOf(s).alive, false, s);
  });
});

describe('http: the server', () => {
  const loopback: ListenAddress = { text: '127.0.0.1:0', host: '127.0.0.1', port: 0 };
  let server: RunningHttpServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${server!.port}${path}`);
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  };

  it('answers /readyz 503 with the reason before ready and 200 after; /healthz likewise', async () => {
    const h = new Health();
    const worker = h.settable('worker', { alive: true, ready: false, reason: 'created, not polling yet' });
    server = await startHttpServer({ address: loopback, health: h, metrics: async () => '' });
    assert.deepEqual(await get('/readyz'), { status: 503, type: 'text/plain; charset=utf-8', body: 'worker: created, not polling yet\n' });
    assert.equal((await get('/healthz')).status, 200);
    worker.set({ alive: true, ready: true });
    assert.equal((await get('/readyz')).status, 200);
    worker.set({ alive: false, ready: false, reason: 'failed' });
    assert.deepEqual((await get('/healthz')).body, 'worker: failed\n');
    assert.equal((await get('/healthz')).status, 503);
  });

  it('serves /metrics as Prometheus text, a failing collection as 500, and 404 elsewhere', async () => {
    let fail = false;
    const errors: string[] = [];
    server = await startHttpServer({
      address: loopback, health: new Health(),
      metrics: async () => {
        if (fail) throw new Error('the registry broke');
        return '# TYPE tend_x counter\ntend_x_total 1\n';
      },
      onError: (err) => errors.push((err as Error).message),
    });
    const m = await get('/metrics');
    assert.equal(m.status, 200);
    assert.match(m.type, /^text\/plain; version=0\.0\.4/);
    assert.equal(m.body, '# TYPE tend_x counter\ntend_x_total 1\n');
    fail = true;
    assert.equal((await get('/metrics')).status, 500);
    assert.deepEqual(errors, ['the registry broke']);
    assert.equal((await get('/nothing')).status, 404);
    const post = await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST' });
    assert.equal(post.status, 405);
  });

  it('a port in use fails start-up with a message naming the flag, the address and why', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      await assert.rejects(
        startHttpServer({ address: { text: `127.0.0.1:${port}`, host: '127.0.0.1', port }, health: new Health(), metrics: async () => '' }),
        (err: Error) => err instanceof ListenError && err.message === `cannot listen on --http-address 127.0.0.1:${port} (http.address): the port is in use by another process`,
      );
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});
