// Benchmark (not a test): restart latency, from the command to every new pod
// Ready, for 1 App and for 50 Apps restarted at once; and the Temporal
// actions one restart costs, counted from the workflow's history.
//
//   ./bin/tend sandbox up            # or any sandbox: TEND_SANDBOX_DIR=... node bench/apps.ts
//   node bench/apps.ts [--apps 50] [--rounds 3]
//
// Runs `tend run` on its own task queue against the sandbox, in a namespace of
// its own that it deletes at the end.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { currentSandbox } from '../src/sandbox/sandbox.ts';
import { grantRightsFor } from '../src/sandbox/bootstrap.ts';
import { kubeClients, loadKubeConfig } from '../src/kube/client.ts';
import { connectClient } from '../src/temporal/connection.ts';
import { sendAppCommand } from '../src/starters/apps-commands.ts';
import { appWorkflowId } from '../src/apps/types.ts';
import { freeLoopbackPort } from '../src/workers/runtime.ts';
import { memOf, partsSampler, rssSampler } from './lib/taint-support.ts';
import { spawnTend, stopTend } from './lib/tend-process.ts';
import { ensureWorkflowBundle } from '../src/workers/worker.ts';
import { appObject, createApp, getApp, settled, webProcess } from '../test/harness/apps.ts';

const { values } = parseArgs({ options: { apps: { type: 'string', default: '50' }, rounds: { type: 'string', default: '3' } } });
const many = Number(values.apps);
const rounds = Number(values.rounds);
const info = await currentSandbox(process.env.TEND_SANDBOX_DIR);
if (!info) throw new Error('no sandbox: run `./bin/tend sandbox up` (or set TEND_SANDBOX_DIR)');
const kube = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));
const taskQueue = `tend-apps-bench-${randomBytes(2).toString('hex')}`;
const ns = `bench-apps-${randomBytes(3).toString('hex')}`;
const dir = await mkdtemp(join(tmpdir(), 'tend-bench-'));
const config = join(dir, 'tend.yaml');
await writeFile(config, toYaml({
  temporal: { address: info.temporalAddress, namespace: 'default', taskQueue },
  kubernetes: { kubeconfig: info.tendKubeconfig },
  apps: { namespaces: [ns] },
}));
await kube.core.createNamespace({ body: { metadata: { name: ns } } });
// The rights `tend rbac` generates for this configuration, as an operator would apply them.
await grantRightsFor(info.kubeconfig, config, 'tend-bench');
const httpPort = await freeLoopbackPort();
await ensureWorkflowBundle();
// Through bin/tend, as an operator runs it (and so with the Node.js and glibc settings it sets).
const tend = spawnTend(['run', '--config', config, '--http-address', `127.0.0.1:${httpPort}`]);
let tendOutput = '';
tend.stderr!.on('data', (d) => (tendOutput = (tendOutput + d).slice(-100_000)));
// `tend run`'s resident memory (the worker and the watcher, one process as the Deployment runs them), every second.
const rss = rssSampler({ tend });
const parts = partsSampler(httpPort);
const client = await connectClient({ address: info.temporalAddress, namespace: 'default', taskQueue });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}
const allSettled = (names: string[]) => until(`${names.length} Apps running`, async () =>
  (await Promise.all(names.map((n) => getApp(kube, ns, n)))).every(settled), 300_000);

async function restart(name: string): Promise<number> {
  const t0 = performance.now();
  const r = await sendAppCommand(client, taskQueue, ns, name, 'restart', { strategy: 'stop-start', timeoutSeconds: 600 }, 620_000);
  if (!r.ok) throw new Error(`${name}: ${r.message}`);
  return performance.now() - t0;
}

const stats = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return `min ${(s[0]! / 1000).toFixed(2)} s, median ${(at(0.5) / 1000).toFixed(2)} s, p95 ${(at(0.95) / 1000).toFixed(2)} s, max ${(s.at(-1)! / 1000).toFixed(2)} s`;
};

try {
  await until('tend to watch Apps', async () => tendOutput.includes('watching Apps'), 60_000);
  // One App, restarted `rounds` times.
  await createApp(kube, appObject(ns, 'solo', [webProcess(1)]));
  await allSettled(['solo']);
  const historyBefore = await client.workflow.getHandle(appWorkflowId(ns, 'solo')).fetchHistory();
  const solo: number[] = [];
  for (let i = 0; i < rounds; i++) solo.push(await restart('solo'));
  const history = await client.workflow.getHandle(appWorkflowId(ns, 'solo')).fetchHistory();
  const events = (history.events ?? []).slice(historyBefore.events?.length ?? 0);
  const count = (type: string) => events.filter((e) => String(e.eventType) === type || e[`${type.charAt(0).toLowerCase()}${type.slice(1)}EventAttributes` as keyof typeof e]).length;
  const perRestart = {
    activities: count('ActivityTaskScheduled') / rounds,
    timers: count('TimerStarted') / rounds,
    signals: count('WorkflowExecutionSignaled') / rounds,
    updates: count('WorkflowExecutionUpdateAccepted') / rounds,
  };
  console.log(`1 App (1 instance), ${rounds} restarts: ${stats(solo)}`);
  console.log(`Temporal actions per restart (from history): ${JSON.stringify(perRestart)} (+ wait heartbeats: 1 per 8 s of waiting)`);

  // Many Apps at once.
  const names = Array.from({ length: many }, (_, i) => `app-${i}`);
  for (const n of names) await createApp(kube, appObject(ns, n, [webProcess(1)]));
  await allSettled(names);
  const t0 = performance.now();
  const latencies = await Promise.all(names.map(restart));
  console.log(`${many} Apps (1 instance each) restarted at once: ${stats(latencies)}; all done in ${((performance.now() - t0) / 1000).toFixed(2)} s`);
  console.log(`tend run (worker and watcher, one process): peak RSS ${Math.round(rss.peak.tend!)} MiB (VmHWM ${Math.round(await memOf(tend.pid!, 'VmHWM'))} MiB; goal under 400); at its peak ${JSON.stringify(parts.atPeak)}, ${parts.maxCached} workflows cached at most`);
} finally {
  rss.stop();
  parts.stop();
  await client.connection.close();
  await stopTend(tend);
  await kube.core.deleteNamespace({ name: ns }).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
}
process.exit(0);
