// The repair entry's machine (src/repair/entry-machine.ts), table-driven: for
// each situation (the entry's state, what the workflow answered), the
// operations the workflow must carry out and the state after them; then CKE's
// drain back-off, which lives there alone.
import assert from 'node:assert/strict';
import {
  ckeDrainBackoff, drainBackoff, ENTRY_FLAGS, EntryMachine, initialState, LIFT_RETRY_MS, PAUSE_HOLD_MS, resumeOf,
  type EntryFlag, type EntryOp, type EntryOutcome, type EntryState,
} from '../../src/repair/entry-machine.ts';
import type { EntryInput } from '../../src/repair/messages.ts';
import type { RepairPlan } from '../../src/repair/procedure.ts';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const plan = (more: Partial<RepairPlan> = {}): RepairPlan => ({
  steps: [{ need_drain: true, watch_seconds: 60, command_timeout_seconds: 30, command_retries: 0, command_interval: 0 }],
  command_timeout_seconds: 30, eviction_timeout_seconds: 600, time_scale: 1, ...more,
});
const input: EntryInput = { index: '7', address: '10.0.0.7', machine_type: 'sim', operation: 'heal', enabled: true, queue: 'q' };
const state = (more: Partial<EntryState> = {}, entry: Partial<EntryState['entry']> = {}): EntryState => {
  const s = initialState(input);
  return { ...s, plan: plan(), healthyAtStart: false, ...more, entry: { ...s.entry, nodename: 'node-7', ...entry } };
};
const all = (on: boolean): Partial<Record<EntryFlag, boolean>> => Object.fromEntries(Object.values(ENTRY_FLAGS).map((f) => [f, on]));
const machine = (s: EntryState, flags: Partial<Record<EntryFlag, boolean>> = all(true), ahead = true) => {
  const m = new EntryMachine(s, ahead);
  Object.assign(m.flags, flags);
  return m;
};
/** Operations by name, with the fields that tell them apart. */
const names = (ops: EntryOp[]) => ops.map((o) => {
  switch (o.op) {
    case 'report': return `report ${o.fields.status}/${o.fields.step}/${o.fields.step_status}${o.ahead ? ' ahead' : ''}`;
    case 'command': return `command ${o.kind}${o.holdMs ? ' held' : ''}`;
    case 'uncordon': return `uncordon${o.lifting ? ' lifting' : ''}${o.holdMs ? ' held' : ''}`;
    case 'flag': return `flag ${o.name}`;
    case 'end': return `end ${o.result.entry.status}${o.result.reason ? `: ${o.result.reason}` : ''}`;
    case 'log': return `log ${o.message}`;
    case 'sleep': return `sleep ${o.ms}`;
    default: return o.op;
  }
});

