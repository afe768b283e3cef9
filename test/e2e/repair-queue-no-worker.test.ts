// `tend repair-queue add` when the worker is gone: killed a moment ago (its last poll still
// recent), the add waits for the queue's answer no longer than --timeout-seconds, then says the
// request may still be applied when a worker returns and how to check; it is applied once one
// returns, and a retry of the same add gets that entry back instead of a second one. Once no
// worker has polled for a while, an add is refused at once, naming the task queue and its last poll.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { runTend, TendProcess } from '../harness/cli.ts';
import { waitFor } from '../harness/wait.ts';
import { temporalCli } from '../harness/temporal.ts';
import { repairWorld, resetRepairQueue, type RepairWorld } from '../harness/repair.ts';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';

const TASK_QUEUE = 'tend-repair-no-worker';
/** The live window the refused add is given: a worker stopped this long ago counts as gone. */
const LIVE = 8;

describe('repair-queue add without a worker (e2e)', function () {
  this.timeout(420_000);
  let world: RepairWorld;
  let tend: TendProcess | undefined;

  const start = async () => {
    tend = new TendProcess(['run', '--config', world.config]);
    await waitFor('tend run started', () => {
      if (tend!.exited) throw new Error(`tend run exited: ${tend!.output.slice(-3000)}`);
      return tend!.output.includes('worker started');
    }, { timeoutMs: 180_000 });
  };
  const rq = (args: string[], timeoutMs = 120_000, env?: NodeJS.ProcessEnv) =>
    runTend(['repair-queue', args[0]!, '--config', world.config, ...args.slice(1)], { timeoutMs, env });
  const list = async () => {
    const r = await rq(['list']);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as RepairQueueEntry[] | null) ?? [];
  };
  /** The newest workflow poll of the task queue (epoch ms), as `temporal task-queue describe` lists it. */
  const lastPoll = async () => {
    const { stdout } = await temporalCli(['task-queue', 'describe', '--task-queue', TASK_QUEUE, '--task-queue-type', 'workflow', '--output', 'json']);
    const text = JSON.stringify(JSON.parse(stdout));
    const times = [...text.matchAll(/"lastAccessTime":"([^"]+)"/g)].map((m) => Date.parse(m[1]!));
    return times.length ? Math.max(...times) : 0;
  };

  before(async () => {
    await resetRepairQueue();
    world = repairWorld();
    const config = parse(readFileSync(world.config, 'utf8')) as { temporal: { taskQueue: string } };
    config.temporal.taskQueue = TASK_QUEUE;
    writeFileSync(world.config, stringify(config));
    await start();
    // Disabled: entries stay queued, so each is counted where it was added.
    const r = await rq(['disable']);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await tend?.stop();
    await resetRepairQueue();
  });

  it('killed a moment ago: add gives up after its timeout saying how to check, is applied once a worker returns, and a retry adds no second entry', async () => {
    await tend!.stop('SIGKILL');
    const began = Date.now();
    const late = await rq(['add', 'heal', 'sim', '192.0.2.72', '--timeout-seconds', '5'], 60_000);
    assert.equal(late.code, 1, late.stderr);
    assert.ok(Date.now() - began < 40_000, `add took ${Date.now() - began} ms`);
    assert.match(late.stderr, /did not answer within 5 s.*may still be applied when one returns; check with `tend repair-queue list` before retrying/s);

    await start();
    await waitFor('the add applied once a worker returned', async () => (await list()).some((e) => e.address === '192.0.2.72'), { timeoutMs: 60_000 });
    const retry = await rq(['add', 'heal', 'sim', '192.0.2.72']);
    assert.equal(retry.code, 0, retry.stderr);
    assert.match(retry.stderr, /the same request was added before \(a retry\?\)/);
    const entries = (await list()).filter((e) => e.address === '192.0.2.72');
    assert.equal(entries.length, 1, JSON.stringify(entries));
    assert.equal((JSON.parse(retry.stdout) as RepairQueueEntry).index, entries[0]!.index);
  });

  it('no poll for a while: add is refused at once, naming the task queue and its last poll, nothing sent', async () => {
    await tend!.stop();
    // A live window of LIVE s instead of the default 70 s (TEND_LIVE_POLLER_SECONDS): the same
    // refusal, without waiting the minute out. A window shorter than the server's minute-long poll
    // would take an idle live worker for gone, so the worker is stopped first.
    await waitFor(`the task queue's last poll ${LIVE} s old`, async () => Date.now() - await lastPoll() > (LIVE + 1) * 1000, { timeoutMs: 150_000, intervalMs: 500 });
    const began = Date.now();
    const r = await rq(['add', 'heal', 'sim', '192.0.2.73'], 60_000, { TEND_LIVE_POLLER_SECONDS: String(LIVE) });
    assert.equal(r.code, 1, r.stderr);
    assert.ok(Date.now() - began < 15_000, `add took ${Date.now() - began} ms`);
    assert.match(r.stderr, new RegExp(`no worker has polled task queue "${TASK_QUEUE}" \\(temporal.taskQueue\\) in the last ${LIVE}s \\(last polled at \\S+ \\(\\d+ s ago\\)\\).*nothing was sent`));
    // A window that is not a whole number of seconds is refused, naming the variable.
    const bad = await rq(['add', 'heal', 'sim', '192.0.2.73'], 60_000, { TEND_LIVE_POLLER_SECONDS: '8s' });
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stderr, /TEND_LIVE_POLLER_SECONDS must be a whole number of seconds from 1 to 9999 \(got "8s"\)/);
    // Nothing was sent: a worker back finds no such entry.
    await start();
    assert.deepEqual((await list()).filter((e) => e.address === '192.0.2.73'), []);
  });
});
