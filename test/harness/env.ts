// Where the test sandbox lives. It has its own state folder and ports, so a
// developer's own sandbox (default ports) can keep running beside it.
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { SandboxSettings } from '../../src/sandbox/sandbox.ts';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/** Which Temporal the test sandbox runs (`npm run test:cluster` sets cluster): see src/sandbox/temporal-cluster.ts. */
export const testTemporal: 'dev' | 'cluster' = process.env.TEND_TEST_TEMPORAL === 'cluster' ? 'cluster' : 'dev';
export const testStateDir = process.env.TEND_TEST_SANDBOX_DIR ?? join(repoRoot, '.tend', testTemporal === 'cluster' ? 'test-cluster' : 'test-sandbox');

// Several test runs (say, in separate checkouts) can run side by side when each
// sets its own TEND_TEST_PORT_OFFSET and TEND_TEST_SANDBOX_DIR.
const offset = Number(process.env.TEND_TEST_PORT_OFFSET ?? 0);
export const testPort = (port: number) => port + offset;

/**
 * The first of 50 ports for the HTTP addresses of the tend processes the tests start, one block per
 * offset, all in 20000-31999: below Linux's ephemeral range (32768 and up), where an outgoing
 * connection could hold a port the moment a tend wants to listen on it.
 */
export const httpPortBlock = 20000 + ((offset * 50) % 12000);

export const testSettings: Omit<SandboxSettings, 'minRequestTimeoutSeconds'> = {
  nodes: 3,
  // Kubelet back-off of 10 s, 20 s, 40 s ... becomes 1 s, 2 s, 4 s ...
  timeScale: 0.1,
  nodeMonitorGraceSeconds: 8,
  temporal: testTemporal,
  ports: {
    etcdClient: testPort(24790), etcdPeer: testPort(25800), apiserver: testPort(17443), controllerManager: testPort(11357), scheduler: testPort(11359),
    temporal: testPort(7333), temporalUi: testPort(8333),
  },
};
