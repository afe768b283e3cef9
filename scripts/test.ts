// `npm test`: every test, in two lanes run side by side.
//   e2e      the end-to-end tests, on test sandboxes (two by default, each with its
//            own ports and state folder). Each file runs in a mocha of its own on
//            whichever sandbox is free, the files measured slowest first, so the
//            sandboxes finish together. The first file on a sandbox brings it up
//            (the root hooks); this script takes down those it started.
//   offline  unit tests, replay of the recorded histories, then the workflow tests
//            (each file on a Temporal dev server of its own; no sandbox).
//   cluster  only when asked (--with-cluster, or --lane cluster; `npm run test:cluster`):
//            the cluster faults and five e2e files again, on a sandbox whose Temporal
//            is its own services over PostgreSQL (which it needs installed). Beside
//            the offline lane it starts when that one ends, so the machine runs
//            about as much at once all along.
//   ship     only when asked (--with-ship, or --lane ship): what an operator installs, built and
//            run for real (test/ship: the image with podman, compose, the Helm chart, the release
//            tarball, the getting-started page), on a sandbox of its own. Beside the e2e lane it
//            starts when that one ends.
//   browser  only when asked (--with-browser, or --lane browser; `npm run test:browser`): the
//            Temporal Web UI in Debian's headless Chromium (test/browser: the list's filters, each
//            workflow's details and summaries, cancelling from the UI), on a sandbox of its own.
//            Beside the e2e lane it starts when that one ends; without Chromium it fails at once,
//            saying so. TEND_SCREENSHOTS=1 (`npm run screenshots`) saves its pages in docs/images.
// The tests mostly wait (for timers, back-offs, servers): side by side they cost
// the run little CPU, and it takes about as long as its longest sandbox.
// Each line is prefixed with its lane (and sandbox); the exit code is 1 when any
// lane failed.
//
//   node scripts/test.ts [--lane e2e|offline|cluster|ship|browser] [--with-cluster] [--with-ship] [--with-browser] [--e2e-sandboxes N] [E2E_FILE...]
//   (files named: only those of the e2e lane run)
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureBinaries } from '../src/sandbox/binaries.ts';
import { down, status } from '../src/sandbox/sandbox.ts';
import { chromiumMissing } from '../test/browser/chromium.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const mocha = fileURLToPath(new URL('../node_modules/mocha/bin/mocha.js', import.meta.url));

const lanes: Record<string, string[]> = {
  e2e: [], // sharded: see runE2e
  offline: ['--no-config', '--timeout', '120000', '--slow', '10000', '--reporter', 'spec', '--exit',
    'test/unit/**/*.test.ts', 'test/replay/**/*.test.ts', 'test/workflows/**/*.test.ts'],
  // The root config (.mocharc.json): the sandbox root hooks, here with TEND_TEST_TEMPORAL=cluster.
  cluster: ['test/cluster/**/*.test.ts', 'test/e2e/weeder-cascade.test.ts', 'test/e2e/taint-replacement.test.ts', 'test/e2e/apps.test.ts',
    'test/e2e/repair.test.ts', 'test/e2e/pause.test.ts'],
  // The root config too: a sandbox of its own (shipEnv).
  ship: ['test/ship/**/*.test.ts'],
  // The root config too: a sandbox of its own (browserEnv).
  browser: ['test/browser/**/*.test.ts'],
};
/** The lanes `npm test` runs when none is named. */
const defaultLanes = ['e2e', 'offline'];

/**
 * The e2e files measured slowest (a full run's per-file times, longest first): they start first, so
 * that no sandbox is left with a long file at the end. The other files follow by name.
 */
const slowestFirst = [
  'taint-throttle', 'faults-run', 'weeder-durability', 'repair-drain', 'two-replicas', 'taint-replacement', 'repair-kill', 'apps',
  'repair', 'fuzz-short', 'sandbox', 'weeder-cascade', 'metrics', 'weeder-record', 'observe-apps', 'weeder-rules', 'weeder-recreate', 'pause-taint',
  'observe-taint', 'taint-fdb', 'security-capabilities',
];
/** Each further sandbox's ports: the first's plus this many (clear of every port the tests use, and of their +50 sandboxes). */
const SANDBOX_PORT_STEP = 40;
const MAX_SANDBOXES = 3;
/** The cluster lane's ports: past every e2e sandbox's (and clear of their ports and the cluster's own). */
const CLUSTER_PORT_STEP = SANDBOX_PORT_STEP * MAX_SANDBOXES;

const { values, positionals } = parseArgs({
  options: {
    lane: { type: 'string', multiple: true }, 'with-cluster': { type: 'boolean', default: false }, 'with-ship': { type: 'boolean', default: false },
    'with-browser': { type: 'boolean', default: false },
    'e2e-sandboxes': { type: 'string', default: '2' },
  },
  allowPositionals: true,
});
// The cluster, ship and browser lanes last: each waits for the lane it runs beside.
const waitsFor: Record<string, string> = { cluster: 'offline', ship: 'e2e', browser: 'e2e' };
const chosen = [...new Set([...(values.lane ?? defaultLanes), ...(values['with-cluster'] ? ['cluster'] : []), ...(values['with-ship'] ? ['ship'] : []),
  ...(values['with-browser'] ? ['browser'] : [])])]
  .sort((a, b) => Number(a in waitsFor) - Number(b in waitsFor));
