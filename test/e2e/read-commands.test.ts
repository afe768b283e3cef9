// The read commands as an operator with only kubectl's and the temporal CLI's settings runs them:
// a kubeconfig ($KUBECONFIG) and TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE, no tend configuration and
// no sandbox to fall back on; --task-queue names the worker's task queue. And --config-map finds
// the ConfigMap kustomize named with a hash suffix by its label tend.dev/config=true, and refuses
// (exit 2, naming them) when two could be meant.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTend, TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { temporalCli } from '../harness/temporal.ts';
import { waitFor } from '../harness/wait.ts';
import { appObject, createApp } from '../harness/apps.ts';
import type { KubeClients } from '../../src/kube/client.ts';

describe('read commands with only a kubeconfig and TEMPORAL_* (e2e)', function () {
  this.timeout(10 * 60_000);
  // A Temporal namespace and a task queue of this file's own: nothing another test left running is seen.
  const namespace = `tend-reads-${Date.now()}`;
  const taskQueue = 'tend-reads';
  const dir = mkdtempSync(join(tmpdir(), 'tend-reads-'));
  const workerConfig = join(dir, 'worker.yaml');
  let worker: TendProcess | undefined;
  let kube: KubeClients;
  let kubeNamespace = '';

  /**
   * An operator's environment: a kubeconfig and the Temporal connection, nothing of tend's (no
   * TEND_CONFIG, no temporal CLI profile, and a state folder where no sandbox was ever set up).
   */
  const operator = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, 'config'), XDG_STATE_HOME: join(dir, 'state') };
    for (const k of Object.keys(env)) if (k.startsWith('TEMPORAL_') || k.startsWith('TEND_')) delete env[k];
    return { ...env, KUBECONFIG: sandbox().kubeconfig, TEMPORAL_ADDRESS: sandbox().temporalAddress, TEMPORAL_NAMESPACE: namespace, ...extra };
  };
  const read = (args: string[], extra?: NodeJS.ProcessEnv) => runTend(args, { env: operator(extra), timeoutMs: 90_000 });

  before(async () => {
    kube = admin();
    kubeNamespace = await tempNamespace(kube, 'reads');
    writeFileSync(workerConfig, `temporal: { taskQueue: ${taskQueue} }\nkubernetes: { kubeconfig: ${JSON.stringify(sandbox().tendKubeconfig)} }\n`);
    await temporalCli(['operator', 'namespace', 'create', '--namespace', namespace]);
    const setup = await runTend(['setup', 'temporal', '-c', workerConfig], { env: operator(), timeoutMs: 90_000 });
    assert.equal(setup.code, 0, setup.stderr);
    worker = new TendProcess(['worker', '-c', workerConfig], operator());
    await waitFor('the worker to start', () => worker!.output.includes('worker started') || (worker!.exited && Promise.reject(new Error(worker!.output))),
      { timeoutMs: 120_000 });
    // Something for the reads to show: weeder paused, by the worker's own configuration.
    const paused = await runTend(['pause', 'weeder', '--reason', 'reads without a configuration', '-c', workerConfig], { env: operator(), timeoutMs: 90_000 });
    assert.equal(paused.code, 0, paused.stderr);
  });

  after(async () => {
    await worker?.stop();
    if (kubeNamespace) await deleteNamespace(kube, kubeNamespace);
  });

  it('the old refusal is gone: no configuration and no sandbox is not an error for a read', async () => {
    const r = await read(['weeder', 'list', '--task-queue', taskQueue]);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /no configuration/);
    assert.equal(r.stdout.trim(), 'no weeder windows open or armed');
  });

  it('pause status: the pause the worker keeps, read with only TEMPORAL_* and --task-queue', async () => {
    const r = await read(['pause', 'status', '--task-queue', taskQueue, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const status = JSON.parse(r.stdout) as { running: boolean; capabilities: Record<string, { paused: boolean; reason?: string }> };
    assert.equal(status.running, true);
    assert.equal(status.capabilities.weeder?.paused, true);
    assert.equal(status.capabilities.weeder?.reason, 'reads without a configuration');
    assert.equal(status.capabilities.taint?.paused, false);
  });

  it("taint status and repair-queue list answer on the worker's task queue", async () => {
    const taint = await read(['taint', 'status', '--task-queue', taskQueue]);
    assert.equal(taint.code, 0, taint.stderr);
    assert.match(taint.stdout, /^slots: taint-replacements is not running\nno tainted nodes$/m);
    const rq = await read(['repair-queue', 'list', '--task-queue', taskQueue]);
    assert.equal(rq.code, 0, rq.stderr);
    assert.equal(rq.stdout.trim(), 'null');
  });

  it('app status reads the App with the kubeconfig alone, as kubectl would (no apps section to scope it)', async () => {
    await createApp(kube, appObject(kubeNamespace, 'shop'));
    const r = await read(['app', 'status', `${kubeNamespace}/shop`, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const app = JSON.parse(r.stdout) as { spec: { desiredState: string } };
    assert.equal(app.spec.desiredState, 'STARTED');
    const missing = await read(['app', 'status', `${kubeNamespace}/nothing`]);
    assert.equal(missing.code, 1, missing.stderr);
    assert.match(missing.stderr, new RegExp(`App ${kubeNamespace}/nothing not found`));
  });

  it("kubectl's habits: -n NAMESPACE NAME, -o name and -o jsonpath= on the read commands; a bad template exit 2, named", async () => {
    await createApp(kube, appObject(kubeNamespace, 'cart'));
    const byFlag = await read(['app', 'status', '-n', kubeNamespace, 'cart', '-o', 'json']);
    const bySlash = await read(['app', 'status', `${kubeNamespace}/cart`, '-o', 'json']);
    assert.equal(byFlag.code, 0, byFlag.stderr);
    assert.equal(byFlag.stdout, bySlash.stdout);
    const conflict = await read(['app', 'status', '--namespace', 'elsewhere', `${kubeNamespace}/cart`]);
    assert.equal(conflict.code, 2, conflict.stderr);
    assert.match(conflict.stderr, new RegExp(`-n "elsewhere" and the App "${kubeNamespace}/cart" name two namespaces`));
    const name = await read(['app', 'status', '-n', kubeNamespace, 'cart', '-o', 'name']);
    assert.equal(name.code, 0, name.stderr);
    assert.equal(name.stdout, `app/${kubeNamespace}/cart\n`);
    const jp = await read(['app', 'status', `${kubeNamespace}/cart`, '-o', 'jsonpath={.metadata.name} {.spec.desiredState}{range .spec.processes[*]} {.type}={.instances}{end}']);
    assert.equal(jp.code, 0, jp.stderr);
    assert.equal(jp.stdout, 'cart STARTED web=2');
    // Lists are kubectl's List: .items; nothing listed, nothing printed.
    for (const args of [['weeder', 'list', '-o', 'name'], ['weeder', 'list', '-o', 'jsonpath={.items[*].service}'], ['taint', 'status', '-o', 'name'],
      ['weeder', 'list', '-n', kubeNamespace, '-o', 'name'], ['taint', 'status', '--namespace', kubeNamespace, '-o', 'name']]) {
      const r = await read([...args, '--task-queue', taskQueue]);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '', args.join(' '));
    }
    const slots = await read(['taint', 'status', '--task-queue', taskQueue, '-o=jsonpath={.nodes}|{.pods}']);
    assert.equal(slots.stdout, '[]|[]');
    const bad = await read(['weeder', 'list', '--task-queue', taskQueue, '-o', 'jsonpath={.items[*'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(bad.code, 2, bad.stderr);
    assert.ok(bad.stderr.includes('bad jsonpath template "{.items[*"'), bad.stderr);
    assert.doesNotMatch(bad.stderr, /127\.0\.0\.1:1/);
    assert.equal(bad.stdout, '');
  });

  it('the connection is the environment\'s: another TEMPORAL_ADDRESS is the one named when unreachable; a bad --task-queue is exit 2', async () => {
    const r = await read(['weeder', 'list'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /127\.0\.0\.1:1/);
    const bad = await read(['taint', 'status', '--task-queue', ' spaced ']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /^tend: --task-queue: must be a task queue name without spaces/m);
  });

  describe('--config-map and the hash suffix', () => {
    const configMap = async (name: string) => {
      await kube.core.createNamespacedConfigMap({
        namespace: kubeNamespace,
        body: { metadata: { name, labels: { 'tend.dev/config': 'true' } }, data: { 'config.yaml': `temporal: { taskQueue: ${taskQueue} }\n` } },
      });
    };

    it('NAMESPACE/NAME finds NAME-HASH by its label, says which, and reads its configuration (its task queue)', async () => {
      await configMap('tend-config-5f8h2k9c7b');
      // A ConfigMap that shares the prefix but not the label is not a candidate.
      await kube.core.createNamespacedConfigMap({ namespace: kubeNamespace, body: { metadata: { name: 'tend-config-unlabelled' }, data: { 'config.yaml': '' } } });
      for (const ref of [`${kubeNamespace}/tend-config`, `${kubeNamespace}/tend-config:config.yaml`, kubeNamespace]) {
        const r = await read(['pause', 'status', '--config-map', ref, '-o', 'json']);
        assert.equal(r.code, 0, `${ref}: ${r.stderr}`);
        assert.match(r.stderr, new RegExp(`reading the configuration from ConfigMap ${kubeNamespace}/tend-config-5f8h2k9c7b, labelled tend\\.dev/config=true`));
        // Paused weeder is only seen on the ConfigMap's task queue.
        assert.equal((JSON.parse(r.stdout) as { capabilities: { weeder: { paused: boolean } } }).capabilities.weeder.paused, true, ref);
      }
    });

    it('two labelled ConfigMaps that could be meant: refused, both named, exit 2', async () => {
      await configMap('tend-config-8d7c6b5a4f');
      for (const ref of [`${kubeNamespace}/tend-config`, kubeNamespace]) {
        const r = await read(['weeder', 'list', '--config-map', ref]);
        assert.equal(r.code, 2, `${ref}: ${r.stderr}`);
        assert.match(r.stderr, /tend-config-5f8h2k9c7b, tend-config-8d7c6b5a4f; name the one to read/);
        assert.equal(r.stdout, '');
      }
      // Named as it is, it is read.
      const named = await read(['weeder', 'list', '--config-map', `${kubeNamespace}/tend-config-8d7c6b5a4f`]);
      assert.equal(named.code, 0, named.stderr);
    });
  });
});
