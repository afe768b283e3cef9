// docker-compose.yml, run by podman-compose with deploy/compose/standins.yml (stand-ins of the same
// versions for the public images this machine cannot pull, tend's image from `npm run image`):
// PostgreSQL turns healthy, the schema job and the setup job complete, the server and the Web UI
// serve, tend's worker and watcher answer /readyz, and the weeder's scenario runs through them on
// the sandbox. Then `down -v`, and nothing of the project is left, also when a step failed.
//
// Debian 12's podman-compose (1.0.3) starts services in order but waits for no depends_on
// condition, so the test creates the containers (`up --no-start`) and starts each when the
// condition it depends on holds: what compose does. The sandbox's kube-apiserver listens on the
// host's loopback, which a container on the compose network cannot reach: the test relays a port
// of the host (host.containers.internal in the containers) to it, and tend's kubeconfig names the
// API server `kubernetes`, a name its certificate holds.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { repoRoot } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, grantConfiguredRights, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { dbBack, dbWithDependants, deletedOf, dependantsCrashLooping } from '../harness/weeder.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import { buildImage, freePort, httpStatus, podman, podmanEnv } from './engine.ts';

const execFileP = promisify(execFile);

describe('docker-compose.yml runs, with stand-ins for the public images (ship)', function () {
  this.timeout(600_000);
  const project = `tendcompose${process.pid}`;
  const container = (service: string) => `${project}_${service}_1`;
  const ports = { temporal: 0, ui: 0, worker: 0, watcher: 0, relay: 0 };
  let env: NodeJS.ProcessEnv;
  let dir: string;
  let relay: Server | undefined;
  const sockets = new Set<Socket>();
  let kube: KubeClients;
  let ns = '';

  const compose = (args: string[], timeoutMs = 300_000) => execFileP('podman-compose', [
    '-p', project, '-f', join(repoRoot, 'docker-compose.yml'), '-f', join(repoRoot, 'deploy', 'compose', 'standins.yml'), ...args,
  ], { cwd: repoRoot, env, timeout: timeoutMs, maxBuffer: 64 << 20 });
  const state = async (service: string) => (await podman(['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', container(service)])).stdout.trim();
  const logs = async (service: string) => {
    const r = await podman(['logs', '--tail', '40', container(service)]).catch((e: Error) => ({ stdout: '', stderr: e.message }));
    return `--- ${service}:\n${r.stdout}${r.stderr}`.slice(-4000);
  };
  const start = (...services: string[]) => podman(['start', ...services.map(container)]);
  /** Waits for a one-shot job to exit, and asserts it succeeded. */
  const completes = async (service: string) => {
    const { stdout } = await podman(['wait', container(service)], 300_000);
    assert.equal(stdout.trim(), '0', `${service} exited with ${stdout.trim()}\n${await logs(service)}`);
  };

  before(async function () {
    this.timeout(40 * 60_000); // cold: tend's image and the stand-ins are built
    const image = await buildImage();
    await execFileP(process.execPath, [join(repoRoot, 'scripts', 'compose-standins.ts')], { cwd: repoRoot, timeout: 30 * 60_000, maxBuffer: 64 << 20 });
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();

    // The relay: the host's addresses (the containers' host.containers.internal) to kube-apiserver.
    const api = new URL(sandbox().apiserver);
    relay = createServer((client) => {
      const upstream = connect(Number(api.port), api.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.once('close', () => sockets.delete(s));
        s.on('error', () => { client.destroy(); upstream.destroy(); });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => relay!.once('error', reject).listen(ports.relay, '0.0.0.0', resolve));

    kube = admin();
    ns = await tempNamespace(kube, 'compose-weeder');
    const weeder = await dbWithDependants(kube, ns, 1);
    dir = mkdtempSync(join(tmpdir(), 'tend-compose-'));
    chmodSync(dir, 0o755);
    // tend's own kubeconfig, its API server at the relay, under a name its certificate holds.
    const kubeconfig = parse(readFileSync(sandbox().tendKubeconfig, 'utf8')) as { clusters: { cluster: Record<string, string> }[] };
    for (const c of kubeconfig.clusters) {
      c.cluster.server = `https://host.containers.internal:${ports.relay}`;
      c.cluster['tls-server-name'] = 'kubernetes';
    }
    writeFileSync(join(dir, 'kubeconfig'), stringify(kubeconfig));
    chownSync(join(dir, 'kubeconfig'), 0, 1000);
    chmodSync(join(dir, 'kubeconfig'), 0o640);
    // deploy/compose/config.yaml with a weeder section; rights granted from a copy naming a host path.
    const base = parse(readFileSync(join(repoRoot, 'deploy', 'compose', 'config.yaml'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'config.yaml'), stringify({ ...base, weeder: { ...weeder, watchDuration: '1m' } }));
    chmodSync(join(dir, 'config.yaml'), 0o644);
    writeFileSync(join(dir, 'rights.yaml'), stringify({ ...base, kubernetes: { kubeconfig: sandbox().tendKubeconfig }, weeder }));
    await grantConfiguredRights(join(dir, 'rights.yaml'));

    env = {
      ...podmanEnv,
      TEMPORAL_PORT: String(ports.temporal), TEMPORAL_UI_PORT: String(ports.ui),
      TEND_WORKER_HTTP_PORT: String(ports.worker), TEND_WATCHER_HTTP_PORT: String(ports.watcher),
      TEND_CONFIG: join(dir, 'config.yaml'), TEND_KUBECONFIG: join(dir, 'kubeconfig'), TEND_IMAGE: image.image,
    };
    await compose(['up', '--no-build', '--no-start']);
  });

  after(async function () {
    this.timeout(300_000);
    const down = env ? await compose(['down', '-v', '-t', '10']).then(() => '', (e: Error) => e.message) : '';
    // podman-compose 1.0.3 leaves the project's network; anything else of the project is a leftover.
    await podman(['network', 'rm', '--force', `${project}_default`]).catch(() => undefined);
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => (relay ? relay.close(resolve) : resolve(undefined)));
    if (ns) await deleteNamespace(kube, ns);
    if (dir) rmSync(dir, { recursive: true, force: true });
    const left = await Promise.all([
      podman(['ps', '--all', '--quiet', '--filter', `label=io.podman.compose.project=${project}`]),
      podman(['volume', 'ls', '--quiet', '--filter', `label=io.podman.compose.project=${project}`]),
      podman(['network', 'ls', '--quiet', '--filter', `name=^${project}_`]),
    ]);
    assert.deepEqual(left.map((l) => l.stdout.trim()), ['', '', ''], `left behind by the compose project ${project} ${down}`);
  });

  it('PostgreSQL turns healthy (its own healthcheck)', async () => {
    await start('postgresql');
    await waitFor('pg_isready in the postgresql container', async () =>
      (await podman(['healthcheck', 'run', container('postgresql')]).then(() => true, () => false)), { timeoutMs: 120_000, intervalMs: 2_000 })
      .catch(async (err: Error) => { throw new Error(`${err.message}\n${await logs('postgresql')}`); });
  });

  it('the schema job creates both databases and their schemas, and ends', async () => {
    await start('temporal-schema');
    await completes('temporal-schema');
    assert.match((await podman(['logs', container('temporal-schema')])).stdout, /temporal_visibility: schema up to date/);
  });

  it('the server and the Web UI serve; the setup job registers the namespace and search attributes, and ends', async () => {
    await start('temporal', 'temporal-ui');
    await start('temporal-setup');
    await completes('temporal-setup');
    await waitFor('the Web UI', async () => (await httpStatus(`http://127.0.0.1:${ports.ui}/`)) === 200, { timeoutMs: 120_000 })
      .catch(async (err: Error) => { throw new Error(`${err.message}\n${await logs('temporal-ui')}`); });
    const { stdout } = await execFileP(join(repoRoot, 'scripts', 'binaries.sh'), ['--print']);
    const cli = /^TEMPORAL=(.+)$/m.exec(stdout)![1]!;
    const attributes = await execFileP(cli, ['operator', 'search-attribute', 'list', '--address', `127.0.0.1:${ports.temporal}`, '--namespace', 'default']);
    assert.match(attributes.stdout, /TendCapability\s+Keyword/);
    assert.match(attributes.stdout, /TendTarget\s+Keyword/);
  });

  it('tend\'s worker and watcher answer /readyz', async () => {
    await start('tend-worker', 'tend-watcher');
    for (const [service, port] of [['tend-worker', ports.worker], ['tend-watcher', ports.watcher]] as const) {
      await waitFor(`${service} /readyz`, async () => {
        const [status] = (await state(service)).split(' ');
        if (status !== 'running') throw new Error(`${service} is ${status}`);
        return (await httpStatus(`http://127.0.0.1:${port}/readyz`)) === 200;
      }, { timeoutMs: 180_000, intervalMs: 1_000 }).catch(async (err: Error) => { throw new Error(`${err.message}\n${await logs(service)}`); });
    }
  });

  it('weeder: a crash-looping dependant is deleted once its Service is ready', async () => {
    const looping = await dependantsCrashLooping(kube, ns, 1);
    await dbBack(kube, ns);
    await waitFor('the dependant deleted', async () => (await deletedOf(kube, ns, looping)).length === 1, { timeoutMs: 120_000 })
      .catch(async (err: Error) => { throw new Error(`${err.message}\n${await logs('tend-watcher')}\n${await logs('tend-worker')}`); });
  });
});
