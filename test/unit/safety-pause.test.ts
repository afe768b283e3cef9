// The durable pause's pure parts: the checks of pause/resume input, the state
// transitions, and PauseState (the workers' reader) with an injected reader and
// clock: fresh, paused, unknown (fail closed), and allowed() waiting and resolving.
import assert from 'node:assert/strict';
import { defaultPayloadConverter } from '@temporalio/common';
import { CAPABILITIES } from '../../src/activities/index.ts';
import {
  applyPause, applyResume, check, describeState, emptySafetyState, PAUSABLE, pausedOf, pauseInputSchema, resumeInputSchema, SAFETY_MEMO_KEY,
  startingState, type SafetyState,
} from '../../src/safety/messages.ts';
import { PauseState, PauseWaitAborted, stateOfDescription, type PauseCheck } from '../../src/safety/pause.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T01:00:00.000Z';

describe('pause: input checks', () => {
  const ok = (schema: typeof pauseInputSchema | typeof resumeInputSchema, v: unknown) => {
    const c = check(schema as typeof pauseInputSchema, v, 'pause');
    assert.ok(c.ok, c.ok ? '' : c.reason);
    return c.value;
  };
  const refused = (schema: typeof pauseInputSchema | typeof resumeInputSchema, v: unknown, pattern: RegExp) => {
    const c = check(schema as typeof pauseInputSchema, v, 'pause');
    assert.ok(!c.ok, `accepted ${JSON.stringify(v)}`);
    assert.match(c.reason, pattern);
  };

  it('the pausable capabilities are the worker\'s capabilities', () => {
    assert.deepEqual([...PAUSABLE], [...CAPABILITIES]);
  });

  it('accepts names, a reason and a sender; no names means all', () => {
    assert.deepEqual(ok(pauseInputSchema, { capabilities: ['taint', 'repair'], reason: 'incident 42', by: 'a@b' }),
      { capabilities: ['taint', 'repair'], reason: 'incident 42', by: 'a@b' });
    assert.deepEqual(ok(pauseInputSchema, { reason: 'x' }), { reason: 'x' });
    assert.deepEqual(ok(resumeInputSchema, {}), {});
    assert.deepEqual(ok(resumeInputSchema, { capabilities: [] }), { capabilities: [] });
  });

  it('refuses unknown names, a missing, empty, non-string or too long reason, control characters, unknown fields and non-objects', () => {
    refused(pauseInputSchema, { capabilities: ['taint', 'nodes'], reason: 'x' }, /capabilities: unknown capability "nodes" \(known: weeder, taint, apps, repair\)/);
    refused(pauseInputSchema, { capabilities: 'taint', reason: 'x' }, /capabilities/);
    refused(pauseInputSchema, { capabilities: [1], reason: 'x' }, /capabilities\[0\]: capabilities must be a list of capability names \(got 1\)/);
    refused(pauseInputSchema, {}, /reason/);
    refused(pauseInputSchema, { reason: '' }, /reason must not be empty/);
    refused(pauseInputSchema, { reason: 42 }, /reason: reason must be a string/);
    refused(pauseInputSchema, { reason: 'x'.repeat(501) }, /reason is longer than 500 characters/);
    assert.ok(check(pauseInputSchema, { reason: 'x'.repeat(500) }, 'pause').ok);
    refused(pauseInputSchema, { reason: 'a\u0007b' }, /control characters/);
    refused(pauseInputSchema, { reason: 'x', by: 'y'.repeat(201) }, /by is longer than 200/);
    refused(pauseInputSchema, { reason: 'x', command: ['rm'] }, /Unrecognized key: "command"/);
    refused(pauseInputSchema, 'taint', /pause takes/);
    refused(pauseInputSchema, null, /pause takes/);
    refused(resumeInputSchema, { reason: 'x' }, /Unrecognized key: "reason"/);
    refused(resumeInputSchema, { capabilities: ['all'] }, /unknown capability "all"/);
  });
});

