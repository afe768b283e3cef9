// The weeder's watches hold no work that must finish: a `tend run` whose worker holds a window's
// armed watch exits within seconds of SIGTERM (not after the shutdown grace time), and the watch,
// failed as retryable WorkerShutdown, is taken at once by the other worker (docs/weeder.md).
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { dbWithDependants, weederConfigFile } from '../harness/weeder.ts';
import { mergePatch } from '../../src/kube/api.ts';
import type { WindowSnapshot } from '../../src/weeder/window.ts';
import type { KubeClients } from '../../src/kube/client.ts';

/** How long after SIGTERM `tend run` may take to exit: a few seconds, far from the 60 s shutdown grace time. */
const EXIT_BOUND_MS = 5_000;

describe('weeder: a worker shutting down stops its watches at once (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let ns: string;
  let config: string;
  let temporal: Client;
  let run: TendProcess | undefined;
  let other: TendProcess | undefined;

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'weeder-shutdown');
    const weeder = await dbWithDependants(kube, ns, 1);
    config = await weederConfigFile({ ...weeder, watchDuration: '10s' });
    temporal = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
  });
  after(async () => {
    await Promise.all([run, other].map((p) => p?.stop()));
    await temporal?.connection.close();
    if (ns) await deleteNamespace(kube, ns);
  });

  const id = () => `weeder/${ns}/db`;
  /** The armed watch's attempt running now: its attempt number and its worker's pid. */
  const armedWatch = async () => {
    const h = temporal.workflow.getHandle(id());
    const d = await h.describe();
    if (d.status.name !== 'RUNNING' || !(await h.query<WindowSnapshot>('window')).armed) return undefined;
    const a = (d.raw.pendingActivities ?? []).find((p) => p.activityType?.name === 'watchDependants' && p.lastStartedTime);
    const pid = Number(/^(\d+)@/.exec(a?.lastWorkerIdentity ?? '')?.[1]);
    return a ? { attempt: a.attempt ?? 1, pid } : undefined;
  };

  it('tend run exits within seconds of SIGTERM with an armed watch running, and the other worker takes the watch at once', async () => {
    run = new TendProcess(['run', '--config', config]);
    await waitFor('tend run to start', () => /worker started/.test(run!.output) && /weeder watching/.test(run!.output), { timeoutMs: 120_000 });
    const first = temporal.workflow.getHandle(id());
    await waitFor('the first window (db first seen ready) to close', async () => (await first.describe()).status.name === 'COMPLETED', { timeoutMs: 60_000 });
    await kube.apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'db', body: { spec: { replicas: 0 } } }, mergePatch);
    await waitFor('the armed watch running on tend run\'s worker', async () => (await armedWatch())?.pid === run!.child.pid, { timeoutMs: 60_000 });
    other = new TendProcess(['worker', '--config', config]);
    await waitFor('the other worker to start', () => /worker started/.test(other!.output), { timeoutMs: 120_000 });

    const t0 = Date.now();
    const code = await run.stop('SIGTERM', 60_000);
    const took = Date.now() - t0;
    console.log(`      weeder shutdown: tend run exited ${took} ms after SIGTERM (code ${code})`);
    assert.equal(code, 0, run.output.slice(-3000));
    assert.ok(took <= EXIT_BOUND_MS, `tend run took ${took} ms to exit after SIGTERM (bound ${EXIT_BOUND_MS} ms)`);

    // Failed as retryable WorkerShutdown: retried at once on the other worker, not after the heartbeat timeout.
    const taken = await waitFor('the armed watch retried on the other worker', async () => {
      const w = await armedWatch();
      return w && w.pid === other!.child.pid && w.attempt > 1 ? Date.now() - t0 : undefined;
    }, { timeoutMs: 60_000, intervalMs: 100 });
    console.log(`      weeder shutdown: the other worker took the armed watch ${taken} ms after SIGTERM`);
    assert.ok(taken <= EXIT_BOUND_MS, `the armed watch was taken ${taken} ms after SIGTERM (bound ${EXIT_BOUND_MS} ms)`);
  });
});
