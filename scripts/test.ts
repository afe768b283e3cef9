// `npm test`: every test, in lanes run side by side.
//   e2e      the end-to-end tests, on test sandboxes (three by default, each with its
//            own ports and state folder). Each file runs in a mocha of its own on
//            whichever sandbox is free, the files measured slowest first, so the
//            sandboxes finish together. The first file on a sandbox brings it up
//            (the root hooks); this script takes down those it started.
//   offline  unit tests and replay of the recorded histories (no binaries), then the workflow
//            tests (each file on a Temporal dev server of its own; no sandbox).
//   cluster  only when asked (--with-cluster, or --lane cluster; `npm run test:cluster`):
//            the cluster faults and five e2e files again, on a sandbox whose Temporal
//            is its own services over PostgreSQL (which it needs installed).
//   ship     only when asked (--with-ship, or --lane ship): what an operator installs, built and
//            run for real (test/ship: the image with podman, compose, the Helm chart, the release
//            tarball, the getting-started page), on a sandbox of its own.
//   browser  only when asked (--with-browser, or --lane browser; `npm run test:browser`): the
//            Temporal Web UI in Debian's headless Chromium (test/browser: the list's filters, each
//            workflow's details and summaries, cancelling from the UI), on a sandbox of its own.
//            Without Chromium it fails at once, saying so. TEND_SCREENSHOTS=1 (`npm run
//            screenshots`) saves its pages in docs/images.
// The binaries (scripts/binaries.sh) are built here, one part at a time (each go build uses every
// core), in the order the lanes need them: a lane starts as soon as its own are built, while the
// rest build beside it; a failed build fails the lanes that need it, with Go's error.
// The tests mostly wait (for timers, back-offs, servers): side by side they cost the run little
// CPU. At most the e2e sandboxes, the offline lane and one of the cluster, ship and browser lanes
// run at once (one more of those once the offline lane ends), the longest first: the run takes
// about as long as its e2e lane. At the end it prints each lane's start, end and duration, and
// each binary's build.
// Each line is prefixed with its lane (and sandbox); the exit code is 1 when any
// lane failed.
//
//   node scripts/test.ts [--lane e2e|offline|cluster|ship|browser] [--with-cluster] [--with-ship] [--with-browser] [--e2e-sandboxes N] [E2E_FILE...]
//   (files named: only those of the e2e lane run)
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PARTS, buildPart, builtParts, type Part } from '../src/sandbox/binaries.ts';
import { down, status } from '../src/sandbox/sandbox.ts';
import { chromiumMissing } from '../test/browser/chromium.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const mocha = fileURLToPath(new URL('../node_modules/mocha/bin/mocha.js', import.meta.url));

const lanes: Record<string, string[]> = {
  e2e: [], // sharded: see runE2e
  offline: [], // two mochas: see offlineRuns
  // The root config (.mocharc.json): the sandbox root hooks, here with TEND_TEST_TEMPORAL=cluster.
  cluster: ['test/cluster/**/*.test.ts', 'test/e2e/weeder-cascade.test.ts', 'test/e2e/taint-replacement.test.ts', 'test/e2e/apps.test.ts',
    'test/e2e/repair.test.ts', 'test/e2e/pause.test.ts'],
  // The root config too: a sandbox of its own (shipEnv).
  ship: ['test/ship/**/*.test.ts'],
  // The root config too: a sandbox of its own (browserEnv).
  browser: ['test/browser/**/*.test.ts'],
};
/** The binaries a sandbox runs (and the tests' kubectl). */
const sandboxParts: Part[] = ['temporal', 'etcd', 'kubernetes', 'kubectl'];
const offlineArgs = ['--no-config', '--timeout', '120000', '--slow', '10000', '--reporter', 'spec', '--exit'];
/** The offline lane: the tests that need no binary first, so that a cold run starts them at once. */
const offlineRuns: { files: string[]; needs: Part[] }[] = [
  { files: ['test/unit/**/*.test.ts', 'test/replay/**/*.test.ts'], needs: [] },
  { files: ['test/workflows/**/*.test.ts'], needs: sandboxParts },
];
/**
 * The binaries each lane needs before it starts (the workflow tests' harness asks for the sandbox's
 * set, of which it runs the temporal CLI; the ship lane's compose test runs Temporal's server).
 */
const needs: Record<string, Part[]> = {
  e2e: sandboxParts, offline: [], browser: sandboxParts, cluster: [...sandboxParts, 'server'], ship: [...sandboxParts, 'server', 'helm', 'promtool'],
};
/**
 * The order lanes start in when several may: the e2e lane (the longest), the offline lane, then the
 * other lanes longest first (cluster about 740 s, ship 475 s, browser 100 s in the last full run).
 */
const priority = ['e2e', 'offline', 'cluster', 'ship', 'browser'];
/** The lanes `npm test` runs when none is named. */
const defaultLanes = ['e2e', 'offline'];

/**
 * The e2e files measured slowest (a full run's per-file times, longest first): they start first, so
 * that no sandbox is left with a long file at the end. The other files follow by name.
 */