describe('pause: state transitions', () => {
  it('pause sets reason, since and by; again keeps since; resume clears; no change, no new revision', () => {
    const s0 = emptySafetyState();
    const s1 = applyPause(s0, { capabilities: ['taint'], reason: 'r1', by: 'alice' }, T0);
    assert.equal(s1.revision, 1);
    assert.deepEqual(s1.capabilities.taint, { paused: true, reason: 'r1', since: T0, by: 'alice' });
    assert.equal(s1.capabilities.weeder.paused, false);
    assert.equal(s0.capabilities.taint.paused, false, 'the old state is left alone');
    assert.equal(applyPause(s1, { capabilities: ['taint'], reason: 'r1', by: 'alice' }, T1), s1, 'the same pause changes nothing');
    const s2 = applyPause(s1, { capabilities: ['taint'], reason: 'r2' }, T1);
    assert.deepEqual(s2.capabilities.taint, { paused: true, reason: 'r2', since: T0, by: 'unknown' });
    assert.equal(s2.revision, 2);
    const s3 = applyPause(s2, { reason: 'all' }, T1);
    assert.deepEqual(PAUSABLE.filter((c) => s3.capabilities[c].paused), [...PAUSABLE]);
    const s4 = applyResume(s3, { capabilities: ['apps'] }, T1);
    assert.equal(s4.capabilities.apps.paused, false);
    assert.equal(s4.revision, 4);
    const s5 = applyResume(s4, {}, T1);
    assert.deepEqual(PAUSABLE.filter((c) => s5.capabilities[c].paused), []);
    assert.equal(applyResume(s5, {}, T1), s5);
    assert.match(describeState(s3), /taint paused since 2026-01-01T00:00:00.000Z by unknown: all/);
    assert.match(describeState(s5), /Nothing is paused/);
  });
});

describe('pause: the state a run starts with', () => {
  it('nothing carried: nothing paused; a good state: taken as it is', () => {
    assert.deepEqual(startingState(undefined, T0), { state: emptySafetyState() });
    const s = applyPause(emptySafetyState(), { capabilities: ['repair'], reason: 'r', by: 'b' }, T0);
    assert.deepEqual(startingState(s, T1), { state: s });
  });

  it('a carried state that cannot be read pauses everything, saying why in a reason the state itself can carry', () => {
    for (const bad of [{ revision: 1, capabilities: { taint: { paused: true, command: 'x' } } }, 'state', { ['\u0007'.repeat(20)]: 1 }, [[[[[[1]]]]]]]) {
      const r = startingState(bad, T0);
      assert.deepEqual(pausedOf(r.state), [...PAUSABLE], JSON.stringify(bad));
      assert.match(r.problem ?? '', /^the state carried from the previous run could not be read: .*; check, then tend resume$/);
      assert.equal(r.state.capabilities.taint.by, 'tend-safety');
      // What it starts with it can carry on: the reason passes the state's own check.
      assert.deepEqual(startingState(r.state, T1), { state: r.state });
    }
  });

  it('a revision at its largest stays there: the state after a change still passes its check', () => {
    const top = { ...emptySafetyState(), revision: Number.MAX_SAFE_INTEGER };
    const next = applyPause(top, { reason: 'r' }, T0);
    assert.equal(next.revision, Number.MAX_SAFE_INTEGER);
    assert.deepEqual(startingState(next, T1), { state: next });
  });
});

/** A reader whose answer the test sets; `fail` makes it throw. */
function fakeReader() {
  const r = {
    value: undefined as SafetyState | undefined,
    fail: undefined as string | undefined,
    calls: 0,
    read: async () => {
      r.calls += 1;
      if (r.fail) throw new Error(r.fail);
      return r.value;
    },
  };
  return r;
}

const paused = (reason = 'incident') => applyPause(emptySafetyState(), { capabilities: ['taint'], reason, by: 'ops' }, T0);

