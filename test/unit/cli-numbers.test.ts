// Whole-number flags (--timeout, --interval-seconds, --min-request-timeout): decimal digits from 1
// to a bound, so that a value no timer can hold is refused before anything is sent.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { InvalidArgumentError } from 'commander';
import { MAX_FLAG_INT, positiveInt } from '../../src/starters/cli-support.ts';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
const tend = (args: string[]) => promisify(execFile)(process.execPath, [cli, ...args], { encoding: 'utf8' })
  .then(() => ({ code: 0, stderr: '' }), (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }));

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