const slowestFirst = [
  'taint-throttle', 'node-repair-chain', 'faults-run', 'taint-replacement', 'repair', 'weeder-durability', 'apps', 'repair-kill',
  'singletons-takeover', 'repair-drain', 'repair-queue-no-worker', 'read-commands', 'two-replicas', 'sandbox', 'weeder-rules', 'weeder-failover',
  'metrics', 'weeder-record', 'readonly-root', 'weeder-cascade', 'observe-apps', 'repair-cli', 'security-repair', 'repair-guard-commands',
  'taint-forged-grant', 'secrets', 'observe-repair', 'node-describe', 'weeder-recreate', 'pause', 'metrics-replicas', 'repair-task-queue', 'cli',
  'fuzz-short', 'pause-repair', 'pause-taint', 'events', 'setup-temporal', 'rbac', 'worker-versioning', 'weeder-watch-drops', 'observe-taint',
  'apps-kubectl', 'weeder-beside-dwd', 'taint-fdb-fidelity', 'pause-weeder', 'apps-deletion',
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
    'e2e-sandboxes': { type: 'string', default: '3' },
  },
  allowPositionals: true,
});
const chosen = [...new Set([...(values.lane ?? defaultLanes), ...(values['with-cluster'] ? ['cluster'] : []), ...(values['with-ship'] ? ['ship'] : []),
  ...(values['with-browser'] ? ['browser'] : [])])];
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
// Node.js keeps the code it compiled, as bin/tend has it keep tend's: each of the run's hundreds of
// Node.js processes (a mocha per file, every tend and CLI call a test starts, all inheriting this)
// then loads its modules without compiling them again (about a third less CPU for a CLI call).
process.env.NODE_COMPILE_CACHE ||= join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tend', 'node-compile-cache');
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

/**
 * How many lanes run at once: each e2e sandbox counts one, as do the offline lane and each other
 * lane. The e2e sandboxes, the offline lane and one other lane (two once the offline lane ends):
 * on 2 cores the tests mostly wait, and more at once stretch each.
 */
const capacity = sandboxes + 2;
let inUse = 0;
const waiting: { lane: string; units: number; go: () => void }[] = [];
let granting = false;
/** The lanes ready to start in one turn of the event loop are started in `priority`'s order, each when it fits. */
function grant(): void {
  if (granting) return;
  granting = true;
  setImmediate(() => {
    granting = false;
    waiting.sort((a, b) => priority.indexOf(a.lane) - priority.indexOf(b.lane));
    for (const w of [...waiting]) {
      if (inUse > 0 && inUse + w.units > capacity) continue;
      inUse += w.units;
      waiting.splice(waiting.indexOf(w), 1);
      w.go();
    }
  });
}
function acquire(lane: string, units: number): Promise<void> {
  if (stopping) return Promise.resolve();
  return new Promise((go) => {
    waiting.push({ lane, units, go });
    grant();
  });
}
function release(units: number): void {
  inUse -= units;
  grant();
}

// Stopped (Ctrl-C, a CI timeout): each mocha gets the signal and stops its own servers; no further
// e2e file or lane starts, a build under way is stopped, and the sandboxes this run started are
// taken down.
const stop = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stopping = true;
    stop.abort();
    for (const child of children) child.kill(signal);
    for (const w of waiting.splice(0)) w.go();
  });
}

/** Each binary's step: when it began and ended (seconds into the run), and whether it was built or found. */
const steps: { part: Part; start: number; end?: number; cached: boolean; failed?: boolean }[] = [];
/** Each part's build, one at a time in PARTS' order; a failed one fails only the lanes that need it. */
const builds = new Map<Part, Promise<void>>();
{
  const wanted = new Set(chosen.flatMap((l) => [...needs[l]!, ...(l === 'offline' ? offlineRuns.flatMap((r) => r.needs) : [])]));
  const cached = await builtParts();
  let previous = Promise.resolve();
  for (const part of PARTS.filter((p) => wanted.has(p))) {
    if (cached.has(part)) {
      steps.push({ part, start: seconds(), end: seconds(), cached: true });
      builds.set(part, Promise.resolve());
      continue;
    }
    const build = previous.then(async () => {
      if (stopping) throw new Error(`building ${part}: stopped`);
      const step: (typeof steps)[number] = { part, start: seconds(), cached: false };
      steps.push(step);
      console.log(`test: building ${part} from its Go module (first run only)`);
      try {
        await buildPart(part, { signal: stop.signal, timeoutMs: 90 * 60_000, onOutput: (line) => console.log(`test: ${line}`) });
      } catch (err) {
        step.failed = true;
        failureReports.push({ title: `the build of ${part}`, lines: (err as Error).message.split('\n').map((l) => `  ${l}`) });
        throw err;
      } finally {
        step.end = seconds();
      }
    });
    // The next part builds whether this one failed or not: the lanes that do not need it still run.
    previous = build.catch(() => undefined);
    builds.set(part, build);
  }
}

