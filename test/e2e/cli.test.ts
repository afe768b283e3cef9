// The tend CLI end to end: a workflow through the real Temporal dev server and
// worker under tend's own ServiceAccount, and bad input refused with a clear
// message, a conventional exit code and nothing started.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { runTend, TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';
import { kubeClients, loadKubeConfig, statusOf } from '../../src/kube/client.ts';
import { down, status, up } from '../../src/sandbox/sandbox.ts';
import { testPort, testStateDir } from '../harness/env.ts';

describe('tend CLI', function () {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tend-cli-'));
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  const file = async (name: string, text: string) => {
    const p = join(dir, name);
    await writeFile(p, text);
    return p;
  };

  describe('config validate', () => {
    it('accepts the sandbox configuration', async () => {
      const r = await runTend(['config', 'validate', sandbox().config]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /config OK/);
    });

    it('refuses malformed YAML with exit 2, naming the file, line and column', async () => {
      const p = await file('malformed.yaml', 'temporal:\n  address: "localhost:7233\n  namespace: x\n');
      const r = await runTend(['config', 'validate', p]);
      assert.equal(r.code, 2);
      assert.ok(r.stderr.includes(p), r.stderr);
      assert.match(r.stderr, /line \d+/);
    });

    it('lists every problem by its path: unknown fields, wrong types, bad address', async () => {
      const p = await file('bad.yaml', toYaml({
        temporal: { adress: 'x', namespace: 7, address: 'no-port' },
        kubernetes: { kubeconfig: ['a'] },
        bogus: true,
      }));
      const r = await runTend(['config', 'validate', p]);
      assert.equal(r.code, 2);
      for (const path of ['temporal.adress', 'temporal.namespace', 'temporal.address', 'kubernetes.kubeconfig', 'bogus']) {
        assert.ok(r.stderr.includes(path), `names ${path}: ${r.stderr}`);
      }
    });

    it('names a missing file', async () => {
      const r = await runTend(['config', 'validate', join(dir, 'nope.yaml')]);
      assert.equal(r.code, 2);
      assert.ok(r.stderr.includes(join(dir, 'nope.yaml')), r.stderr);
    });
  });

  describe('usage errors exit 2', () => {
    for (const args of [['sandbox', 'up', '--nodes', '0'], ['worker'], ['sandbox', 'up', '--time-scale', 'fast']]) {
      it(`tend ${args.join(' ')}`, async () => {
        const r = await runTend(args, { env: { TEND_CONFIG: '' } });
        assert.equal(r.code, 2, r.stderr);
        assert.ok(r.stderr.trim().length > 0, 'says what was wrong');
        assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace for a usage error');
      });
    }
  });

  describe('unknown commands exit 1, named as kubectl names them', () => {
    for (const [args, word, parent] of [[['frobnicate'], 'frobnicate', 'tend'], [['frobnicate', '--help'], 'frobnicate', 'tend'], [['sandbox', 'upp'], 'upp', 'tend sandbox']] as const) {
      it(`tend ${args.join(' ')}`, async () => {
        const r = await runTend([...args], { env: { TEND_CONFIG: '' } });
        assert.equal(r.code, 1, r.stderr);
        assert.equal(r.stdout, '');
        assert.ok(r.stderr.startsWith(`error: unknown command "${word}" for "${parent}"\n`), r.stderr);
        assert.ok(r.stderr.includes(`Run '${parent} --help' for usage.`), r.stderr);
      });
    }
    it('tend sandbox upp suggests up', async () => {
      assert.match((await runTend(['sandbox', 'upp'])).stderr, /Did you mean this\?\n\tup\n/);
    });
  });

  describe('unreachable Temporal or Kubernetes', () => {
    it('names the Temporal address, exits 1, starts nothing', async () => {
      const p = await file('no-temporal.yaml', toYaml({
        temporal: { address: '127.0.0.1:1' }, kubernetes: { kubeconfig: sandbox().tendKubeconfig },
      }));
      for (const part of ['worker', 'watcher']) {
        const r = await runTend([part, '--config', p], { timeoutMs: 30_000 });
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, /cannot reach Temporal at 127\.0\.0\.1:1/);
        assert.doesNotMatch(r.stderr, /(worker|watcher) started/);
      }
    });

    it('names the Kubernetes API address, exits 1, starts nothing', async () => {
      const kc = parseYaml(await readFile(sandbox().tendKubeconfig, 'utf8'));
      kc.clusters[0].cluster.server = 'https://127.0.0.1:1';
      const kubeconfig = await file('unreachable.kubeconfig', toYaml(kc));
      const p = await file('no-kube.yaml', toYaml({ temporal: { address: sandbox().temporalAddress }, kubernetes: { kubeconfig } }));
      const r = await runTend(['run', '--config', p], { timeoutMs: 30_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /cannot reach the Kubernetes API at https:\/\/127\.0\.0\.1:1/);
      assert.doesNotMatch(r.stderr, /(worker|watcher) started/);
    });
  });

  describe('a workflow on the Temporal dev server, under tend\'s own ServiceAccount', () => {
    let worker: TendProcess;
    after(async () => worker?.stop());

    it('tend doctor runs the check workflow through a running worker', async () => {
      worker = new TendProcess(['worker', '--config', sandbox().config]);
      await waitFor('the worker to start', () => worker.output.includes('worker started') || (worker.exited && Promise.reject(new Error(worker.output))), { timeoutMs: 60_000 });
      const r = await runTend(['doctor', '--config', sandbox().config, '--timeout', '30'], { timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      const facts = JSON.parse(r.stdout);
      assert.equal(facts.nodes, sandbox().settings.nodes);
      assert.match(facts.version, /^v1\.\d+\.\d+/);
      assert.equal(facts.workerTaskQueue, 'tend');
    });

    it('the configuration it ran with carries tend\'s ServiceAccount token, which is not an administrator', async () => {
      const config = parseYaml(await readFile(sandbox().config, 'utf8'));
      assert.equal(config.kubernetes.kubeconfig, sandbox().tendKubeconfig);
      const kube = kubeClients(loadKubeConfig({ kubeconfig: sandbox().tendKubeconfig }));
      const nodes = await kube.core.listNode();
      assert.ok(nodes.items.length > 0, 'may list nodes (its ClusterRole)');
      const forbidden = await kube.core.deleteNamespace({ name: 'default', dryRun: 'All' }).then(() => 0, (e) => statusOf(e));
      assert.equal(forbidden, 403, 'may not delete a namespace');
      const secrets = await kube.core.listSecretForAllNamespaces().then(() => 0, (e) => statusOf(e));
      assert.equal(secrets, 403, 'may not read Secrets');
    });

    it('tend doctor says clearly when no worker answers', async () => {
      await worker.stop();
      const p = await file('other-queue.yaml', toYaml({
        temporal: { address: sandbox().temporalAddress, taskQueue: 'nobody-listens' },
        kubernetes: { kubeconfig: sandbox().tendKubeconfig },
      }));
      const r = await runTend(['doctor', '--config', p, '--timeout', '2'], { timeoutMs: 30_000 });
      assert.equal(r.code, 1);
      assert.match(r.stderr, /no worker answered on task queue "nobody-listens"/);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'the message alone, no stack trace');
    });
  });

  describe('tend sandbox', () => {
    it('up twice is harmless: the second run starts nothing', async () => {
      const before = await status(testStateDir);
      const r = await runTend(['sandbox', 'up', '--state-dir', testStateDir], { timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /starting /);
      assert.deepEqual(await status(testStateDir), before);
      assert.match(r.stdout, new RegExp(`KUBECONFIG=${sandbox().kubeconfig}`));
      assert.match(r.stdout, /Temporal Web UI: http:\/\/127\.0\.0\.1:\d+/);
    });

    it('status and env describe the running sandbox', async () => {
      const st = await runTend(['sandbox', 'status', '--state-dir', testStateDir]);
      assert.equal(st.code, 0);
      for (const name of ['temporal', 'etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet']) {
        assert.match(st.stdout, new RegExp(`${name}\\s+running`));
      }
      const env = await runTend(['sandbox', 'env', '--state-dir', testStateDir]);
      assert.equal(env.code, 0);
      assert.match(env.stdout, new RegExp(`TEMPORAL_ADDRESS=${sandbox().temporalAddress}`));
    });

    it('names a component that fails to start, with its log tail, and stops what it started', async () => {
      // A second sandbox on its own ports whose etcd port is taken.
      const state = await mkdtemp(join(tmpdir(), 'tend-sbx-'));
      const blocker: Server = createServer();
      await new Promise<void>((resolve) => blocker.listen(testPort(26790), '127.0.0.1', resolve));
      try {
        await assert.rejects(
          up({ stateDir: state, settings: { ports: { etcdClient: testPort(26790), etcdPeer: testPort(26800), apiserver: testPort(19443), controllerManager: testPort(13357), scheduler: testPort(13359), temporal: testPort(7533), temporalUi: testPort(8533) } } }),
          (err: Error) => {
            assert.match(err.message, /^etcd (exited during start-up|did not become ready)/);
            assert.match(err.message, /address already in use/);
            return true;
          });
        assert.deepEqual((await status(state)).filter((c) => c.running), [], 'nothing left running');
      } finally {
        blocker.close();
        await down(state);
        await rm(state, { recursive: true, force: true });
      }
    });
  });
});
