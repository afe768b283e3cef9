// src/starters/output.ts, and the formatters of apps-, repair-, taint- and weeder-commands.ts.
// -o/--output on every read command: table (or the command's own default), wide, json, yaml; a
// format that is none of them is refused before anything connects (exit 2, the choices named);
// --json stays as -o json where it was. The formatters, on rows as the commands get them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { Command } from 'commander';
import { columns, outputOption, printOutput } from '../../src/starters/output.ts';
import { formatEntries } from '../../src/starters/repair-commands.ts';
import { formatWindows, type WindowRow } from '../../src/starters/weeder-commands.ts';
import { formatTaintStatus } from '../../src/starters/taint-commands.ts';
import { formatStatus } from '../../src/starters/apps-commands.ts';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';
import type { App } from '../../src/apps/types.ts';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
const tend = (args: string[]) => promisify(execFile)(process.execPath, [cli, ...args], { encoding: 'utf8' })
  .then((r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }), (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }));

/** What console.log prints while `fn` runs. */
async function printed(fn: () => Promise<void>): Promise<string> {
  const out: string[] = [];
  const log = console.log;
  console.log = (...a: unknown[]) => void out.push(a.join(' '));
  try {
    await fn();
  } finally {
    console.log = log;
  }
  return out.join('\n');
}

