// src/starters/node-commands.ts: `tend node describe NODE`'s merge of the Node's workflow runs,
// Events and countdown status into rows in time order, its table, the Events that concern the
// Node, and the refusal of a name that is not a Node's (exit 2, before anything connects).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type * as k8s from '@kubernetes/client-node';
import {
  eventsOfNode, eventViewOf, formatNodeDescribe, lacksNodeAttribute, mentionsNode, nodeDescribeRows, shown, type EventView, type RunView,
} from '../../src/starters/node-commands.ts';
import { REPORTING_CONTROLLER } from '../../src/kube/events.ts';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
const tend = (args: string[]) => promisify(execFile)(process.execPath, [cli, ...args], { encoding: 'utf8', env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' } })
  .then((r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }), (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }));

const t = (s: string) => Date.parse(`2026-11-27T10:${s}Z`);

const podEvent = (over: Partial<EventView>): EventView => ({
  time: t('00:00'), count: 1, reason: 'TaintMarked', note: 'marked NodeTaintDetected: node sim-1 has taint node.kubernetes.io/unreachable:NoExecute',
  type: 'Normal', kind: 'Pod', namespace: 'shop', name: 'db-1', uid: 'u-db-1', reporter: REPORTING_CONTROLLER, tend: true, ...over,
});
const nodeEvent = (over: Partial<EventView>): EventView => ({
  time: t('00:00'), count: 1, reason: 'TaintReplacementsStarted', note: 'taint replacement started: node sim-1 has taint k:NoExecute',
  type: 'Normal', kind: 'Node', name: 'sim-1', reporter: REPORTING_CONTROLLER, tend: true, ...over,
});
const run = (over: Partial<RunView>): RunView => ({
  id: 'taint/sim-1', type: 'taintNodeWorkflow', taskQueue: 'tend', status: 'RUNNING', start: t('00:00'), capability: 'taint', ...over,
});

