// The repair queue's decisions, table-driven (CKE's DecideOps tests): which
// entries start, an entry's next operation, a drain's plan (the back-off:
// test/unit/repair-entry-machine.test.ts).
import assert from 'node:assert/strict';
import {
  decideDrain, decideEntryOp, drainLeft, decideStarts, selectForDelete, type EntryView, type PodView, type QueueView,
} from '../../src/repair/decide.ts';
import type { RepairQueueEntry, RepairStatus } from '../../src/repair/entry.ts';

const e = (index: string, address: string, status: RepairStatus) => ({ index, address, status });

describe('repair: decideStarts', () => {
  const cases: { name: string; q: QueueView; want: string[] }[] = [
    { name: 'empty queue', q: { entries: [], closing: [], enabled: true, maxConcurrent: 1 }, want: [] },
    { name: 'oldest first, up to the limit', q: { entries: [e('1', 'a', 'queued'), e('2', 'b', 'queued'), e('3', 'c', 'queued')], closing: [], enabled: true, maxConcurrent: 2 }, want: ['1', '2'] },
    { name: 'processing ones hold slots', q: { entries: [e('1', 'a', 'processing'), e('2', 'b', 'queued')], closing: [], enabled: true, maxConcurrent: 1 }, want: [] },
    { name: 'finished ones do not', q: { entries: [e('1', 'a', 'succeeded'), e('2', 'b', 'failed'), e('3', 'c', 'queued')], closing: [], enabled: true, maxConcurrent: 1 }, want: ['3'] },
    { name: 'disabled starts nothing', q: { entries: [e('1', 'a', 'queued')], closing: [], enabled: false, maxConcurrent: 5 }, want: [] },
    { name: 'one address at a time (processing)', q: { entries: [e('1', 'a', 'processing'), e('2', 'a', 'queued'), e('3', 'b', 'queued')], closing: [], enabled: true, maxConcurrent: 5 }, want: ['3'] },
    { name: 'one address at a time (both queued)', q: { entries: [e('1', 'a', 'queued'), e('2', 'a', 'queued')], closing: [], enabled: true, maxConcurrent: 5 }, want: ['1'] },
    { name: 'a deleted entry still cleaning up holds its address and slot', q: { entries: [e('2', 'a', 'queued'), e('3', 'b', 'queued')], closing: ['a'], enabled: true, maxConcurrent: 2 }, want: ['3'] },
    { name: 'a later entry for a finished address starts', q: { entries: [e('1', 'a', 'succeeded'), e('2', 'a', 'queued')], closing: [], enabled: true, maxConcurrent: 1 }, want: ['2'] },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(decideStarts(c.q), c.want));

  it('selectForDelete splits finished and unfinished', () => {
    const list = [e('1', 'a', 'queued'), e('2', 'b', 'processing'), e('3', 'c', 'succeeded'), e('4', 'd', 'failed')] as RepairQueueEntry[];
    assert.deepEqual(selectForDelete(list, 'finished'), ['3', '4']);
    assert.deepEqual(selectForDelete(list, 'unfinished'), ['1', '2']);
  });
});

describe('repair: decideEntryOp', () => {
  const base: EntryView = {
    step: 0, steps: 2, step_status: 'waiting', enabled: true, nodename: 'sim-1', needDrain: true, drained: false, commandDone: false,
    healthyAtStart: false, healthy: undefined, watchSeconds: 600, watchUntil: 0, backoffExpire: 0, now: 1000,
  };
  const cases: { name: string; s: Partial<EntryView>; want: ReturnType<typeof decideEntryOp> }[] = [
    { name: 'health first', s: { healthyAtStart: undefined }, want: { op: 'check-health' } },
    { name: 'already healthy: succeed, no drain, no command', s: { healthyAtStart: true }, want: { op: 'succeed' } },
    { name: 'drain when the step needs it and the address is a Node', s: {}, want: { op: 'drain' } },
    { name: 'no drain when the address is not a Node', s: { nodename: '' }, want: { op: 'run-command' } },
    { name: 'no drain when the step does not need it', s: { needDrain: false }, want: { op: 'run-command' } },
    { name: 'disabled: no drain', s: { enabled: false }, want: { op: 'wait', reason: 'disabled' } },
    { name: 'disabled: no repair command', s: { enabled: false, drained: true }, want: { op: 'wait', reason: 'disabled' } },
    { name: 'back-off pending', s: { backoffExpire: 5000 }, want: { op: 'wait', reason: 'backoff', until: 5000 } },
    { name: 'back-off expired', s: { backoffExpire: 999 }, want: { op: 'drain' } },
    { name: 'drained: run the command', s: { drained: true }, want: { op: 'run-command' } },
    { name: 'watching, time left', s: { step_status: 'watching', commandDone: true, drained: true, watchUntil: 2000 }, want: { op: 'watch', until: 2000 } },
    { name: 'disabled still watches', s: { step_status: 'watching', enabled: false, commandDone: true, watchUntil: 2000 }, want: { op: 'watch', until: 2000 } },
    { name: 'watch healthy: succeed', s: { step_status: 'watching', commandDone: true, healthy: true, watchUntil: 2000 }, want: { op: 'succeed' } },
    { name: 'watch expired: next step', s: { step_status: 'watching', commandDone: true, watchUntil: 999 }, want: { op: 'next-step' } },
    { name: 'watch ended unhealthy before its time (worker gone): next step', s: { step_status: 'watching', commandDone: true, watchUntil: 0 }, want: { op: 'next-step' } },
    { name: 'CKE: watch_seconds absent (0): the health is checked once, even with the time gone', s: { step_status: 'watching', commandDone: true, watchSeconds: 0, watchUntil: 999 }, want: { op: 'watch', until: 999 } },
    { name: 'CKE: watch_seconds 0, that one check unhealthy: next step at once', s: { step_status: 'watching', commandDone: true, watchSeconds: 0, watchUntil: 0 }, want: { op: 'next-step' } },
    { name: 'CKE: watch_seconds 0 on the last step, unhealthy: fail', s: { step: 1, step_status: 'watching', commandDone: true, watchSeconds: 0, watchUntil: 0 }, want: { op: 'fail', reason: 'not healthy after the last of 2 step(s)' } },
    { name: 'CKE: disabled during a drain: abandon it (uncordon, back off)', s: { step_status: 'draining', enabled: false }, want: { op: 'abandon-drain' } },
    { name: 'CKE: disabled after the drain, before the command: abandon it too', s: { step_status: 'draining', enabled: false, drained: true }, want: { op: 'abandon-drain' } },
    { name: 'a run resumed mid-drain drains again', s: { step_status: 'draining' }, want: { op: 'drain' } },
    { name: 'last step expired: fail', s: { step: 1, step_status: 'watching', commandDone: true, watchUntil: 999 }, want: { op: 'fail', reason: 'not healthy after the last of 2 step(s)' } },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(decideEntryOp({ ...base, ...c.s }), c.want));
});

