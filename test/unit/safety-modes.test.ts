// Observe mode's configuration and the worker-side switches: `mode` at the top
// level and on each section, ModeState reading the configuration again (a mode
// changes at once; anything else needs a restart; an invalid file keeps the
// last good modes), and writeHold's answer (observe first, then the pause).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../src/config/errors.ts';
import { loadConfig, parseConfig } from '../../src/config/load.ts';
import { modesOf } from '../../src/config/mode.ts';
import { ModeState } from '../../src/safety/modes.ts';
import { GATE_POLL_MS, waitForGates, writeHold, type PauseGate } from '../../src/activities/safety-gate.ts';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));

const weeder = 'weeder:\n  servicesAndDependantSelectors:\n    db: {podSelectors: [{matchLabels: {app: web}}]}\n';
const apps = 'apps: {}\n';

describe('observe mode: configuration', () => {
  it('every capability acts unless told otherwise', () => {
    assert.deepEqual(modesOf(parseConfig(weeder + apps, 't')), { weeder: 'act', taint: 'act', apps: 'act', repair: 'act', nodeRepair: 'act' });
  });

  it('the top-level mode is every section\'s default; a section\'s own mode wins', () => {
    const c = parseConfig(`mode: observe\n${weeder}  mode: act\n${apps}`, 't');
    assert.deepEqual(modesOf(c), { weeder: 'act', taint: 'observe', apps: 'observe', repair: 'observe', nodeRepair: 'observe' });
    assert.deepEqual(modesOf(parseConfig(`${apps}`, 't')), { weeder: 'act', taint: 'act', apps: 'act', repair: 'act', nodeRepair: 'act' });
  });

  it('accepts observe for every capability, from the top level or its own section', () => {
    assert.deepEqual(modesOf(parseConfig(`mode: observe\n${weeder}`, 'f.yaml')).weeder, 'observe');
    assert.deepEqual(modesOf(parseConfig(`${weeder}  mode: observe\n`, 'f.yaml')).weeder, 'observe');
  });

  it('refuses any other value, naming the path and the line', () => {
    for (const [text, path, line] of [
      [`mode: dry-run\n${weeder}`, 'mode', 1],
      [`${weeder}  mode: Observe\n`, 'weeder.mode', 4],
      ['apps:\n  mode: true\n', 'apps.mode', 2],
    ] as const) {
      assert.throws(() => parseConfig(text, 'f.yaml'), (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        const p = err.problems.find((x) => x.path === path);
        assert.ok(p, `no problem at ${path}: ${err.message}`);
        assert.match(p.message, /must be act or observe/);
        assert.equal(p.line, line);
        return true;
      });
    }
  });

  it('`tend config validate` exits 2 on a bad mode and describes observe mode when it is set', function () {
    this.timeout(30_000);
    const dir = mkdtempSync(join(tmpdir(), 'tend-mode-'));
    writeFileSync(join(dir, 'bad.yaml'), `${weeder}  mode: maybe\n`);
    writeFileSync(join(dir, 'good.yaml'), `mode: observe\n${apps}`);
    const bad = spawnSync(process.execPath, [cli, 'config', 'validate', join(dir, 'bad.yaml')], { encoding: 'utf8' });
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /weeder\.mode: must be act or observe.*line 4/);
    const good = spawnSync(process.execPath, [cli, 'config', 'validate', join(dir, 'good.yaml')], { encoding: 'utf8' });
    assert.equal(good.status, 0, good.stderr);
    assert.match(good.stdout, /apps: .*observe mode/);
  });
});

