// The message fuzzer's pure parts (fuzz/generate.ts, fuzz/targets.ts,
// fuzz/invariants.ts): the same seed makes the same messages, every handler
// of every hosted workflow type is reached, each family makes what it says
// (deep nesting, sizes around each bound, wrong types), and the invariants
// find what is planted in a history, an audit log and the repair command's record.
import assert from 'node:assert/strict';
import proto from '@temporalio/proto';
import * as workflows from '../../src/workflows/index.ts';
import { approxBytes, around, depthOf, Draw, jsonText, nested, pathsOf, setAt, sized } from '../../fuzz/generate.ts';
import { argsFor, type Context, exportedBounds, nextMessage, slotsOf, targets } from '../../fuzz/targets.ts';
import { commandRuns, cordons, historySize, outsideConfiguration, peakOpen, repairLimit, taskFailures } from '../../fuzz/invariants.ts';
import { expectedId, formatReport } from '../../fuzz/report.ts';
import type { Write } from '../../faults/audit.ts';
import type { FuzzReport } from '../../fuzz/run.ts';

const EventType = proto.temporal.api.enums.v1.EventType;
const Cause = proto.temporal.api.enums.v1.WorkflowTaskFailedCause;

const context: Context = {
  taskQueue: 'tend-fuzz', namespace: 'fuzz-ns', outside: 'kube-system',
  nodes: [{ name: 'n1', address: '10.0.0.1' }, { name: 'n2', address: '10.0.0.2' }], service: 'db', app: 'web', appGeneration: 3, appUid: 'u-1',
  repairIndexes: ['1', '2'], runningEntries: [{ index: '2', queue: 'chain-1' }], queueChain: 'chain-1',
  pods: [{ node: 'n1', uid: 'p-1', pod: 'fuzz-ns/a' }], inFlight: [{ node: 'n1', uid: 'p-1', pod: 'fuzz-ns/a' }], running: { taintNodeWorkflow: ['taint/n2'] }, seed: 7,
};

/** A message's content, comparable (deep values as their text). */
const summary = (d: Draw, n: number) => Array.from({ length: n }, () => {
  const m = nextMessage(targets(), context, d, exportedBounds(), 'elsewhere');
  return m && `${m.type}|${m.handler}|${m.family}|${m.workflowId}|${m.note}|${approxBytes(m.args)}`;
});