describe('repair: decideDrain', () => {
  const pod = (name: string, more: Partial<PodView> = {}): PodView => ({ namespace: 'ns', name, uid: `uid-${name}`, phase: 'Running', deleting: false, ...more });
  const names = (ps: PodView[]) => ps.map((p) => p.name);
  const cases: { name: string; pods: PodView[]; protectedJobPods?: { matchLabels: Record<string, string> }; want: { blockedBy: string[]; evict: string[]; remove: string[]; waitFor: string[] } }[] = [
    { name: 'plain and ReplicaSet pods are evicted', pods: [pod('a'), pod('b', { controllerKind: 'ReplicaSet' })], want: { blockedBy: [], evict: ['a', 'b'], remove: [], waitFor: ['a', 'b'] } },
    { name: 'DaemonSet pods stay', pods: [pod('ds', { controllerKind: 'DaemonSet' })], want: { blockedBy: [], evict: [], remove: [], waitFor: [] } },
    { name: 'a running Job pod blocks', pods: [pod('job', { controllerKind: 'Job' }), pod('a')], want: { blockedBy: ['job'], evict: ['a'], remove: [], waitFor: ['job', 'a'] } },
    { name: 'finished and pending Job pods do not', pods: [pod('j1', { controllerKind: 'Job', phase: 'Succeeded' }), pod('j2', { controllerKind: 'Job', phase: 'Pending' })], want: { blockedBy: [], evict: [], remove: [], waitFor: [] } },
    { name: 'protected_job_pods: unmatched Job pods are deleted', protectedJobPods: { matchLabels: { keep: 'yes' } }, pods: [pod('j1', { controllerKind: 'Job', labels: { keep: 'yes' } }), pod('j2', { controllerKind: 'Job' })], want: { blockedBy: ['j1'], evict: [], remove: ['j2'], waitFor: ['j1', 'j2'] } },
    { name: 'a pod already going is waited for, not evicted again', pods: [pod('a', { deleting: true })], want: { blockedBy: [], evict: [], remove: [], waitFor: ['a'] } },
    { name: 'a finished pod is still on the node (CKE evicts it too)', pods: [pod('a', { phase: 'Failed' })], want: { blockedBy: [], evict: ['a'], remove: [], waitFor: ['a'] } },
    { name: 'a finished pod whose deletion a finalizer holds is waited for', pods: [pod('a', { phase: 'Succeeded', deleting: true })], want: { blockedBy: [], evict: [], remove: [], waitFor: ['a'] } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = decideDrain(c.pods, c.protectedJobPods);
      assert.deepEqual({ blockedBy: names(plan.blockedBy), evict: names(plan.evict), remove: names(plan.remove), waitFor: names(plan.waitFor) }, c.want);
    });
  }
});

describe('repair: drainLeft (CKE\'s checkPodDeletion: what keeps a drain from being done)', () => {
  const pod = (name: string, more: Partial<PodView> = {}): PodView => ({ namespace: 'ns', name, uid: `uid-${name}`, phase: 'Running', deleting: false, ...more });
  const cases: { name: string; pods: PodView[]; left: string[] }[] = [
    { name: 'nothing left', pods: [], left: [] },
    { name: 'DaemonSet pods do not count', pods: [pod('ds', { controllerKind: 'DaemonSet' })], left: [] },
    { name: 'pending and finished Job pods do not count', pods: [pod('j1', { controllerKind: 'Job', phase: 'Pending' }), pod('j2', { controllerKind: 'Job', phase: 'Succeeded' }), pod('j3', { controllerKind: 'Job', phase: 'Failed' })], left: [] },
    { name: 'a running Job pod counts', pods: [pod('j', { controllerKind: 'Job' })], left: ['j'] },
    { name: 'a pod held by a finalizer counts, whatever its phase', pods: [pod('a', { deleting: true, phase: 'Succeeded' }), pod('b', { deleting: true })], left: ['a', 'b'] },
    { name: 'a finished plain pod counts', pods: [pod('a', { phase: 'Failed', controllerKind: 'ReplicaSet' })], left: ['a'] },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(drainLeft(c.pods).map((p) => p.name), c.left));
});
