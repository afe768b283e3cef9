// Root hooks: the sandbox comes up once per test run, or a running one is
// reused; whatever this run started, it stops at the end.
import { status, up, down, type SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { killLeftovers, outputSince, spawned } from './cli.ts';
import { testSettings, testStateDir } from './env.ts';

let info: SandboxInfo | undefined;
let startedHere = false;
let testStarted = 0;

/** The running test sandbox. Only for e2e tests, after the root hook ran. */
export function sandbox(): SandboxInfo {
  if (!info) throw new Error('the test sandbox is not up (root hook did not run?)');
  return info;
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(45 * 60_000); // the first run builds the binaries
    const before = await status(testStateDir);
    startedHere = !before.every((c) => c.running);
    info = await up({
      stateDir: testStateDir,
      settings: testSettings,
      progress: (m) => process.stderr.write(`      sandbox: ${m}\n`),
    });
  },
  beforeEach() {
    testStarted = Date.now();
  },
  /** A failed test shows what the tend processes that ran during it printed. */
  afterEach(this: Mocha.Context) {
    if (this.currentTest?.state !== 'failed') return;
    const out = outputSince(testStarted);
    if (out) process.stderr.write(`${out}\n`);
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    const { tendCalls, tendProcesses, temporalCalls, other } = spawned;
    process.stderr.write(`      started by the tests: ${tendCalls} tend CLI calls, ${tendProcesses} tend processes, ${temporalCalls} temporal CLI calls, ${other} other commands\n`);
    const left = killLeftovers();
    if (left.length) process.stderr.write(`      left running by the tests, killed: ${left.join('; ')}\n`);
    if (startedHere && !process.env.TEND_TEST_KEEP_SANDBOX) await down(testStateDir);
  },
};
