// bin/tend (the checkout's and the image's entry point) runs Node.js with a bounded young
// generation (--max-semi-space-size=16) unless NODE_OPTIONS sets one, and as a flag of its own
// process: NODE_OPTIONS, which the commands tend runs inherit, is left as it was.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../bin/tend', import.meta.url));
// A module loaded before the CLI that reports what the process was started with, on stderr.
// (NODE_OPTIONS splits on spaces: the module's source is percent-encoded.)
const probe = `data:text/javascript,${encodeURIComponent('process.stderr.write(JSON.stringify({ execArgv: process.execArgv, nodeOptions: process.env.NODE_OPTIONS }) + "\\n")')}`;

function started(nodeOptions: string): { execArgv: string[]; nodeOptions: string } {
  const r = spawnSync(bin, ['--version'], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: `${nodeOptions} --import=${probe}`.trim() },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^tend /, 'the CLI ran');
  return JSON.parse(r.stderr.split('\n').find((l) => l.startsWith('{'))!) as { execArgv: string[]; nodeOptions: string };
}

describe('bin/tend: the Node.js flags it runs with', function () {
  this.timeout(30_000);

  it('passes --max-semi-space-size=16 on the command line, and leaves NODE_OPTIONS alone', () => {
    const r = started('');
    assert.ok(r.execArgv.includes('--max-semi-space-size=16'), `execArgv: ${JSON.stringify(r.execArgv)}`);
    assert.ok(!r.nodeOptions.includes('semi-space'), 'not in the environment the commands tend runs inherit');
  });

  it("NODE_OPTIONS's own --max-semi-space-size is the one that applies: bin/tend adds none", () => {
    const r = started('--max-semi-space-size=8');
    assert.ok(!r.execArgv.some((a) => a.startsWith('--max-semi-space-size')), `execArgv: ${JSON.stringify(r.execArgv)}`);
    assert.ok(r.nodeOptions.includes('--max-semi-space-size=8'));
  });
});