describe('repair entry machine: next(now)', () => {
  const cases: { name: string; s: EntryState; ops: string[]; after?: Partial<EntryState> }[] = [
    { name: 'health unknown: checked first', s: state({ healthyAtStart: undefined }), ops: ['check-health'] },
    { name: 'healthy from the start: succeeds, no cordon to lift, no success command', s: state({ healthyAtStart: true }), ops: ['report succeeded/0/waiting', 'end succeeded'] },
    { name: 'a step with a drain: draining reported ahead, then the drain (cordoned from now on)', s: state(), ops: ['report processing/0/draining ahead', 'drain'], after: { cordoned: true, drainDeadline: NOW + 600_000 } },
    { name: 'a drain resumed after continue-as-new: no new transition, its deadline kept', s: state({ drainDeadline: NOW + 5 }, { step_status: 'draining' }), ops: ['drain'], after: { drainDeadline: NOW + 5 } },
    { name: 'disabled during a drain: the cordon lifted (asking lift-until-done first), then the back-off', s: state({ enabled: false, cordoned: true }, { step_status: 'draining' }), ops: ['uncordon lifting'] },
    { name: 'a back-off pending: wait until it expires', s: state({ backoffExpire: NOW + 1000 }), ops: ['wait'] },
    { name: 'drained: the repair command', s: state({ drained: true }), ops: ['command repair_command'] },
    { name: 'a repair command the pause held: asked again, waiting in place', s: state({ drained: true, held: 'the repair_command of step 0' }), ops: ['command repair_command held'] },
    { name: 'commanded: watched until watch_seconds pass', s: state({ drained: true, commandDone: true, watchUntil: NOW + 10 }, { step_status: 'watching' }), ops: ['watch'] },
    { name: 'the last step watched in vain: fails past the last step (CKE)', s: state({ drained: true, commandDone: true, watchUntil: 0 }, { step_status: 'watching' }), ops: ['report failed/1/waiting', 'log repair: entry finished', 'end failed: not healthy after the last of 1 step(s)'] },
    { name: 'healthy, cordoned: lifted before the end', s: state({ healthy: true, cordoned: true }), ops: ['uncordon'] },
    { name: 'a further step: the next one, waiting, reported ahead', s: state({ drained: true, commandDone: true, watchUntil: 0, plan: plan({ steps: [...plan().steps, ...plan().steps] }) }, { step_status: 'watching' }), ops: ['report processing/1/waiting ahead'], after: { drained: false, commandDone: false } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const before = JSON.stringify(c.s);
      const m = machine(c.s);
      assert.deepEqual(names(m.next(NOW)), c.ops);
      assert.equal(JSON.stringify(c.s), before, 'the state given is not changed');
      for (const [k, v] of Object.entries(c.after ?? {})) assert.deepEqual(m.state[k as keyof EntryState], v, k);
    });
  }
  it('an unknown patched behaviour is asked once, where it is needed, then the machine goes on', () => {
    const m = machine(state({ drained: true, commandDone: true, watchUntil: 0 }, { step_status: 'watching' }), {});
    assert.deepEqual(names(m.next(NOW)), [`flag ${ENTRY_FLAGS.ckeFailedStep}`]);
    assert.deepEqual(names(m.apply({ kind: 'flag', name: ENTRY_FLAGS.ckeFailedStep, on: false, now: NOW })), ['report failed/0/watching', 'log repair: entry finished', 'end failed: not healthy after the last of 1 step(s)']);
  });
});

