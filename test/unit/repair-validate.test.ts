// What reaches the repair queue through Temporal is checked field by field:
// keys only, the right types, no unknown field (a smuggled command), a real
// address. Each refusal says what was wrong.
import assert from 'node:assert/strict';
import { addressProblem } from '../../src/repair/entry.ts';
import { preview } from '../../src/checks/preview.ts';
import { lookupCommand } from '../../src/repair/procedure.ts';
import {
  addInputSchema, capacityProblem, check, deleteInputSchema, entryInputSchema, entryKeySchema, entryReportSchema, noInput, QUEUE_STATE_LIMITS, queueStateSchema,
} from '../../src/repair/validate.ts';
import { MAX_INDEX, MAX_QUEUE_ENTRIES, MAX_REQUESTS_PER_ADD, REPAIR_KEY_MAX } from '../../src/repair/messages.ts';
import { addEntries, emptyQueue, removeEntries, saneNextIndex, type QueueState } from '../../src/repair/queue.ts';
import { parseConfig } from '../../src/config/load.ts';
import { ApplicationFailure } from '@temporalio/common';
import { createRepairActivities } from '../../src/activities/repair.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const refused = (schema: Parameters<typeof check>[0], value: unknown, what = 'x') => {
  const r = check(schema, value, what);
  assert.equal(r.ok, false, `accepted ${preview(value)}`);
  return (r as { reason: string }).reason;
};