describe('CLI: -o/--output on the read commands', function () {
  this.timeout(30_000);
  const dir = mkdtempSync(join(tmpdir(), 'tend-output-'));
  const config = join(dir, 'tend.yaml');
  // Nothing listens there: a command that tried to connect would fail otherwise, and later.
  writeFileSync(config, stringify({ temporal: { address: '127.0.0.1:1' }, kubernetes: { kubeconfig: join(dir, 'kc') }, apps: { namespaces: ['demo'] } }));

  for (const args of [['weeder', 'list'], ['taint', 'status'], ['app', 'status', 'demo/web'], ['repair-queue', 'list'], ['pause', 'status']]) {
    it(`tend ${args.join(' ')} -o xml: exit 2 before connecting, naming the formats`, async () => {
      const t0 = Date.now();
      const r = await tend([...args, '-o', 'xml', '--config', config]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /argument 'xml' is invalid\. Allowed choices are table, wide, json, yaml/);
      assert.doesNotMatch(r.stderr, /127\.0\.0\.1:1|cannot reach/);
      assert.ok(Date.now() - t0 < 10_000);
    });
    it(`tend ${args.join(' ')} --help names -o/--output`, async () => {
      const r = await tend([...args, '--help']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout.replace(/\s+/g, ' '), /-o, --output <format> output format \(choices: "table", "wide", "json", "yaml", "name", "jsonpath=TEMPLATE", default: "(table|json)"\)/);
    });
  }

  it('repair-queue list: an -o after "--" is checked too, before connecting', async () => {
    const r = await tend(['repair-queue', 'list', '--config', config, '--', '-o', 'xml']);
    assert.equal(r.code, 2, r.stderr);
    // Named either as the list's own check did, or as output.ts's parser (parseOutputFormat) does.
    assert.match(r.stderr, /list: -o\/--output(?: must be one of table, wide, json, yaml, name|: Allowed choices are table, wide, json, yaml, name, jsonpath=TEMPLATE\.?) \(got "xml"\)/);
  });

  it('-o takes its format as kubectl does: -o json, -ojson, -o=json, --output=json, --output json', () => {
    for (const args of [['-o', 'json'], ['-ojson'], ['-o=json'], ['--output=json'], ['--output', 'json']]) {
      const cmd = new Command().exitOverride().addOption(outputOption()).action(() => undefined);
      cmd.parse(args, { from: 'user' });
      assert.equal(cmd.opts().output, 'json', args.join(' '));
    }
    const bad = new Command().exitOverride().configureOutput({ writeErr: () => undefined }).addOption(outputOption());
    assert.throws(() => bad.parse(['-o=xml'], { from: 'user' }), /argument '=xml' is invalid\. Allowed choices are table, wide, json, yaml, name, jsonpath=TEMPLATE \(got "xml"\)\./);
  });

  it('columns: aligned, two spaces apart, no trailing blanks', () => {
    assert.equal(columns(['A', 'BB', 'C'], [['xxx', 'y', ''], ['z', 'wwww', 'end']]), 'A    BB    C\nxxx  y\nz    wwww  end');
  });

  it('printOutput: json and yaml print the data, table and wide what the formatter makes', async () => {
    const data = [{ a: 1, b: ['x'] }];
    assert.deepEqual(JSON.parse(await printed(() => printOutput('json', data, () => 'no'))), data);
    assert.deepEqual(parse(await printed(() => printOutput('yaml', data, () => 'no'))), data);
    assert.equal(await printed(() => printOutput('table', data, (wide) => `wide=${wide}`)), 'wide=false');
    assert.equal(await printed(() => printOutput('wide', data, (wide) => `wide=${wide}`)), 'wide=true');
  });

  const entry = (over: Partial<RepairQueueEntry>): RepairQueueEntry => ({
    index: '1', address: '10.0.0.1', nodename: 'n1', machine_type: 'qemu', operation: 'reboot', status: 'processing', step: 0,
    step_status: 'draining', drain_backoff_count: 0, drain_backoff_expire: '0001-01-01T00:00:00Z', last_transition_time: '2026-11-25T10:00:00Z', ...over,
  });

  it('repair-queue list -o table|wide', () => {
    const entries = [entry({}), entry({ index: '2', address: '10.0.0.2', nodename: '', status: 'queued', step_status: 'waiting', serial: 'SN', drain_backoff_count: 2, drain_backoff_expire: '2026-11-25T10:10:00Z', deleted: true })];
    const table = formatEntries(entries, false).split('\n');
    assert.match(table[0]!, /^INDEX\s+ADDRESS\s+NODE\s+MACHINE TYPE\s+OPERATION\s+STATUS\s+STEP\s+STEP STATUS$/);
    assert.match(table[1]!, /^1\s+10\.0\.0\.1\s+n1\s+qemu\s+reboot\s+processing\s+0\s+draining$/);
    assert.match(table[2]!, /^2\s+10\.0\.0\.2\s+-\s+qemu\s+reboot\s+queued \(deleted\)\s+0\s+waiting$/);
    const wide = formatEntries(entries, true).split('\n');
    assert.match(wide[0]!, /STEP STATUS\s+SERIAL\s+BACKOFF\s+BACKOFF EXPIRE\s+LAST TRANSITION$/);
    assert.match(wide[1]!, /draining\s+-\s+0\s+-\s+2026-11-25T10:00:00Z$/);
    assert.match(wide[2]!, /waiting\s+SN\s+2\s+2026-11-25T10:10:00Z\s+2026-11-25T10:00:00Z$/);
    assert.equal(formatEntries([], false), 'no entries');
  });

  it('weeder list -o table|wide', () => {
    const rows: WindowRow[] = [{ workflowId: 'weeder/ns/db-1', service: 'ns/db', state: 'open', until: '2026-11-25T10:02:00Z', transitions: 1, weeded: ['a', 'b'], reported: [], observed: [], held: [] }];
    const table = formatWindows(rows, false).split('\n');
    assert.match(table[1]!, /^ns\/db\s+open\s+2026-11-25T10:02:00Z\s+-\s+1\s+a,b\s+-$/);
    assert.match(formatWindows(rows, true).split('\n')[1]!, /\s+-\s+weeder\/ns\/db-1$/);
    assert.equal(formatWindows([], true), 'no weeder windows open or armed');
    // Observed or held pods: their columns appear.
    const safety = formatWindows([{ ...rows[0]!, weeded: [], observed: ['c'], held: ['d', 'e'] }], false).split('\n');
    assert.match(safety[0]!, /REPORTED \(no controller\)\s+OBSERVED \(not deleted\)\s+HELD \(paused\)$/);
    assert.match(safety[1]!, /\s+-\s+-\s+c\s+d,e$/);
    assert.doesNotMatch(table[0]!, /OBSERVED/);
  });

  it('taint status -o wide: the attempts and the last error in columns of their own', () => {
    const status = {
      nodes: ['n1'],
      pods: [{ node: 'n1', namespace: 'ns', pod: 'db-0', taint: 'k', condition: 'NodeTaintReplacing' as const, since: 's', replaceAt: 'r', state: 'Blocked' as const, attempts: 2, lastError: 'paused' }],
    };
    const table = formatTaintStatus(status, false).split('\n');
    assert.match(table.at(-1)!, /Blocked \(2 attempts: paused\)$/);
    const wide = formatTaintStatus(status, true).split('\n');
    assert.match(wide.at(-2)!, /STATE\s+ATTEMPTS\s+LAST ERROR$/);
    assert.match(wide.at(-1)!, /Blocked\s+2\s+paused$/);
  });

  it('taint status: the breaker line says when its counts are fault domains (FoundationDB\'s limit)', () => {
    const slots = { maxConcurrentReplacements: 1, maxTaintedNodes: '10%' as const, taintedNodes: 2, totalNodes: 3, breakerOpen: true, queue: [], inFlight: [], granted: 0, peakInFlight: 0 };
    assert.match(formatTaintStatus({ nodes: [], pods: [], slots: { ...slots, faultDomains: true } }, false).split('\n')[0]!,
      /breaker OPEN \(no replacement starts\): 2\/3 nodes holding managed pods tainted, limit 10% \(at least 1: maxFaultDomainsWithTaintedProcessGroups\)$/);
    assert.match(formatTaintStatus({ nodes: [], pods: [], slots }, false).split('\n')[0]!, /: 2\/3 nodes tainted, limit 10%$/);
  });

  it('app status -o wide adds every condition', () => {
    const app = {
      metadata: { namespace: 'demo', name: 'web', generation: 2, annotations: {} }, spec: { desiredState: 'STARTED', processes: [] },
      status: { actualState: 'STARTED', conditions: [{ type: 'Ready', status: 'True', reason: 'AllReady', message: 'ok', lastTransitionTime: 't' }] },
    } as unknown as App;
    assert.doesNotMatch(formatStatus(app), /conditions:/);
    assert.match(formatStatus(app, true), /conditions:\n\s+TYPE\s+STATUS\s+REASON\s+SINCE\s+MESSAGE\n\s+Ready\s+True\s+AllReady\s+t\s+ok$/);
  });
});
