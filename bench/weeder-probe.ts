// A probe (not a test) of the raw costs on the weeder's reaction path, on a
// running sandbox: how long the process spends between a watch event and the
// DELETE request leaving it, with client-node and with undici directly.
//
//   node bench/weeder-probe.ts [--state-dir DIR] [--n 200]
//
// - build: a pod's DELETE (UID precondition, on a pod that is not there, so
//   nothing is deleted) from the call until its headers are written to the
//   socket (undici's diagnostics channel undici:client:sendHeaders), and the
//   whole round trip, for client-node's deleteNamespacedPod, for
//   src/kube/prepared.ts (the weeder's prepared delete) and for undici's
//   request() on the same connection pool, connections warm (kept alive);
//   then undici's on a new connection each time (TCP and TLS handshakes).
// - watch: a ConfigMap patched by this process, seen by a watch here (the
//   sandbox's admin credentials: tend's may not watch ConfigMaps): patch
//   answered -> event delivered, for client-node's Watch and for a bare
//   undici stream parsed by hand. Both see the same events.
// Figures are medians and 90th percentiles over --n, in microseconds.
import * as k8s from '@kubernetes/client-node';
import diagnostics from 'node:diagnostics_channel';
import { parseArgs } from 'node:util';
import { Agent, request, type Dispatcher } from 'undici';
import { mergePatch } from '../src/kube/api.ts';
import { kubeClients, loadKubeConfig } from '../src/kube/client.ts';
import { preparedPodDelete, preparedRequests } from '../src/kube/prepared.ts';
import { currentSandbox } from '../src/sandbox/sandbox.ts';

const { values: opts } = parseArgs({ options: { 'state-dir': { type: 'string' }, n: { type: 'string', default: '200' } } });
const N = Number(opts.n);
const info = await currentSandbox(opts['state-dir']);
if (!info) throw new Error('no sandbox: run `tend sandbox up` (or pass --state-dir)');
const kc = loadKubeConfig({ kubeconfig: info.tendKubeconfig });
const adminKc = loadKubeConfig({ kubeconfig: info.kubeconfig });
const admin = kubeClients(adminKc);
const kube = kubeClients(kc);
const ns = `probe-${process.pid}`;
await admin.core.createNamespace({ body: { metadata: { name: ns } } });

const us = (ms: number) => Math.round(ms * 1000);
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return `p50 ${us(q(0.5))} us, p90 ${us(q(0.9))} us, min ${us(s[0]!)} us`;
};

let sentAt = 0;
diagnostics.channel('undici:client:sendHeaders').subscribe(() => { sentAt ||= performance.now(); });

async function timeIt(name: string, call: () => Promise<unknown>) {
  const build: number[] = []; const total: number[] = [];
  for (let i = 0; i < N + 10; i++) {
    sentAt = 0;
    const t0 = performance.now();
    await call().catch(() => undefined);
    const t1 = performance.now();
    if (i >= 10) { build.push(sentAt - t0); total.push(t1 - t0); }
  }
  console.log(`${name.padEnd(34)} call -> headers sent: ${stats(build)}; round trip: ${stats(total)}`);
}

