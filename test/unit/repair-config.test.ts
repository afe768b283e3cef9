// src/config/repair.ts, src/repair/procedure.ts, src/repair/entry.ts (address, serial) and parseRepairFile (src/starters/repair-commands.ts).
// The repair section in CKE's format, defaults and errors; request checks
// (machine type, operation, address, serial) shared by the CLI and the queue.
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config/load.ts';
import { addressProblem, serialProblem } from '../../src/repair/entry.ts';
import { lookupCommand, lookupOperation, requestProblems, type ResolvedCommand } from '../../src/repair/procedure.ts';
import { parseRepairFile } from '../../src/starters/repair-commands.ts';

const cke = `
repair:
  repair_procedures:
    - machine_types: [Cray-1, Cray-2]
      repair_operations:
        - operation: unreachable
          repair_steps:
            - repair_command: [reboot-machine, --hard]
              need_drain: true
              watch_seconds: 600
            - repair_command: [replace-machine]
              command_timeout_seconds: 60
              command_retries: 2
              command_interval: 5
              watch_seconds: 1800
          health_check_command: [check-machine]
          success_command: [notify, done]
  max_concurrent_repairs: 2
  protected_namespaces: { matchLabels: { app: sensitive } }
  evict_retries: 3
  evict_interval: 5
  eviction_timeout_seconds: 120
`;

