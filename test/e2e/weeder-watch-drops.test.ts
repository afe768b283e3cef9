// Watches dropped every few seconds: a second sandbox whose kube-apiserver
// runs with --min-request-timeout=2 (each watch ends after 2-4 s), and tend's
// watcher and weeding activity must still miss no transition and no pod.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { TendProcess } from '../harness/cli.ts';
import { deployment, isReady, podsOf, service, tempNamespace } from '../harness/kube.ts';
import { repoRoot, testSettings } from '../harness/env.ts';
import { waitFor } from '../harness/wait.ts';
import { crashLooping, restarts, weederConfigFile } from '../harness/weeder.ts';
import { kubeClients, loadKubeConfig, type KubeClients } from '../../src/kube/client.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { down, up, type SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { ReadinessStore } from '../../src/weeder/record.ts';
import { DEFAULT_TEND_NAMESPACE } from '../../src/config/weeder.ts';

describe('weeder: watches dropped every few seconds', function () {
  this.timeout(600_000);
  const stateDir = join(repoRoot, '.tend', `${process.env.TEND_TEST_SANDBOX_DIR ? `${process.env.TEND_TEST_SANDBOX_DIR.split('/').pop()}-` : ''}watch-drops`);
  let info: SandboxInfo;
  let kube: KubeClients;
  let tend: TendProcess;
  let ns: string;

  before(async function () {
    this.timeout(600_000);
    // Ports 50 above the test sandbox's, so that both run side by side.
    const ports = Object.fromEntries(Object.entries(testSettings.ports).map(([k, v]) => [k, v + 50])) as typeof testSettings.ports;
    info = await up({ stateDir, settings: { ...testSettings, ports, minRequestTimeoutSeconds: 2 }, progress: (m) => process.stderr.write(`      drops sandbox: ${m}\n`) });
    kube = kubeClients(loadKubeConfig({ kubeconfig: info.kubeconfig }));
    ns = await tempNamespace(kube, 'weeder-drops');
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 1 }) });
    await kube.core.createNamespacedService({ namespace: ns, body: service(ns, 'db', { app: 'db' }) });
    await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({
      namespace: ns, name: 'api', replicas: 2, labels: { role: 'api' }, annotations: { 'sim.tend.dev/depends-on': 'db' },
    }) });
    const config = await weederConfigFile({
      watchDuration: '15s', namespaces: [ns],
      servicesAndDependantSelectors: { db: { podSelectors: [{ matchLabels: { role: 'api' } }] } },
    }, info);
    tend = new TendProcess(['run', '--config', config]);
  });
  after(async function () {
    this.timeout(120_000);
    await tend?.stop();
    if (info) await down(stateDir, { purge: true });
  });

  const scale = (replicas: number) =>
    kube.apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'db', body: { spec: { replicas } } }, mergePatch);
  const live = async () => (await podsOf(kube, ns, 'app=api')).filter((p) => !p.metadata?.deletionTimestamp);

  it('three outages in a row: every time, the crash-looping dependants are weeded', async () => {
    await waitFor('tend to start', () => /worker started/.test(tend.output) && /weeder watching/.test(tend.output), { timeoutMs: 90_000 });
    await waitFor('api ready', async () => ((await live()).length === 2 && (await live()).every(isReady)), { timeoutMs: 60_000 });
    await waitFor('the watcher to record db ready', async () =>
      (await new ReadinessStore(kube, DEFAULT_TEND_NAMESPACE).read(ns, 'db'))?.readiness === 'ready');
    for (let round = 1; round <= 3; round++) {
      await scale(0);
      // Several seconds of crash-looping: a few watch drops on the way.
      const crashing = await waitFor(`round ${round}: api pods crash-looping`, async () => {
        const pods = await live();
        return pods.length === 2 && pods.every((p) => crashLooping(p) && restarts(p) >= 3) ? pods : undefined;
      }, { timeoutMs: 90_000 });
      await scale(1);
      const old = new Set(crashing.map((p) => p.metadata!.uid));
      await waitFor(`round ${round}: the crash-looping pods weeded (new UIDs) and ready`, async () => {
        const pods = await live();
        return pods.length === 2 && pods.every((p) => !old.has(p.metadata!.uid) && isReady(p));
      }, { timeoutMs: 30_000 });
    }
    assert.ok(!tend.exited, 'tend still running');
  });
});