describe('repair entry machine: apply(outcome)', () => {
  const drainOut = (result: Extract<EntryOutcome, { kind: 'drain' }>['result']): EntryOutcome => ({ kind: 'drain', result, now: NOW });
  const cases: { name: string; s: EntryState; flags?: Partial<Record<EntryFlag, boolean>>; outcomes: EntryOutcome[]; ops: string[][]; after?: Partial<EntryState>; entry?: Partial<EntryState['entry']> }[] = [
    { name: 'a drain done', s: state({ cordoned: true }), outcomes: [drainOut({ ok: true })], ops: [[]], after: { drained: true } },
    { name: 'a drain done in observe mode: recorded, shown', s: state({ cordoned: true }), outcomes: [drainOut({ ok: true, observed: { cordon: true, evict: 2, delete: 0 } })], ops: [['show']], after: { observed: ['drain node node-7: cordon it, evict 2 pod(s), delete 0'] } },
    { name: 'a drain the pause held: nothing counts, shown, a new timeout next', s: state({ cordoned: true, drainDeadline: NOW }), outcomes: [drainOut({ ok: false, reason: 'held', held: true })], ops: [['show']], after: { drainDeadline: undefined, held: 'the drain of node node-7' } },
    {
      name: 'a drain refused (uncordoned by the activity): CKE\'s back-off drawn, reported', s: state({ cordoned: true }), outcomes: [drainOut({ ok: false, reason: 'budget' }), { kind: 'draw', random: 0.5, now: NOW }],
      ops: [['draw'], ['log repair: drain backs off', 'report processing/0/waiting']], after: { cordoned: false, backoffExpire: NOW + 450_000 }, entry: { drain_backoff_count: 1 },
    },
    {
      name: 'a drain refused before CKE\'s back-off: the linear one, no draw', s: state({ cordoned: true }), flags: { ...all(true), [ENTRY_FLAGS.ckeBackoff]: false }, outcomes: [drainOut({ ok: false, reason: 'budget' })],
      ops: [['log repair: drain backs off', 'report processing/0/waiting']], after: { backoffExpire: NOW + 60_000 },
    },
    {
      name: 'a drain cut short with the cordon kept (paused): back-off, then the lift', s: state({ cordoned: true }), outcomes: [drainOut({ ok: false, reason: 'timeout', cordonKept: true }), { kind: 'draw', random: 0, now: NOW }, { kind: 'uncordon', out: 'changed', now: NOW }],
      ops: [['draw'], ['log repair: drain backs off', 'report processing/0/waiting', 'uncordon lifting'], []], after: { cordoned: false },
    },
    {
      name: 'a lift that fails past its attempts, mid-life (a drain the disable abandoned): shown, tried again a minute later', s: state({ cordoned: true, enabled: false }, { step_status: 'draining' }), outcomes: [{ kind: 'uncordon-failed', error: 'unreachable', refused: false }, { kind: 'slept', now: NOW }],
      ops: [['log repair: could not uncordon', 'show', `sleep ${LIFT_RETRY_MS}`], ['uncordon lifting']],
    },
    {
      name: 'a repair command failed: fails showing its step watching (CKE)', s: state({ drained: true }), outcomes: [{ kind: 'command', result: { ok: false, error: 'exit code 3' }, now: NOW }],
      ops: [['report failed/0/watching', 'log repair: entry finished', 'end failed: repair_command failed: exit code 3']],
    },
    {
      name: 'a repair command paused: its runs kept, the hold shown', s: state({ drained: true }), outcomes: [{ kind: 'command', result: { ok: false, paused: 'paused', runs: 2 }, now: NOW }],
      ops: [['show']], after: { commandRuns: 2, held: 'the repair_command of step 0' },
    },
    {
      name: 'a repair command done: watching, reported ahead', s: state({ drained: true }), outcomes: [{ kind: 'command', result: { ok: true }, now: NOW }],
      ops: [['report processing/0/watching ahead']], after: { commandDone: true, watchUntil: NOW + 60_000 },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const m = machine(c.s, c.flags);
      if (c.name.includes('mid-life')) m.next(NOW);
      if (c.outcomes[0]!.kind === 'command') m.next(NOW);
      c.outcomes.forEach((o, i) => assert.deepEqual(names(m.apply(o)), c.ops[i], `outcome ${i + 1} (${o.kind})`));
      for (const [k, v] of Object.entries(c.after ?? {})) assert.deepEqual(m.state[k as keyof EntryState], v, k);
      for (const [k, v] of Object.entries(c.entry ?? {})) assert.deepEqual(m.state.entry[k as keyof EntryState['entry']], v, k);
    });
  }

  it('success: the cordon lifted (held by a pause, asked again waiting in place), then the success command, then the end', () => {
    const m = machine(state({ healthy: true, cordoned: true, plan: plan({ success_command_timeout: 30 }) }));
    assert.deepEqual(names(m.next(NOW)), ['uncordon']);
    assert.deepEqual(names(m.apply({ kind: 'uncordon', out: 'paused', now: NOW })), ['show', 'uncordon held']);
    assert.deepEqual(names(m.apply({ kind: 'uncordon', out: 'changed', now: NOW })), ['show', 'command success_command']);
    assert.equal(m.state.cordoned, false);
    assert.deepEqual(names(m.apply({ kind: 'command', result: { ok: false, paused: 'paused' }, now: NOW })), ['show', 'command success_command held']);
    assert.deepEqual(names(m.apply({ kind: 'command', result: { ok: true }, now: NOW })), ['show', 'report succeeded/0/waiting', 'end succeeded']);
  });

  it('an ending with the cordon on: lifted until lifted, or handed to repair/<index>/lift (asked where it is first needed)', () => {
    const m = machine(state({ cordoned: true }), { ...all(true), [ENTRY_FLAGS.liftApart]: undefined });
    delete m.flags[ENTRY_FLAGS.liftApart];
    assert.deepEqual(names(m.ending(false, NOW)), ['uncordon lifting']);
    assert.deepEqual(names(m.apply({ kind: 'uncordon-failed', error: '403', refused: false })), ['log repair: could not uncordon', `flag ${ENTRY_FLAGS.liftApart}`]);
    assert.deepEqual(names(m.apply({ kind: 'flag', name: ENTRY_FLAGS.liftApart, on: true, now: NOW })), ['start-lift']);
    assert.equal(m.state.cordoned, false, 'the cordon is the lift workflow\'s now');
    const before = machine(state({ cordoned: true }), { ...all(true), [ENTRY_FLAGS.liftApart]: false });
    before.ending(false, NOW);
    assert.deepEqual(names(before.apply({ kind: 'uncordon-failed', error: '403', refused: false })), ['log repair: could not uncordon', 'show', `sleep ${LIFT_RETRY_MS}`]);
    assert.match(before.state.lifting ?? '', /lifting the cordon on node node-7 failed \(403\); tried again every 60 s until it is lifted/);
    const refused = machine(state({ cordoned: true }));
    refused.ending(false, NOW);
    assert.deepEqual(names(refused.apply({ kind: 'uncordon-failed', error: 'no such key', refused: true })), ['log repair: could not uncordon']);
    assert.deepEqual(names(refused.ending(false, NOW)), [], 'nothing left to lift');
  });

  it('a deleted entry lifts even a cordon it may not have set; resumeOf carries the state to the next run', () => {
    assert.deepEqual(names(machine(state()).ending(true, NOW)), ['uncordon lifting']);
    const s = state({ drained: true, commandRuns: 2, backoffExpire: NOW }, { step: 0 });
    const again = initialState({ ...input, resume: resumeOf(s) });
    assert.deepEqual(resumeOf(again), resumeOf(s));
    assert.equal(again.commandRuns, 2);
    assert.equal(again.entry.nodename, 'node-7');
    assert.equal(PAUSE_HOLD_MS, 600_000);
  });
});

