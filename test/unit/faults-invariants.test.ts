// faults/audit.ts, faults/invariants.ts and faults/report.ts.
// The fault run's invariant checkers, fed recorded facts as plain data: each
// finds the violation planted in its input, and nothing in a clean record.
import assert from 'node:assert/strict';
import { parseAuditLine, type Write } from '../../faults/audit.ts';
import {
  checkApps, checkRepair, checkTaint, checkWeeder, peakInFlight, replacingMarks, replicaSetStatuses, serviceReadiness,
  type ReplicaSetStatus, type TaintFacts, type WeederFacts,
} from '../../faults/invariants.ts';
import { faultPlan, FAULT_KINDS, formatReport, rng, summarize, type RoundRecord } from '../../faults/report.ts';

const TEND = 'system:serviceaccount:tend-system:tend';
const T0 = Date.parse('2026-01-01T00:00:00Z');
const s = (seconds: number) => T0 + seconds * 1000;

function write(over: Partial<Write> & { at: number }): Write {
  return { done: over.at + 5, user: TEND, verb: 'create', apiGroup: '', resource: 'pods', code: 201, namespace: 'ns', ...over };
}
const del = (name: string, at: number, code = 200) => write({ verb: 'delete', name, at, code });
/** An EndpointSlice write `sec` seconds in. */
const slice = (sec: number, ready: boolean | null, verb = 'update') => write({
  at: s(sec), user: 'system:serviceaccount:kube-system:endpointslice-controller', verb, apiGroup: 'discovery.k8s.io', resource: 'endpointslices', code: 200, name: 'db-abcde',
  body: { metadata: { name: 'db-abcde', labels: { 'kubernetes.io/service-name': 'db' } }, endpoints: ready === null ? [] : [{ conditions: { ready } }] },
});
const evict = (name: string, at: number, code = 201) => write({ verb: 'create', resource: 'pods', subresource: 'eviction', name, at, code });
const mark = (name: string, at: number) => write({
  verb: 'patch', resource: 'pods', subresource: 'status', name, at, code: 200,
  body: { status: { conditions: [{ type: 'NodeTaintDetected', status: 'True' }, { type: 'NodeTaintReplacing', status: 'True' }] } },
});
/** A ReplicaSet status write `sec` seconds in. */
const rs = (sec: number, readyReplicas: number, replicas = 4): ReplicaSetStatus => ({ at: s(sec), readyReplicas, replicas });

describe('fault run: reading the audit log', () => {
  it('turns a completed request into a write, and ignores other stages and junk', () => {
    const line = JSON.stringify({
      kind: 'Event', stage: 'ResponseComplete', verb: 'create', user: { username: TEND },
      objectRef: { resource: 'pods', subresource: 'eviction', namespace: 'ns', name: 'p', apiVersion: 'v1' },
      responseStatus: { code: 201 }, requestObject: { deleteOptions: { preconditions: { uid: 'u1' } } },
      requestReceivedTimestamp: '2026-01-01T00:00:01.250000Z', stageTimestamp: '2026-01-01T00:00:01.300000Z',
    });
    const w = parseAuditLine(line)!;
    assert.equal(w.at, s(1.25));
    assert.equal(w.done, s(1.3));
    assert.deepEqual([w.user, w.verb, w.resource, w.subresource, w.namespace, w.name, w.code], [TEND, 'create', 'pods', 'eviction', 'ns', 'p', 201]);
    assert.equal(parseAuditLine(line.replace('ResponseComplete', 'RequestReceived')), undefined);
    assert.equal(parseAuditLine('not json'), undefined);
    assert.equal(parseAuditLine('{"broken"'), undefined);
  });
});

