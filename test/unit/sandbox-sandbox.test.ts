// The sandbox's state folder is made absolute before anything is derived from
// it: its components are handed paths inside it and run from other folders.
// A component that ends during start-up is reported with how it ended.
import assert from 'node:assert/strict';
import { access, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import {
  currentSandbox, defaultSettings, defaultStateDir, sandboxInfo, startComponent, type Component, type SandboxInfo,
} from '../../src/sandbox/sandbox.ts';

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
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tend-sandbox-start-'));
    await Promise.all(['run', 'logs'].map((d) => mkdir(join(dir, d))));
    info = sandboxInfo(dir, defaultSettings);
    said.length = 0;
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  /** A component whose shell script runs from the state folder; ready once it has written `ready`. */
  const component = (script: string): Component => ({
    name: 'flaky', command: '/bin/sh', args: ['-c', script], timeoutMs: 10_000,
    ready: async () => {
      await access(join(dir, 'ready'));
    },
  });

  it('ended after writing to its log: not started again; the error has its exit code and its last lines', async () => {
    const c = component('echo "listen tcp: address already in use"; exit 3');
    await assert.rejects(startComponent(info, c, (m) => said.push(m)),
      (err: Error) => /^flaky exited during start-up \(exit code 3\); last lines of .*flaky\.log:\nlisten tcp: address already in use$/.test(err.message));
    assert.deepEqual(said, ['starting flaky']);
  });

  it('killed without a word: the error has the signal, and nothing is started again', async () => {
    const c = component('kill -KILL $$');
    await assert.rejects(startComponent(info, c, (m) => said.push(m)),
      (err: Error) => /^flaky exited during start-up \(killed by SIGKILL\); last lines of .*:\n\(nothing\)$/.test(err.message));
    assert.deepEqual(said, ['starting flaky']);
  });
});