describe('repair messages: validation', () => {
  it('add: refuses a missing address, the address ":", extra fields (commands), empty or missing requests, wrong types', () => {
    const ok = { operation: 'heal', machine_type: 'sim', address: '10.0.0.1' };
    assert.equal(check(addInputSchema, { requests: [ok] }, 'add').ok, true);
    assert.match(refused(addInputSchema, { requests: [{ operation: 'heal', machine_type: 'sim' }] }, 'add'), /add: requests\[0\]\.address: address must be a string/);
    assert.match(refused(addInputSchema, { requests: [{ ...ok, address: ':' }] }, 'add'), /requests\[0\]\.address: address ":" is not a valid IPv6 address/);
    assert.match(refused(addInputSchema, { requests: [{ ...ok, command: ['sh', '-c', 'touch /tmp/x'] }] }), /requests\[0\]: Unrecognized key: "command"/);
    assert.match(refused(addInputSchema, { requests: [ok], health_check_command: ['sh'] }), /Unrecognized key: "health_check_command"/);
    assert.match(refused(addInputSchema, { requests: [] }), /requests must hold at least one request/);
    assert.match(refused(addInputSchema, {}), /requests/);
    assert.match(refused(addInputSchema, undefined), /add needs \{"requests"/);
    assert.match(refused(addInputSchema, { requests: [{ ...ok, operation: 7 }] }), /operation must be a string/);
    assert.match(refused(addInputSchema, { requests: [{ ...ok, serial: 'a b' }] }), /serial "a b" must be letters/);
  });

  it('addresses: IPv4, IPv6 and DNS names only', () => {
    for (const a of ['10.0.0.1', '::1', 'fe80::1', '2001:db8::ff00:42:8329', '::ffff:192.0.2.1', '1:2:3:4:5:6:7:8', 'node-1.example']) assert.equal(addressProblem(a), undefined, a);
    for (const a of [':', ':::', '1::2::3', '1:2:3:4:5:6:7:8:9', '12345::', '::ffff:300.1.1.1', '-rf', 'a b', '', '$(reboot)']) assert.ok(addressProblem(a), a);
  });

  it('an entry\'s workflow input: keys only; the old shape with commands is refused', () => {
    const ok = { index: '3', address: '10.0.0.1', machine_type: 'sim', operation: 'heal', enabled: true, queue: '0197a1b2-0000-7000-8000-000000000001' };
    assert.equal(check(entryInputSchema, ok, 'e').ok, true);
    assert.match(refused(entryInputSchema, { ...ok, queue: undefined }, 'e'), /queue/);
    // A run that continued-as-new: where it left off, numbers and flags only; a command in its plan is refused.
    const plan = { steps: [{ need_drain: true, watch_seconds: 60, command_timeout_seconds: 30, command_retries: 0, command_interval: 0 }], command_timeout_seconds: 30, eviction_timeout_seconds: 600, time_scale: 1 };
    const resume = { nodename: 'n1', step: 0, step_status: 'draining', drain_backoff_count: 1, drain_backoff_expire: '2030-01-01T00:00:00Z', drained: false, commandDone: false, cordoned: true, watchUntil: 0, backoffExpire: 0, drainDeadline: 1, plan };
    assert.equal(check(entryInputSchema, { ...ok, resume }, 'e').ok, true);
    assert.match(refused(entryInputSchema, { ...ok, resume: { ...resume, plan: { ...plan, steps: [{ ...plan.steps[0], repair_command: ['sh'] }] } } }, 'e'), /Unrecognized key: "repair_command"/);
    const old = {
      entry: { index: '3', address: '10.0.0.1' },
      operation: { operation: 'heal', repair_steps: [{ repair_command: ['sh', '-c', 'touch /tmp/x'] }], health_check_command: ['sh', '-c', 'touch /tmp/x'] },
      drain: {}, timeScale: 1, enabled: true,
    };
    assert.match(refused(entryInputSchema, old, 'e'), /Unrecognized keys: "entry", "drain", "timeScale"/);
    assert.match(refused(entryInputSchema, { ...ok, health_check_command: ['sh'] }, 'e'), /Unrecognized key: "health_check_command"/);
    assert.match(refused(entryInputSchema, { ...ok, index: '../x' }, 'e'), /index must be a string of digits/);
    assert.match(refused(entryKeySchema, { index: '1', address: '10.0.0.1;reboot', machine_type: 'sim', operation: 'heal' }, 'k'), /not an IP address or a DNS name/);
  });

  it('entry-report: progress fields only, never identity; removed is `true` or absent', () => {
    const queue = 'run-1';
    assert.equal(check(entryReportSchema, { index: '1', queue, fields: { status: 'failed', step: 1 } }, 'r').ok, true);
    assert.match(refused(entryReportSchema, { index: '1', fields: { status: 'failed' } }), /queue/);
    assert.match(refused(entryReportSchema, { index: '1', queue, fields: { address: '10.0.0.9' } }), /Unrecognized key: "address"/);
    assert.match(refused(entryReportSchema, { index: '1', queue, fields: { status: 'pwned' } }), /fields\.status/);
    assert.match(refused(entryReportSchema, 'junk'), /entry-report needs/);
    assert.match(refused(entryReportSchema, { index: '1', queue, removed: false }), /removed/);
  });

  it('the queue\'s state: no configuration', () => {
    const state = { entries: [], nextIndex: 1, enabled: true, closing: {} };
    assert.equal(check(queueStateSchema, state, 's').ok, true);
    assert.match(refused(queueStateSchema, { ...state, config: { repair_procedures: [] } }), /Unrecognized key: "config"/);
  });

  it('delete and the updates without input', () => {
    assert.equal(check(deleteInputSchema, { index: '3' }, 'd').ok, true);
    assert.match(refused(deleteInputSchema, { index: 'x' }, 'delete'), /delete: index/);
    assert.match(refused(deleteInputSchema, { index: '3', command: 'x' }, 'delete'), /Unrecognized key/);
    assert.doesNotThrow(() => noInput('enable', []));
    assert.throws(() => noInput('enable', [{ command: ['sh'] }]), /enable takes no input/);
  });

  it('commands are looked up by (machine type, operation, step, kind); a key not configured is named', () => {
    const { repair } = parseConfig(`
repair:
  time_scale: 0.5
  repair_procedures:
    - machine_types: [sim]
      repair_operations:
        - operation: heal
          repair_steps:
            - { repair_command: [fix, --soft], watch_seconds: 10, command_retries: 2, command_interval: 4 }
          health_check_command: [check]
`, 'c.yaml');
    assert.deepEqual(lookupCommand(repair, 'sim', 'heal', 0, 'repair_command'), { argv: ['fix', '--soft'], timeoutSeconds: 30, retries: 2, intervalSeconds: 2 });
    assert.deepEqual(lookupCommand(repair, 'sim', 'heal', 5, 'health_check_command'), { argv: ['check'], timeoutSeconds: 30, retries: 0, intervalSeconds: 0 });
    assert.match((lookupCommand(repair, 'sim', 'heal', 1, 'repair_command') as { problem: string }).problem, /operation "heal" of machine type "sim" has no step 1/);
    assert.match((lookupCommand(repair, 'sim', 'heal', 0, 'success_command') as { problem: string }).problem, /has no success_command/);
    assert.match((lookupCommand(repair, 'cray', 'heal', 0, 'repair_command') as { problem: string }).problem, /operation "heal" of machine type "cray" is not configured/);
    assert.match((lookupCommand(undefined, 'sim', 'heal', 0, 'repair_command') as { problem: string }).problem, /no repair section/);
  });

  it('activities refuse forged inputs and keys not configured, non-retryably, before touching anything', async () => {
    const { repair } = parseConfig(`
repair:
  repair_procedures:
    - machine_types: [sim]
      repair_operations:
        - operation: heal
          repair_steps: [{ repair_command: [fix], watch_seconds: 10 }]
          health_check_command: [check]
`, 'c.yaml');
    // Any use of Kubernetes would throw: a refusal comes first.
    const kube = new Proxy({}, { get: () => { throw new Error('touched Kubernetes'); } }) as KubeClients;
    const acts = createRepairActivities(kube, repair);
    const key = { index: '3', address: '10.0.0.1', machine_type: 'sim', operation: 'heal' };
    const refusedWith = (type: string, message: RegExp) => (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure, String(err));
      assert.equal(err.nonRetryable, true);
      assert.equal(err.type, type);
      assert.match(err.message, message);
      return true;
    };
    await assert.rejects(acts.repairRunCommand({ ...key, step: 0, kind: 'repair_command', command: ['sh', '-c', 'touch /tmp/x'] } as never),
      refusedWith('InvalidRepairInput', /repairRunCommand: Unrecognized key: "command"/));
    await assert.rejects(acts.repairRunCommand({ ...key, address: ':', step: 0, kind: 'repair_command' }),
      refusedWith('InvalidRepairInput', /address ":" is not a valid IPv6 address/));
    await assert.rejects(acts.repairRunCommand({ ...key, operation: 'evil', step: 0, kind: 'repair_command' }),
      refusedWith('RepairNotConfigured', /operation "evil" of machine type "sim" is not configured/));
    await assert.rejects(acts.repairRunCommand({ ...key, step: 4, kind: 'repair_command' }),
      refusedWith('RepairNotConfigured', /has no step 4/));
    await assert.rejects(acts.repairDrain({ ...key, step: 0, deadline: Date.now() }),
      refusedWith('RepairNotConfigured', /step 0 of operation "heal" of machine type "sim" is not configured with need_drain/));
    await assert.rejects(acts.repairInspect({ ...key, machine_type: 'cray' }), refusedWith('RepairNotConfigured', /machine type "cray" is not configured/));
    await assert.rejects(acts.repairUncordon({ index: 'x', address: '10.0.0.1' }), refusedWith('InvalidRepairInput', /index must be a string of digits/));
    await assert.rejects(createRepairActivities(kube, undefined).repairInspect(key), refusedWith('RepairNotConfigured', /no repair section/));
  });

  describe('bounds: any JSON refused without a throw, its reason short; the queue\'s carried state far below 2 MiB', () => {
    const deep = (n: number) => {
      let v: unknown = 'x';
      for (let i = 0; i < n; i++) v = [v];
      return v;
    };
    const hostile: [string, unknown][] = [
      ['an array nested 5,000 deep', deep(5000)],
      ['an object nested 5,000 deep', JSON.parse('{"a":'.repeat(5000) + '1' + '}'.repeat(5000))],
      ['100,000 requests', { requests: Array.from({ length: 100_000 }, () => ({ operation: 'heal', machine_type: 'sim', address: '10.0.0.1' })) }],
      ['a 1 MB string', { requests: [{ operation: 'x'.repeat(1 << 20), machine_type: 'sim', address: '10.0.0.1' }] }],
      ['5,000 bad requests', { requests: Array.from({ length: 5000 }, () => ({ operation: 1, machine_type: [], address: {} })) }],
      ['unicode and control characters', { requests: [{ operation: '\u0000\ud800💥', machine_type: 'sim\n', address: '\u202e10.0.0.1' }] }],
      ['wrong types', 'requests'],
      ['null', null],
    ];
    for (const schema of [addInputSchema, entryInputSchema, entryReportSchema, deleteInputSchema, queueStateSchema]) {
      for (const [name, value] of hostile) {
        it(`${name}: refused with a reason under 1,200 characters`, () => {
          const reason = refused(schema, value, 'm');
          assert.ok(reason.length < 1200, `${reason.length} characters`);
        });
      }
    }
    it('refusals of updates without input show a prefix of what came, never throwing', () => {
      assert.throws(() => noInput('enable', [deep(5000)]), (err: unknown) => err instanceof ApplicationFailure && err.message.length < 300);
    });
    it(`operations and machine types of at most ${REPAIR_KEY_MAX} characters, addresses of at most 253`, () => {
      const ok = { operation: 'o'.repeat(REPAIR_KEY_MAX), machine_type: 'm'.repeat(REPAIR_KEY_MAX), address: '10.0.0.1' };
      assert.equal(check(addInputSchema, { requests: [ok] }, 'add').ok, true);
      assert.match(refused(addInputSchema, { requests: [{ ...ok, operation: 'o'.repeat(REPAIR_KEY_MAX + 1) }] }), new RegExp(`operation is longer than ${REPAIR_KEY_MAX} characters`));
      assert.match(refused(addInputSchema, { requests: [{ ...ok, address: `${'a'.repeat(250)}.example` }] }), /address is longer than 253 characters/);
    });
    it(`at most ${MAX_REQUESTS_PER_ADD} requests per add`, () => {
      const many = Array.from({ length: MAX_REQUESTS_PER_ADD + 1 }, () => ({ operation: 'heal', machine_type: 'sim', address: '10.0.0.1' }));
      assert.match(refused(addInputSchema, { requests: many }), new RegExp(`at most ${MAX_REQUESTS_PER_ADD} requests per add`));
    });
    it(`the queue holds at most ${MAX_QUEUE_ENTRIES} entries, finished ones included; the reason names the limit and delete-finished`, () => {
      assert.equal(capacityProblem(MAX_QUEUE_ENTRIES - 2, 10, 2), undefined);
      assert.match(capacityProblem(MAX_QUEUE_ENTRIES - 1, 10, 2) ?? '', new RegExp(`at most ${MAX_QUEUE_ENTRIES} entries, finished ones included.*delete-finished`));
      assert.match(capacityProblem(0, MAX_INDEX, 2) ?? '', new RegExp(`indexes end at ${MAX_INDEX}`));
    });
    it('a next index past the bound (a planted repair/9999999999999999) goes on after the queue\'s own entries; indexes stay safe integers', () => {
      const planted = { entries: [], nextIndex: Number('9999999999999999'), enabled: true, closing: {} };
      const c = check(queueStateSchema, planted, 'start', QUEUE_STATE_LIMITS);
      assert.equal(c.ok, true, (c as { reason?: string }).reason);
      assert.equal(saneNextIndex(planted), 1);
      const withEntries: QueueState = { ...emptyQueue(), entries: addEntries(emptyQueue(41), [{ operation: 'heal', machine_type: 'sim', address: '10.0.0.1' }], 0).state.entries, nextIndex: 2 ** 60 };
      assert.equal(saneNextIndex(withEntries), 42);
      assert.equal(saneNextIndex({ ...withEntries, nextIndex: 43 }), 43);
      assert.match(refused(entryReportSchema, { index: '10000000000000000', queue: 'q', removed: true }), /index must be a string of digits/);
    });
    it('the worst carried state (every entry at its longest, half of them deleted and cleaning up) passes the state\'s check and stays under 1.5 MiB', () => {
      const long = (n: number) => `${'a'.repeat(62)}.`.repeat(Math.ceil(n / 63)).slice(0, n).replace(/\.$/, 'a');
      const request = { operation: 'o'.repeat(63), machine_type: 'm'.repeat(63), address: long(253), serial: 'S'.repeat(128) };
      let s = addEntries(emptyQueue(MAX_INDEX - MAX_QUEUE_ENTRIES), Array.from({ length: MAX_QUEUE_ENTRIES }, () => request), Date.now()).state;
      s = { ...s, entries: s.entries.map((e, i) => ({ ...e, nodename: long(253), status: i % 2 ? 'processing' : 'succeeded', drain_backoff_count: 1_000_000, drain_backoff_expire: '2030-01-01T00:00:00.123456789+01:00', last_transition_time: '2030-01-01T00:00:00.123456789+01:00' })) };
      s = removeEntries(s, s.entries.filter((e) => e.status === 'processing').map((e) => e.index)).state;
      s.reported = Object.fromEntries(Object.keys(s.closing).map((i) => [i, 'succeeded' as const]));
      const c = check(queueStateSchema, s, 'state', QUEUE_STATE_LIMITS);
      assert.equal(c.ok, true, (c as { reason?: string }).reason);
      const bytes = Buffer.byteLength(JSON.stringify(s));
      assert.ok(bytes < 1.5 * 1024 * 1024, `${bytes} bytes`);
    });
  });
});
