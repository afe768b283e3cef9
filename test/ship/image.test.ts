// tend's image, built by `npm run image` and run by podman as a Deployment runs it: read-only root
// filesystem, uid 1000, the configuration and the kubeconfig mounted read-only, the host's network
// (the sandbox's kube-apiserver and Temporal listen on the host's loopback). `tend run` in the
// container answers /readyz and completes one scenario of each capability on the sandbox; its
// repair commands run inside the container. docs/image.md describes the image.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { allCapabilities } from '../harness/all-capabilities.ts';
import { repoRoot } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, grantConfiguredRights, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { dbBack, dbWithDependants, deletedOf, dependantsCrashLooping } from '../harness/weeder.ts';
import { readPod, readyPodsOn, taint, taintStatusJson, untaint } from '../harness/taint.ts';
import { appObject, createApp, getApp, settled, webProcess, workloadsOf } from '../harness/apps.ts';
import { add, entry, repairWorld, resetRepairQueue, temporalCli, type RepairWorld } from '../harness/repair.ts';
import { SLOTS_WORKFLOW_ID } from '../../src/taint/messages.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import { buildImage, freePort, httpStatus, podman, type BuiltImage } from './engine.ts';

const KEY = 'example.org/image';
const TASK_QUEUE = 'tend-image';
const MAX_BYTES = 250_000_000;

