// bin/tend, and commandEnv (src/repair/process.ts): the flags and environment tend and its commands run with.
// bin/tend (the checkout's and the image's entry point) runs Node.js with a bounded young
// generation (--max-semi-space-size=8) unless NODE_OPTIONS sets one, and as a flag of its own
// process: NODE_OPTIONS, which the commands tend runs inherit, is left as it was. Its old
// generation grows by 20 % (--heap-growing-percent, TEND_HEAP_GROWING_PERCENT), and glibc keeps two
// arenas (MALLOC_ARENA_MAX=2) and maps allocations from 128 KiB (MALLOC_MMAP_THRESHOLD_), each
// unless set; the commands tend runs do not get what bin/tend set (commandEnv).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { commandEnv } from '../../src/repair/process.ts';

const bin = fileURLToPath(new URL('../../bin/tend', import.meta.url));
// A module loaded before the CLI that reports what the process was started with, on stderr.
// (NODE_OPTIONS splits on spaces: the module's source is percent-encoded.)
const probe = `data:text/javascript,${encodeURIComponent('process.stderr.write(JSON.stringify({ execArgv: process.execArgv, nodeOptions: process.env.NODE_OPTIONS, arenas: process.env.MALLOC_ARENA_MAX, mmap: process.env.MALLOC_MMAP_THRESHOLD_, setByTend: process.env.TEND_SET_MALLOC }) + "\\n")')}`;

interface Started { execArgv: string[]; nodeOptions: string; arenas?: string; mmap?: string; setByTend?: string }

function started(nodeOptions: string, env: Record<string, string> = {}): Started {
  const base = { ...process.env };
  delete base.MALLOC_ARENA_MAX;
  delete base.MALLOC_MMAP_THRESHOLD_;
  delete base.TEND_SET_MALLOC;
  delete base.TEND_HEAP_GROWING_PERCENT;
  const r = spawnSync(bin, ['--version'], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...base, ...env, NODE_OPTIONS: `${nodeOptions} --import=${probe}`.trim() },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^tend /, 'the CLI ran');
  return JSON.parse(r.stderr.split('\n').find((l) => l.startsWith('{'))!) as Started;
}

describe('bin/tend: the Node.js flags it runs with', function () {
  this.timeout(30_000);

  it('passes --max-semi-space-size=8 on the command line, and leaves NODE_OPTIONS alone', () => {
    const r = started('');
    assert.ok(r.execArgv.includes('--max-semi-space-size=8'), `execArgv: ${JSON.stringify(r.execArgv)}`);
    assert.ok(!r.nodeOptions.includes('semi-space'), 'not in the environment the commands tend runs inherit');
  });

  it("NODE_OPTIONS's own --max-semi-space-size is the one that applies: bin/tend adds none", () => {
    const r = started('--max-semi-space-size=32');
    assert.ok(!r.execArgv.some((a) => a.startsWith('--max-semi-space-size')), `execArgv: ${JSON.stringify(r.execArgv)}`);
    assert.ok(r.nodeOptions.includes('--max-semi-space-size=32'));
  });

  it('passes --heap-growing-percent=20 on the command line; TEND_HEAP_GROWING_PERCENT sets another', () => {
    assert.ok(started('').execArgv.includes('--heap-growing-percent=20'));
    const r = started('', { TEND_HEAP_GROWING_PERCENT: '50' });
    assert.ok(r.execArgv.includes('--heap-growing-percent=50'), `execArgv: ${JSON.stringify(r.execArgv)}`);
    assert.ok(!r.execArgv.includes('--heap-growing-percent=20'));
  });

  it('a TEND_HEAP_GROWING_PERCENT that is no whole number of percent: exit 2 naming the variable, Node.js not started', () => {
    for (const value of ['abc', '0', '12.5', '-5']) {
      const r = spawnSync(bin, ['--version'], { encoding: 'utf8', env: { ...process.env, TEND_HEAP_GROWING_PERCENT: value } });
      assert.equal(r.status, 2, `${value}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, `tend: TEND_HEAP_GROWING_PERCENT: "${value}" is not a whole number of percent (1 to 999)\n`);
    }
  });

  it('sets MALLOC_ARENA_MAX=2 and MALLOC_MMAP_THRESHOLD_=131072 when unset, and names what it set; an operator\'s own values are kept', () => {
    const r = started('');
    assert.deepEqual([r.arenas, r.mmap, r.setByTend], ['2', '131072', 'MALLOC_ARENA_MAX MALLOC_MMAP_THRESHOLD_']);
    const arenas = started('', { MALLOC_ARENA_MAX: '4' });
    assert.deepEqual([arenas.arenas, arenas.mmap, arenas.setByTend], ['4', '131072', 'MALLOC_MMAP_THRESHOLD_']);
    const both = started('', { MALLOC_ARENA_MAX: '4', MALLOC_MMAP_THRESHOLD_: '65536' });
    assert.deepEqual([both.arenas, both.mmap, both.setByTend], ['4', '65536', undefined]);
  });
});

describe('commandEnv: the environment of the commands tend runs', () => {
  it('leaves out TEMPORAL_* and the MALLOC_* bin/tend set; keeps an operator\'s own', () => {
    const set = commandEnv({ TEND_REPAIR_STEP: '1' }, {
      PATH: '/bin', TEMPORAL_API_KEY: 'secret', MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', TEND_SET_MALLOC: 'MALLOC_ARENA_MAX MALLOC_MMAP_THRESHOLD_',
    });
    assert.deepEqual(set, { PATH: '/bin', TEND_REPAIR_STEP: '1' });
    const own = commandEnv({}, { PATH: '/bin', MALLOC_ARENA_MAX: '4', MALLOC_MMAP_THRESHOLD_: '131072', TEND_SET_MALLOC: 'MALLOC_MMAP_THRESHOLD_' });
    assert.deepEqual(own, { PATH: '/bin', MALLOC_ARENA_MAX: '4' });
    // Only MALLOC_* names are taken away, whatever the marker says.
    const odd = commandEnv({}, { PATH: '/bin', HOME: '/root', TEND_SET_MALLOC: 'PATH HOME' });
    assert.deepEqual(odd, { PATH: '/bin', HOME: '/root' });
  });
});
