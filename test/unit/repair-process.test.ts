// Repair commands as process groups: a timeout and a cancellation kill the
// whole group (no grandchild left behind), the environment names the entry,
// step and attempt, a run recorded by a worker that died is waited for (and
// adopted when it was the same step's command), and argv and output go to the
// entry's log file, never into what a run answers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  commandEnv, entryLogFiles, groupAlive, NO_DEADLINE, procStat, readRecord, RUN_OUTPUT_CAP, runOnce, stateDir, withholdFromCommands,
  type RunEntry,
} from '../../src/repair/process.ts';
import { runFiles } from '../../src/repair/logs.ts';
import { spawnGroup } from '../../src/repair/spawn-group.ts';

const entryOf = (dir: string, index: string, more: Partial<RunEntry> = {}): RunEntry => ({ dir: stateDir(dir), index, step: 0, kind: 'repair_command', run: 1, ...more });

const alive = (pid: number) => {
  const s = procStat(pid);
  return s !== undefined && s.state !== 'Z';
};

async function gone(pid: number, ms = 5000) {
  const until = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > until) return false;
    await sleep(20);
  }
  return true;
}

describe('repair commands: process groups', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tend-repair-unit-'));

  it('a timeout kills the grandchildren too', async () => {
    const pidFile = join(dir, 'timeout.pid');
    const t0 = Date.now();
    const r = await runOnce({ argv: ['sh', '-c', `sleep 100 & echo $! > ${pidFile}; wait`], address: '192.0.2.1', timeoutSeconds: 1 });
    assert.equal(r.ok, false);
    assert.match(r.error!, /timed out after 1s/);
    assert.ok(Date.now() - t0 < 5000);
    const sleepPid = Number(readFileSync(pidFile, 'utf8'));
    assert.ok(await gone(sleepPid), `sleep ${sleepPid} survived the timeout`);
  });

  it('timeout 0 is no timeout (CKE: zero means infinity): the command runs to its end; its record has no deadline', async () => {
    const lock = entryOf(join(dir, 'state-no-timeout'), '7');
    const p = runOnce({ argv: ['sh', '-c', 'sleep 1.2; echo done'], address: '192.0.2.1', timeoutSeconds: 0, entry: lock });
    while (!readRecord(lock.dir, lock.index)) await sleep(10);
    assert.equal(readRecord(lock.dir, lock.index)!.deadline, NO_DEADLINE);
    const r = await p;
    assert.equal(r.ok, true, r.error);
    assert.equal(r.stdout.trim(), 'done');
  });

  it('a cancellation kills the grandchildren too', async () => {
    const pidFile = join(dir, 'cancel.pid');
    const ac = new AbortController();
    const p = runOnce({ argv: ['sh', '-c', `sleep 100 & echo $! > ${pidFile}; wait`], address: '192.0.2.1', timeoutSeconds: 60, signal: ac.signal });
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8').trim() === '') await sleep(20);
    ac.abort();
    const r = await p;
    assert.match(r.error!, /cancelled/);
    assert.ok(await gone(Number(readFileSync(pidFile, 'utf8'))));
  });

  it('what the command leaves in its group when it exits is killed', async () => {
    const pidFile = join(dir, 'left.pid');
    const r = await runOnce({ argv: ['sh', '-c', `sleep 100 >/dev/null 2>&1 & echo $! > ${pidFile}`], address: '192.0.2.1', timeoutSeconds: 10 });
    assert.equal(r.ok, true, r.error);
    assert.ok(await gone(Number(readFileSync(pidFile, 'utf8'))));
  });

  it('the address is the last argument, the environment names entry, step and attempt, no shell', async () => {
    const r = await runOnce({
      argv: ['sh', '-c', 'echo "$TEND_REPAIR_INDEX $TEND_REPAIR_STEP $TEND_REPAIR_ATTEMPT $0"'], address: '10.0.0.1;reboot', timeoutSeconds: 5,
      env: { TEND_REPAIR_INDEX: '7', TEND_REPAIR_STEP: '1', TEND_REPAIR_ATTEMPT: '3' },
    });
    assert.equal(r.stdout.trim(), '7 1 3 10.0.0.1;reboot');
  });

  it('a name that is also a shell builtin runs the program, as without the wrapper (PATH looked up by the worker)', async () => {
    const r = await runOnce({ argv: ['echo', '-e', 'x\\ty'], address: 'a', timeoutSeconds: 5 });
    assert.equal(r.stdout, 'x\ty a\n');
  });

  it('commands do not see tend\'s own Temporal credentials (TEMPORAL_*, the variable temporal.apiKeyEnv names); the rest of the environment stays', async () => {
    process.env.TEMPORAL_API_KEY = 'tk-unit-test-key';
    process.env.ACME_TEND_KEY_FOR_TEST = 'tk-unit-test-key-2';
    process.env.IPMI_USER_FOR_TEST = 'admin';
    try {
      withholdFromCommands('ACME_TEND_KEY_FOR_TEST');
      const r = await runOnce({ argv: ['sh', '-c', 'echo "[$TEMPORAL_API_KEY] [$ACME_TEND_KEY_FOR_TEST] [$IPMI_USER_FOR_TEST]"'], address: 'a', timeoutSeconds: 5 });
      assert.equal(r.stdout.trim(), '[] [] [admin]');
      assert.deepEqual(commandEnv({}, { ACME_TEND_KEY_FOR_TEST: 'k', PATH: '/bin' }), { PATH: '/bin' });
    } finally {
      delete process.env.TEMPORAL_API_KEY;
      delete process.env.ACME_TEND_KEY_FOR_TEST;
      delete process.env.IPMI_USER_FOR_TEST;
    }
  });

  it('failures say why in a few words, never the argv, the address or the output; those go to the entry\'s log file (0600)', async () => {
    const e = entryOf(join(dir, 'state-fail'), '8');
    const r = await runOnce({ argv: ['sh', '-c', 'echo ipmitool -P hunter2secret; echo oops >&2; exit 3'], address: '10.9.9.9', timeoutSeconds: 5, entry: e });
    assert.equal(r.ok, false);
    assert.equal(r.exitCode, 3);
    assert.equal(r.error, 'exit code 3');
    const file = entryLogFiles(e.dir, '8').current;
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(e.dir, 'logs')).mode & 0o777, 0o700);
    const text = readFileSync(file, 'utf8');
    for (const s of ['echo ipmitool', '10.9.9.9', 'hunter2secret', 'oops', 'exit code 3']) assert.ok(text.includes(s), `${s} in the entry's log`);
    const missing = await runOnce({ argv: ['/no/such/command', '--password=x'], address: '10.9.9.9', timeoutSeconds: 5, entry: e });
    assert.equal(missing.ok, false);
    assert.doesNotMatch(missing.error!, /no\/such|password|10\.9/);
    assert.match(readFileSync(file, 'utf8'), /\/no\/such\/command --password=x 10\.9\.9\.9[\s\S]*not found/);
    // Nothing of the run is left but the log.
    assert.deepEqual(readdirSync(join(e.dir, 'logs')), ['entry-8.log']);
  });

  it('each stream keeps its first RUN_OUTPUT_CAP bytes in the log; the command is not stopped for talking', async () => {
    const e = entryOf(join(dir, 'state-cap'), '9');
    // 3 MiB of control characters on stdout, then a word on stderr.
    const r = await runOnce({ argv: ['sh', '-c', 'head -c 3145728 /dev/zero | tr "\\0" "\\1"; echo fine >&2'], address: 'a', timeoutSeconds: 20, entry: e });
    assert.equal(r.ok, true, r.error);
    assert.equal(Buffer.byteLength(r.stdout), RUN_OUTPUT_CAP);
    const size = statSync(entryLogFiles(e.dir, '9').current).size;
    assert.ok(size > RUN_OUTPUT_CAP && size < RUN_OUTPUT_CAP + 4096, `log of ${size} bytes`);
    assert.match(readFileSync(entryLogFiles(e.dir, '9').current, 'utf8'), /output past 1048576 bytes dropped[\s\S]*--- stderr\nfine/);
  });

  it('a run of the same step and command recorded by a dead worker is waited for and adopted, never run again', async () => {
    const lock = entryOf(join(dir, 'state'), '42');
    assert.equal(statSync(lock.dir).mode & 0o777, 0o700);
    const log = join(dir, 'overlap.log');
    const script = `echo start $(date +%s%N) >> ${log}; sleep 1.5; echo end $(date +%s%N) >> ${log}; exit 4`;
    // Plays the killed worker's run: its group is recorded; then that "worker" vanishes (its promise is simply not awaited).
    const orphan = runOnce({ argv: ['sh', '-c', script], address: 'a', timeoutSeconds: 30, entry: lock });
    while (!readRecord(lock.dir, lock.index)) await sleep(10);
    const rec = readRecord(lock.dir, lock.index)!;
    assert.ok(groupAlive(rec));
    const second = await runOnce({ argv: ['sh', '-c', script], address: 'a', timeoutSeconds: 30, entry: { ...lock, run: 2 } });
    assert.equal(second.exitCode, 4);
    assert.equal(second.adopted?.run, 1);
    await orphan;
    assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n').map((l) => l.split(' ')[0]), ['start', 'end'], 'run once');
    assert.equal(readRecord(lock.dir, lock.index), undefined);
    assert.equal(groupAlive(rec), false);
    // Logged once, by whoever took its end.
    assert.equal(readFileSync(entryLogFiles(lock.dir, '42').current, 'utf8').match(/^=== .* run 1: /gm)?.length, 1);
  });

  it('a run of another command recorded by a dead worker is waited for, never overlapped, then this one runs', async () => {
    const lock = entryOf(join(dir, 'state-other'), '43');
    const log = join(dir, 'overlap-other.log');
    const script = `echo start $(date +%s%N) >> ${log}; sleep 1.5; echo end $(date +%s%N) >> ${log}`;
    const orphan = runOnce({ argv: ['sh', '-c', script], address: 'a', timeoutSeconds: 30, entry: lock });
    while (!readRecord(lock.dir, lock.index)) await sleep(10);
    const second = await runOnce({ argv: ['sh', '-c', script], address: 'a', timeoutSeconds: 30, entry: { ...lock, kind: 'health_check_command' } });
    assert.equal(second.ok, true, second.error);
    assert.equal(second.adopted, undefined);
    await orphan;
    const lines = readFileSync(log, 'utf8').trim().split('\n').map((l) => l.split(' ') as [string, string]);
    assert.deepEqual(lines.map((l) => l[0]), ['start', 'end', 'start', 'end'], 'the second run started after the first ended');
    assert.ok(BigInt(lines[2]![1]) >= BigInt(lines[1]![1]));
  });

  it('a worker SIGKILLed mid-command: the command goes on writing (no SIGPIPE), and the next run takes its exit code', async function () {
    this.timeout(30_000);
    const lock = entryOf(join(dir, 'state-killed'), '44');
    const marks = join(dir, 'killed.marks');
    // Prints after the kill: through a pipe to a dead reader this line would be its death.
    const script = `echo before; echo started >> ${marks}; sleep 2; echo after; echo after-kill >> ${marks}; exit 5`;
    const worker = spawn(join(process.cwd(), 'node_modules/.bin/node'), ['test/fixtures/repair-run-worker.ts', lock.dir, lock.index, script],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      worker.stdout.on('data', (d: Buffer) => { if (String(d).includes('recorded')) resolve(); });
      worker.once('exit', (code) => reject(new Error(`the worker exited (${code}) before its command was recorded`)));
    });
    worker.kill('SIGKILL');
    const r = await runOnce({ argv: ['sh', '-c', script], address: '192.0.2.9', timeoutSeconds: 30, entry: { ...lock, run: 2 } });
    assert.deepEqual(readFileSync(marks, 'utf8').trim().split('\n'), ['started', 'after-kill'], 'the command lived through its worker\'s death, and ran once');
    assert.equal(r.exitCode, 5);
    assert.ok(r.adopted);
    assert.match(readFileSync(entryLogFiles(lock.dir, '44').current, 'utf8'), /--- stdout\nbefore\nafter\n/);
  });

  it('a worker killed after the launch, before it learnt the group: the run it left is named by its pid file, waited for and adopted', async function () {
    this.timeout(30_000);
    const lock = entryOf(join(dir, 'state-gap'), '45');
    const marks = join(dir, 'gap.marks');
    const script = `echo started >> ${marks}; sleep 1.5; echo ended >> ${marks}; exit 6`;
    // What a worker killed in that gap leaves: the pending run, and the group its leader named; no record.
    const token = 'gap-1';
    writeFileSync(join(lock.dir, 'entry-45.pending.json'), JSON.stringify({
      deadline: Date.now() + 30_000, what: 'sh -c …', pid: 1, token, step: 0, kind: 'repair_command', run: 1, startedAt: new Date().toISOString(),
    }));
    const files = runFiles(join(lock.dir, 'logs'), '45', token);
    mkdirSync(join(lock.dir, 'logs'), { recursive: true, mode: 0o700 });
    spawnGroup('/bin/sh', ['-c', script, 'x'], process.env, files, () => {}, () => {});
    while (!existsSync(marks)) await sleep(10);
    assert.equal(readRecord(lock.dir, lock.index), undefined, 'no record: the worker never wrote one');
    const r = await runOnce({ argv: ['sh', '-c', script], address: 'a', timeoutSeconds: 30, entry: { ...lock, run: 2 } });
    assert.equal(r.exitCode, 6);
    assert.equal(r.adopted?.run, 1);
    assert.deepEqual(readFileSync(marks, 'utf8').trim().split('\n'), ['started', 'ended'], 'run once');
  });

  it('a pending run that never started (its worker killed before the launch) is run after a short wait', async () => {
    const lock = entryOf(join(dir, 'state-never'), '46');
    writeFileSync(join(lock.dir, 'entry-46.pending.json'), JSON.stringify({
      deadline: Date.now() + 30_000, what: 'x', pid: 1, token: 'never-1', step: 0, kind: 'repair_command', run: 1, startedAt: new Date().toISOString(),
    }));
    const r = await runOnce({ argv: ['true'], address: 'a', timeoutSeconds: 5, entry: { ...lock, run: 2 } });
    assert.equal(r.ok, true, r.error);
    assert.equal(r.adopted, undefined);
    assert.equal(existsSync(join(lock.dir, 'entry-46.pending.json')), false);
  });

  it('a record whose pid now belongs to another process (another start time) is not waited for', async () => {
    const lock = entryOf(join(dir, 'state2'), '5');
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    try {
      writeFileSync(join(lock.dir, 'entry-5.json'), JSON.stringify({ pgid: child.pid, starttime: '1', deadline: Date.now() + 60_000, what: 'x', pid: 1 }));
      const t0 = Date.now();
      const r = await runOnce({ argv: ['true'], address: 'a', timeoutSeconds: 5, entry: lock });
      assert.equal(r.ok, true);
      assert.ok(Date.now() - t0 < 2000, 'did not wait for an unrelated process');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a recorded run past its own deadline is killed, as its timeout would have', async () => {
    const lock = entryOf(join(dir, 'state3'), '6');
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const st = procStat(child.pid!)!;
    writeFileSync(join(lock.dir, 'entry-6.json'), JSON.stringify({ pgid: child.pid, starttime: st.starttime, deadline: Date.now() - 1, what: 'x', pid: 1 }));
    const r = await runOnce({ argv: ['true'], address: 'a', timeoutSeconds: 5, entry: lock });
    assert.equal(r.ok, true);
    assert.ok(await gone(child.pid!));
  });
});