describe('fault run: weeder invariants', () => {
  // db ready, down at 1 s, back at 10 s.
  const readiness = serviceReadiness([slice(1, false), slice(10, true), slice(12, true)], 'ns', 'db', true);
  const base: WeederFacts = {
    service: 'ns/db', initiallyReady: true, readiness,
    due: [{ name: 'api-1', uid: 'u1' }, { name: 'api-2', uid: 'u2' }],
    deletes: [del('api-1', s(11)), del('api-2', s(11.2))],
  };

  it('reads a Service\'s readiness from its EndpointSlice writes (no endpoint at all is not ready)', () => {
    assert.deepEqual(readiness.map((c) => c.ready), [false, true]);
    assert.deepEqual(serviceReadiness([slice(1, null)], 'ns', 'db', true).map((c) => c.ready), [false]);
    assert.deepEqual(serviceReadiness([slice(1, null), write({ ...slice(2, true), verb: 'delete', body: undefined })], 'ns', 'db', false), []);
    assert.deepEqual(serviceReadiness([slice(1, false)], 'ns', 'other', true), [], 'another Service\'s slices');
  });

  it('a clean round: each due pod deleted once, after the upstream came back', () => {
    assert.deepEqual(checkWeeder(base), []);
  });

  it('finds a pod deleted twice in a window (a double-counted delete)', () => {
    const v = checkWeeder({ ...base, deletes: [...base.deletes, del('api-1', s(13))] });
    assert.equal(v.length, 1);
    assert.equal(v[0]!.invariant, 'weeder: weeded once per window');
    assert.match(v[0]!.detail, /api-1 deleted 2 times/);
  });

  it('a refused delete (409: the UID precondition) does not count', () => {
    assert.deepEqual(checkWeeder({ ...base, deletes: [...base.deletes, del('api-1', s(13), 409)] }), []);
  });

  it('finds a deletion while the upstream is down', () => {
    const v = checkWeeder({ ...base, deletes: [del('api-1', s(5)), del('api-2', s(11))] });
    assert.deepEqual(v.map((x) => x.invariant), ['weeder: none while the upstream is down']);
    assert.match(v[0]!.detail, /api-1 deleted at 00:00:05.000 while Service ns\/db had no ready endpoint/);
  });

  it('finds a due pod never weeded; one that restarted by itself is excused only after a fault that can stall tend, struck about when the upstream came back', () => {
    const missed = { ...base, deletes: [del('api-1', s(11))] };
    assert.deepEqual(checkWeeder(missed).map((x) => x.invariant), ['weeder: every crash-looping dependant weeded']);
    const recovered = { ...missed, due: [base.due[0]!, { ...base.due[1]!, recoveredAt: s(20) }] };
    assert.equal(checkWeeder(recovered).length, 1, 'no fault: it had seconds of back-off left, time enough');
    assert.deepEqual(checkWeeder({ ...recovered, excuse: { kind: 'kill-worker', at: s(10.5) } }), []);
    assert.equal(checkWeeder({ ...recovered, excuse: { kind: 'kill-worker', at: s(25) } }).length, 1, 'a fault after it recovered excuses nothing');
    assert.equal(checkWeeder({ ...recovered, excuse: { kind: 'kill-worker', at: s(-1) } }).length, 1, 'nor one long before the upstream came back');
  });

  it('finds a deleted pod that was not a crash-looping dependant', () => {
    const v = checkWeeder({ ...base, deletes: [...base.deletes, del('api-new', s(12))] });
    assert.deepEqual(v.map((x) => x.invariant), ['weeder: only crash-looping dependants']);
  });
});

