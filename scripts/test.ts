// `npm test`: every test, in two lanes run side by side.
//   e2e      the end-to-end tests, on the test sandbox (the root hooks bring it up);
//   offline  unit tests, replay of the recorded histories, then the workflow tests
//            (each file on a Temporal dev server of its own; no sandbox).
// The workflow tests mostly wait for timers and servers, so beside the e2e tests
// they cost the run little: it takes about as long as the e2e tests alone.
// Each line is prefixed with its lane; the exit code is 1 when any lane failed.
//
//   node scripts/test.ts [--lane e2e|offline]   (one lane only)
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const mocha = fileURLToPath(new URL('../node_modules/mocha/bin/mocha.js', import.meta.url));

const lanes: Record<string, string[]> = {
  e2e: ['test/e2e/**/*.test.ts'],
  offline: ['--no-config', '--timeout', '120000', '--slow', '10000', '--reporter', 'spec', '--exit',
    'test/unit/**/*.test.ts', 'test/replay/**/*.test.ts', 'test/workflows/**/*.test.ts'],
};

const { values } = parseArgs({ options: { lane: { type: 'string', multiple: true } } });
const chosen = values.lane ?? Object.keys(lanes);
const unknown = chosen.filter((l) => !(l in lanes));
if (unknown.length) {
  console.error(`test: no lane named ${unknown.join(', ')}; there are: ${Object.keys(lanes).join(', ')}`);
  process.exit(2);
}

const width = Math.max(...chosen.map((l) => l.length));
const t0 = Date.now();

const children = new Set<ReturnType<typeof spawn>>();

function run(lane: string): Promise<{ lane: string; code: number; seconds: number }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [mocha, ...lanes[lane]!], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    const prefix = `${lane.padEnd(width)} │ `;
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => process.stdout.write(`${prefix}${line}\n`));
    }
    child.on('close', (code, signal) => resolve({ lane, code: code ?? (signal ? 1 : 0), seconds: Math.round((Date.now() - t0) / 1000) }));
  });
}

// Stopped (Ctrl-C, a CI timeout): each lane's mocha gets the signal and stops its own sandbox and servers.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of children) child.kill(signal);
  });
}

const results = await Promise.all(chosen.map(run));
for (const r of results) console.log(`test: ${r.lane} ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`} after ${r.seconds} s`);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