describe("repair: ckeDrainBackoff (CKE's repairDrainBackOff: 300 s + a random share of 300 s x count)", () => {
  const cases: [count: number, scale: number, random: number, want: { count: number; seconds: number }][] = [
    [0, 1, 0, { count: 1, seconds: 300 }],
    [0, 1, 0.5, { count: 1, seconds: 450 }],
    [0, 1, 0.999999, { count: 1, seconds: 599 }],
    [1, 1, 0.5, { count: 2, seconds: 600 }],
    [2, 1, 0.999999, { count: 3, seconds: 1199 }],
    // No cap: the 41st back-off may wait up to 300 + 12299 s.
    [40, 1, 0.999999, { count: 41, seconds: 12599 }],
    // A whole number of seconds, as CKE's rand.Int63n draws: 0.5004 x 300 = 150.12 -> 150.
    [0, 1, 0.5004, { count: 1, seconds: 450 }],
    [2, 0.05, 0.5, { count: 3, seconds: (300 + 450) * 0.05 }],
  ];
  for (const [count, scale, random, want] of cases) {
    it(`count ${count}, scale ${scale}, random ${random}`, () => {
      const got = ckeDrainBackoff(count, scale, random);
      assert.equal(got.count, want.count);
      assert.ok(Math.abs(got.seconds - want.seconds) < 1e-9, `${got.seconds} != ${want.seconds}`);
    });
  }
  it('always within [300, 300 + 300 x count) s, whatever the draw', () => {
    for (let count = 0; count < 50; count++) {
      for (const random of [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999999]) {
        const { seconds } = ckeDrainBackoff(count, 1, random);
        assert.ok(seconds >= 300 && seconds < 300 + 300 * (count + 1) && Number.isInteger(seconds), `count ${count} random ${random}: ${seconds}`);
      }
    }
  });
  it('refuses a draw outside [0, 1)', () => {
    assert.throws(() => ckeDrainBackoff(0, 1, 1), /random must be in \[0, 1\)/);
    assert.throws(() => ckeDrainBackoff(0, 1, -0.1), /random must be in/);
  });
});

describe('repair: drainBackoff (linear, capped, scaled: entries started before the CKE formula)', () => {
  const cases: [number, number, { count: number; seconds: number }][] = [
    [0, 1, { count: 1, seconds: 60 }],
    [1, 1, { count: 2, seconds: 120 }],
    [19, 1, { count: 20, seconds: 1200 }],
    [40, 1, { count: 41, seconds: 1200 }],
    [2, 0.05, { count: 3, seconds: 9 }],
  ];
  for (const [count, scale, want] of cases) {
    it(`count ${count}, scale ${scale}`, () => {
      const got = drainBackoff(count, scale);
      assert.equal(got.count, want.count);
      assert.ok(Math.abs(got.seconds - want.seconds) < 1e-9, `${got.seconds} != ${want.seconds}`);
    });
  }
});

