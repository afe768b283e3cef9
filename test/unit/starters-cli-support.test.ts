// src/starters/cli-support.ts: the flags every command shares, through the CLI.
// --kubeconfig and --context choose the cluster for everything a command does, as kubectl's do,
// over the configuration's kubernetes section.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { InvalidArgumentError } from 'commander';
import { configFrom, MAX_FLAG_INT, positiveInt } from '../../src/starters/cli-support.ts';
import { writeKubeconfig } from '../harness/kubeconfig.ts';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
const tendWith = (args: string[], env: Record<string, string>) => promisify(execFile)(process.execPath, [cli, ...args], { encoding: 'utf8', env: { ...process.env, ...env } })
  .then(() => ({ code: 0, stderr: '' }), (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }));
const tend = (args: string[]) => tendWith(args, {});

describe('CLI: --kubeconfig and --context choose the cluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tend-cluster-flags-'));
  const kubeconfig = join(dir, 'kc');
  writeKubeconfig(kubeconfig, 'https://127.0.0.1:1', { contexts: ['a', 'b'] });
  const config = join(dir, 'tend.yaml');
  writeFileSync(config, stringify({ kubernetes: { kubeconfig: join(dir, 'from-the-file'), context: 'from-the-file' }, apps: { namespaces: ['demo'] } }));

  it('they replace the configuration\'s kubernetes.kubeconfig and context', async () => {
    const c = await configFrom({ config, kubeconfig, context: 'b' });
    assert.deepEqual(c.kubernetes, { kubeconfig, context: 'b' });
    const untouched = await configFrom({ config });
    assert.equal(untouched.kubernetes.kubeconfig, join(dir, 'from-the-file'));
  });

  it('a command uses them: a missing --kubeconfig file and an unknown --context are named by the flag (exit 2)', async () => {
    const missing = await tend(['app', 'status', 'demo/x', '--config', config, '--kubeconfig', join(dir, 'nope')]);
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, new RegExp(`^tend: --kubeconfig: ${join(dir, 'nope')}: file not found`));
    const context = await tend(['app', 'status', 'demo/x', '--config', config, '--kubeconfig', kubeconfig, '--context', 'prod']);
    assert.equal(context.code, 2, context.stderr);
    assert.match(context.stderr, /^tend: --context: no context "prod" in .*kc \(its contexts: a, b\)/);
    // Without the flags, the configuration's setting is named.
    const fromFile = await tend(['app', 'status', 'demo/x', '--config', config]);
    assert.equal(fromFile.code, 2, fromFile.stderr);
    assert.match(fromFile.stderr, /^tend: kubernetes\.kubeconfig: .*from-the-file: file not found/);
  });

  it('tend run with a kubeconfig that cannot be used: exit 2 naming it, before it serves anything', async () => {
    for (const args of [['run'], ['watcher'], ['worker']]) {
      const r = await tend([...args, '--config', config, '--http-address', '127.0.0.1:1']);
      assert.equal(r.code, 2, `${args[0]}: ${r.stderr}`);
      assert.match(r.stderr, /^tend: kubernetes\.kubeconfig: .*from-the-file: file not found$/m, args[0]);
      assert.doesNotMatch(r.stderr, /serving \/metrics/, args[0]);
    }
  });

  it('app status: an App not found is exit 1 (the cluster\'s answer), and another answer (403) is its status, not a stack', async () => {
    let status = 404;
    const server = createServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: status, reason: status === 404 ? 'NotFound' : 'Forbidden', message: 'no' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const plain = writeKubeconfig(join(dir, 'plain-kc'), `http://127.0.0.1:${port}`, { cluster: { 'insecure-skip-tls-verify': true } });
      const missing = await tend(['app', 'status', 'demo/x', '--config', config, '--kubeconfig', plain, '--context', 'a']);
      assert.equal(missing.code, 1, missing.stderr);
      assert.match(missing.stderr, /^tend: App demo\/x not found \(kubectl get apps\.tend\.dev -n demo\)$/m);
      status = 403;
      const forbidden = await tend(['app', 'status', 'demo/x', '--config', config, '--kubeconfig', plain, '--context', 'a']);
      assert.equal(forbidden.code, 1, forbidden.stderr);
      assert.match(forbidden.stderr, new RegExp(`^tend: cannot read App demo/x from http://127\\.0\\.0\\.1:${port}: the API server answered 403 \\(the credentials may not get apps\\.tend\\.dev there\\)$`, 'm'));
      assert.doesNotMatch(forbidden.stderr, /\n\s+at /, 'no stack');
    } finally {
      server.close();
    }
  });

  it('an empty --config, --config-map, --kubeconfig, --context or TEND_CONFIG is refused (exit 2), never read as absent', async () => {
    for (const [args, message] of [
      [['run', '--config', ''], /^tend: --config is empty: give a file$/m],
      [['pause', 'status', '--config', ''], /^tend: --config is empty: give a file$/m],
      [['doctor', '--config-map', ''], /^tend: --config-map is empty: give NAMESPACE\[\/NAME\]\[:KEY\]$/m],
      [['app', 'status', 'demo/x', '--config', config, '--kubeconfig', ''], /^tend: --kubeconfig is empty: give a file$/m],
      [['app', 'status', 'demo/x', '--config', config, '--context', ''], /^tend: --context is empty: give a context name$/m],
    ] as const) {
      const r = await tend([...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
    }
    const env = await tendWith(['pause', 'status'], { TEND_CONFIG: '' });
    assert.equal(env.code, 2, env.stderr);
    assert.match(env.stderr, /^tend: TEND_CONFIG is set but empty: set it to a configuration file, or unset it$/m);
  });

  it('--config-map wins over TEND_CONFIG, as a flag over a variable; --config with --config-map is refused', async () => {
    // The ConfigMap is read through --kubeconfig: its missing file shows that the ConfigMap was chosen.
    const r = await tendWith(['pause', 'status', '--config-map', 'tend/tend:tend.yaml', '--kubeconfig', join(dir, 'nope')], { TEND_CONFIG: config });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^tend: --kubeconfig: .*nope: file not found/m);
    const both = await tend(['pause', 'status', '--config', config, '--config-map', 'tend/tend:tend.yaml']);
    assert.equal(both.code, 2, both.stderr);
    assert.match(both.stderr, /give either --config or --config-map, not both/);
  });
});

