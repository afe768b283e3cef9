// The repair queue end to end: the real `tend run` worker, the real
// `tend repair-queue` CLI, real commands (sh, touch, test -f) on the worker's
// host, against the sandbox. Outcomes of each step kind, bad input,
// concurrency limits, enable/disable, and the `temporal` CLI lines of the docs.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TendProcess } from '../harness/cli.ts';
import { waitFor } from '../harness/wait.ts';
import { add, entries, REPAIR_TASK_QUEUE, rq, startRepairTend, temporalCli, type RepairWorld } from '../harness/repair.ts';
import { queueEntries, queueEntry } from '../harness/in-process-reads.ts';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';
import { MAX_REQUESTS_PER_ADD } from '../../src/repair/messages.ts';

const finished = (e?: RepairQueueEntry) => e && (e.status === 'succeeded' || e.status === 'failed') && e;

describe('repair queue (e2e)', function () {
  this.timeout(180_000);
  let world: RepairWorld;
  let tend: TendProcess;

  before(async () => {
    ({ world, tend } = await startRepairTend(60_000));
  });
  after(async () => {
    await tend?.stop();
  });

  const runs = (address: string) => {
    const f = join(world.dir, `${address}.log`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n') : [];
  };
  // The waits read the queue in-process (test/harness/in-process-reads.ts); what the CLI prints is checked where it is the subject.
  const until = (index: string, ms = 60_000) => waitFor(`entry ${index} finished`, async () => finished(await queueEntry(index)), { timeoutMs: ms });

  it('runs every outcome of the seed: first-step success, next step after the watch, all steps failing, failing commands, already healthy, not a Node', async () => {
    world.healthy('192.0.2.6');
    const cases: [string, string][] = [
      ['heal', '192.0.2.1'], ['two-steps', '192.0.2.2'], ['never', '192.0.2.3'], ['broken', '192.0.2.4'],
      ['heal-bad-success', '192.0.2.5'], ['heal', '192.0.2.6'], ['heal-success', '192.0.2.7'],
      ['no-watch', '192.0.2.8'], ['no-watch-never', '192.0.2.9'], ['no-timeout', '192.0.2.19'],
    ];
    const added: RepairQueueEntry[] = [];
    for (const [op, address] of cases) added.push(await add(world, op, address));
    assert.deepEqual(added.map((e) => e.status), cases.map(() => 'queued'));
    // One read of the queue per probe for all ten.
    const done = await waitFor('every entry finished', async () => {
      const list = await queueEntries();
      const all = added.map((e) => finished(list.find((x) => x.index === e.index)));
      return all.every(Boolean) && (all as RepairQueueEntry[]);
    }, { timeoutMs: 90_000 });
    const [first, second, never, broken, badSuccess, alreadyHealthy, success, noWatch, noWatchNever, noTimeout] = done;

    assert.equal(first!.status, 'succeeded');
    assert.equal(first!.step, 0);
    assert.equal(first!.step_status, 'watching');
    assert.equal(first!.nodename, '', '192.0.2.1 is not a Node: no drain, nodename empty');
    assert.deepEqual(runs('192.0.2.1'), ['heal']);

    assert.equal(second!.status, 'succeeded', 'the first step watched in vain, the second healed');
    assert.equal(second!.step, 1);
    assert.deepEqual(runs('192.0.2.2'), ['nothing', 'heal']);

    assert.equal(never!.status, 'failed');
    assert.deepEqual(runs('192.0.2.3'), ['nothing', 'nothing'], 'every step was tried');
    assert.deepEqual([never!.step, never!.step_status], [2, 'waiting'], 'CKE: a failed last step shows the step after it, waiting');

    assert.equal(broken!.status, 'failed');
    assert.deepEqual([broken!.step, broken!.step_status], [0, 'watching'], 'CKE: the step of a failed command is watching');
    assert.deepEqual(runs('192.0.2.4'), ['broken'], 'no retries: command_retries is 0');

    assert.equal(badSuccess!.status, 'failed', 'a failing success_command fails the entry');

    assert.equal(alreadyHealthy!.status, 'succeeded');
    assert.deepEqual(runs('192.0.2.6'), [], 'a healthy machine gets no repair command');

    assert.equal(success!.status, 'succeeded');
    assert.ok(existsSync(join(world.dir, '192.0.2.7.success')), 'success_command ran with the address appended');

    assert.equal(noWatch!.status, 'succeeded', 'CKE: no watch_seconds: the first step checked once, the second healed');
    assert.deepEqual([noWatch!.step, runs('192.0.2.8')], [1, ['nothing', 'heal']]);
    assert.equal(noWatchNever!.status, 'failed');
    assert.deepEqual([noWatchNever!.step, noWatchNever!.step_status, runs('192.0.2.9')], [2, 'waiting', ['nothing', 'nothing']]);
    assert.equal(noTimeout!.status, 'succeeded', 'command_timeout_seconds 0: no timeout');
    assert.deepEqual(runs('192.0.2.19'), ['heal']);

    // ckecli's wait: until the queue is empty; the finished entries stay, so it times out, saying what it waits for.
    const notEmpty = await rq(world, ['wait', '--timeout-seconds', '0']);
    assert.equal(notEmpty.code, 1);
    assert.match(notEmpty.stderr, /repair queue is not empty: 10 entries \(\d+ (succeeded|failed),/);
    const timedOut = await rq(world, ['wait', '--timeout-seconds', '3']);
    assert.equal(timedOut.code, 1);
    assert.match(timedOut.stderr, /waiting for the repair queue to be empty: 10 entries \(.*\); \d+s so far \(timeout 3s\)/);
    assert.match(timedOut.stderr, /timed out waiting for the repair queue to be empty after 3s: 10 entries/);
    const allFinished = await rq(world, ['wait', '--finished', '--timeout-seconds', '0']);
    assert.equal(allFinished.code, 0, allFinished.stderr);
    // Every entry listed with CKE's deleted field.
    assert.ok((await entries(world)).every((e) => e.deleted === false));

    // Entries stay until deleted; delete-finished removes them all, printing their indexes one per line (ckecli).
    const r = await rq(world, ['delete-finished']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'), added.map((e) => e.index));
    const empty = await rq(world, ['list']);
    assert.equal(empty.stdout.trim(), 'null', 'ckecli prints an empty queue as null');
    const w = await rq(world, ['wait']);
    assert.equal(w.code, 0, w.stderr);
    assert.equal(w.stdout.trim(), 'repair queue is empty');
  });

  it('holds max_concurrent_repairs and never runs two entries for one address at once', async () => {
    const added: RepairQueueEntry[] = [];
    for (let i = 10; i < 16; i++) added.push(await add(world, 'wait-heal', `192.0.2.${i}`));
    const twin = await add(world, 'heal', '192.0.2.10');
    let maxSeen = 0;
    await waitFor('three processing', async () => (await queueEntries()).filter((e) => e.status === 'processing').length === 3);
    // Heal one machine at a time and watch the queue keep its limits as slots free up.
    for (const e of added) {
      const list = await queueEntries();
      const processing = list.filter((x) => x.status === 'processing');
      maxSeen = Math.max(maxSeen, processing.length);
      assert.ok(processing.length <= 3, `at most 3 processing, saw ${processing.length}`);
      assert.equal(new Set(processing.map((x) => x.address)).size, processing.length, 'two processing entries share an address');
      world.healthy(e.address);
      await until(e.index);
    }
    assert.equal(maxSeen, 3);
    const twinDone = await until(twin.index);
    assert.equal(twinDone.status, 'succeeded');
    assert.deepEqual(runs('192.0.2.10'), ['wait'], 'the twin started after the first entry for its address ended, found it healthy, ran nothing');
    assert.equal((await rq(world, ['delete-finished'])).code, 0);
  });

  it('refuses bad input with a clear error, a non-zero exit, and the queue unchanged', async () => {
    const before = await entries(world);
    const cases: [string[], RegExp, number][] = [
      [['add', 'heal', 'no-such-type', '192.0.2.30'], /unknown machine type "no-such-type"/, 2],
      [['add', 'no-such-op', 'sim', '192.0.2.30'], /unknown operation "no-such-op" for machine type sim/, 2],
      [['add', 'heal', 'sim', '192.0.2.300'], /not a valid IPv4 address/, 2],
      [['add', 'heal', 'sim', '192.0.2.30;reboot'], /not an IP address or a DNS name/, 2],
      [['add', 'heal', 'sim', '$(reboot)'], /not an IP address or a DNS name/, 2],
      [['add', 'heal', 'sim', '-rf'], /unknown option '-rf'/, 2],
      [['add', 'heal', 'sim', '--', '-rf'], /not an IP address or a DNS name/, 2],
      [['add', 'heal', 'sim'], /missing required argument/, 2],
      [['delete', 'x1'], /INDEX must be/, 2],
      [['delete', '987654'], /no entry with index 987654/, 1],
    ];
    for (const [args, message, code] of cases) {
      const r = await rq(world, args);
      assert.equal(r.code, code, `${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
    }
    assert.deepEqual(await entries(world), before);
  });

  it('a disabled queue starts nothing and still deletes; enable resumes; is-enabled prints true/false', async () => {
    assert.equal((await rq(world, ['is-enabled'])).stdout.trim(), 'true');
    assert.equal((await rq(world, ['disable'])).code, 0);
    assert.equal((await rq(world, ['is-enabled'])).stdout.trim(), 'false');
    const e = await add(world, 'heal', '192.0.2.40');
    const kept = await add(world, 'heal', '192.0.2.41');
    // Still queued a while later: nothing started.
    await waitFor('a few list rounds', async () => (await entries(world)).length >= 2);
    assert.equal((await queueEntry(e.index))!.status, 'queued');
    const d = await rq(world, ['delete', e.index]);
    assert.equal(d.code, 0, d.stderr);
    assert.equal(await queueEntry(e.index), undefined);
    assert.deepEqual(runs('192.0.2.40'), []);
    assert.equal((await rq(world, ['enable'])).code, 0);
    assert.equal((await until(kept.index)).status, 'succeeded');
    assert.equal((await rq(world, ['delete-finished'])).code, 0);
  });

  it('answers the documented `temporal workflow update execute` and `query` lines', async () => {
    const update = (name: string, input?: unknown) => temporalCli([
      'workflow', 'update', 'execute', '--workflow-id', 'repair-queue', '--name', name, '-o', 'json', ...(input === undefined ? [] : ['--input', JSON.stringify(input)]),
    ]).then((r) => (JSON.parse(r.stdout) as { result: unknown }).result);
    // The queue holds the repair section that `tend repair-queue add` sent.
    await add(world, 'heal', '192.0.2.49');
    const added = await update('add', { requests: [{ operation: 'wait-heal', machine_type: 'qemu', address: '192.0.2.50', serial: 'SN-1' }] }) as RepairQueueEntry[];
    assert.equal(added.length, 1);
    assert.equal(added[0]!.serial, 'SN-1');
    const index = added[0]!.index;
    assert.equal(await update('disable'), false);
    assert.match((await temporalCli(['workflow', 'query', '--workflow-id', 'repair-queue', '--name', 'is-enabled', '-o', 'json'])).stdout, /false/);
    assert.equal(await update('enable'), true);
    assert.equal(typeof await update('reset-backoff'), 'number');
    await waitFor('processing', async () => (await queueEntry(index))?.status === 'processing');
    const deleted = await update('delete', { index }) as RepairQueueEntry;
    assert.deepEqual([deleted.index, deleted.deleted], [index, true]);
    // CKE's deleted: listed deleted: true until its workflow has cleaned up, then gone.
    const right = await queueEntry(index);
    assert.ok(right === undefined || right.deleted === true, JSON.stringify(right));
    await waitFor('the deleted entry gone', async () => (await queueEntry(index)) === undefined);
    await update('delete-unfinished');
    await update('delete-finished');
    const list = await temporalCli(['workflow', 'query', '--workflow-id', 'repair-queue', '--name', 'list', '-o', 'json']);
    // The temporal CLI prints an empty list as null.
    assert.ok([null, undefined].includes((JSON.parse(list.stdout) as { queryResult: unknown[][] }).queryResult[0]?.[0] as null), list.stdout);
    await assert.rejects(update('delete', { index: '424242' }), /no entry with index 424242/);
  });

  it('add-file enqueues every line or none', async () => {
    const { writeFileSync } = await import('node:fs');
    const bad = join(world.dir, 'bad.txt');
    writeFileSync(bad, '# a batch\nheal sim 192.0.2.60\nheal sim 192.0.2.61 SN-61\nheal nope 192.0.2.62\n');
    const before = await entries(world);
    const r1 = await rq(world, ['add-file', bad]);
    assert.equal(r1.code, 2);
    assert.match(r1.stderr, /bad\.txt:4: unknown machine type "nope"/);
    assert.deepEqual(await entries(world), before);
    // More requests than one add takes: refused whole, before anything is sent.
    const big = join(world.dir, 'big.txt');
    writeFileSync(big, Array.from({ length: MAX_REQUESTS_PER_ADD + 1 }, (_, i) => `heal sim 198.51.100.${i + 1}\n`).join(''));
    const r3 = await rq(world, ['add-file', big]);
    assert.equal(r3.code, 2, r3.stderr);
    assert.match(r3.stderr, new RegExp(`big\\.txt: ${MAX_REQUESTS_PER_ADD + 1} requests, and the repair queue takes at most ${MAX_REQUESTS_PER_ADD} per add: nothing was added`));
    assert.deepEqual(await entries(world), before);
    const good = join(world.dir, 'good.txt');
    writeFileSync(good, '# a batch\nheal sim 192.0.2.60\n\nheal sim 192.0.2.61 SN-61\n');
    const r2 = await rq(world, ['add-file', good]);
    assert.equal(r2.code, 0, r2.stderr);
    assert.match(r2.stdout, /added 2 entries/);
    const w = await rq(world, ['wait', '--finished', '--timeout-seconds', '60', '--interval-seconds', '1']);
    assert.equal(w.code, 0, w.stderr);
    const list = await entries(world);
    assert.deepEqual(list.map((e) => [e.address, e.status, e.serial]), [['192.0.2.60', 'succeeded', undefined], ['192.0.2.61', 'succeeded', 'SN-61']]);
    assert.equal((await rq(world, ['delete-finished'])).code, 0);
  });

  it('an add just after the queue was terminated makes one entry, though the ended run had numbered further', async () => {
    // An ended run that had numbered far past the entries' workflows (queued entries start none),
    // as a reset or a take-over leaves it: a queue started by the add numbers from the workflows.
    await temporalCli(['workflow', 'terminate', '--workflow-id', 'repair-queue', '--reason', 'test: the ended run']).catch(() => undefined);
    await temporalCli(['workflow', 'start', '--type', 'repairQueueWorkflow', '--workflow-id', 'repair-queue', '--task-queue', REPAIR_TASK_QUEUE,
      '--input', JSON.stringify({ entries: [], nextIndex: 5000, enabled: false, closing: {} })]);
    await waitFor('the started queue to run its first task', async () => (await entries(world)).length === 0);
    await temporalCli(['workflow', 'terminate', '--workflow-id', 'repair-queue', '--reason', 'test: the ended run']);
    const r = await rq(world, ['add', 'heal', 'sim', '192.0.2.70']);
    assert.equal(r.code, 0, r.stderr);
    const added = JSON.parse(r.stdout) as RepairQueueEntry;
    assert.ok(Number(added.index) < 5000, `numbered from the entries' workflows (${added.index})`);
    assert.doesNotMatch(r.stderr, /added before/);
    assert.deepEqual((await queueEntries()).map((e) => [e.index, e.address]), [[added.index, '192.0.2.70']], 'one entry, the one answered');
    assert.equal((await until(added.index)).status, 'succeeded');
    assert.equal((await rq(world, ['delete-finished'])).code, 0);
  });

  it('the same request added again after the queue was terminated is a new entry, not the ended run\'s answer', async () => {
    // Temporal answers an update sent to a closed workflow with the outcome of an update of the same
    // id in it: the add must go to the queue's new run, not to its id.
    const first = await rq(world, ['add', 'heal', 'sim', '192.0.2.71']);
    assert.equal(first.code, 0, first.stderr);
    const a = JSON.parse(first.stdout) as RepairQueueEntry;
    assert.equal((await until(a.index)).status, 'succeeded');
    await temporalCli(['workflow', 'terminate', '--workflow-id', 'repair-queue', '--reason', 'test: the ended run']);
    const again = await rq(world, ['add', 'heal', 'sim', '192.0.2.71']);
    assert.equal(again.code, 0, again.stderr);
    const b = JSON.parse(again.stdout) as RepairQueueEntry;
    assert.notEqual(b.index, a.index, 'the ended run\'s entry answered');
    assert.doesNotMatch(again.stderr, /added before/);
    assert.deepEqual((await queueEntries()).map((e) => [e.index, e.address]), [[b.index, '192.0.2.71']], 'one entry, the one answered');
    assert.equal((await until(b.index)).status, 'succeeded');
    assert.equal((await rq(world, ['delete-finished'])).code, 0);
  });
});
