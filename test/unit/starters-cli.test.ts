// src/starters/cli.ts: what a command loads, and `tend --version` (with TEND_LOG_LEVEL, src/log.ts).
// The CLI's start-up: a command loads only what it uses. `tend --help` and `--version` load
// neither the Temporal client nor the Kubernetes client (each a few hundred milliseconds on a
// small machine), and list the commands whose modules they did not load exactly as those
// modules describe them. bench/cli.ts measures the times.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildProgram } from '../../src/starters/cli.ts';
import { COMMAND_GROUPS } from '../../src/starters/command-groups.ts';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string };
const hook = fileURLToPath(new URL('../harness/record-imports.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tend-startup-'));

/** The packages `tend ARGS` loads. */
function packagesLoadedBy(args: string[]): string[] {
  const file = join(dir, `${args.join('_').replace(/[^a-z0-9_]/gi, '')}.txt`);
  execFileSync(process.execPath, ['--import', hook, cli, ...args], { env: { ...process.env, TEND_RECORD_IMPORTS: file }, stdio: 'pipe' });
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}

const HEAVY = ['@temporalio/client', '@temporalio/worker', '@kubernetes/client-node', 'zod'];

describe('CLI start-up: a command loads what it uses', () => {
  for (const args of [['--help'], ['--version'], ['help', 'weeder'], ['taint', 'status', '--help'], ['weeder', 'list', '--help'], ['config', '--help']]) {
    it(`tend ${args.join(' ')} loads none of ${HEAVY.join(', ')}`, () => {
      const loaded = packagesLoadedBy(args);
      assert.ok(loaded.includes('commander'), `the recording saw nothing: ${loaded.join(', ')}`);
      assert.deepEqual(loaded.filter((p) => HEAVY.includes(p)), []);
    });
  }

  it('tend app status --help loads the Temporal client no more than the others', () => {
    assert.deepEqual(packagesLoadedBy(['app', 'status', '--help']).filter((p) => HEAVY.includes(p)), []);
  });

  it('tend --help lists every command as the loaded modules describe it', async () => {
    const lazy = (await buildProgram(['--help'])).helpInformation();
    const full = (await buildProgram([], { all: true })).helpInformation();
    assert.equal(lazy, full);
    for (const g of COMMAND_GROUPS) for (const name of g.names) assert.match(lazy, new RegExp(`^  ${name}\\b`, 'm'), name);
  });

  it('a command named loads its own module: its options and subcommands are there', async () => {
    const program = await buildProgram(['repair-queue', 'list']);
    const rq = program.commands.find((c) => c.name() === 'repair-queue')!;
    assert.ok(rq.commands.some((c) => c.name() === 'list'), 'repair-queue list is not registered');
    const weeder = program.commands.find((c) => c.name() === 'weeder')!;
    assert.equal(weeder.commands.length, 0, 'weeder was loaded for a repair-queue command');
  });
});

// `tend --version` / `-V`: one line, exit 0, with tend's version from package.json and its commit (test/unit/version.test.ts).
describe('tend --version', () => {
  for (const flag of ['--version', '-V']) {
    it(`${flag}: tend's version, its commit, its Temporal SDK and Node.js on one line, exit 0`, () => {
      const out = execFileSync(process.execPath, [cli, flag], { encoding: 'utf8', env: { ...process.env, TEND_COMMIT: '0123abcd4567' } });
      assert.equal(out, `tend ${pkg.version} (commit 0123abcd4567, Temporal SDK 1.24.0, Node.js ${process.version})\n`);
    });
  }
});

describe('TEND_LOG_LEVEL', () => {
  it('a level the logger does not know: one line naming the variable and the levels, exit 2, no stack', () => {
    const r = spawnSync(process.execPath, [cli, '--version'], { encoding: 'utf8', env: { ...process.env, TEND_LOG_LEVEL: 'bogus' } });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, 'tend: TEND_LOG_LEVEL: "bogus" is not a log level (one of: trace, debug, info, warn, error, fatal, silent)\n');
  });
  it('a known level, or none, runs the command', () => {
    for (const level of ['debug', 'silent', '']) {
      const out = execFileSync(process.execPath, [cli, '--version'], { encoding: 'utf8', env: { ...process.env, TEND_LOG_LEVEL: level } });
      assert.match(out, /^tend /);
    }
  });
});

describe('a pasted long argument', () => {
  it('is cut in the usage error, its length said, exit 2', () => {
    const index = '9'.repeat(10_000);
    const r = spawnSync(process.execPath, [cli, 'repair-queue', 'delete', index], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /error: command-argument value '9{39}… \(10002 characters\) is invalid for argument 'INDEX'/);
    assert.ok(r.stderr.length < 600, `bounded: ${r.stderr.length} characters`);
  });
});
