// The worker on a read-only filesystem, as the Deployment runs it (readOnlyRootFilesystem) and
// stricter: no writable /tmp either, nor any other mount (test/harness/readonly.ts). With the
// pre-built workflow bundle (dist/workflow-bundle.js, built here when missing or stale) `tend
// worker` starts, says it loaded the bundle, answers /readyz 200, runs a workflow and its activity
// to the end (tend doctor's check workflow, on a task queue only this worker polls), stays up,
// stops cleanly, and, by strace's record, never tried to write a file. The control: the same
// worker told to bundle at start-up (TEND_WORKFLOW_BUNDLE=off) fails there, because swc unpacks
// its native binary into a cache folder first; with /tmp writable (the Deployment's emptyDir) it
// starts. Needs root (a mount namespace) and strace.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { ensureWorkflowBundle, workflowBundlePath, workflowCode } from '../../src/workers/worker.ts';
import { runTend } from '../harness/cli.ts';
import { repoRoot } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { mountPoints, ReadOnlyTend, refusedWrites, runReadOnly } from '../harness/readonly.ts';
import { waitFor } from '../harness/wait.ts';

/**
 * The environment of a read-only tend: TMPDIR is /tmp (read-only like everything else), and no
 * compile cache (the test run keeps one for its processes, NODE_COMPILE_CACHE: tend's writes to it
 * would be refused here, and are no part of what the Deployment's tend writes).
 */
const ENV = { TMPDIR: '/tmp', TEND_WORKFLOW_BUNDLE: undefined, NODE_COMPILE_CACHE: undefined };

async function httpStatus(address: string, path: string): Promise<number | undefined> {
  return fetch(`http://${address}${path}`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.status, () => undefined);
}

/** Waits for /readyz 200; fails with the output if tend exits first. */
async function ready(tend: ReadOnlyTend, timeoutMs = 180_000): Promise<void> {
  const seen = await waitFor(`tend ${tend.args[0]} on the read-only filesystem to answer /readyz 200`, async () =>
    tend.exited ? 'exited' : (await httpStatus(tend.httpAddress, '/readyz')) === 200 && 'ready', { timeoutMs, intervalMs: 500 });
  if (seen === 'exited') throw new Error(`tend ${tend.args[0]} exited (code ${tend.child.exitCode}):\n${tend.output.slice(-4000)}`);
}

/**
 * Makes sure dist/ holds the pre-built bundle of these sources, as the image build (and `npm run
 * bundle`) makes it: a fresh checkout has none (dist/ is not committed), and any change under
 * src/ makes it stale (the worker would bundle at start-up instead).
 */
async function currentBundle(): Promise<void> {
  await ensureWorkflowBundle();
  assert.deepEqual(await workflowCode(), { workflowBundle: { codePath: workflowBundlePath } });
}

