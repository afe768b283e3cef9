// `tend --version` / `-V`: one line, exit 0, with tend's version from package.json.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string };

describe('tend --version', () => {
  for (const flag of ['--version', '-V']) {
    it(`${flag}: tend's version, its Temporal SDK and Node.js on one line, exit 0`, () => {
      const out = execFileSync(process.execPath, [cli, flag], { encoding: 'utf8' });
      assert.equal(out, `tend ${pkg.version} (Temporal SDK 1.24.0, Node.js ${process.version})\n`);
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