describe('observe mode: ModeState', () => {
  it('reads the configuration again: a mode changes at once, an invalid file keeps the last good modes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tend-mode-'));
    const file = join(dir, 'c.yaml');
    writeFileSync(file, `mode: observe\n${apps}`);
    const initial = await loadConfig({ file });
    const modes = new ModeState(initial, { reload: () => loadConfig({ file }), sighup: false, metrics: false });
    assert.equal(modes.mode('apps'), 'observe');
    writeFileSync(file, `mode: act\n${apps}`);
    await modes.reloadNow('test');
    assert.equal(modes.mode('apps'), 'act');
    writeFileSync(file, `mode: sometimes\n${apps}`);
    await modes.reloadNow('test');
    assert.equal(modes.mode('apps'), 'act', 'an invalid file changed the mode');
    writeFileSync(file, 'apps:\n  mode: observe\n');
    await modes.reloadNow('test');
    assert.deepEqual(modes.all(), { weeder: 'act', taint: 'act', apps: 'observe', repair: 'act', nodeRepair: 'act' });
  });

  it('a configuration from a file remembers where it came from (spreads keep it)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tend-mode-'));
    const file = join(dir, 'c.yaml');
    writeFileSync(file, weeder);
    const { sourceOf } = await import('../../src/config/load.ts');
    const c = await loadConfig({ file });
    const flagged = { ...c, kubernetes: { ...c.kubernetes, context: 'x' } };
    assert.deepEqual(sourceOf(flagged), { file });
    assert.equal(sourceOf(parseConfig(weeder, 't')), undefined);
  });

  it('without a way to read again, the modes stay as started', async () => {
    const modes = new ModeState(parseConfig(`mode: observe\n${apps}`, 't'), { metrics: false });
    modes.start();
    await modes.reloadNow('test');
    modes.stop();
    assert.equal(modes.mode('apps'), 'observe');
  });
});

describe('observe mode: writeHold', () => {
  const pause = (state: 'acting' | 'paused' | 'unknown'): PauseGate => ({
    check: () => (state === 'acting' ? { state, revision: 1 }
      : state === 'paused' ? { state, revision: 2, reason: 'incident' } : { state, reason: 'no read for 3 s' }),
  });
  const modes = (m: 'act' | 'observe') => ({ mode: () => m });

  it('acts with no gates, or acting and in act mode', () => {
    assert.equal(writeHold(undefined, 'weeder'), undefined);
    assert.equal(writeHold({ pause: pause('acting'), modes: modes('act') }, 'weeder'), undefined);
  });

  it('holds while paused or unknown; observe comes first', () => {
    assert.equal(writeHold({ pause: pause('paused'), modes: modes('act') }, 'repair')?.kind, 'paused');
    assert.equal(writeHold({ pause: pause('unknown'), modes: modes('act') }, 'repair')?.kind, 'paused');
    assert.equal(writeHold({ pause: pause('paused'), modes: modes('observe') }, 'repair')?.kind, 'observe');
    assert.equal(writeHold({ modes: modes('observe') }, 'apps')?.kind, 'observe');
  });

  describe('waitForGates: a write waiting in place', () => {
    /** A pause that lifts after `paused` reads; the sleeps asked for are recorded, not slept. */
    const lifting = (paused: number) => {
      let reads = 0;
      return { pause: { check: () => (reads++ < paused ? pause('paused').check('repair') : pause('acting').check('repair')) } };
    };
    const noSleep = (slept: number[]) => async (ms: number) => void slept.push(ms);

    it('waits while paused, told once, asking every 250 ms at most, and answers undefined once resumed', async () => {
      const slept: number[] = [];
      const told: string[] = [];
      const out = await waitForGates(lifting(3), 'repair', Date.now() + 60_000,
        { waitsFor: (h) => h.kind === 'paused', sleep: noSleep(slept), onWait: (h) => told.push(h.kind) });
      assert.equal(out, undefined);
      assert.equal(slept.length, 3);
      assert.ok(slept.every((ms) => ms > 0 && ms <= GATE_POLL_MS), String(slept));
      assert.deepEqual(told, ['paused']);
    });

    it('answers at once a hold it does not wait for, and the hold itself at the deadline', async () => {
      const slept: number[] = [];
      const observe = await waitForGates({ modes: modes('observe') }, 'repair', Date.now() + 60_000, { waitsFor: (h) => h.kind === 'paused', sleep: noSleep(slept) });
      assert.equal(observe?.kind, 'observe');
      const late = await waitForGates({ pause: pause('paused') }, 'repair', Date.now() - 1, { waitsFor: () => true, sleep: noSleep(slept) });
      assert.equal(late?.kind, 'paused');
      assert.deepEqual(slept, []);
    });
  });
});