const unknown = chosen.filter((l) => !(l in lanes));
if (unknown.length) {
  console.error(`test: no lane named ${unknown.join(', ')}; there are: ${Object.keys(lanes).join(', ')}`);
  process.exit(2);
}
const sandboxes = Number(values['e2e-sandboxes']);
if (!Number.isInteger(sandboxes) || sandboxes < 1 || sandboxes > MAX_SANDBOXES) {
  console.error(`test: --e2e-sandboxes must be a whole number from 1 to ${MAX_SANDBOXES}, not ${JSON.stringify(values['e2e-sandboxes'])}`);
  process.exit(2);
}

const prefixes = chosen.flatMap((l) => (l === 'e2e' && sandboxes > 1 ? Array.from({ length: sandboxes }, (_, i) => `e2e.${i + 1}`) : [l]));
const width = Math.max(...prefixes.map((p) => p.length));
const t0 = Date.now();
const seconds = () => Math.round((Date.now() - t0) / 1000);

const children = new Set<ReturnType<typeof spawn>>();
let stopping = false;

/**
 * What each failed mocha printed from its "N failing" line on (the failures,
 * with their errors and stacks), printed again at the end of the run: with
 * two sandboxes and three lanes interleaving, a CI log's tail then still says
 * what failed and why.
 */
const failureReports: { title: string; lines: string[] }[] = [];

/** One mocha, its lines prefixed; resolves with its exit code and its summary's counts. */
function mochaRun(prefix: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; passing: number; failing: number }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [mocha, ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let passing = 0;
    let failing = 0;
    const report: string[] = [];
    const head = `${prefix.padEnd(width)} │ `;
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        const m = /^ {2}(\d+) (passing|failing)\b/.exec(line);
        if (m?.[2] === 'passing') passing += Number(m[1]);
        if (m?.[2] === 'failing') failing += Number(m[1]);
        // The failures section: from mocha's "N failing" to its end (stdout only: the servers' logs go to stderr).
        if (stream === child.stdout && (m?.[2] === 'failing' || report.length > 0)) report.push(line);
        process.stdout.write(`${head}${line}\n`);
      });
    }
    child.on('close', (code, signal) => {
      children.delete(child);
      const exit = code ?? (signal ? 1 : 0);
      while (report.length > 0 && report.at(-1)!.trim() === '') report.pop();
      if (exit !== 0) {
        failureReports.push({
          title: args.length === 1 ? `${prefix}: ${args[0]}` : `the ${prefix} lane`,
          lines: report.length ? report : [`  exited ${signal ? `on ${signal}` : `with ${exit}`} before reporting any failure`],
        });
      }
      resolve({ code: exit, passing, failing });
    });
  });
}

