// A release as docs/release.md makes it, and its npm tarball as an operator installs it: `npm run
// release -- X.Y.Z` in a clone of this repository (the work tree is never changed), refusing what it
// must; then `npm install -g ./tend-X.Y.Z.tgz` into an empty prefix, run with no checkout
// reachable (an empty HOME and working folder, Node.js 24 and npm alone on PATH): `tend --version`
// names the version and the release commit, `tend doctor` answers through the installed worker, and
// the read commands answer with only a kubeconfig and TEMPORAL_* against the lane's sandbox.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../harness/env.ts';
import { runCommand } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { temporalCli } from '../harness/temporal.ts';
import { waitFor } from '../harness/wait.ts';
import { freeLoopbackPort } from '../../src/workers/runtime.ts';

/** A command run to its end, its output kept (test/harness/cli.ts). */
const run = runCommand;

/** podman's environment: its settings from deploy/containers/containers.conf, as `npm run image` runs it. */
const podmanEnv: NodeJS.ProcessEnv = { ...process.env, CONTAINERS_CONF: join(repoRoot, 'deploy', 'containers', 'containers.conf') };

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('the release, made and installed (ship)', function () {
  this.timeout(60 * 60_000);
  const dir = mkdtempSync(join(tmpdir(), 'tend-release-'));
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  const [major, minor] = pkg.version.split('.').map(Number) as [number, number];
  const version = `${major}.${minor + 1}.0`;
  const workTreeHead = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
  /** The same date for every release made here: the same tree gives the same commits. */
  const epoch = execFileSync('git', ['log', '-1', '--format=%ct', workTreeHead], { cwd: repoRoot, encoding: 'utf8' }).trim();

  /** A clone of the work tree's HEAD, with the checkout's dependencies (a release runs where `npm ci` ran). */
  const clone = (name: string) => {
    const at = join(dir, name);
    execFileSync('git', ['clone', '--quiet', '--no-hardlinks', repoRoot, at]);
    execFileSync('git', ['-C', at, 'checkout', '--quiet', workTreeHead]);
    for (const [k, v] of [['user.name', 'tend release'], ['user.email', 'release@tend.invalid']]) execFileSync('git', ['-C', at, 'config', k, v]);
    symlinkSync(join(repoRoot, 'node_modules'), join(at, 'node_modules'));
    appendFileSync(join(at, '.git', 'info', 'exclude'), 'node_modules\n');
    return at;
  };
  const release = (at: string, args: string[], timeoutMs = 45 * 60_000) =>
    run(process.execPath, [join(at, 'scripts', 'release.ts'), ...args], { cwd: at, env: { ...process.env, SOURCE_DATE_EPOCH: epoch }, timeoutMs });
  const gitIn = (at: string, ...args: string[]) => execFileSync('git', ['-C', at, ...args], { encoding: 'utf8' }).trim();

  let first = clone('first');
  const out = join(first, 'dist', 'release', version);
  let result: { version: string; commit: string; files: string[]; image?: string; imageId?: string } | undefined;
  /** A release of the same tree made before, at the same path (the workflow bundle names its sources by path). */
  let earlier: { commit: string; tarball: string } | undefined;

  after(async () => {
    // The clones, the artifacts and the installed prefix (a few hundred MB), and the image's tag.
    rmSync(dir, { recursive: true, force: true });
    spawnSync('podman', ['rmi', `localhost/tend:${version}`], { stdio: 'ignore', env: podmanEnv });
  });

  it('refuses a version that is not semantic or not above package.json\'s, and a tree with changes: exit 2, nothing changed', async () => {
    for (const [wanted, message] of [
      ['0.2', /^release: refused: "0\.2" is not a semantic version/m],
      [pkg.version, new RegExp(`^release: refused: ${pkg.version.replace(/\./g, '\\.')} is not above package\\.json's version`, 'm')],
      ['0.0.1', /is not above package\.json's version/],
    ] as const) {
      const r = await release(first, [wanted]);
      assert.equal(r.code, 2, `${wanted}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(gitIn(first, 'status', '--porcelain'), '');
      assert.equal(gitIn(first, 'rev-parse', 'HEAD'), workTreeHead);
    }
    writeFileSync(join(first, 'README.md'), 'changed\n', { flag: 'a' });
    const dirty = await release(first, [version]);
    assert.equal(dirty.code, 2, dirty.stderr);
    assert.match(dirty.stderr, /the work tree has changes/);
    gitIn(first, 'checkout', '--', 'README.md');
    assert.ok(!existsSync(out), 'nothing written');
  });

  it('a release without the image, made first to compare with: then the clone is made again', async () => {
    const r = await release(first, [version, '--skip-image']);
    assert.equal(r.code, 0, r.stderr.slice(-4000));
    const made = JSON.parse(r.stdout.trim().split('\n').pop()!) as { commit: string };
    earlier = { commit: made.commit, tarball: sha256(join(out, `tend-${version}.tgz`)) };
    rmSync(first, { recursive: true, force: true });
    first = clone('first');
  });

  it(`npm run release -- ${version}: the commits, the artifacts and SHA256SUMS; the work tree untouched`, async () => {
    const r = await release(first, [version]);
    assert.equal(r.code, 0, r.stderr.slice(-6000));
    result = JSON.parse(r.stdout.trim().split('\n').pop()!) as typeof result;
    assert.equal(result!.version, version);
    const npmTarball = `tend-${version}.tgz`;
    const chart = `tend-chart-${version}.tgz`;
    const image = `tend-image-${version}.tar`;
    assert.deepEqual([...result!.files].sort(), ['SHA256SUMS', chart, 'image.json', image, npmTarball].sort());
    const sums = spawnSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: out, encoding: 'utf8' });
    assert.equal(sums.status, 0, sums.stdout + sums.stderr);
    assert.equal(sums.stdout.trim().split('\n').length, 4);

    // The release commit: the version everywhere, the changelog moved; then deploy/ names the image; the tag.
    assert.equal(gitIn(first, 'log', '-1', '--format=%s', result!.commit), `Release ${version}`);
    assert.equal(gitIn(first, 'rev-parse', `${result!.commit}^`), workTreeHead);
    assert.equal(gitIn(first, 'rev-parse', `v${version}^{commit}`), gitIn(first, 'rev-parse', 'HEAD'));
    assert.equal(gitIn(first, 'status', '--porcelain'), '');
    const read = (path: string) => readFileSync(join(first, path), 'utf8');
    assert.equal(JSON.parse(read('package.json')).version, version);
    const lock = JSON.parse(read('package-lock.json')) as { version: string; packages: Record<string, { version: string }> };
    assert.deepEqual([lock.version, lock.packages['']!.version], [version, version]);
    const date = new Date(Number(epoch) * 1000).toISOString().slice(0, 10);
    assert.match(read('CHANGELOG.md'), new RegExp(`^## \\[Unreleased\\]\\n\\n## \\[${version.replace(/\./g, '\\.')}\\] - ${date}\\n\\n\\S`, 'm'));
    const facts = JSON.parse(readFileSync(join(out, 'image.json'), 'utf8')) as { image: string; id: string; bytes: number };
    assert.equal(facts.image, `localhost/tend:${version}`);
    assert.equal(result!.image, `localhost/tend:${version}`);
    const kustomization = parse(read('deploy/kubernetes/kustomization.yaml')) as { images: { name: string; newName: string; newTag: string }[] };
    assert.deepEqual(kustomization.images, [{ name: 'tend', newName: 'localhost/tend', newTag: version }]);
    const values = parse(read('deploy/helm/tend/values.yaml')) as { image: { repository: string; tag: string; digest: string } };
    assert.deepEqual([values.image.repository, values.image.tag, values.image.digest], ['localhost/tend', version, '']);

    // The chart as packaged: its version, and the image it runs.
    const helm = execFileSync(join(first, 'scripts', 'binaries.sh'), ['--helm'], { encoding: 'utf8' }).trim().split('\n').pop()!;
    const shown = parse(execFileSync(helm, ['show', 'chart', join(out, chart)], { encoding: 'utf8' })) as { version: string; appVersion: string };
    assert.deepEqual([shown.version, shown.appVersion], [version, version]);
    const rendered = execFileSync(helm, ['template', 'tend', join(out, chart)], { encoding: 'utf8' });
    assert.match(rendered, new RegExp(`image: "?localhost/tend:${version.replace(/\./g, '\\.')}"?$`, 'm'));

    // The image the release built is the one it names, and its archive loads as an OCI archive.
    const inspected = JSON.parse(execFileSync('podman', ['image', 'inspect', `localhost/tend:${version}`], { encoding: 'utf8', env: podmanEnv })) as { Id: string }[];
    assert.equal(facts.id.replace(/^sha256:/, ''), inspected[0]!.Id.replace(/^sha256:/, ''));

    // The tarball: what tend runs on, nothing of the checkout's tests, docs or state.
    const listed = execFileSync('tar', ['tzf', join(out, npmTarball)], { encoding: 'utf8' }).trim().split('\n');
    for (const want of ['package/bin/tend', 'package/bin/strip-types.mjs', 'package/src/starters/cli.ts', 'package/dist/workflow-bundle.js',
      'package/COMMIT', 'package/LICENSE', 'package/npm-shrinkwrap.json']) assert.ok(listed.includes(want), want);
    const outside = listed.filter((f) => /^package\/(test|docs|scripts|bench|fuzz|faults|tools|\.tend|node_modules|deploy|\.ci)\//.test(f));
    assert.deepEqual(outside, []);
    assert.equal(execFileSync('tar', ['xzOf', join(out, npmTarball), 'package/COMMIT'], { encoding: 'utf8' }).trim(), result!.commit);

    // The same tree released again: the same release commit and the same npm tarball, byte for byte.
    assert.ok(earlier, 'the release without the image was made');
    assert.equal(result!.commit, earlier!.commit);
    assert.equal(sha256(join(out, npmTarball)), earlier!.tarball);

    // The work tree this test runs in is not the clone's: its version as it was, no release written there, no tag.
    assert.equal((JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version, pkg.version);
    assert.ok(!existsSync(join(repoRoot, 'dist', 'release', version)));
    assert.equal(execFileSync('git', ['tag', '--list', `v${version}`], { cwd: repoRoot, encoding: 'utf8' }).trim(), '');
  });

  describe('installed from the tarball, with no checkout', () => {
    const prefix = join(dir, 'prefix');
    const home = join(dir, 'home');
    const work = join(dir, 'work');
    const nodeDir = join(dir, 'node');
    const namespace = `tend-release-${Date.now()}`;
    const taskQueue = 'tend-release';
    const config = join(home, 'tend.yaml');
    let worker: ChildProcess | undefined;
    let workerOutput = '';

    /** Node.js 24 and npm alone on PATH, an empty HOME: the tarball is all of tend there is. */
    const operator = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => {
      const env: NodeJS.ProcessEnv = {};
      for (const k of ['LANG', 'TZ', 'TMPDIR', 'NODE_EXTRA_CA_CERTS', 'npm_config_registry', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy']) {
        if (process.env[k] !== undefined) env[k] = process.env[k];
      }
      return {
        ...env, HOME: home, PATH: `${join(prefix, 'bin')}:${nodeDir}:/usr/bin:/bin`,
        KUBECONFIG: sandbox().kubeconfig, TEMPORAL_ADDRESS: sandbox().temporalAddress, TEMPORAL_NAMESPACE: namespace, ...extra,
      };
    };
    const tend = (args: string[], timeoutMs = 120_000) => run(join(prefix, 'bin', 'tend'), args, { cwd: work, env: operator(), timeoutMs });

    before(async function () {
      assert.ok(result, 'the release above was made');
      for (const d of [prefix, home, work, nodeDir]) mkdirSync(d, { recursive: true });
      symlinkSync(join(repoRoot, 'node_modules', '.bin', 'node'), join(nodeDir, 'node'));
      const npm = await run('npm', ['install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', join(out, `tend-${version}.tgz`)],
        { cwd: work, env: { ...operator(), npm_config_cache: join(dir, 'npm-cache') }, timeoutMs: 15 * 60_000 });
      assert.equal(npm.code, 0, npm.stderr.slice(-4000));
      writeFileSync(config, `temporal: { taskQueue: ${taskQueue} }\nkubernetes: { kubeconfig: ${JSON.stringify(sandbox().tendKubeconfig)} }\n`);
      await temporalCli(['operator', 'namespace', 'create', '--namespace', namespace]);
    });

    after(async () => {
      if (worker && worker.exitCode === null) {
        const exited = new Promise((resolve) => worker!.once('exit', resolve));
        worker.kill('SIGTERM');
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20_000))]);
        worker.kill('SIGKILL');
      }
    });

    it('is installed as the package alone: no checkout beside it', () => {
      const installed = join(prefix, 'lib', 'node_modules', 'tend');
      for (const absent of ['.git', 'scripts', 'test', 'node_modules/node']) assert.ok(!existsSync(join(installed, absent)), absent);
    });

    it('tend --version: the version and the release commit', async () => {
      const r = await tend(['--version']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^tend ${version.replace(/\./g, '\\.')} \\(commit ${result!.commit}, Temporal SDK \\d+\\.\\d+\\.\\d+, Node\\.js v24\\.`));
      assert.equal(r.stderr, '');
    });

    it('tend setup temporal, tend worker and tend doctor against the sandbox', async () => {
      const setup = await tend(['setup', 'temporal', '-c', config]);
      assert.equal(setup.code, 0, setup.stderr);
      const port = await freeLoopbackPort();
      worker = spawn(join(prefix, 'bin', 'tend'), ['worker', '-c', config, '--http-address', `127.0.0.1:${port}`], { cwd: work, env: operator(), stdio: ['ignore', 'pipe', 'pipe'] });
      worker.stdout!.on('data', (d) => (workerOutput += d));
      worker.stderr!.on('data', (d) => (workerOutput += d));
      await waitFor('the installed worker to start', () => workerOutput.includes('worker started') || (worker!.exitCode !== null && Promise.reject(new Error(workerOutput))),
        { timeoutMs: 180_000 });
      // The tarball's pre-built workflow bundle is of its sources: nothing is bundled at start-up.
      assert.doesNotMatch(workerOutput, /not of these sources/);
      const doctor = await tend(['doctor', '-c', config]);
      assert.equal(doctor.code, 0, doctor.stderr);
      assert.ok(JSON.parse(doctor.stdout), 'doctor printed its report');
    });

    it('the read commands with only a kubeconfig and TEMPORAL_*', async () => {
      for (const args of [['weeder', 'list'], ['taint', 'status'], ['repair-queue', 'list'], ['pause', 'status']]) {
        const r = await tend([...args, '--task-queue', taskQueue]);
        assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      }
      const missing = await tend(['app', 'status', 'default/nothing-here']);
      assert.equal(missing.code, 1, missing.stderr);
      assert.match(missing.stderr, /App default\/nothing-here not found/);
    });

    it('refuses a Node.js older than 22.18, naming the one found', async () => {
      const old = join(dir, 'old-node');
      mkdirSync(old);
      writeFileSync(join(old, 'node'), '#!/bin/sh\necho v20.19.2\n', { mode: 0o755 });
      const r = await run(join(prefix, 'bin', 'tend'), ['--version'], { cwd: work, env: { ...operator(), PATH: `${join(prefix, 'bin')}:${old}:/usr/bin:/bin` } });
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr, `tend: needs Node.js 22.18 or later (23.6 or later on 23); ${join(old, 'node')} is v20.19.2\n`);
    });
  });
});