describe('fuzz: generated messages', () => {
  it('the same seed makes the same messages; another seed other ones', () => {
    assert.deepEqual(summary(new Draw(42), 100), summary(new Draw(42), 100));
    assert.notDeepEqual(summary(new Draw(42), 100), summary(new Draw(43), 100));
  });

  it('covers every workflow type the worker hosts, and each of its handlers and its start', () => {
    const ts = targets();
    assert.deepEqual(ts.map((t) => t.workflowType).sort(), Object.keys(workflows).sort());
    const d = new Draw(1);
    const seen = new Set<string>();
    for (let i = 0; i < 1500; i++) {
      const m = nextMessage(ts, context, d, exportedBounds(), 'elsewhere');
      if (m) seen.add(`${m.type}|${m.handler}`);
    }
    const expected = slotsOf(ts).map((s) => `${s.target.type}|${s.handler?.name ?? 'start'}`);
    assert.deepEqual(expected.filter((e) => !seen.has(e)), [], 'every (type, handler) reached in 1,500 messages');
  });

  it('an operator\'s command is never sent valid, only broken', () => {
    const d = new Draw(5);
    const pause = targets().find((t) => t.type === 'tend-safety')!.handlers.find((h) => h.name === 'pause' && h.kind === 'update')!;
    assert.equal(argsFor(pause, 'valid', 'tend-safety', context, d, exportedBounds()), undefined);
    assert.ok(argsFor(pause, 'wrong-type', 'tend-safety', context, d, exportedBounds()));
  });

  it('deep: 5,000 levels, which JSON.stringify cannot write and jsonText can', () => {
    const d = new Draw(3);
    const report = targets().find((t) => t.type === 'repair-queue')!.handlers.find((h) => h.name === 'entry-report')!;
    const made = argsFor(report, 'deep', 'repair-queue', context, d, exportedBounds())!;
    assert.ok(depthOf(made.args[0]) >= 5000, made.note);
    assert.throws(() => JSON.stringify(made.args[0]), RangeError);
    const text = jsonText(made.args[0]);
    assert.ok(depthOf(JSON.parse(text)) >= 5000);
    assert.equal(jsonText({ a: [1, 'x', null, { u: undefined }], s: '\ud800' }), JSON.stringify({ a: [1, 'x', null, { u: undefined }], s: '\ud800' }));
  });

  it('boundary: sizes just below, at and just above each bound the messages modules export', () => {
    assert.deepEqual(around(500), [499, 500, 501]);
    assert.deepEqual(around(0), [0, 1]);
    const b = exportedBounds();
    assert.ok(b.safety!.some((x) => x.name === 'src/safety/messages.ts REASON_MAX'), 'REASON_MAX read from the module');
    assert.ok(b.repair!.some((x) => x.name === 'src/checks/limits.ts MESSAGE_LIMITS.maxChars'), 'an object\'s numbers read too');
    const d = new Draw(9);
    const pause = targets().find((t) => t.type === 'tend-safety')!.handlers.find((h) => h.name === 'resume' && h.kind === 'signal')!;
    for (let i = 0; i < 50; i++) {
      const made = argsFor(pause, 'boundary', 'tend-safety', context, d, b)!;
      const m = /^(\d+) \((.+) is (\d+)\)/.exec(made.note)!;
      assert.ok(m, made.note);
      assert.ok(Math.abs(Number(m[1]) - Number(m[3])) <= 1, made.note);
    }
  });

  it('paths and replacement: every place of a value, replaced without touching the original', () => {
    const v = { a: [1, { b: 'x' }] };
    assert.deepEqual(pathsOf(v), [[], ['a'], ['a', 0], ['a', 1], ['a', 1, 'b']]);
    assert.deepEqual(setAt(v, ['a', 1, 'b'], 2), { a: [1, { b: 2 }] });
    assert.deepEqual(v, { a: [1, { b: 'x' }] });
    assert.equal(sized(5, '😀').length, 5);
    assert.equal(depthOf(nested(10)), 10);
  });

  it('a hand start\'s own id is told from its input', () => {
    assert.equal(expectedId({ type: 'taint/<node>', args: [{ node: 'n1' }], workflowId: 'x' }), 'taint/n1');
    assert.equal(expectedId({ type: 'weeder', args: [{ namespace: 'a', service: 'b' }], workflowId: 'x' }), 'weeder/a/b');
    assert.equal(expectedId({ type: 'app', args: [{ namespace: 'a', name: 'b' }], workflowId: 'x' }), 'app/a/b');
    assert.equal(expectedId({ type: 'check', args: [], workflowId: 'x' }), 'x');
  });
});