describe('repair: config', () => {
  it("accepts CKE's repair section verbatim, with CKE's defaults", () => {
    const r = parseConfig(cke, 'cke.yaml').repair!;
    const op = r.repair_procedures[0]!.repair_operations[0]!;
    assert.deepEqual(op.repair_steps[0], { repair_command: ['reboot-machine', '--hard'], command_timeout_seconds: 30, command_retries: 0, command_interval: 0, need_drain: true, watch_seconds: 600 });
    assert.equal(op.repair_steps[1]!.command_retries, 2);
    assert.equal(op.command_timeout_seconds, 30);
    assert.equal(op.success_command_timeout, 30);
    assert.equal(r.max_concurrent_repairs, 2);
    assert.equal(r.eviction_timeout_seconds, 120);
    assert.equal(r.time_scale, 1);
    const d = parseConfig('repair: { repair_procedures: [ { machine_types: [x], repair_operations: [ { operation: o, repair_steps: [ { repair_command: [a], watch_seconds: 1 } ], health_check_command: [h] } ] } ] }', 'd.yaml').repair!;
    assert.equal(d.max_concurrent_repairs, 1);
    assert.equal(d.evict_retries, 0);
    assert.equal(d.evict_interval, 0);
    assert.equal(d.eviction_timeout_seconds, 600);
    assert.equal(d.protected_namespaces, undefined);
  });

  it("CKE's defaults and zero values (CKE's cluster reference; docs/repair-config.md): no watch_seconds is 0 (next step at once), timeout 0 is none", () => {
    const r = parseConfig(`
repair:
  repair_procedures:
    - machine_types: [x]
      repair_operations:
        - operation: o
          repair_steps:
            - repair_command: [a]
            - repair_command: [b]
              command_timeout_seconds: 0
              watch_seconds: 0
          health_check_command: [h]
          command_timeout_seconds: 0
          success_command: [s]
          success_command_timeout: 0
`, 'cke-zero.yaml').repair!;
    const op = r.repair_procedures[0]!.repair_operations[0]!;
    assert.deepEqual(op.repair_steps[0], { repair_command: ['a'], command_timeout_seconds: 30, command_retries: 0, command_interval: 0, need_drain: false, watch_seconds: 0 });
    assert.equal(op.repair_steps[1]!.command_timeout_seconds, 0);
    assert.equal(op.repair_steps[1]!.watch_seconds, 0);
    assert.equal(op.command_timeout_seconds, 0);
    assert.equal(op.success_command_timeout, 0);
    // What the worker hands the commands: 0, which runOnce takes as no timeout.
    assert.equal((lookupCommand(r, 'x', 'o', 1, 'repair_command') as ResolvedCommand).timeoutSeconds, 0);
    assert.equal((lookupCommand(r, 'x', 'o', 0, 'health_check_command') as ResolvedCommand).timeoutSeconds, 0);
    assert.equal((lookupCommand(r, 'x', 'o', 0, 'success_command') as ResolvedCommand).timeoutSeconds, 0);
  });

  it('lists every problem by its path', () => {
    assert.throws(() => parseConfig(`
repair:
  repair_procedures:
    - machine_types: [x]
      repair_operations:
        - operation: o
          repair_steps: [ { repair_command: "reboot now", watch_seconds: -1, command_timeout_seconds: 1.5 } ]
          health_check_command: []
  max_concurrent_repairs: 0
  max_concurent: 3
`, 'bad.yaml'), (err: Error) => {
      for (const path of [
        'repair.repair_procedures[0].repair_operations[0].repair_steps[0].repair_command',
        'repair.repair_procedures[0].repair_operations[0].repair_steps[0].watch_seconds',
        'repair.repair_procedures[0].repair_operations[0].repair_steps[0].command_timeout_seconds',
        'repair.repair_procedures[0].repair_operations[0].health_check_command',
        'repair.max_concurrent_repairs',
        'max_concurent',
      ]) assert.ok(err.message.includes(path), `${path} missing in:\n${err.message}`);
      return true;
    });
  });

  it('looks up operations by machine type and name', () => {
    const r = parseConfig(cke, 'cke.yaml').repair!;
    assert.ok('operation' in lookupOperation(r, 'Cray-2', 'unreachable'));
    assert.match((lookupOperation(r, 'Cray-3', 'unreachable') as { problem: string }).problem, /unknown machine type "Cray-3": the repair section knows Cray-1, Cray-2/);
    assert.match((lookupOperation(r, 'Cray-1', 'melted') as { problem: string }).problem, /unknown operation "melted" for machine type Cray-1: it has unreachable/);
    assert.deepEqual(requestProblems(undefined, { operation: 'o', machine_type: 't', address: '10.0.0.1' }), ['tend has no repair section in its configuration: add repair.repair_procedures']);
  });

  const addresses: [string, boolean][] = [
    ['10.88.0.1', true], ['192.0.2.255', true], ['fd00::1', true], ['::1', true], ['node-1.example.org', true],
    ['', false], ['10.88.0.256', false], ['10.88.0', false], ['1.2.3.4;reboot', false], ['$(reboot)', false], ['`id`', false],
    ['-rf', false], ['a b', false], ['host|cat', false], ['x&&y', false], ['1::2::3', false], ['../etc', false],
  ];
  for (const [address, ok] of addresses) {
    it(`address ${JSON.stringify(address)} is ${ok ? 'accepted' : 'refused'}`, () => assert.equal(addressProblem(address) === undefined, ok, addressProblem(address)));
  }

  it('serials are plain labels', () => {
    assert.equal(serialProblem('SN-123_a.b'), undefined);
    assert.ok(serialProblem('x;y'));
    assert.ok(serialProblem(''));
  });

  it('a long address or serial is refused for its length, echoed only as a short start', () => {
    const address = addressProblem('a'.repeat(10_000))!;
    assert.match(address, /is 10000 characters long, past the most an address may have \(253/);
    assert.ok(address.length < 200, `bounded: ${address.length} characters`);
    const serial = serialProblem('S'.repeat(10_000))!;
    assert.match(serial, /is 10000 characters long, past the most a serial may have \(128\)/);
    assert.ok(serial.length < 200, `bounded: ${serial.length} characters`);
    assert.equal(addressProblem(`${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`), undefined, 'a 253-character DNS name');
  });

  it('add-file lines: OPERATION MACHINE_TYPE ADDRESS [SERIAL], comments and blanks skipped', () => {
    const got = parseRepairFile('# batch\n\nop t 10.0.0.1\nop t 10.0.0.2 SN # trailing\n', 'f');
    assert.deepEqual(got.map((x) => [x.where, x.r]), [
      ['f:3', { operation: 'op', machine_type: 't', address: '10.0.0.1' }],
      ['f:4', { operation: 'op', machine_type: 't', address: '10.0.0.2', serial: 'SN' }],
    ]);
    assert.throws(() => parseRepairFile('op t\n', 'f'), /f:1: expected OPERATION MACHINE_TYPE ADDRESS \[SERIAL\], got 2 word/);
  });
});
