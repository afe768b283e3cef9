// Kubernetes API call latency (not a test): sequential calls through a plain
// client-node KubeConfig, which opens a new TCP and TLS connection for every
// call, against tend's (src/kube/client.ts), which keeps its connections.
//
//   node bench/kube-client.ts [--state-dir DIR] [--calls 300]
import * as k8s from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import { loadKubeConfig } from '../src/kube/client.ts';
import { currentSandbox } from '../src/sandbox/sandbox.ts';

const { values: opts } = parseArgs({ options: { 'state-dir': { type: 'string' }, calls: { type: 'string', default: '300' } } });
const CALLS = Number(opts.calls);
const info = await currentSandbox(opts['state-dir']);
if (!info) throw new Error('no sandbox: run `tend sandbox up` (or pass --state-dir)');

async function measure(kc: k8s.KubeConfig): Promise<number[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.readNamespace({ name: 'default' }); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    await core.readNamespace({ name: 'default' });
    ms.push(performance.now() - t);
  }
  return ms.sort((a, b) => a - b);
}

const plain = new k8s.KubeConfig();
plain.loadFromFile(info.kubeconfig);
const q = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!.toFixed(2);
// Alternated, so that both see the same machine.
for (const round of [1, 2]) {
  for (const [name, kc] of [['client-node as shipped', plain], ['tend (connections kept)', loadKubeConfig({ kubeconfig: info.kubeconfig })]] as const) {
    const ms = await measure(kc);
    console.log(`round ${round}, ${name.padEnd(24)} ${CALLS} sequential GETs: p50 ${q(ms, 0.5)} ms, p99 ${q(ms, 0.99)} ms`);
  }
}
process.exit();
