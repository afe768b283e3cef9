// `tend repair-queue logs INDEX`: an entry's command runs as the log file on
// this host has them (argv, output, exit code), control characters shown, not
// obeyed; no log here is exit 1 naming where it looked. Needs no Temporal.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { runTend } from '../harness/cli.ts';
import { readEntryLog, terminalSafe } from '../../src/repair/logs.ts';
import { runOnce, stateDir } from '../../src/repair/process.ts';

describe('repair-queue logs', function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), 'tend-repair-logs-'));
  const state = stateDir(join(dir, 'state'));
  const config = join(dir, 'tend.yaml');

  before(async () => {
    writeFileSync(config, stringify({
      temporal: { address: '127.0.0.1:1' },
      repair: {
        state_dir: state,
        repair_procedures: [{ machine_types: ['sim'], repair_operations: [{ operation: 'heal', repair_steps: [{ repair_command: ['true'] }], health_check_command: ['true'] }] }],
      },
    }));
    await runOnce({ argv: ['sh', '-c', 'printf "fixing \\033[2Jdone\\n"; echo warn >&2; exit 2'], address: '10.1.2.3', timeoutSeconds: 5, entry: { dir: state, index: '12', step: 1, kind: 'repair_command', run: 3 } });
  });

  it('control characters are shown as \\xNN (escape sequences never reach the terminal); newline and tab stay', () => {
    assert.equal(terminalSafe('a\tb\n\x1b[2J\x07\x7f\u009b'), 'a\tb\n\\x1b[2J\\x07\\x7f\\x9b');
  });

  it('prints the entry\'s runs from this host, argv and output, with how each ended', async () => {
    const r = await runTend(['repair-queue', 'logs', '--config', config, '12']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^=== \S+ step 1 repair_command run 3: sh -c .* 10\.1\.2\.3\n--- stdout\nfixing \\x1b\[2Jdone\n\n--- stderr\nwarn\n\n=== exit code 2 at /m);
    const raw = await runTend(['repair-queue', 'logs', '--config', config, '--raw', '12']);
    assert.ok(raw.stdout.includes('fixing \x1b[2Jdone'));
  });

  it('an entry with no log on this host: exit 1, where it looked and where the log is', async () => {
    const r = await runTend(['repair-queue', 'logs', '--config', config, '13']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`no log of entry 13 on this host \\(looked in ${join(state, 'logs')}\\); the log is on the host of the worker that ran the entry's commands`));
    assert.deepEqual(readEntryLog(state, '13'), { looked: [join(state, 'logs')] });
    const bad = await runTend(['repair-queue', 'logs', '--config', config, '../1']);
    assert.equal(bad.code, 2, bad.stderr);
  });
});