try {
  // ---- build ----
  const ref = { namespace: ns, name: 'no-such-pod', uid: '00000000-0000-0000-0000-000000000000' };
  await timeIt('client-node deleteNamespacedPod', () => kube.core.deleteNamespacedPod({ ...ref, body: { preconditions: { uid: ref.uid } } }));
  const prepared = preparedPodDelete(preparedRequests(kc));
  await prepared.prepare();
  await timeIt('prepared delete (src/kube/prepared.ts)', () => prepared.delete(ref));
  // undici directly, with client-node's own dispatcher and headers.
  const ctx = new k8s.RequestContext(`${kc.getCurrentCluster()!.server}/api/v1/namespaces/${ns}/pods/no-such-pod`, k8s.HttpMethod.DELETE);
  await kc.applySecurityAuthentication(ctx);
  const dispatcher = ctx.getDispatcher() as Dispatcher;
  const headers = { ...ctx.getHeaders(), 'content-type': 'application/json', accept: 'application/json' };
  const body = JSON.stringify({ preconditions: { uid: ref.uid } });
  await timeIt('undici request()', async () => {
    const r = await request(ctx.getUrl(), { method: 'DELETE', headers, body, dispatcher });
    await r.body.text();
  });
  // What a DELETE costs when the pool has no idle connection (a watch took it): a new one each time.
  const cluster = kc.getCurrentCluster()!;
  const settings = kc.createDispatcherOptions(cluster, { ...(cluster.caData ? { ca: Buffer.from(cluster.caData, 'base64') } : {}) });
  if (settings.type === 'agent') {
    await timeIt('undici request(), new connection', async () => {
      const agent = new Agent({ connect: settings.connect });
      try {
        const r = await request(ctx.getUrl(), { method: 'DELETE', headers, body, dispatcher: agent });
        await r.body.text();
      } finally {
        await agent.close();
      }
    });
  }

  // ---- watch ----
  await admin.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'probe' }, data: { i: '0' } } });
  const seenNode = new Map<string, number>(); const seenRaw = new Map<string, number>();
  const w = new k8s.Watch(adminKc);
  const ctl = await w.watch(`/api/v1/namespaces/${ns}/configmaps`, {}, (_t, obj: k8s.V1ConfigMap) => {
    if (obj.data?.i) seenNode.set(obj.data.i, performance.now());
  }, () => undefined);
  const wctx = new k8s.RequestContext(`${adminKc.getCurrentCluster()!.server}/api/v1/namespaces/${ns}/configmaps?watch=true`, k8s.HttpMethod.GET);
  await adminKc.applySecurityAuthentication(wctx);
  const raw = await request(wctx.getUrl(), { method: 'GET', headers: wctx.getHeaders(), dispatcher: wctx.getDispatcher() as Dispatcher });
  let rest = '';
  raw.body.setEncoding('utf8');
  raw.body.on('data', (chunk: string) => {
    rest += chunk;
    for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
      const line = rest.slice(0, nl); rest = rest.slice(nl + 1);
      const obj = JSON.parse(line).object as k8s.V1ConfigMap;
      if (obj.data?.i) seenRaw.set(obj.data.i, performance.now());
    }
  });
  await new Promise((r) => setTimeout(r, 500));
  const lagNode: number[] = []; const lagRaw: number[] = [];
  for (let i = 1; i <= N; i++) {
    await admin.core.patchNamespacedConfigMap({ namespace: ns, name: 'probe', body: { data: { i: String(i) } } }, mergePatch);
    const answered = performance.now();
    const until = Date.now() + 2000;
    while ((!seenNode.has(String(i)) || !seenRaw.has(String(i))) && Date.now() < until) await new Promise((r) => setImmediate(r));
    if (!seenNode.has(String(i)) || !seenRaw.has(String(i))) console.error(`event ${i}: client-node ${seenNode.has(String(i))}, undici ${seenRaw.has(String(i))}`);
    else {
      lagNode.push(seenNode.get(String(i))! - answered);
      lagRaw.push(seenRaw.get(String(i))! - answered);
    }
  }
  console.log(`${'client-node Watch'.padEnd(34)} patch answered -> event delivered: ${stats(lagNode)}`);
  console.log(`${'undici stream, parsed by hand'.padEnd(34)} patch answered -> event delivered: ${stats(lagRaw)}`);
  const diff = lagNode.map((x, i) => x - lagRaw[i]!);
  console.log(`${'client-node minus undici'.padEnd(34)} same event: ${stats(diff)}`);
  ctl.abort();
  raw.body.destroy();
} finally {
  await admin.core.deleteNamespace({ name: ns }).catch(() => undefined);
}
process.exit(0);