describe('fault run: taint invariants', () => {
  const statuses = [rs(0, 4), rs(4.1, 3), rs(5, 4), rs(6.1, 3), rs(7, 4)];
  const base: TaintFacts = {
    limit: 1, replacementTimeMs: 2000, due: ['a', 'b'], notDue: ['c'],
    writes: [mark('a', s(1)), mark('b', s(1)), evict('a', s(4)), evict('b', s(6))],
    replicaSets: statuses, leftConditions: [],
  };

  it('a clean round: each due pod evicted once, one at a time, after its marking period', () => {
    assert.deepEqual(checkTaint(base), []);
    assert.equal(peakInFlight([evict('a', s(4)), evict('b', s(6))], statuses).peak, 1);
  });

  it('finds a pod evicted twice, and a due pod never evicted', () => {
    const twice = checkTaint({ ...base, writes: [...base.writes, evict('a', s(8))] });
    assert.deepEqual(twice.map((x) => x.invariant), ['taint: every due pod evicted exactly once']);
    assert.match(twice[0]!.detail, /pod a evicted 2 times/);
    const never = checkTaint({ ...base, writes: base.writes.filter((w) => !(w.subresource === 'eviction' && w.name === 'b')) });
    assert.match(never[0]!.detail, /pod b evicted 0 times/);
  });

  it('an eviction a PodDisruptionBudget refused (429) does not count', () => {
    assert.deepEqual(checkTaint({ ...base, writes: [evict('a', s(3.5), 429), ...base.writes] }), []);
  });

  it('finds two in flight above a limit of one: the second eviction before the ReplicaSet was whole again', () => {
    const v = checkTaint({ ...base, writes: [mark('a', s(1)), mark('b', s(1)), evict('a', s(4)), evict('b', s(4.5))], replicaSets: [rs(0, 4), rs(4.1, 3), rs(4.6, 2), rs(7, 4)] });
    assert.deepEqual(v.map((x) => x.invariant), ['taint: in flight never above the limit']);
    assert.match(v[0]!.detail, /2 replacements in flight .* \(limit 1\): a, b/);
  });

  it('a ReplicaSet status still whole from before the eviction (no dip yet) does not release it', () => {
    assert.equal(peakInFlight([evict('a', s(4)), evict('b', s(4.5))], [rs(4.2, 4), rs(4.3, 3), rs(5, 4)]).peak, 2);
  });

  it('finds an eviction that came before the marking period was over, or without a mark', () => {
    const early = checkTaint({ ...base, writes: [mark('a', s(3)), mark('b', s(1)), evict('a', s(4)), evict('b', s(6))] });
    assert.deepEqual(early.map((x) => x.invariant), ['taint: marked NodeTaintReplacing for taintReplacementTimeSeconds before eviction']);
    assert.match(early[0]!.detail, /pod a marked at .*, evicted 0\.99 s later \(at least 2 s\)/);
    const unmarked = checkTaint({ ...base, writes: [mark('b', s(1)), evict('a', s(4)), evict('b', s(6))] });
    assert.match(unmarked[0]!.detail, /pod a evicted .* without NodeTaintReplacing ever written/);
  });

  it('finds a pod evicted though its taint went before it was due, and conditions left behind', () => {
    const v = checkTaint({ ...base, writes: [...base.writes, mark('c', s(1)), evict('c', s(8))], leftConditions: [{ pod: 'd', conditions: ['NodeTaintDetected'] }] });
    assert.deepEqual(v.map((x) => x.invariant), ['taint: nothing evicted once its taint is gone', 'taint: no conditions left after an untaint']);
  });

  it('reads condition marks and ReplicaSet statuses from writes', () => {
    assert.equal(replacingMarks([write({ verb: 'patch', subresource: 'status', name: 'x', at: s(1), code: 200, body: { status: { conditions: [{ type: 'NodeTaintReplacing', $patch: 'delete' }] } } })]).size, 0);
    assert.equal(replacingMarks([mark('x', s(1)), mark('x', s(2))]).get('x'), s(1) + 5, 'the first mark, when it was answered');
    const st = replicaSetStatuses([write({ verb: 'update', apiGroup: 'apps', resource: 'replicasets', subresource: 'status', at: s(1), code: 200, body: { spec: { replicas: 4 }, status: { readyReplicas: 3 } } })], 'ns');
    assert.deepEqual(st, [{ at: s(1) + 5, readyReplicas: 3, replicas: 4 }]);
  });
});

describe('fault run: repair invariants', () => {
  it('finds an entry left processing, a Node left cordoned, and a command run twice at once', () => {
    assert.deepEqual(checkRepair({ entries: [{ index: '1', address: '10.0.0.1', status: 'succeeded' }, { index: '2', address: '10.0.0.2', status: 'failed' }], cordoned: [], overlaps: [] }), []);
    const v = checkRepair({
      entries: [{ index: '1', address: '10.0.0.1', status: 'processing', step_status: 'draining' }],
      cordoned: ['sim-1'], overlaps: [`${s(3)} 10.0.0.1`],
    });
    assert.deepEqual(v.map((x) => x.invariant), ['repair: every entry reaches a final status', 'repair: no Node left cordoned', 'repair: no command run twice at once']);
    assert.match(v[0]!.detail, /entry 1 \(10\.0\.0\.1\) is still processing\/draining/);
    assert.match(v[2]!.detail, /10\.0\.0\.1 started at 00:00:03\.000/);
  });
});

