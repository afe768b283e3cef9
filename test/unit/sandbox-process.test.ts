// The sandbox's detached processes (src/sandbox/process.ts): a record names its process by pid and
// start time, so that a process is running from the moment it is started (its command line is empty
// for a moment while the kernel loads the program) and a pid taken by another process is not it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRunning, startDetached, stopProcess, type ProcessRecord } from '../../src/sandbox/process.ts';

describe('sandbox processes', () => {
  let dir: string;
  let rec: ProcessRecord | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tend-process-'));
  });
  afterEach(async () => {
    if (rec) await stopProcess(rec, join(dir, 'sleep.pid'), 2000);
    rec = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const start = () => startDetached('sleep', '/bin/sleep', ['30'], { log: join(dir, 'sleep.log'), pidFile: join(dir, 'sleep.pid') });

  it('records the start time and is running from the moment it is started', async () => {
    rec = await start();
    assert.match(rec.startTicks ?? '', /^\d+$/);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'sleep.pid'), 'utf8')), rec, 'the pid file holds the record');
    assert.equal(await isRunning(rec), true);
  });

  it('is the process of its pid and start time, whatever its command line shows (empty while the program loads)', async () => {
    rec = await start();
    assert.equal(await isRunning({ ...rec, command: '' }), true);
  });

  it('is not running once its pid is another process (another start time), or is gone', async () => {
    rec = await start();
    assert.equal(await isRunning({ ...rec, startTicks: String(Number(rec.startTicks) + 1) }), false);
    await stopProcess(rec, join(dir, 'sleep.pid'), 2000);
    assert.equal(await isRunning(rec), false);
    rec = undefined;
  });

  it('checks a record written without a start time by its command line', async () => {
    rec = await start();
    const older: ProcessRecord = { ...rec };
    delete older.startTicks;
    assert.equal(await isRunning(older), true);
    assert.equal(await isRunning({ ...older, command: '/bin/true' }), false);
  });
});
