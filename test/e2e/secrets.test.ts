// No credential in anything tend prints. The real tend processes (`config validate`, `run`,
// `doctor`, `worker`) run on the sandbox with a distinctive Temporal API key in the configuration
// and in the environment, and with tend's ServiceAccount token in their kubeconfig; every output
// they give (stdout, stderr, JSON logs at debug level, error messages), on the paths that work and
// on each error path we can trigger, is searched for the key and the token. Also: the files the
// sandbox writes with credentials are readable by their owner only.
import assert from 'node:assert/strict';
import { readdir, readFile, rm, stat, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { runTend, TendProcess, type CliResult } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';

const KEY = 'tend-secret-KEY-1234';

describe('secrets: no key or token in any output', function () {
  let dir: string;
  let token: string;
  // Every output of every tend process in this file, searched after each test.
  const outputs: { what: string; text: string }[] = [];
  const env = { TEND_LOG_LEVEL: 'debug', TEMPORAL_API_KEY: KEY };

  const file = async (name: string, content: unknown) => {
    const p = join(dir, name);
    await writeFile(p, typeof content === 'string' ? content : toYaml(content), { mode: 0o600 });
    return p;
  };
  const tend = async (args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> => {
    const r = await runTend(args, { env: { ...env, ...opts.env }, timeoutMs: opts.timeoutMs ?? 60_000 });
    outputs.push({ what: `tend ${args.join(' ')}`, text: `${r.stdout}\n${r.stderr}` });
    return r;
  };
  /** The parts of a credential that must never show: the whole, and any long piece of it. */
  const pieces = (secret: string) => [secret, ...(secret.split('.').filter((p) => p.length >= 16))];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tend-secrets-'));
    const kc = parseYaml(await readFile(sandbox().tendKubeconfig, 'utf8'));
    token = kc.users[0].user.token;
    assert.ok(typeof token === 'string' && token.length > 40, 'the sandbox kubeconfig holds a token');
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  afterEach(function () {
    // Checked after every test, so a leak names the test (and the command) that showed it.
    for (const { what, text } of outputs.splice(0)) {
      for (const secret of [KEY, ...pieces(token)]) {
        assert.ok(!text.includes(secret), `${what} printed a credential (${secret === KEY ? 'the API key' : 'the token'}):\n${text.slice(0, 3000)}`);
      }
    }
  });

  describe('the sandbox\'s credential files', () => {
    it('the state folder and pki/ are 0700, its keys, both kubeconfigs and tend.yaml are 0600', async () => {
      const { stateDir, kubeconfig, tendKubeconfig, config } = sandbox();
      const mode = async (p: string) => ((await stat(p)).mode & 0o777).toString(8);
      assert.equal(await mode(stateDir), '700');
      assert.equal(await mode(join(stateDir, 'pki')), '700');
      assert.equal(await mode(config), '600', config);
      const keys = (await readdir(join(stateDir, 'pki'))).filter((f) => f.endsWith('.key'));
      assert.deepEqual(keys.sort(), ['admin.key', 'apiserver.key', 'ca.key', 'sa.key']);
      for (const k of keys) assert.equal(await mode(join(stateDir, 'pki', k)), '600', k);
      assert.equal(await mode(kubeconfig), '600', kubeconfig);
      assert.equal(await mode(tendKubeconfig), '600', tendKubeconfig);
    });

    it('no log of the sandbox\'s components holds tend\'s token', async () => {
      const logs = join(sandbox().stateDir, 'logs');
      for (const f of await readdir(logs)) {
        const text = await readFile(join(logs, f), 'utf8');
        for (const secret of pieces(token)) assert.ok(!text.includes(secret), `${f} holds the token`);
      }
    });
  });

  describe('config validate', () => {
    it('a file with the key and another problem: exit 2, the problem named, the key not', async () => {
      const p = await file('bad.yaml', `temporal:\n  address: ${sandbox().temporalAddress}\n  apiKey: ${KEY}\n  adress: typo\n`);
      const r = await tend(['config', 'validate', p]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /temporal\.adress: unknown field/);
    });

    it('the key on a broken YAML line, of the wrong type, or pasted into apiKeyEnv', async () => {
      for (const [name, text] of [
        ['broken.yaml', `temporal:\n  apiKey: "${KEY}\n  namespace: x\n`],
        ['list.yaml', `temporal:\n  apiKey: [${KEY}]\n`],
        ['env-name.yaml', `temporal:\n  apiKeyEnv: ${KEY}\n`],
      ] as const) {
        const r = await tend(['config', 'validate', await file(name, text)]);
        assert.equal(r.code, 2, `${name}: ${r.stderr}`);
        assert.match(r.stderr, /temporal\.apiKey|invalid YAML/, `${name}: ${r.stderr}`);
      }
    });

    it('a valid file: the description says where the key comes from', async () => {
      const inline = await tend(['config', 'validate', await file('inline.yaml', { temporal: { apiKey: KEY, tls: false } })]);
      assert.equal(inline.code, 0, inline.stderr);
      assert.match(inline.stdout, /no TLS, API key$/m);
      const fromEnv = await tend(['config', 'validate', await file('env.yaml', { temporal: { apiKeyEnv: 'TEMPORAL_API_KEY' } })]);
      assert.equal(fromEnv.code, 0, fromEnv.stderr);
      assert.match(fromEnv.stdout, /API key from \$TEMPORAL_API_KEY/);
    });
  });

  describe('with Temporal: the dev server takes any API key', () => {
    let run: TendProcess | undefined;
    after(async () => {
      if (run) {
        await run.stop();
        outputs.push({ what: 'tend run', text: run.output });
      }
    });

    it('tend run (key from the environment) and tend doctor (key in the file) work, and say nothing of the key', async () => {
      const taskQueue = `secrets-${Date.now()}`;
      const kubernetes = { kubeconfig: sandbox().tendKubeconfig };
      const runConfig = await file('run.yaml', { temporal: { address: sandbox().temporalAddress, taskQueue, tls: false, apiKeyEnv: 'TEMPORAL_API_KEY' }, kubernetes });
      const doctorConfig = await file('doctor.yaml', { temporal: { address: sandbox().temporalAddress, taskQueue, tls: false, apiKey: KEY }, kubernetes });
      run = new TendProcess(['run', '--config', runConfig], env);
      await waitFor('tend run\'s worker to start', () => run!.output.includes('worker started') || (run!.exited && Promise.reject(new Error(run!.output))), { timeoutMs: 90_000 });
      assert.match(run.output, /the API key is sent to Temporal without TLS/);
      const r = await tend(['doctor', '--config', doctorConfig, '--timeout', '30']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(JSON.parse(r.stdout).workerTaskQueue, taskQueue);
      await run.stop();
      outputs.push({ what: 'tend run', text: run.output });
      run = undefined;
    });

    it('an unreachable Temporal: exit 1, the address named, the key not', async () => {
      const p = await file('no-temporal.yaml', { temporal: { address: '127.0.0.1:1', apiKey: KEY, tls: false }, kubernetes: { kubeconfig: sandbox().tendKubeconfig } });
      for (const args of [['doctor', '--config', p, '--timeout', '5'], ['worker', '--config', p], ['run', '--config', p]]) {
        const r = await tend(args, { timeoutMs: 30_000 });
        assert.equal(r.code, 1, `${args[0]}: ${r.stderr}`);
        assert.match(r.stderr, /cannot reach Temporal at 127\.0\.0\.1:1/);
      }
    });

    it('a TLS handshake with a plain server (the SDK\'s default with a key): exit 1, the key not shown', async () => {
      const p = await file('tls.yaml', { temporal: { address: sandbox().temporalAddress, apiKey: KEY }, kubernetes: { kubeconfig: sandbox().tendKubeconfig } });
      const r = await tend(['doctor', '--config', p, '--timeout', '5'], { timeoutMs: 30_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /cannot reach Temporal at /);
    });

    it('missing mTLS files: exit 1, the setting and path named', async () => {
      const p = await file('mtls.yaml', {
        temporal: { address: sandbox().temporalAddress, apiKey: KEY, tls: { clientCertPath: join(dir, 'nope.crt'), clientKeyPath: join(dir, 'nope.key') } },
        kubernetes: { kubeconfig: sandbox().tendKubeconfig },
      });
      const r = await tend(['doctor', '--config', p, '--timeout', '5'], { timeoutMs: 30_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /temporal\.tls\.client(Cert|Key)Path .*nope\.(crt|key): file not found/);
    });
  });

  describe('the kubeconfig\'s token', () => {
    const kubeconfigWith = async (name: string, edit: (kc: { clusters: { cluster: Record<string, string> }[]; users: { user: Record<string, string> }[] }) => void) => {
      const kc = parseYaml(await readFile(sandbox().tendKubeconfig, 'utf8'));
      edit(kc);
      return file(name, kc);
    };

    it('an unreachable API server: exit 1, the server named, the token not', async () => {
      const kubeconfig = await kubeconfigWith('unreachable.kubeconfig', (kc) => { kc.clusters[0]!.cluster.server = 'https://127.0.0.1:1'; });
      const p = await file('no-kube.yaml', { temporal: { address: sandbox().temporalAddress, apiKey: KEY, tls: false }, kubernetes: { kubeconfig } });
      const r = await tend(['run', '--config', p], { timeoutMs: 60_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /127\.0\.0\.1:1/);
      const cm = await tend(['doctor', '--config-map', 'tend-system/tend-config:config.yaml', '--kubeconfig', kubeconfig], { timeoutMs: 60_000 });
      assert.equal(cm.code, 1, cm.stderr);
      assert.match(cm.stderr, /cannot read ConfigMap tend-system\/tend-config from https:\/\/127\.0\.0\.1:1/);
    });

    it('a server whose certificate the kubeconfig does not trust: exit 1, the token not shown', async () => {
      const kubeconfig = await kubeconfigWith('untrusted.kubeconfig', (kc) => {
        // A CA that did not sign the API server's certificate: the sandbox's own server certificate.
        kc.clusters[0]!.cluster['certificate-authority-data'] = kc.clusters[0]!.cluster['certificate-authority-data']!.split('').reverse().join('');
      });
      const r = await tend(['doctor', '--config-map', 'tend-system/tend-config:config.yaml', '--kubeconfig', kubeconfig], { timeoutMs: 60_000 });
      assert.notEqual(r.code, 0, r.stderr);
    });

    it('a kubeconfig that is not valid YAML: a configuration error naming the file and where, never the token', async () => {
      const text = (await readFile(sandbox().tendKubeconfig, 'utf8')).replace(/^(\s*)token: .*$/m, (line, indent: string) => `${line}\n${indent.slice(1)}bad: [`);
      assert.ok(text.includes(token), 'the broken file still holds the token');
      const kubeconfig = await file('broken.kubeconfig', text);
      const p = await file('broken-kube.yaml', { temporal: { address: sandbox().temporalAddress, tls: false }, kubernetes: { kubeconfig } });
      const r = await tend(['run', '--config', p], { timeoutMs: 60_000 });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`kubernetes\\.kubeconfig: ${kubeconfig.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not a kubeconfig \\(.*\\(\\d+:\\d+\\)\\)`));
    });

    it('a token the server refuses (401): exit 2 naming the ConfigMap, the token not shown', async () => {
      const wrong = `${token.slice(0, -8)}AAAAAAAA`;
      const kubeconfig = await kubeconfigWith('wrong-token.kubeconfig', (kc) => { kc.users[0]!.user.token = wrong; });
      const r = await tend(['doctor', '--config-map', 'tend-system/tend-config:config.yaml', '--kubeconfig', kubeconfig], { timeoutMs: 60_000 });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /not allowed to read ConfigMap tend-system\/tend-config \(401\)/);
      for (const secret of pieces(wrong)) assert.ok(!r.stderr.includes(secret) && !r.stdout.includes(secret), r.stderr);
    });
  });
});