describe('fuzz: invariants', () => {
  const payload = (v: unknown) => ({ payloads: [{ data: new Uint8Array(Buffer.from(JSON.stringify(v))) }] });

  it('a workflow task failure is found and blamed on the message before it; ordinary causes are not', () => {
    const events = [
      { eventId: 1, eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED },
      { eventId: 5, eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, workflowExecutionSignaledEventAttributes: { signalName: 'entry-report', input: payload({ index: '1' }) } },
      { eventId: 6, eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, workflowTaskFailedEventAttributes: { cause: Cause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND } },
      { eventId: 9, eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, workflowTaskFailedEventAttributes: { cause: Cause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE, failure: { message: 'RangeError: Maximum call stack size exceeded' } } },
    ] as unknown as proto.temporal.api.history.v1.IHistoryEvent[];
    const v = taskFailures('repair-queue', 'repair-queue', events);
    assert.equal(v.length, 1);
    assert.equal(v[0]!.handler, 'entry-report');
    assert.match(v[0]!.detail, /WORKFLOW_WORKER_UNHANDLED_FAILURE: "RangeError: Maximum call stack size exceeded"/);
    assert.match(v[0]!.detail, /after signal entry-report \(event 5\) with .*index/);
    assert.deepEqual(taskFailures('repair-queue', 'repair-queue', events, 9), [], 'events already looked at are not found again');
  });

  it('history size: past Temporal\'s warning thresholds', () => {
    assert.deepEqual(historySize('app', 'app/a/b', 10_240, 1024), []);
    assert.equal(historySize('app', 'app/a/b', 10_241, 1024).length, 1);
    assert.equal(historySize('app', 'app/a/b', 10, 11 * 1024 * 1024).length, 1);
  });

  it('repairs at once: from the command\'s own record and from tend\'s cordons in the audit log', () => {
    const runs = commandRuns(['start 1000 10.0.0.1', 'start 1500 10.0.0.2', 'end 3000 10.0.0.1', 'end 3500 10.0.0.2', 'start 4000 10.0.0.1'], 5000);
    assert.equal(runs.length, 3);
    assert.equal(peakOpen(runs).peak, 2);
    const w = (at: number, name: string, unschedulable: boolean | null): Write =>
      ({ at, done: at, user: 'tend', verb: 'patch', apiGroup: '', resource: 'nodes', name, code: 200, body: { spec: { unschedulable } } });
    const cs = cordons([w(1000, 'n1', true), w(2000, 'n1', null), w(2500, 'n2', true), w(2600, 'n1', true)], 'tend', 9000);
    assert.equal(peakOpen(cs).peak, 2);
    const v = repairLimit(1, runs, cs);
    assert.equal(v.length, 2);
    assert.match(v[0]!.detail, /2 repair commands running at once/);
    assert.deepEqual(repairLimit(2, runs, cs), []);
  });

  it('writes outside the configuration: another namespace, a cluster-scoped object other than a Node', () => {
    const w = (namespace: string | undefined, resource: string, user = 'tend'): Write => ({ at: 0, done: 0, user, verb: 'delete', apiGroup: '', resource, namespace, name: 'x', code: 200 });
    const v = outsideConfiguration([w('fuzz-ns', 'pods'), w(undefined, 'nodes'), w('kube-system', 'pods'), w(undefined, 'namespaces'), w('kube-system', 'pods', 'admin')], 'tend', ['fuzz-ns']);
    assert.deepEqual(v.map((x) => x.detail.split(' (')[0]), ['delete pods kube-system/x', 'delete namespaces x']);
  });

  it('the report: a row per type and handler, the violations with their causes, 0 violations said so', () => {
    const rows = [{ type: 'repair-queue', handler: 'entry-report', kind: 'signal' as const, sent: 3, refused: 0, ignored: 1, accepted: 2, delivered: 3, violations: 1, families: {} }];
    const text = formatReport(rows, [{ type: 'repair-queue', handler: 'entry-report', invariant: 'no workflow task failure', detail: 'boom', batch: 0 }], 1, 3, 1, new Map());
    assert.match(text, /repair-queue\s+entry-report\s+signal\s+3\s+0\s+1\s+2\s+1/);
    assert.match(text, /- no workflow task failure: repair-queue entry-report \(1×, batch 1\)\n {4}boom/);
    assert.match(formatReport(rows, [], 1, 3, 1, new Map()), /no violations$/);
    // What --report writes, as the e2e test reads it.
    const json: FuzzReport = JSON.parse(JSON.stringify({ seed: 1, sent: 3, batches: 1, rows, violations: [] })) as FuzzReport;
    assert.equal(json.rows[0]!.sent, 3);
  });
});
