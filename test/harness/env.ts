// Where the test sandbox lives. It has its own state folder and ports, so a
// developer's own sandbox (default ports) can keep running beside it.
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { SandboxSettings } from '../../src/sandbox/sandbox.ts';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const testStateDir = process.env.TEND_TEST_SANDBOX_DIR ?? join(repoRoot, '.tend', 'test-sandbox');

export const testSettings: Omit<SandboxSettings, 'minRequestTimeoutSeconds'> = {
  nodes: 3,
  // Kubelet back-off of 10 s, 20 s, 40 s ... becomes 1 s, 2 s, 4 s ...
  timeScale: 0.1,
  nodeMonitorGraceSeconds: 8,
  ports: {
    etcdClient: 24790, etcdPeer: 24800, apiserver: 17443, controllerManager: 11357, scheduler: 11359,
    temporal: 7333, temporalUi: 8333,
  },
};