describe('the worker on a read-only filesystem (no writable /tmp)', function () {
  this.timeout(10 * 60_000);
  let dir: string;
  let config: string;
  let taskQueue: string;
  const running: ReadOnlyTend[] = [];

  before(async () => {
    // strace records what the read-only filesystem refused, even where the error was swallowed.
    try {
      execFileSync('strace', ['-V'], { stdio: 'ignore' });
    } catch {
      throw new Error('these tests need strace on PATH (apt-get install strace)');
    }
    // The sandbox's folder: the test writes here, while the read-only tend writes nowhere.
    dir = await mkdtemp(join(sandbox().stateDir, 'readonly-'));
    config = join(dir, 'tend.yaml');
    taskQueue = `readonly-${Date.now()}`;
    await writeFile(config, toYaml({
      temporal: { address: sandbox().temporalAddress, namespace: 'default', taskQueue },
      kubernetes: { kubeconfig: sandbox().tendKubeconfig },
    }));
  });
  after(async () => {
    for (const tend of running) await tend.stop();
  });

  it('the set-up: every mount is read-only for the process, /tmp, TMPDIR, the checkout and HOME refuse writes', async () => {
    const probe = [
      "import { readFileSync, rmSync, writeFileSync } from 'node:fs';",
      "import { tmpdir, homedir } from 'node:os';",
      "import { join } from 'node:path';",
      // A mount point mounted on twice lists both; only the last (on top) can be reached.
      "const top = new Map(readFileSync('/proc/self/mounts', 'utf8').trim().split('\\n').map((l) => l.split(' ')).map((m) => [m[1], m[3]]));",
      "const writable = [...top].filter(([, opts]) => !opts.split(',').includes('ro')).map(([point]) => point);",
      'const writes = {};',
      `for (const d of ['/tmp', tmpdir(), homedir(), ${JSON.stringify(repoRoot)}, ${JSON.stringify(join(repoRoot, 'node_modules'))}, '/dev/shm', '/var/tmp']) {`,
      "  const f = join(d, '.tend-readonly-probe');",
      "  try { writeFileSync(f, 'x'); writes[d] = 'written'; rmSync(f); } catch (e) { writes[d] = e.code; }",
      '}',
      'console.log(JSON.stringify({ writable, writes, tmpdir: tmpdir() }));',
    ].join('\n');
    const r = await runReadOnly([process.execPath, '--input-type=module', '-e', probe], ENV);
    assert.equal(r.code, 0, r.stderr);
    const seen = JSON.parse(r.stdout) as { writable: string[]; writes: Record<string, string>; tmpdir: string };
    assert.deepEqual(seen.writable, [], 'mounts left writable');
    assert.equal(seen.tmpdir, '/tmp');
    for (const [d, result] of Object.entries(seen.writes)) assert.equal(result, 'EROFS', `a write in ${d}`);
    assert.ok(mountPoints().includes('/'), 'the host\'s mounts were read');
  });

  describe('with the pre-built workflow bundle', () => {
    let worker: ReadOnlyTend;

    it('tend worker starts, says it loaded the pre-built bundle (not bundling now), and answers /readyz 200', async function () {
      this.timeout(8 * 60_000); // bundling first, when dist/ has no bundle of these sources
      await currentBundle();
      worker = new ReadOnlyTend(['worker', '--config', config], ENV, { trace: join(dir, 'worker.strace') });
      running.push(worker);
      await ready(worker);
      assert.match(worker.logs, new RegExp(`worker started .*workflowBundle=${workflowBundlePath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
      assert.doesNotMatch(worker.logs, /bundling the workflows now|bundled at start-up/);
    });

    it('runs a workflow and its activity to the end: tend doctor\'s check workflow, on a task queue only it polls', async () => {
      assert.ok(!worker.exited, 'the worker is up');
      const r = await runTend(['doctor', '--config', config, '--timeout', '90'], { timeoutMs: 150_000 });
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}\n--- worker ---\n${worker.output.slice(-4000)}`);
      const facts = JSON.parse(r.stdout) as { nodes: number; version: string; workerTaskQueue: string };
      assert.equal(facts.workerTaskQueue, taskQueue);
      assert.equal(facts.nodes, sandbox().settings.nodes, 'the activity listed the cluster\'s Nodes');
      assert.match(facts.version, /^v1\.\d+\.\d+/);
    });

    it('stays up: /healthz and /readyz 200, nothing refused by the read-only filesystem, and a clean stop', async () => {
      assert.ok(!worker.exited, worker.output.slice(-4000));
      assert.equal(await httpStatus(worker.httpAddress, '/healthz'), 200);
      assert.equal(await httpStatus(worker.httpAddress, '/readyz'), 200);
      assert.doesNotMatch(worker.logs, /EROFS|read-only file system/i);
      assert.equal(await worker.stop(), 0, worker.output.slice(-4000));
    });

    it('tried to write nothing, from start to stop: no file system call of it failed read-only (strace)', async () => {
      assert.ok(worker.exited, 'stopped by the test before');
      const trace = await readFile(worker.trace!, 'utf8');
      // The record is of tend's own calls: Node looks for modules where they are not.
      assert.match(trace, /node_modules.*ENOENT/, 'strace recorded the worker\'s failed calls');
      assert.deepEqual(refusedWrites(trace), []);
    });
  });

  describe('the control: the same worker told to bundle at start-up (TEND_WORKFLOW_BUNDLE=off)', () => {
    it('fails to start: swc (webpack\'s loader) cannot unpack its native binary, and that is the only write it tried', async () => {
      const trace = join(dir, 'bundling-worker.strace');
      const worker = new ReadOnlyTend(['worker', '--config', config], { ...ENV, TEND_WORKFLOW_BUNDLE: 'off' }, { trace });
      running.push(worker);
      await waitFor('the bundling worker to exit', () => worker.exited, { timeoutMs: 240_000, intervalMs: 500 });
      assert.equal(worker.child.exitCode, 1, worker.output.slice(-4000));
      assert.match(worker.logs, /Webpack finished with errors/);
      assert.match(worker.logs, /swc-loader[\s\S]*Failed to load native binding/);
      assert.doesNotMatch(worker.logs, /worker started/);
      // Said plainly, with the way out.
      assert.match(worker.output, /bundling the workflow code at start-up failed: .*\n.*swc.*writable cache.*npm run bundle/);
      // @swc/core's platform package holds its binary packed; loading it unpacks it first into
      // $XDG_CACHE_HOME (or ~/.cache)/swc-native-UID, else $TMPDIR/swc-native-UID (or
      // SWC_NATIVE_BINDING_CACHE). Webpack itself writes nothing (its output stays in memory).
      const refused = refusedWrites(await readFile(trace, 'utf8'));
      assert.ok(refused.some((l) => l.includes(`"/tmp/swc-native-${process.getuid!()}"`)), refused.join('\n'));
      assert.deepEqual(refused.filter((l) => !/\/swc-native-\d+[/"]/.test(l)), [], 'writes refused other than swc\'s cache');
    });

    it('starts with its TMPDIR alone writable (the Deployment\'s emptyDir on /tmp): swc unpacks its binary there', async function () {
      this.timeout(8 * 60_000);
      const trace = join(dir, 'bundling-worker-tmp.strace');
      // The emptyDir stands on an empty folder of its own, TMPDIR naming it, as /tmp is the
      // container's TMPDIR: an empty tmpfs on /tmp itself would hide a checkout (and this test's
      // code) that lies under /tmp.
      const emptyDir = await mkdtemp(join(dir, 'emptydir-'));
      const worker = new ReadOnlyTend(['worker', '--config', config], { ...ENV, TMPDIR: emptyDir, TEND_WORKFLOW_BUNDLE: 'off' }, { trace, writable: [emptyDir] });
      running.push(worker);
      await ready(worker, 6 * 60_000);
      assert.match(worker.logs, /worker started .*workflowBundle=bundled at start-up/);
      assert.equal(await worker.stop(), 0, worker.output.slice(-4000));
      // Refused: only swc's first choice, the cache under the read-only home.
      const refused = refusedWrites(await readFile(trace, 'utf8'));
      assert.ok(refused.some((l) => /\/swc-native-\d+[/"]/.test(l)), 'swc tried its cache in the home folder first');
      assert.deepEqual(refused.filter((l) => !/\/swc-native-\d+[/"]/.test(l) || l.includes(`"${emptyDir}/`)), [], 'writes refused other than swc\'s cache in the home folder');
    });
  });
});

describe('the Deployment runs tend on a read-only root filesystem', () => {
  it('sets readOnlyRootFilesystem on the container; its only writable mount is /tmp, an emptyDir', async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const deployment = parseYaml(await readFile(join(repoRoot, 'deploy/kubernetes/deployment.yaml'), 'utf8')) as any;
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    const writable = container.volumeMounts.filter((m: { readOnly?: boolean }) => !m.readOnly);
    assert.deepEqual(writable.map((m: { mountPath: string }) => m.mountPath), ['/tmp']);
    assert.ok(pod.volumes.find((v: { name: string }) => v.name === writable[0].name).emptyDir);
  });
});
