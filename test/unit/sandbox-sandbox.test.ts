// The sandbox's state folder is made absolute before anything is derived from
// it: its components are handed paths inside it and run from other folders.
// A component that ends during start-up is reported with how it ended, and
// started once more only when it ended without a word.
import assert from 'node:assert/strict';
import { access, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import {
  currentSandbox, defaultSettings, defaultStateDir, sandboxInfo, startComponent, type Component, type SandboxInfo,
} from '../../src/sandbox/sandbox.ts';
import { stopProcess, type ProcessRecord } from '../../src/sandbox/process.ts';

describe('sandbox: state folder paths', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(process.cwd(), '.sandbox-paths-'));
    await writeFile(join(dir, 'sandbox.json'), JSON.stringify({ nodes: 1, timeScale: 1, minRequestTimeoutSeconds: 1800, nodeMonitorGraceSeconds: 40,
      ports: { etcdClient: 1, etcdPeer: 2, apiserver: 3, controllerManager: 4, scheduler: 5, temporal: 6, temporalUi: 7 } }));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('a relative --state-dir gives absolute paths', async () => {
    const info = await currentSandbox(relative(process.cwd(), dir));
    assert.equal(info?.stateDir, dir);
    for (const p of [info!.kubeconfig, info!.tendKubeconfig, info!.config]) assert.ok(isAbsolute(p), p);
  });
  it('a relative TEND_SANDBOX_DIR too', () => {
    const saved = process.env.TEND_SANDBOX_DIR;
    process.env.TEND_SANDBOX_DIR = 'some/where';
    try {
      assert.equal(defaultStateDir(), join(process.cwd(), 'some/where'));
    } finally {
      if (saved === undefined) delete process.env.TEND_SANDBOX_DIR;
      else process.env.TEND_SANDBOX_DIR = saved;
    }
  });
});

describe('sandbox: a component that ends during start-up', function () {
  this.timeout(30_000);
  let dir: string;
  let info: SandboxInfo;
  const said: string[] = [];
  const started: ProcessRecord[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tend-sandbox-start-'));
    await Promise.all(['run', 'logs'].map((d) => mkdir(join(dir, d))));
    info = sandboxInfo(dir, defaultSettings);
    said.length = 0;
  });
  afterEach(async () => {
    for (const rec of started.splice(0)) await stopProcess(rec, join(dir, 'run', `${rec.name}.pid`));
    await rm(dir, { recursive: true, force: true });
  });
  /** A component whose shell script runs from the state folder; ready once it has written `ready`. */
  const component = (script: string): Component => ({
    name: 'flaky', command: '/bin/sh', args: ['-c', script], timeoutMs: 10_000,
    ready: async () => {
      await access(join(dir, 'ready'));
    },
  });

  it('killed before it wrote anything: said, with the signal, and started once more', async () => {
    // The first start kills itself; the second serves.
    const c = component('if [ -e once ]; then touch ready; while :; do sleep 1; done; else touch once; kill -KILL $$; fi');
    const rec = await startComponent(info, c, (m) => said.push(m));
    assert.ok(rec, 'started');
    started.push(rec);
    assert.ok(said.some((m) => /^flaky exited during start-up \(killed by SIGKILL\) and wrote nothing; starting it once more$/.test(m)), said.join('\n'));
    assert.ok(said.includes(`flaky ready (pid ${rec.pid})`), said.join('\n'));
  });

  it('ended after writing to its log: not started again; the error has its exit code and its last lines', async () => {
    const c = component('echo "listen tcp: address already in use"; exit 3');
    await assert.rejects(startComponent(info, c, (m) => said.push(m)),
      (err: Error) => /^flaky exited during start-up \(exit code 3\); last lines of .*flaky\.log:\nlisten tcp: address already in use$/.test(err.message));
    assert.deepEqual(said, ['starting flaky']);
  });

  it('killed twice without a word: the second time is the error', async () => {
    const c = component('kill -KILL $$');
    await assert.rejects(startComponent(info, c, (m) => said.push(m)),
      (err: Error) => /^flaky exited during start-up \(killed by SIGKILL\); last lines of .*:\n\(nothing\)$/.test(err.message));
    assert.equal(said.filter((m) => m === 'starting flaky').length, 1);
    assert.equal(said.filter((m) => /starting it once more/.test(m)).length, 1);
  });
});