describe('pause: PauseState', () => {
  it('check: unknown before any read; acting with no workflow; paused with its reason; unknown once the last good read is older than 1 s', async () => {
    let now = 1_000_000;
    const reader = fakeReader();
    const p = new PauseState({ read: reader.read, monotonic: () => now, metrics: false });
    assert.equal(p.check('taint').state, 'unknown');
    await p.refresh();
    assert.deepEqual(p.check('taint'), { state: 'acting', revision: 0 });
    reader.value = paused();
    await p.refresh();
    assert.deepEqual(p.check('taint'), { state: 'paused', revision: 1, reason: 'incident', since: T0, by: 'ops' });
    assert.equal(p.check('weeder').state, 'acting');
    now += 1000;
    assert.equal(p.check('taint').state, 'paused', 'exactly 1 s old is still fresh');
    reader.fail = 'connection refused';
    await p.refresh();
    now += 1;
    const c = p.check('weeder');
    assert.equal(c.state, 'unknown', 'a state older than 1 s fails closed, even for a capability that was acting');
    assert.match((c as Extract<PauseCheck, { state: 'unknown' }>).reason, /last read 1\.0 s ago.*connection refused/);
    reader.fail = undefined;
    reader.value = undefined;
    await p.refresh();
    assert.equal(p.check('taint').state, 'acting', 'the workflow gone: nothing paused');
  });

  it('a read counts from when it was issued: a slow answer is as old as its question', async () => {
    let now = 0;
    const p = new PauseState({
      read: async () => {
        now += 1500;
        return undefined;
      },
      monotonic: () => now, metrics: false,
    });
    await p.refresh();
    assert.equal(p.check('taint').state, 'unknown');
  });

  /** Runs fn with Date.now stepping as the test says (the wall clock), restored after. */
  const withWallClock = async (wall: { now: number }, fn: () => Promise<void>) => {
    const real = Date.now;
    Date.now = () => wall.now;
    try {
      await fn();
    } finally {
      Date.now = real;
    }
  };

  /** A PauseState on a monotonic clock the test moves, its first read good (acting); then NTP steps the wall clock back an hour. */
  const afterStepBack = async (fn: (p: PauseState, reader: ReturnType<typeof fakeReader>, tick: (ms: number) => void) => Promise<void>) => {
    const wall = { now: Date.UTC(2026, 0, 1, 12) };
    let mono = 5_000;
    const reader = fakeReader();
    await withWallClock(wall, async () => {
      const p = new PauseState({ read: reader.read, monotonic: () => mono, metrics: false });
      await p.refresh();
      assert.equal(p.check('taint').state, 'acting');
      wall.now -= 3_600_000;
      await fn(p, reader, (ms) => {
        wall.now += ms;
        mono += ms;
      });
    });
  };

  it('a wall clock stepped back keeps no stale "acting": reads are aged by the monotonic clock and fail closed when too old', async () => {
    await afterStepBack(async (p, reader, tick) => {
      // Reads fail from now on; real time goes on.
      reader.fail = 'connection refused';
      for (let i = 0; i < 8; i++) {
        tick(250);
        await p.refresh();
      }
      const c = p.check('taint');
      assert.equal(c.state, 'unknown', 'two seconds without a good read: the state must not still be acting');
      assert.match((c as Extract<PauseCheck, { state: 'unknown' }>).reason, /last read 2\.0 s ago.*connection refused/);
      assert.ok(p.ageSeconds() >= 2, `age ${p.ageSeconds()}`);
    });
  });

  it('a read issued after the wall clock stepped back replaces the one before it (ordered by sequence, not by time)', async () => {
    await afterStepBack(async (p, reader, tick) => {
      tick(250);
      reader.value = paused();
      await p.refresh();
      assert.equal(p.check('taint').state, 'paused', 'the newer read (a pause) is what counts');
    });
  });

  it('a read that answers after a later one changes nothing: the later one is kept', async () => {
    let mono = 0;
    const answers: ((s: SafetyState | undefined) => void)[] = [];
    const p = new PauseState({
      read: () => new Promise<SafetyState | undefined>((resolve) => answers.push(resolve)),
      monotonic: () => mono, readTimeoutMs: 100, metrics: false,
    });
    // The first read hangs past its timeout; the second is issued and answers "paused"; then the first answers "acting".
    const first = p.refresh();
    mono += 50;
    await first.catch(() => undefined);
    const second = p.refresh();
    answers[1]!(paused());
    await second;
    assert.equal(p.check('taint').state, 'paused');
    answers[0]!(undefined);
    await new Promise((r) => setImmediate(r));
    assert.equal(p.check('taint').state, 'paused');
  });

  it('allowed() resolves at once when acting, waits while paused and resolves on resume', async () => {
    const reader = fakeReader();
    const p = new PauseState({ read: reader.read, intervalMs: 10, metrics: false });
    p.start();
    try {
      await p.allowed('taint');
      reader.value = paused();
      await waitUntil(() => p.check('taint').state === 'paused');
      let resolved = false;
      const waits: PauseCheck[] = [];
      const wait = p.allowed('taint', undefined, (c) => waits.push(c)).then(() => (resolved = true));
      const before = reader.calls;
      await waitUntil(() => reader.calls >= before + 5);
      assert.equal(resolved, false, 'still waiting while paused');
      assert.ok(waits.length >= 3 && waits.every((c) => c.state === 'paused'), 'onWait told the reason at each read');
      // Not a busy loop: one re-check per read.
      assert.ok(waits.length <= reader.calls - before + 2, `${waits.length} re-checks for ${reader.calls - before} reads`);
      reader.value = applyResume(reader.value!, {}, T1);
      await wait;
      assert.equal(resolved, true);
    } finally {
      p.stop();
    }
  });

  it('allowed() waits while the state is unknown (reads failing) and resolves once a read confirms it', async () => {
    const reader = fakeReader();
    reader.fail = 'unavailable';
    const p = new PauseState({ read: reader.read, intervalMs: 10, metrics: false });
    p.start();
    try {
      let resolved = false;
      const wait = p.allowed('weeder').then(() => (resolved = true));
      await waitUntil(() => reader.calls >= 5);
      assert.equal(resolved, false, 'no destructive action on a state that cannot be read');
      reader.fail = undefined;
      await wait;
      assert.equal(p.check('weeder').state, 'acting');
    } finally {
      p.stop();
    }
  });

  it('allowed() rejects when its signal aborts, when the reader stops, and when it was never started', async () => {
    const reader = fakeReader();
    reader.value = paused();
    const p = new PauseState({ read: reader.read, intervalMs: 10, metrics: false });
    await assert.rejects(p.allowed('taint'), PauseWaitAborted);
    p.start();
    const ac = new AbortController();
    const aborted = p.allowed('taint', ac.signal);
    await waitUntil(() => reader.calls >= 3);
    ac.abort();
    await assert.rejects(aborted, PauseWaitAborted);
    const stopped = p.allowed('taint');
    p.stop();
    await assert.rejects(stopped, PauseWaitAborted);
  });

  const memo = (v: unknown) => ({ fields: { [SAFETY_MEMO_KEY]: defaultPayloadConverter.toPayload(v) } });
  /** A description of what runs under tend-safety: tend's own (safetyWorkflow on "tend") unless told otherwise. */
  const described = (fields: { status?: number; type?: string; taskQueue?: string; memo?: unknown }) => ({
    workflowExecutionInfo: {
      status: fields.status ?? 1, type: { name: fields.type ?? 'safetyWorkflow' }, taskQueue: fields.taskQueue ?? 'tend',
      ...('memo' in fields ? { memo: memo(fields.memo) } : {}),
    },
  });

  it('reads the state from a description of tend-safety: running with a memo, ended (nothing paused), or a bad memo (an error)', () => {
    const s = paused();
    assert.deepEqual(stateOfDescription(described({ memo: s }), { taskQueue: 'tend' }), s);
    assert.equal(stateOfDescription(described({ status: 3, memo: s }), { taskQueue: 'tend' }), undefined);
    assert.throws(() => stateOfDescription(described({})), /memo has no tendSafety/);
    assert.throws(() => stateOfDescription(described({ memo: { revision: 'x' } })), /tendSafety: revision/);
  });

  it('an impostor under tend-safety (another type, or another task queue) is an error naming it, whatever its memo says', () => {
    const acting = emptySafetyState();
    assert.throws(() => stateOfDescription(described({ type: 'notTheSafety', memo: acting }), { taskQueue: 'tend' }),
      /workflow tend-safety is of type "notTheSafety", not safetyWorkflow: not tend's.*destructive actions wait/);
    assert.throws(() => stateOfDescription(described({ taskQueue: 'elsewhere', memo: acting }), { taskQueue: 'tend' }),
      /workflow tend-safety runs on task queue "elsewhere", not on "tend": not tend's/);
    // Without the expected task queue, the type is still checked.
    assert.throws(() => stateOfDescription(described({ type: 'x', memo: acting })), /of type "x", not safetyWorkflow/);
    // A huge type name is named by its prefix only.
    const err = (() => {
      try {
        stateOfDescription(described({ type: 'y'.repeat(100_000), memo: acting }), { taskQueue: 'tend' });
      } catch (e) {
        return (e as Error).message;
      }
      return '';
    })();
    assert.ok(err.length > 0 && err.length < 600, `${err.length} characters`);
    // Ended, an impostor is no longer anything: nothing runs under the id, nothing is paused.
    assert.equal(stateOfDescription(described({ status: 2, type: 'x', memo: acting }), { taskQueue: 'tend' }), undefined);
  });

  it('a reader finding an impostor fails closed: every capability is unknown, the reason names the impostor', async () => {
    const p = new PauseState({
      read: async () => stateOfDescription(described({ type: 'notTheSafety', taskQueue: 'attacker', memo: emptySafetyState() }), { taskQueue: 'tend' }),
      metrics: false,
    });
    await p.refresh();
    for (const capability of PAUSABLE) {
      const c = p.check(capability);
      assert.equal(c.state, 'unknown', capability);
      assert.match((c as Extract<PauseCheck, { state: 'unknown' }>).reason, /of type "notTheSafety", not safetyWorkflow/);
    }
  });

  it('a memo past the safety limits, deeply nested, or not JSON is refused before any field is read, in a short reason', () => {
    /** A memo payload of raw JSON text, as any client may write it. */
    const raw = (json: string) => ({
      workflowExecutionInfo: {
        status: 1, type: { name: 'safetyWorkflow' }, taskQueue: 'tend',
        memo: { fields: { [SAFETY_MEMO_KEY]: { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(json) } } },
      },
    });
    const reasonOf = (d: Parameters<typeof stateOfDescription>[0]) => {
      try {
        stateOfDescription(d, { taskQueue: 'tend' });
      } catch (e) {
        return (e as Error).message;
      }
      assert.fail('accepted');
    };
    assert.match(reasonOf(raw(`{"revision":1,"capabilities":${'['.repeat(5000)}1${']'.repeat(5000)}}`)), /refused unread: nested deeper than 4 levels/);
    const wide = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`.repeat(40), i]));
    const tooMany = reasonOf(described({ memo: wide }));
    assert.match(tooMany, /refused unread: more than/);
    assert.ok(tooMany.length < 300, tooMany);
    assert.match(reasonOf(raw('{"revision":')), /memo tendSafety cannot be decoded/);
    // Within the limits but wrong: the reason names a few problems, each cut short.
    const keys = reasonOf(described({ memo: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`${'z'.repeat(500)}${i}`, i])) }));
    assert.ok(keys.length < 1200, `${keys.length} characters`);
  });
});

async function waitUntil(cond: () => boolean, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}