// Whole-number flags (--timeout, --interval-seconds, --min-request-timeout): decimal digits from 1
// to a bound, so that a value no timer can hold is refused before anything is sent.
describe('CLI: whole-number flags', () => {
  it('takes decimal digits from 1 to the bound (a day of seconds unless the flag sets another)', () => {
    const parse = positiveInt('--timeout');
    assert.equal(parse('1'), 1);
    assert.equal(parse('300'), 300);
    assert.equal(parse(String(MAX_FLAG_INT)), MAX_FLAG_INT);
    assert.equal(positiveInt('--timeout', 3600)('3600'), 3600);
  });

  it('refuses 0, negatives, fractions, exponents, hex and values past the bound, naming the flag and the range', () => {
    for (const v of ['0', '-1', '1.5', '12.0', '1e3', '1e21', '0x10', '', 'ten', String(MAX_FLAG_INT + 1)]) {
      assert.throws(() => positiveInt('--timeout')(v), (err: Error) => {
        assert.ok(err instanceof InvalidArgumentError);
        assert.equal(err.message, `--timeout must be a whole number from 1 to ${MAX_FLAG_INT} (got "${v}")`);
        return true;
      }, v);
    }
    assert.throws(() => positiveInt('--timeout', 3600)('3601'), /from 1 to 3600 \(got "3601"\)/);
  });

  it('a command refuses them with exit 2 before it connects: app restart past its workflow\'s 3600 s, doctor with 1e21', async () => {
    const restart = await tend(['app', 'restart', 'demo/x', '--timeout', '2147470']);
    assert.equal(restart.code, 2, restart.stderr);
    assert.match(restart.stderr, /--timeout must be a whole number from 1 to 3600 \(got "2147470"\)/);
    const doctor = await tend(['doctor', '--timeout', '1e21']);
    assert.equal(doctor.code, 2, doctor.stderr);
    assert.match(doctor.stderr, /--timeout must be a whole number from 1 to 86400 \(got "1e21"\)/);
  });
});
