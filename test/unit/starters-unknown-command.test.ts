// src/starters/unknown-command.ts and -n/--namespace (namespace-option.ts), through the real CLI:
// a command tend does not have is said as kubectl says it, on stderr, exit 1, even with --help
// (which commander would answer with the parent's help, exit 0); -n NAMESPACE NAME is
// NAMESPACE/NAME, and the two naming different namespaces is a usage error naming both.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { buildProgram } from '../../src/starters/cli.ts';
import { suggestionsFor, unknownCommandIn } from '../../src/starters/unknown-command.ts';
import { namespacedKey, namespaceFilter } from '../../src/starters/namespace-option.ts';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
const tend = (args: string[]) => promisify(execFile)(process.execPath, [cli, ...args], { encoding: 'utf8' })
  .then((r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }), (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }));

describe('CLI: unknown commands, as kubectl says them', function () {
  this.timeout(30_000);
  const cases: [string[], string, string][] = [
    [['nosuchcommand', '--help'], 'nosuchcommand', 'tend'],
    [['nosuchcommand'], 'nosuchcommand', 'tend'],
    [['app', 'nosuch'], 'nosuch', 'tend app'],
    [['app', 'nosuch', '--help'], 'nosuch', 'tend app'],
    [['--log-format', 'json', 'nosuch'], 'nosuch', 'tend'],
    [['help', 'nosuch'], 'nosuch', 'tend'],
  ];
  for (const [args, word, parent] of cases) {
    it(`tend ${args.join(' ')}: exit 1, the command named on stderr, nothing on stdout`, async () => {
      const r = await tend(args);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, new RegExp(`^error: unknown command "${word}" for "${parent}"\n`));
      assert.ok(r.stderr.includes(`Run '${parent} --help' for usage.`), r.stderr);
      assert.doesNotMatch(r.stderr, /Usage:/);
    });
  }

  it('a close name is suggested: tend apps -> app, tend wedeer list -> weeder', async () => {
    const r = await tend(['apps']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Did you mean this\?\n\tapp\n/);
    assert.match((await tend(['wedeer', 'list'])).stderr, /Did you mean this\?\n\tweeder\n/);
    assert.deepEqual(suggestionsFor('stauts', ['start', 'stop', 'status', 'restart']), ['start', 'status']);
    assert.deepEqual(suggestionsFor('res', ['start', 'restart', 'help']), ['restart']);
    assert.deepEqual(suggestionsFor('zzzzzz', ['start', 'stop']), []);
  });

  it('known commands are left to commander: their help, their options and their values', async () => {
    for (const args of [['app', 'status', '--help'], ['help', 'app'], ['--log-format', 'json', '--help'], ['weeder', 'list', '-o', 'json', '--help']]) {
      const r = await tend(args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, /^Usage: tend/);
    }
    const program = await buildProgram(['app', 'status'], { all: true });
    assert.equal(unknownCommandIn(program, ['app', 'status', '-n', 'demo', 'web', '-o', 'name']), undefined);
    assert.equal(unknownCommandIn(program, ['app', 'status', '--', 'start']), undefined);
    assert.equal(unknownCommandIn(program, ['sandbox', 'node', 'stop', 'sim-1']), undefined);
    assert.equal(unknownCommandIn(program, ['sandbox', 'nodes'])?.parent, 'tend sandbox');
    assert.equal(unknownCommandIn(program, ['--log-format=json', 'nosuch'])?.word, 'nosuch');
    assert.equal(unknownCommandIn(program, ['--log-format', 'json', 'app', 'nosuch'])?.parent, 'tend app');
    // An option the command lacks is commander's to refuse (exit 2), not a word to guess at.
    assert.equal(unknownCommandIn(program, ['weeder', '--task-queue', 'q', 'list']), undefined);
    // pause takes capabilities as well as its subcommand status.
    assert.equal(unknownCommandIn(program, ['pause', 'weeder', '--reason', 'x']), undefined);
    assert.equal(unknownCommandIn(program, ['pause', 'status']), undefined);
  });
});

describe('CLI: -n/--namespace', function () {
  this.timeout(30_000);
  const dir = mkdtempSync(join(tmpdir(), 'tend-ns-'));
  const config = join(dir, 'tend.yaml');
  // Nothing listens there: the usage errors come before anything connects.
  writeFileSync(config, stringify({ temporal: { address: '127.0.0.1:1' }, kubernetes: { kubeconfig: join(dir, 'kc') }, apps: { namespaces: ['demo'] } }));

  it('-n NAMESPACE NAME is NAMESPACE/NAME; NAMESPACE/NAME keeps working, with or without the same -n', () => {
    assert.equal(namespacedKey('web', 'demo', 'App'), 'demo/web');
    assert.equal(namespacedKey('demo/web', 'demo', 'App'), 'demo/web');
    assert.equal(namespacedKey('demo/web', undefined, 'App'), 'demo/web');
    assert.equal(namespacedKey('web', undefined, 'App'), 'web');
  });

  it('a command that lists takes -n as kubectl get does: the rows of that namespace only', () => {
    const rows = ['demo', 'other', undefined];
    assert.deepEqual(rows.filter(namespaceFilter('demo')), ['demo']);
    assert.deepEqual(rows.filter(namespaceFilter(undefined)), rows);
    assert.throws(() => namespaceFilter(''), /-n\/--namespace is empty/);
  });

  for (const args of [['weeder', 'list'], ['taint', 'status'], ['app', 'status', 'web']]) {
    it(`tend ${args.join(' ')} -n '': a usage error before connecting`, async () => {
      const r = await tend([...args, '-n', '', '--config', config]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /-n\/--namespace is empty: give a namespace/);
    });
  }

  for (const verb of ['status', 'start', 'stop', 'restart']) {
    it(`tend app ${verb} -n a b/c: a usage error naming both namespaces, before connecting`, async () => {
      const r = await tend(['app', verb, '-n', 'a', 'b/c', '--config', config]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /-n "a" and the App "b\/c" name two namespaces \("a" and "b"\)/);
    });
  }

  it('tend app status -n other web, and app/other/web as -o name prints it, are refused as other/web is (outside the configured namespaces)', async () => {
    const b = await tend(['app', 'status', 'other/web', '--config', config]);
    assert.equal(b.code, 2);
    assert.match(b.stderr, /other/);
    for (const args of [['-n', 'other', 'web'], ['app/other/web']]) {
      const a = await tend(['app', 'status', ...args, '--config', config]);
      assert.equal(a.code, 2, args.join(' '));
      assert.equal(a.stderr, b.stderr, args.join(' '));
    }
  });
});
