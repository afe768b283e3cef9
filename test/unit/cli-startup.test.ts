// The CLI's start-up: a command loads only what it uses. `tend --help` and `--version` load
// neither the Temporal client nor the Kubernetes client (each a few hundred milliseconds on a
// small machine), and list the commands whose modules they did not load exactly as those
// modules describe them. bench/cli.ts measures the times.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildProgram } from '../../src/starters/cli.ts';
import { COMMAND_GROUPS } from '../../src/starters/command-groups.ts';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
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
