// Benchmark (not a test): how long tend's read commands take, from the shell to their answer,
// beside kubectl's own start-up (`kubectl version --client`), as an operator runs them:
// `./bin/tend ...` with Node.js's compile cache warm (bin/tend keeps it under ~/.cache/tend).
//
//   ./bin/tend sandbox up            # or any sandbox: TEND_SANDBOX_DIR=... node bench/cli.ts
//   npm run bench -- cli [--rounds 10]
//
// The commands that ask Temporal talk to a tend worker this benchmark starts on the sandbox's
// configuration (its own task queue); `app status` reads an App it creates.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { currentSandbox } from '../src/sandbox/sandbox.ts';
import { ensureBinaries } from '../src/sandbox/binaries.ts';
import { kubeClients, loadKubeConfig } from '../src/kube/client.ts';
import { APP_GROUP, APP_PLURAL, APP_VERSION } from '../src/apps/types.ts';
import { freeLoopbackPort } from '../src/workers/runtime.ts';
import { TendProcess } from '../test/harness/cli.ts';
import { appObject, createApp, webProcess } from '../test/harness/apps.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '10' } } });
const rounds = Number(values.rounds);
const info = await currentSandbox(process.env.TEND_SANDBOX_DIR);
if (!info) throw new Error('no sandbox: run `./bin/tend sandbox up` (or set TEND_SANDBOX_DIR)');
const tend = fileURLToPath(new URL('../bin/tend', import.meta.url));
const { kubectl } = await ensureBinaries();

// The sandbox's configuration on a task queue of this run's own.
const dir = await mkdtemp(join(tmpdir(), 'tend-bench-cli-'));
const config = join(dir, 'tend.yaml');
const settings = parse(await readFile(info.config, 'utf8')) as { temporal: { taskQueue: string }; apps?: { namespaces?: string[] } };
settings.temporal.taskQueue = `tend-bench-cli-${randomBytes(3).toString('hex')}`;
await writeFile(config, stringify(settings));
const appNamespace = settings.apps?.namespaces?.[0] ?? 'demo';
const kube = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));
await kube.core.createNamespace({ body: { metadata: { name: appNamespace } } }).catch(() => undefined);
const appName = `bench-${randomBytes(2).toString('hex')}`;
await createApp(kube, appObject(appNamespace, appName, [webProcess(1)]));

const worker = new TendProcess(['worker', '--config', config, '--http-address', `127.0.0.1:${await freeLoopbackPort()}`]);
for (const t0 = Date.now(); !worker.output.includes('worker started');) {
  if (worker.exited || Date.now() - t0 > 120_000) throw new Error(`tend worker did not start: ${worker.output}`);
  await new Promise((resolve) => setTimeout(resolve, 100));
}

const time = (argv: string[]): number => {
  const t0 = performance.now();
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  const s = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return s;
};
const commands: [string, string[]][] = [
  ['kubectl version --client', [kubectl, 'version', '--client']],
  ['tend --version', [tend, '--version']],
  ['tend --help', [tend, '--help']],
  ['tend weeder list', [tend, 'weeder', 'list', '--config', config]],
  ['tend taint status', [tend, 'taint', 'status', '--config', config]],
  ['tend app status', [tend, 'app', 'status', `${appNamespace}/${appName}`, '--config', config]],
  ['tend repair-queue list', [tend, 'repair-queue', 'list', '--config', config]],
  ['tend pause status', [tend, 'pause', 'status', '--config', config]],
];
try {
  // Once each first: the compile cache filled, the repair queue started.
  for (const [, argv] of commands) time(argv);
  console.log(`read commands, shell to answer, ${rounds} rounds each (load average ${loadavg()[0]!.toFixed(1)})`);
  for (const [name, argv] of commands) {
    const xs = Array.from({ length: rounds }, () => time(argv)).sort((a, b) => a - b);
    console.log(`  ${name.padEnd(26)} median ${xs[Math.floor(xs.length / 2)]!.toFixed(2)} s  min ${xs[0]!.toFixed(2)} s  max ${xs.at(-1)!.toFixed(2)} s`);
  }
} finally {
  await worker.stop();
  await kube.custom.deleteNamespacedCustomObject({ group: APP_GROUP, version: APP_VERSION, plural: APP_PLURAL, namespace: appNamespace, name: appName }).catch(() => undefined);
}