describe('fault run: apps invariants', () => {
  const roll = (at: number) => write({ user: 'system:serviceaccount:kube-system:deployment-controller', apiGroup: 'apps', resource: 'replicasets', verb: 'create', at, code: 201, name: `web-${at}` });
  const created = (at: number) => write({ apiGroup: 'apps', resource: 'deployments', verb: 'create', at, code: 201, name: `web-${at}` });
  const base = { app: 'ns/web', restarts: 2, unobservable: 0, processes: 1, writes: [created(s(1)), roll(s(1.1)), created(s(5)), roll(s(5.1))], settled: true, oldPodsLeft: [] };

  it('a clean round: each restart rolled the pods once', () => {
    assert.deepEqual(checkApps(base), []);
  });

  it('finds a restart that rolled twice, one that did not roll, and an App not running again', () => {
    const twice = checkApps({ ...base, writes: [...base.writes, created(s(6)), roll(s(6.1))] });
    assert.match(twice[0]!.detail, /2 restart\(s\) .* rolled the pods 3 times/);
    const missed = checkApps({ ...base, writes: base.writes.slice(0, 2), oldPodsLeft: [], settled: false });
    assert.deepEqual(missed.map((x) => x.invariant), ['apps: every restart rolls the pods exactly once', 'apps: the App runs again after its restarts']);
    assert.equal(checkApps({ ...base, oldPodsLeft: ['web-old-1'] }).length, 1);
  });

  it('a restart made entirely while the watcher was down may roll once or not at all, never twice', () => {
    const one = { ...base, unobservable: 1, writes: base.writes.slice(0, 2) };
    assert.deepEqual(checkApps(one), []);
    assert.deepEqual(checkApps({ ...base, unobservable: 1 }), []);
    assert.equal(checkApps({ ...one, writes: [] }).length, 1, 'the other restart still has to roll');
    assert.match(checkApps({ ...base, unobservable: 1, writes: [...base.writes, roll(s(7))] })[0]!.detail, /1 made while the watcher was down\) rolled the pods 3 times/);
  });
});

describe('fault run: plan and report', () => {
  it('the same seed gives the same plan; a few rounds cover every fault kind', () => {
    assert.deepEqual(faultPlan(12, FAULT_KINDS, rng(7)), faultPlan(12, FAULT_KINDS, rng(7)));
    assert.notDeepEqual(faultPlan(12, FAULT_KINDS, rng(7)), faultPlan(12, FAULT_KINDS, rng(8)));
    assert.deepEqual(new Set(faultPlan(FAULT_KINDS.length, FAULT_KINDS, rng(1))), new Set(FAULT_KINDS));
  });

  it('the table counts rounds, faults by kind and violations, and lists each violation', () => {
    const records: RoundRecord[] = [
      { capability: 'taint', round: 1, durationMs: 1, notes: [], violations: [], fault: { kind: 'kill-worker', atMs: 1000, injected: true, detail: 'SIGKILL' } },
      { capability: 'taint', round: 2, durationMs: 1, notes: [], fault: { kind: 'api-error', atMs: 500, injected: false, detail: 'armed' },
        violations: [{ invariant: 'taint: every due pod evicted exactly once', detail: 'pod a evicted 2 times' }] },
      { capability: 'apps', round: 1, durationMs: 1, notes: [], violations: [], error: 'timed out' },
    ];
    assert.deepEqual(summarize(records).map((x) => [x.capability, x.rounds, x.violations]), [['taint', 2, 1], ['apps', 1, 1]]);
    const text = formatReport(records, 42);
    assert.match(text, /seed 42/);
    assert.match(text, /taint\s+2\s+kill-worker 1, api-error \(not triggered\) 1\s+1/);
    assert.match(text, /- taint round 2 .*\n {4}taint: every due pod evicted exactly once: pod a evicted 2 times/);
    assert.match(text, /apps round 1 \(no fault\)\n {4}the round did not complete: timed out/);
  });
});
