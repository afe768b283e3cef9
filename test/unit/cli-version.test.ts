// `tend --version` / `-V`: one line, exit 0, with tend's version from package.json.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
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
