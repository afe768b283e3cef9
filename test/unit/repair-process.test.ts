// Repair commands as process groups: a timeout and a cancellation kill the
// whole group (no grandchild left behind), the environment names the entry,
// step and attempt, and a run recorded by a worker that died is waited for.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { groupAlive, NO_DEADLINE, procStat, readRecord, runOnce, stateDir } from '../../src/repair/process.ts';

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
    const lock = { dir: stateDir(join(dir, 'state-no-timeout')), index: '7' };
    const p = runOnce({ argv: ['sh', '-c', 'sleep 1.2; echo done'], address: '192.0.2.1', timeoutSeconds: 0, lock });
    while (!readRecord(lock.dir, lock.index)) await sleep(10);
    assert.equal(readRecord(lock.dir, lock.index)!.deadline, NO_DEADLINE);
    const r = await p;
    assert.equal(r.ok, true, r.error);
    assert.equal(r.output.trim(), 'done');
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
    assert.equal(r.output.trim(), '7 1 3 10.0.0.1;reboot');
  });

  it('commands do not see tend\'s own Temporal credentials (TEMPORAL_*); the rest of the environment stays', async () => {
    process.env.TEMPORAL_API_KEY = 'tk-unit-test-key';
    process.env.IPMI_USER_FOR_TEST = 'admin';
    try {
      const r = await runOnce({ argv: ['sh', '-c', 'echo "[$TEMPORAL_API_KEY] [$IPMI_USER_FOR_TEST]"'], address: 'a', timeoutSeconds: 5 });
      assert.equal(r.output.trim(), '[] [admin]');
    } finally {
      delete process.env.TEMPORAL_API_KEY;
      delete process.env.IPMI_USER_FOR_TEST;
    }
  });

  it('failures say why: exit status, command not found', async () => {
    assert.match((await runOnce({ argv: ['sh', '-c', 'echo oops >&2; exit 3'], address: 'a', timeoutSeconds: 5 })).error!, /exit status 3: oops/);
    assert.match((await runOnce({ argv: ['/no/such/command'], address: 'a', timeoutSeconds: 5 })).error!, /command not found: \/no\/such\/command/);
  });

  it('a run recorded by a dead worker is waited for, never overlapped; the record goes when the group is gone', async () => {
    const lock = { dir: stateDir(join(dir, 'state')), index: '42' };
    assert.equal(statSync(lock.dir).mode & 0o777, 0o700);
    const log = join(dir, 'overlap.log');
    const script = `echo start $(date +%s%N) >> ${log}; sleep 1.5; echo end $(date +%s%N) >> ${log}`;
    // Plays the killed worker's run: its group is recorded; then that "worker" vanishes (its promise is simply not awaited).
    const orphan = runOnce({ argv: ['sh', '-c', script], address: 'a', timeoutSeconds: 30, lock });
    while (!readRecord(lock.dir, lock.index)) await sleep(10);
    const rec = readRecord(lock.dir, lock.index)!;
    assert.ok(groupAlive(rec));
    const second = await runOnce({ argv: ['sh', '-c', script], address: 'a', timeoutSeconds: 30, lock });
    assert.equal(second.ok, true, second.error);
    await orphan;
    const lines = readFileSync(log, 'utf8').trim().split('\n').map((l) => l.split(' ') as [string, string]);
    assert.deepEqual(lines.map((l) => l[0]), ['start', 'end', 'start', 'end'], 'the second run started after the first ended');
    assert.ok(BigInt(lines[2]![1]) >= BigInt(lines[1]![1]));
    assert.equal(readRecord(lock.dir, lock.index), undefined);
    assert.equal(groupAlive(rec), false);
  });

  it('a record whose pid now belongs to another process (another start time) is not waited for', async () => {
    const lock = { dir: stateDir(join(dir, 'state2')), index: '5' };
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    try {
      writeFileSync(join(lock.dir, 'entry-5.json'), JSON.stringify({ pgid: child.pid, starttime: '1', deadline: Date.now() + 60_000, what: 'x', pid: 1 }));
      const t0 = Date.now();
      const r = await runOnce({ argv: ['true'], address: 'a', timeoutSeconds: 5, lock });
      assert.equal(r.ok, true);
      assert.ok(Date.now() - t0 < 2000, 'did not wait for an unrelated process');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a recorded run past its own deadline is killed, as its timeout would have', async () => {
    const lock = { dir: stateDir(join(dir, 'state3')), index: '6' };
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const st = procStat(child.pid!)!;
    writeFileSync(join(lock.dir, 'entry-6.json'), JSON.stringify({ pgid: child.pid, starttime: st.starttime, deadline: Date.now() - 1, what: 'x', pid: 1 }));
    const r = await runOnce({ argv: ['true'], address: 'a', timeoutSeconds: 5, lock });
    assert.equal(r.ok, true);
    assert.ok(await gone(child.pid!));
  });
});