/** The e2e files, each in its own mocha, on whichever sandbox is free; the sandboxes this run started are taken down. */
async function runE2e(): Promise<number> {
  const e2eDir = join(repoRoot, 'test', 'e2e');
  const all = readdirSync(e2eDir).filter((f) => f.endsWith('.test.ts')).map((f) => f.slice(0, -'.test.ts'.length)).sort();
  // Names given on the command line (`weeder-init`, or test/e2e/weeder-init.test.ts): only those.
  const wanted = positionals.map((p) => p.replace(/^.*\//, '').replace(/\.test\.ts$/, ''));
  const missing = wanted.filter((w) => !all.includes(w));
  if (missing.length) {
    console.error(`test: no e2e test file named ${missing.join(', ')} in test/e2e`);
    return 2;
  }
  const names = wanted.length ? all.filter((n) => wanted.includes(n)) : all;
  const rank = (n: string) => (slowestFirst.includes(n) ? slowestFirst.indexOf(n) : slowestFirst.length);
  const queue = names.sort((a, b) => rank(a) - rank(b)).map((n) => `test/e2e/${n}.test.ts`);
  const baseOffset = Number(process.env.TEND_TEST_PORT_OFFSET ?? 0);
  const baseDir = process.env.TEND_TEST_SANDBOX_DIR ?? join(repoRoot, '.tend', 'test-sandbox');
  const shards = Array.from({ length: sandboxes }, (_, i) => ({
    prefix: sandboxes > 1 ? `e2e.${i + 1}` : 'e2e',
    dir: i === 0 ? baseDir : `${baseDir}-${i + 1}`,
    offset: baseOffset + i * SANDBOX_PORT_STEP,
  }));
  // A sandbox already up before this run (a developer's test sandbox) is reused and left up.
  const upBefore = await Promise.all(shards.map(async (s) => (await status(s.dir)).every((c) => c.running)));
  const failed: string[] = [];
  let passing = 0;
  let failing = 0;
  const drain = async (shard: (typeof shards)[number]) => {
    const env = { ...process.env, TEND_TEST_PORT_OFFSET: String(shard.offset), TEND_TEST_SANDBOX_DIR: shard.dir, TEND_TEST_KEEP_SANDBOX: '1' };
    for (let file = queue.shift(); file && !stopping; file = queue.shift()) {
      const began = Date.now();
      const r = await mochaRun(shard.prefix, [file], env);
      // Each file's time, for the order above.
      console.log(`${shard.prefix.padEnd(width)} │ ${file}: ${r.code === 0 ? 'passed' : 'FAILED'} in ${Math.round((Date.now() - began) / 1000)} s`);
      passing += r.passing;
      failing += r.failing;
      if (r.code !== 0) failed.push(file);
    }
  };
  try {
    await Promise.all(shards.map(drain));
  } finally {
    await Promise.all(shards.map(async (s, i) => {
      if (!upBefore[i] && !process.env.TEND_TEST_KEEP_SANDBOX) await down(s.dir);
    }));
  }
  console.log(`${'e2e'.padEnd(width)} │ ${passing} passing, ${failing} failing, in ${names.length} files on ${sandboxes} sandbox${sandboxes > 1 ? 'es' : ''}` +
    (failed.length ? `; failed: ${failed.join(', ')}` : ''));
  return failed.length || stopping ? 1 : 0;
}

/** The cluster lane: its own sandbox (a folder and ports of its own), Temporal's services on PostgreSQL. */
function clusterEnv(): NodeJS.ProcessEnv {
  const dir = process.env.TEND_TEST_SANDBOX_DIR;
  return {
    ...process.env, TEND_TEST_TEMPORAL: 'cluster', TEND_TEST_PORT_OFFSET: String(Number(process.env.TEND_TEST_PORT_OFFSET ?? 0) + CLUSTER_PORT_STEP),
    ...(dir ? { TEND_TEST_SANDBOX_DIR: `${dir}-cluster` } : {}),
  };
}

/** The ship lane: its own sandbox, past the cluster lane's ports. */
function shipEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env, TEND_TEST_PORT_OFFSET: String(Number(process.env.TEND_TEST_PORT_OFFSET ?? 0) + 2 * CLUSTER_PORT_STEP),
    TEND_TEST_SANDBOX_DIR: `${process.env.TEND_TEST_SANDBOX_DIR ?? join(repoRoot, '.tend', 'test-sandbox')}-ship`,
  };
}

/**
 * The browser lane: its own sandbox, past the ship lane's ports; one sandbox step further, so that
 * the HTTP ports of its tend processes (test/harness/env.ts, a block that comes round again every
 * 240 of offset) are not the cluster lane's, which may run beside it.
 */
function browserEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env, TEND_TEST_PORT_OFFSET: String(Number(process.env.TEND_TEST_PORT_OFFSET ?? 0) + 3 * CLUSTER_PORT_STEP + SANDBOX_PORT_STEP),
    TEND_TEST_SANDBOX_DIR: `${process.env.TEND_TEST_SANDBOX_DIR ?? join(repoRoot, '.tend', 'test-sandbox')}-browser`,
  };
}

const finished = new Map<string, Promise<unknown>>();

async function run(lane: string): Promise<{ lane: string; code: number; seconds: number }> {
  // Beside the lane it waits for, the cluster (ship) lane takes its place when it ends.
  const after = waitsFor[lane];
  if (after && finished.has(after)) await finished.get(after);
  if (stopping) return { lane, code: 1, seconds: seconds() };
  // No Chromium: the lane fails at once with one line that says what to install (no sandbox started for nothing).
  const missing = lane === 'browser' ? chromiumMissing() : undefined;
  if (missing) {
    console.log(`${lane.padEnd(width)} │ test: ${missing}`);
    failureReports.push({ title: `the ${lane} lane`, lines: [`  ${missing}`] });
    return { lane, code: 1, seconds: seconds() };
  }
  const env = lane === 'cluster' ? clusterEnv() : lane === 'ship' ? shipEnv() : lane === 'browser' ? browserEnv() : process.env;
  const code = lane === 'e2e' ? await runE2e() : (await mochaRun(lane, lanes[lane]!, env)).code;
  return { lane, code, seconds: seconds() };
}

// Stopped (Ctrl-C, a CI timeout): each mocha gets the signal and stops its own servers; no further
// e2e file starts, and the sandboxes this run started are taken down.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stopping = true;
    for (const child of children) child.kill(signal);
  });
}

// Both lanes need the binaries (the offline lane Temporal's dev server): built here once, not by
// each mocha at the same time (the first run on a machine; later runs find them cached).
await ensureBinaries((m) => console.log(`test: ${m}`));
const results = await Promise.all(chosen.map((lane) => {
  const r = run(lane);
  finished.set(lane, r);
  return r;
}));
for (const { title, lines } of failureReports) {
  console.log(`test: what failed in ${title}:`);
  for (const line of lines) console.log(`  ${line}`);
}
for (const r of results) console.log(`test: ${r.lane} ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`} after ${r.seconds} s`);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