describe('the image, built and run for real (ship)', function () {
  this.timeout(600_000);
  let built: BuiltImage;
  const names: string[] = [];

  before(async function () {
    this.timeout(30 * 60_000); // a cold build assembles the stand-in base and installs the dependencies
    built = await buildImage();
    console.log(`      image: ${built.image} ${built.id.slice(0, 19)}, ${(built.bytes / 1e6).toFixed(1)} MB, on ${built.base}${built.standIn ? ' (stand-in)' : ''}`);
  });
  after(async () => {
    // Every container this file started, running or not.
    for (const name of names) await podman(['rm', '--force', '--time', '5', name]).catch(() => undefined);
  });

  it(`is at most ${MAX_BYTES / 1e6} MB uncompressed`, () => {
    assert.ok(built.bytes > 50_000_000, `${built.bytes} bytes: not an image with Node in it`);
    assert.ok(built.bytes <= MAX_BYTES, `${(built.bytes / 1e6).toFixed(1)} MB`);
  });

  it('a second `npm run image` finds it built from the same sources', async () => {
    // Another commit or edit of the checkout between two runs makes new sources: the next run
    // then builds, and the one after must find that build.
    let previous = built;
    for (let run = 0; run < 3; run++) {
      const again = await buildImage();
      if (again.sources === previous.sources) {
        assert.equal(again.id, previous.id);
        assert.match(again.stderr, /is built already from these sources/);
        if (built.standIn) assert.match(again.stderr, /stand-in base \S+ is built already/);
        return;
      }
      previous = again;
    }
    assert.fail('the sources changed under each of 3 runs');
  });

  it('keeps only this platform\'s Temporal core bridge, and runs as uid 1000', async () => {
    const name = `tend-image-ls-${process.pid}`;
    names.push(name);
    const { stdout } = await podman(['run', '--name', name, '--rm', '--read-only', '--entrypoint', 'sh', built.image, '-c',
      'id -u; id -g; ls /app/node_modules/@temporalio/core-bridge/releases; test -e /usr/local/bin/npm && echo npm; test -e /usr/local/include && echo include; true']);
    assert.deepEqual(stdout.trim().split('\n'), ['1000', '1000', 'x86_64-unknown-linux-gnu']);
  });

  it('tend --version prints the version and the commit it was built from', async () => {
    const name = `tend-image-version-${process.pid}`;
    names.push(name);
    const { stdout } = await podman(['run', '--name', name, '--rm', '--read-only', '--user', '1000:1000', built.image, '--version']);
    const version = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
    assert.match(stdout.trim(), new RegExp(`^tend ${version.replaceAll('.', '\\.')} \\(commit ${head.slice(0, 12)}[0-9a-f]*[,)]`));
    assert.doesNotMatch(stdout, /dirty|unknown/);
  });

  describe('tend run in the container, on the sandbox', () => {
    let kube: KubeClients;
    let world: RepairWorld;
    let config: string;
    let dir: string;
    let weederNs: string;
    let taintNs: string;
    let appsNs: string;
    let port: number;
    const name = `tend-image-run-${process.pid}`;
    const tainted: string[] = [];

    /** The container's log, for a failure's message. */
    const logs = async () => (await podman(['logs', '--tail', '60', name]).catch((e: Error) => ({ stdout: '', stderr: e.message }))).stderr.slice(-6000);

    before(async function () {
      this.timeout(300_000);
      kube = admin();
      await resetRepairQueue();
      await temporalCli(['workflow', 'terminate', '--workflow-id', SLOTS_WORKFLOW_ID, '--reason', 'test reset']).catch(() => undefined);
      [weederNs, taintNs, appsNs] = await Promise.all(['image-weeder', 'image-taint', 'image-apps'].map((p) => tempNamespace(kube, p)));
      const weeder = await dbWithDependants(kube, weederNs, 2);

      // Mounted at the same paths as on the host, so one configuration serves the container and
      // the tests' own CLI calls. Readable by uid 1000 (the sandbox keeps its kubeconfig 0600).
      dir = mkdtempSync(join(tmpdir(), 'tend-image-'));
      chmodSync(dir, 0o755);
      const kubeconfig = join(dir, 'kubeconfig');
      copyFileSync(sandbox().tendKubeconfig, kubeconfig);
      chownSync(kubeconfig, 0, 1000);
      chmodSync(kubeconfig, 0o640);
      // The repair commands run in the container and write their marks here (read-write).
      world = repairWorld();
      chmodSync(world.dir, 0o777);
        const configDir = join(dir, 'config');
      mkdirSync(configDir);
      config = join(configDir, 'tend.yaml');
      writeFileSync(config, stringify(allCapabilities({ taskQueue: TASK_QUEUE, kubeconfig: kubeconfig, weeder, taintNs, taintKey: KEY, appsNs, world })));
      chmodSync(config, 0o644);
      await grantConfiguredRights(config);
      world = { ...world, config };

      port = await freePort();
      names.push(name);
      await podman(['run', '--detach', '--name', name, '--read-only', '--user', '1000:1000', '--network', 'host',
        '--volume', `${configDir}:${configDir}:ro`, '--volume', `${kubeconfig}:${kubeconfig}:ro`, '--volume', `${world.dir}:${world.dir}`,
        built.image, 'run', '--config', config, '--http-address', `127.0.0.1:${port}`]);
      await waitFor('/readyz to answer 200', async () => {
        const state = (await podman(['inspect', '--format', '{{.State.Status}}', name])).stdout.trim();
        if (state !== 'running') throw new Error(`the container is ${state}:\n${await logs()}`);
        return (await httpStatus(`http://127.0.0.1:${port}/readyz`)) === 200;
      }, { timeoutMs: 180_000, intervalMs: 1_000 }).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await logs()}`);
      });
    });
    after(async function () {
      this.timeout(180_000);
      for (const node of tainted) await untaint(kube, node, KEY).catch(() => undefined);
      if (tainted.length) {
        await waitFor('the node workflows to end', async () => (await taintStatusJson(config)).nodes.length === 0, { timeoutMs: 60_000 })
          .catch((err: Error) => process.stderr.write(`cleanup: ${err.message}\n`));
      }
      await podman(['rm', '--force', '--time', '10', name]).catch(() => undefined);
      await temporalCli(['workflow', 'terminate', '--workflow-id', SLOTS_WORKFLOW_ID, '--reason', 'test over']).catch(() => undefined);
      await Promise.all([weederNs, taintNs, appsNs].filter(Boolean).map((ns) => deleteNamespace(kube, ns)));
      await resetRepairQueue();
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (world) rmSync(world.dir, { recursive: true, force: true });
    });

    it('answers /readyz on its HTTP port, and /metrics', async () => {
      assert.equal(await httpStatus(`http://127.0.0.1:${port}/readyz`), 200);
      const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(await metrics.text(), /^# HELP /m);
    });

    it('weeder: a crash-looping dependant is deleted once its Service is ready', async () => {
      const looping = await dependantsCrashLooping(kube, weederNs, 2);
      await dbBack(kube, weederNs);
      await waitFor('both dependants deleted', async () => (await deletedOf(kube, weederNs, looping)).length === 2, { timeoutMs: 120_000 })
        .catch(async (err: Error) => { throw new Error(`${err.message}\n${await logs()}`); });
    });

    it('taint: a pod on a tainted node is replaced', async () => {
      const pods: k8s.V1Pod[] = await readyPodsOn(kube, taintNs, 'db', 'sim-1', 1);
      tainted.push('sim-1');
      await taint(kube, 'sim-1', { key: KEY, value: 'x', effect: 'NoSchedule' });
      await waitFor('the pod evicted', async () => {
        const now = await readPod(kube, taintNs, pods[0]!.metadata!.name!);
        return !now || now.metadata?.uid !== pods[0]!.metadata!.uid || !!now.metadata?.deletionTimestamp;
      }, { timeoutMs: 120_000 }).catch(async (err: Error) => { throw new Error(`${err.message}\n${await logs()}`); });
    });

    it('apps: an App is created and its Deployment made', async () => {
      await createApp(kube, appObject(appsNs, 'web', [webProcess(1)]));
      await waitFor('the App settled', async () => settled(await getApp(kube, appsNs, 'web')), { timeoutMs: 120_000 })
        .catch(async (err: Error) => { throw new Error(`${err.message}\n${await logs()}`); });
      assert.equal((await workloadsOf(kube, appsNs, 'web')).length, 1);
    });

    it('repair: an entry\'s command runs in the container, and the entry succeeds', async () => {
      const e = await add(world, 'heal', '192.0.2.211');
      await waitFor('the entry succeeded', async () => (await entry(world, e.index))?.status === 'succeeded', { timeoutMs: 120_000 })
        .catch(async (err: Error) => { throw new Error(`${err.message}\n${await logs()}`); });
      assert.deepEqual(readFileSync(join(world.dir, '192.0.2.211.log'), 'utf8').trim().split('\n'), ['heal']);
    });
  });
});