describe('tend node describe', () => {
  describe('mentionsNode', () => {
    it('finds the node in the notes taint writes, and not a longer name that begins with it', () => {
      assert.ok(mentionsNode('marked NodeTaintDetected: node sim-1 has taint k:E', 'sim-1'));
      assert.ok(mentionsNode('evicted from node sim-1 (taint k): its controller creates a replacement', 'sim-1'));
      assert.ok(mentionsNode('would evict pod a/b from node sim-1: tainted k', 'sim-1'));
      assert.ok(mentionsNode('taint k:E has been on node sim-1', 'sim-1'));
      assert.ok(!mentionsNode('node sim-10 has taint k:E', 'sim-1'));
      assert.ok(!mentionsNode('node sim-1.zone-a has taint k:E', 'sim-1'));
      assert.ok(!mentionsNode('node xsim-1 has taint', 'sim-1'));
      assert.ok(!mentionsNode('subnode sim-1 has taint', 'sim-1'));
      // A dot in the name is a dot, not any character.
      assert.ok(!mentionsNode('node aXb has taint', 'a.b'));
      assert.ok(mentionsNode('node a.b has taint', 'a.b'));
    });
  });

  describe('eventsOfNode', () => {
    it('keeps the Events on the Node, tend\'s pod Events naming it (note or related object), and the taint Events on those pods', () => {
      const events = [
        nodeEvent({ reason: 'NodeNotReady', note: 'Node sim-1 status is now: NodeNotReady', reporter: 'node-controller', tend: false }),
        podEvent({}),
        podEvent({ reason: 'TaintEvictionRefused', note: 'eviction refused, asked again with back-off: budget', type: 'Warning' }),
        podEvent({ reason: 'WouldEvict', note: 'would evict pod shop/web-1 from node sim-3: repair queue entry 4 drains node sim-3', name: 'web-1', uid: 'u-web-1', related: { kind: 'Node', name: 'sim-1' } }),
        // Elsewhere: another Node, another Node's pod, a pod Event tend did not write, a refusal on a pod never on the Node.
        nodeEvent({ name: 'sim-2', note: 'taint replacement started: node sim-2 has taint k:NoExecute' }),
        podEvent({ name: 'db-2', uid: 'u-db-2', note: 'marked NodeTaintDetected: node sim-2 has taint k:E' }),
        podEvent({ name: 'db-3', uid: 'u-db-3', reporter: 'someone', tend: false }),
        podEvent({ name: 'db-2', uid: 'u-db-2', reason: 'TaintEvictionRefused', note: 'eviction refused' }),
      ];
      assert.deepEqual(eventsOfNode('sim-1', events).map((e) => `${e.reason} ${e.name}`),
        ['NodeNotReady sim-1', 'TaintMarked db-1', 'TaintEvictionRefused db-1', 'WouldEvict web-1']);
    });
  });

  describe('nodeDescribeRows', () => {
    it('merges runs, Events and the countdown\'s status in time order, each row with its capability', () => {
      const rows = nodeDescribeRows('sim-1', [
        run({ id: 'repair/4', type: 'repairEntryWorkflow', capability: 'repair', start: t('03:00'), close: t('05:00'), status: 'COMPLETED' }),
        run({ start: t('00:10') }),
        run({ id: 'node/sim-1', type: 'nodeRepairWorkflow', capability: 'node', start: t('00:05') }),
      ], [
        nodeEvent({ time: t('00:20') }),
        nodeEvent({ time: t('00:00'), reason: 'NodeNotReady', note: 'Node sim-1 status is now: NodeNotReady', reporter: 'node-controller', tend: false }),
        podEvent({ time: t('00:15'), reason: 'TaintEvictionRefused', note: 'eviction refused: budget', type: 'Warning', count: 3, last: t('01:00') }),
        podEvent({ time: t('00:12') }),
        nodeEvent({ time: t('02:00'), reason: 'NodeRepairQueued', note: 'queued repair of 10.88.0.1' }),
      ], [{ id: 'node/sim-1', at: t('06:00'), status: { node: 'sim-1', phase: 'queued', reason: 'Ready=Unknown for 20s', refusals: 0,
        answer: { decision: 'enqueued', index: '4', address: '10.88.0.1', operation: 'unreachable', sentence: 'queued entry 4' } } }]);
      assert.deepEqual(rows.map((r) => [r.time.slice(14, 19), r.capability, r.what]), [
        ['00:00', 'node-controller', 'NodeNotReady: Node sim-1 status is now: NodeNotReady'],
        ['00:05', 'node', 'node/sim-1 started (nodeRepairWorkflow)'],
        ['00:10', 'taint', 'taint/sim-1 started (taintNodeWorkflow)'],
        ['00:12', 'taint', 'TaintMarked on Pod shop/db-1: marked NodeTaintDetected: node sim-1 has taint node.kubernetes.io/unreachable:NoExecute'],
        ['00:15', 'taint', 'TaintEvictionRefused (Warning) on Pod shop/db-1: eviction refused: budget (x3, last 2026-11-27T10:01:00Z)'],
        ['00:20', 'taint', 'TaintReplacementsStarted: taint replacement started: node sim-1 has taint k:NoExecute'],
        ['02:00', 'node', 'NodeRepairQueued: queued repair of 10.88.0.1'],
        ['03:00', 'repair', 'repair/4 started (repairEntryWorkflow)'],
        ['05:00', 'repair', 'repair/4 completed'],
        ['06:00', 'node', 'node/sim-1 now: phase queued; Ready=Unknown for 20s; the queue\'s last answer: enqueued: queued entry 4'],
      ]);
      assert.equal(rows[2]!.source, 'workflow taint/sim-1');
      assert.equal(rows[3]!.source, 'Event on Pod shop/db-1');
      assert.equal(rows[9]!.source, 'query node/sim-1');
      assert.equal(rows[0]!.time, '2026-11-27T10:00:00.000Z');
    });

    it('a run continued as new: one row for each continuation, none for the close that continued it', () => {
      const rows = nodeDescribeRows('sim-1', [
        run({ status: 'CONTINUED_AS_NEW', start: t('00:00'), close: t('01:00') }),
        run({ status: 'COMPLETED', start: t('01:00'), close: t('02:00') }),
      ], []);
      assert.deepEqual(rows.map((r) => r.what), ['taint/sim-1 started (taintNodeWorkflow)', 'taint/sim-1 continued as new', 'taint/sim-1 completed']);
    });

    it('a run without TendCapability takes the prefix of its id; untrusted ids, types and notes are shown through preview', () => {
      const evil = 'taint/sim-1\u001b[2J';
      const rows = nodeDescribeRows('sim-1', [run({ id: evil, capability: undefined, type: 'x'.repeat(500) })],
        [nodeEvent({ time: t('01:00'), note: `node sim-1 ${'n'.repeat(5000)}`, reason: 'Odd\nReason' })]);
      assert.equal(rows[0]!.capability, 'taint');
      assert.ok(!rows[0]!.what.includes('\u001b'), rows[0]!.what);
      assert.ok(rows[0]!.what.includes('\\u001b'), rows[0]!.what);
      assert.ok(rows[0]!.what.length < 450, `${rows[0]!.what.length}`);
      assert.ok(!rows[1]!.what.includes('\n'), rows[1]!.what);
      assert.ok(rows[1]!.what.length < 1200, `${rows[1]!.what.length}`);
      assert.equal(shown('plain words'), 'plain words');
      assert.notEqual(shown('tab\there'), 'tab\there');
    });

    it('nothing: no rows', () => {
      assert.deepEqual(nodeDescribeRows('sim-1', [], [nodeEvent({ name: 'sim-2' })]), []);
    });
  });

  describe('formatNodeDescribe', () => {
    const rows = nodeDescribeRows('sim-1', [run({ start: t('00:10') })], [podEvent({ time: t('00:12') })]);

    it('a table to the second; wide adds where each row comes from', () => {
      assert.equal(formatNodeDescribe({ node: 'sim-1', rows, notes: [] }), [
        'TIME                  CAPABILITY  WHAT',
        '2026-11-27T10:00:10Z  taint       taint/sim-1 started (taintNodeWorkflow)',
        '2026-11-27T10:00:12Z  taint       TaintMarked on Pod shop/db-1: marked NodeTaintDetected: node sim-1 has taint node.kubernetes.io/unreachable:NoExecute',
      ].join('\n'));
      assert.match(formatNodeDescribe({ node: 'sim-1', rows, notes: [] }, true).split('\n')[1]!, /^2026-11-27T10:00:10Z {2}taint {7}workflow taint\/sim-1 +taint\/sim-1 started/);
    });

    it('nothing found: the header, and a line saying so; notes after the table', () => {
      assert.equal(formatNodeDescribe({ node: 'sim-9', rows: [], notes: ['tend\'s Events on pods not read: 403'] }), [
        'TIME  CAPABILITY  WHAT',
        'nothing found for node sim-9: no workflow run for it in Temporal\'s visibility, no Event on it or on its pods among those read',
        'note: tend\'s Events on pods not read: 403',
      ].join('\n'));
    });
  });

  describe('eventViewOf', () => {
    it('an Event of events.k8s.io/v1 (tend\'s: a series) and a legacy one (the node controller\'s: deprecated count and times)', () => {
      const series = eventViewOf({
        eventTime: new Date('2026-11-27T10:00:00.5Z'), reportingController: REPORTING_CONTROLLER, reason: 'TaintReplacing', note: 'n', type: 'Normal',
        regarding: { kind: 'Pod', namespace: 'shop', name: 'db-1', uid: 'u' }, series: { count: 4, lastObservedTime: new Date('2026-11-27T10:01:00Z') },
      } as unknown as k8s.EventsV1Event, REPORTING_CONTROLLER)!;
      assert.deepEqual(series, {
        time: Date.parse('2026-11-27T10:00:00.5Z'), last: t('01:00'), count: 4, reason: 'TaintReplacing', note: 'n', type: 'Normal',
        kind: 'Pod', namespace: 'shop', name: 'db-1', uid: 'u', reporter: REPORTING_CONTROLLER, tend: true,
      });
      const legacy = eventViewOf({
        deprecatedFirstTimestamp: new Date('2026-11-27T10:00:00Z'), deprecatedLastTimestamp: new Date('2026-11-27T10:00:30Z'), deprecatedCount: 2,
        deprecatedSource: { component: 'node-controller' }, reason: 'NodeNotReady', note: 'x', regarding: { kind: 'Node', name: 'sim-1' },
      } as unknown as k8s.EventsV1Event, REPORTING_CONTROLLER)!;
      assert.equal(legacy.reporter, 'node-controller');
      assert.equal(legacy.tend, false);
      assert.equal(legacy.count, 2);
      assert.equal(legacy.last, t('00:30'));
      assert.equal(eventViewOf({ regarding: { kind: 'Node', name: 'x' } } as k8s.EventsV1Event, REPORTING_CONTROLLER), undefined, 'no time at all');
    });
  });

  describe('lacksNodeAttribute', () => {
    it('knows Temporal\'s refusals for want of TendNode, on a start and in a query, and nothing else', () => {
      const refusal = (cause: string) => Object.assign(new Error('Failed to signalWithStart Workflow'), { cause: new Error(cause) });
      assert.ok(lacksNodeAttribute(refusal('3 INVALID_ARGUMENT: Namespace old has no mapping defined for search attribute TendNode')));
      assert.ok(lacksNodeAttribute(refusal("3 INVALID_ARGUMENT: invalid query: invalid expression: column name 'TendNode' is not a valid search attribute")));
      assert.ok(!lacksNodeAttribute(refusal('3 INVALID_ARGUMENT: Namespace old has no mapping defined for search attribute TendNodeX')));
      assert.ok(!lacksNodeAttribute(refusal('14 UNAVAILABLE: TendNode connection refused')));
      assert.ok(!lacksNodeAttribute(undefined));
      assert.ok(!lacksNodeAttribute(null));
    });
  });

  describe('the command', () => {
    it('refuses a name that is not a Node\'s with exit 2, before anything connects, its echo bounded', async () => {
      const r = await tend(['node', 'describe', `Bad_${'x'.repeat(400)}`, '-o', 'json']);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /node "Bad_x+… is not a Node's name: it must be at most 253 characters/);
      assert.ok(r.stderr.length < 300, r.stderr);
      assert.equal(r.stdout, '');
      const underscore = await tend(['node', 'describe', 'Bad_Name']);
      assert.equal(underscore.code, 2, underscore.stderr);
      assert.match(underscore.stderr, /node "Bad_Name" is not a Node's name: it must be a DNS-1123 subdomain/);
      const quote = await tend(['node', 'describe', 'a" OR WorkflowId != "']);
      assert.equal(quote.code, 2, quote.stderr);
    });
  });
});
