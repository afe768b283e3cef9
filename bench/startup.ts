// Benchmark (not a test): how long `tend worker` and `tend run` take from the command to /readyz
// answering 200, with the pre-built workflow bundle (dist/, what the image ships) and with the
// workflows bundled at start-up (TEND_WORKFLOW_BUNDLE=off, as without a bundle).
//
//   ./bin/tend sandbox up            # or any sandbox: TEND_SANDBOX_DIR=... node bench/startup.ts
//   node bench/startup.ts [--rounds 5]
//
// Each start gets its own task queue; the bundle is built first when it is stale.
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { currentSandbox } from '../src/sandbox/sandbox.ts';
import { grantRightsFor } from '../src/sandbox/bootstrap.ts';
import { workflowCode, writeWorkflowBundle } from '../src/workers/worker.ts';
import { freeLoopbackPort } from '../src/workers/runtime.ts';
import { TendProcess } from '../test/harness/cli.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const rounds = Number(values.rounds);
const info = await currentSandbox(process.env.TEND_SANDBOX_DIR);
if (!info) throw new Error('no sandbox: run `./bin/tend sandbox up` (or set TEND_SANDBOX_DIR)');
if ('workflowsPath' in await workflowCode()) {
  console.log('the pre-built bundle is stale: building it');
  await writeWorkflowBundle();
}
const dir = await mkdtemp(join(tmpdir(), 'tend-bench-startup-'));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const configFor = async (taskQueue: string) => {
  const config = join(dir, `${taskQueue}.yaml`);
  await writeFile(config, toYaml({
    temporal: { address: info.temporalAddress, namespace: 'default', taskQueue },
    kubernetes: { kubeconfig: info.tendKubeconfig },
    apps: { namespaces: ['default'] },
  }));
  return config;
};
// The rights `tend rbac` generates for this configuration (the same for every task queue).
await grantRightsFor(info.kubeconfig, await configFor('tend-startup'), 'tend-bench-startup');

async function startOnce(command: 'worker' | 'run', bundle: boolean): Promise<number> {
  const config = await configFor(`tend-startup-${randomBytes(3).toString('hex')}`);
  const port = await freeLoopbackPort();
  const t0 = performance.now();
  const p = new TendProcess([command, '--config', config, '--http-address', `127.0.0.1:${port}`], bundle ? {} : { TEND_WORKFLOW_BUNDLE: 'off' });
  try {
    for (;;) {
      if (p.exited) throw new Error(`tend ${command} exited: ${p.output}`);
      const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      if (r?.status === 200) return (performance.now() - t0) / 1000;
      if (performance.now() - t0 > 180_000) throw new Error(`tend ${command} not ready in 180 s: ${p.output}`);
      await sleep(50);
    }
  } finally {
    await p.stop();
  }
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)]!.toFixed(1)} s, min ${s[0]!.toFixed(1)} s, max ${s.at(-1)!.toFixed(1)} s`;
};
console.log(`start-up to /readyz 200, ${rounds} rounds each, alternating (load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)})`);
const results: Record<string, number[]> = {};
for (let i = 0; i < rounds; i++) {
  for (const command of ['worker', 'run'] as const) {
    for (const bundle of [true, false]) {
      const key = `tend ${command}, ${bundle ? 'pre-built bundle' : 'bundled at start-up'}`;
      (results[key] ??= []).push(await startOnce(command, bundle));
    }
  }
}
for (const [key, xs] of Object.entries(results)) console.log(`${key}: ${stats(xs)} (${xs.map((x) => x.toFixed(1)).join(', ')})`);
