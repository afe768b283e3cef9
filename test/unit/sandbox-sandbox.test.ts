// The sandbox's state folder is made absolute before anything is derived from
// it: its components are handed paths inside it and run from other folders.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { currentSandbox, defaultStateDir } from '../../src/sandbox/sandbox.ts';

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