/**
 * The pre-built workflow bundle (dist/), written first when it is missing or stale, beside the
 * binaries' builds: every tend a test starts then loads it, as the image's does, instead of
 * bundling the workflows itself (about 6 s of CPU each, for a hundred tend processes in a run).
 * The offline lane does not wait for it (its harness bundles once per process).
 */
const bundleStep: { start: number; end?: number; failed?: boolean } = { start: seconds() };
const bundled = new Promise<void>((resolve, reject) => {
  const child = spawn(process.execPath, [join(repoRoot, 'scripts', 'bundle-workflows.ts'), '--if-stale'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  child.once('error', reject);
  child.once('exit', (code) => {
    bundleStep.end = seconds();
    if (code === 0) return resolve();
    bundleStep.failed = true;
    failureReports.push({ title: 'the workflow bundle', lines: output.trimEnd().split('\n').slice(-20).map((l) => `  ${l}`) });
    reject(new Error(`not run: the workflow bundle failed (exit ${code})`));
  });
});
bundled.catch(() => undefined);

/** Resolves once `parts` are built; rejects naming the first that failed. */
async function built(parts: Part[]): Promise<void> {
  for (const part of parts) await builds.get(part)!.catch(() => { throw new Error(`not run: building ${part} failed`); });
}

/** Each lane's times, for the table at the end: binaries ready, started, ended (seconds into the run). */
const times = new Map<string, { ready?: number; start?: number; end?: number }>();

async function runLane(lane: string): Promise<number> {
  if (lane === 'e2e') return runE2e();
  if (lane !== 'offline') {
    const env = lane === 'cluster' ? clusterEnv() : lane === 'ship' ? shipEnv() : browserEnv();
    return (await mochaRun(lane, lanes[lane]!, env)).code;
  }
  for (const r of offlineRuns) {
    try {
      await built(r.needs);
    } catch (err) {
      console.log(`offline │ test: ${(err as Error).message}`);
      failureReports.push({ title: 'the offline lane', lines: [`  ${(err as Error).message}`] });
      return 1;
    }
    const { code } = await mochaRun(lane, [...offlineArgs, ...r.files]);
    if (code !== 0 || stopping) return code || 1;
  }
  return 0;
}

async function run(lane: string): Promise<{ lane: string; code: number }> {
  const t = times.set(lane, {}).get(lane)!;
  try {
    await built(needs[lane]!);
    if (lane !== 'offline') await bundled;
  } catch (err) {
    console.log(`${lane.padEnd(width)} │ test: ${(err as Error).message}`);
    failureReports.push({ title: `the ${lane} lane`, lines: [`  ${(err as Error).message}`] });
    return { lane, code: 1 };
  }
  t.ready = seconds();
  // No Chromium: the lane fails at once with one line that says what to install (no sandbox started for nothing).
  const missing = lane === 'browser' ? chromiumMissing() : undefined;
  if (missing) {
    console.log(`${lane.padEnd(width)} │ test: ${missing}`);
    failureReports.push({ title: `the ${lane} lane`, lines: [`  ${missing}`] });
    return { lane, code: 1 };
  }
  const units = lane === 'e2e' ? sandboxes : 1;
  await acquire(lane, units);
  if (stopping) return { lane, code: 1 };
  t.start = seconds();
  try {
    return { lane, code: await runLane(lane) };
  } finally {
    t.end = seconds();
    release(units);
  }
}

const results = await Promise.all(chosen.map(run));
// Every lane has ended: a build no lane waits for any more (after a failed one) is stopped.
stop.abort();
for (const { title, lines } of failureReports) {
  console.log(`test: what failed in ${title}:`);
  for (const line of lines) console.log(`  ${line}`);
}
// Each lane's share of the run, and the binaries' (a CI log's tail then says where the time went).
const span = (a?: number, b?: number) => (a === undefined || b === undefined ? '' : `${a}-${b} s (${b - a} s)`);
for (const st of steps.sort((a, b) => PARTS.indexOf(a.part) - PARTS.indexOf(b.part))) {
  const how = st.cached ? 'cached' : st.end === undefined ? `stopped, begun at ${st.start} s` : `${st.failed ? 'FAILED' : 'built'} ${span(st.start, st.end)}`;
  console.log(`test: binaries: ${st.part.padEnd(10)} ${how}`);
}
console.log(`test: workflow bundle ${bundleStep.end === undefined ? 'not finished' : `${bundleStep.failed ? 'FAILED' : 'ready'} ${span(bundleStep.start, bundleStep.end)}`}`);
for (const r of results) {
  const t = times.get(r.lane)!;
  const waited = t.ready !== undefined && t.ready > 0 ? `, its binaries ready at ${t.ready} s` : '';
  console.log(`test: ${r.lane.padEnd(width)} ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`}` +
    (t.start === undefined ? ', not started' : ` ${span(t.start, t.end)}${waited}`));
}
console.log(`test: finished in ${seconds()} s`);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
