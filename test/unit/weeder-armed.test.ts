// The arming rules (src/weeder/armed.ts), situation by situation: what the
// armed watch announces, deletes and answers, and what the workflow does when a
// lane's watch ends or fails. Each row names its situation's fields.
import assert from 'node:assert/strict';
import { announcementOps, answerAnnounced, deleteAtOnce, deletingToken, goneOutcome, laneAnswered, laneFailed, toAnnounce, type LaneOp, type LaneRun } from '../../src/weeder/armed.ts';
import type { PodLike } from '../../src/weeder/crashloop.ts';
import type { Candidate, WatchOutput, WeedOutcome } from '../../src/weeder/window.ts';

const cand = (name: string, owner: string | undefined = 'ReplicaSet/rs'): Candidate => ({ name, uid: `u-${name}`, containers: ['c'], ...(owner ? { owner } : {}) });
const deleted = (name: string): WeedOutcome => ({ uid: `u-${name}`, outcome: 'deleted', at: 't' });
const armedDeleting: LaneRun = { lane: 'armed', deletesAtOnce: true, armedSince: 1000 };
const armedOld: LaneRun = { lane: 'armed', deletesAtOnce: false, armedSince: 1000 };
const windowLane: LaneRun = { lane: 'window', deletesAtOnce: false, armedSince: undefined };

describe('weeder: the arming rules, when a lane ends', () => {
  const rows: { situation: string; run: LaneRun; found: WatchOutput; acting: boolean; ops: LaneOp[] }[] = [
    { situation: 'the window lane found candidates', run: windowLane, found: { candidates: [cand('a')] }, acting: true,
      ops: [{ op: 'weed', candidates: [cand('a')], retryAnnounced: false }] },
    { situation: 'the window lane ran out: nothing found', run: windowLane, found: { candidates: [] }, acting: true,
      ops: [{ op: 'weed', candidates: [], retryAnnounced: false }] },
    { situation: 'armed (before deleting at once): saw the Service ready, hands its candidates over', run: armedOld, found: { candidates: [cand('a')], readyAt: 5000 }, acting: true,
      ops: [{ op: 'readySeen', readyAt: 5000, armedSince: 1000 }, { op: 'weed', candidates: [cand('a')], retryAnnounced: false }] },
    { situation: 'armed, deleting at once: its deletions settled, what it could not delete retried, the rest looked at', run: armedDeleting,
      found: { candidates: [cand('b')], readyAt: 5000, weeded: [deleted('a')] }, acting: true,
      ops: [{ op: 'readySeen', readyAt: 5000, armedSince: 1000 }, { op: 'settle', outcomes: [deleted('a')] },
        { op: 'weed', candidates: [cand('b')], retryAnnounced: true }, { op: 'lookAtAnnounced', reason: undefined }] },
    { situation: 'armed, deleting at once, the window stopped meanwhile: nothing announced is retried', run: armedDeleting,
      found: { candidates: [cand('b')], readyAt: 5000, weeded: [] }, acting: false,
      ops: [{ op: 'readySeen', readyAt: 5000, armedSince: 1000 }, { op: 'weed', candidates: [cand('b')], retryAnnounced: false },
        { op: 'lookAtAnnounced', reason: undefined }] },
    { situation: 'armed, deleting at once, the Service never turned ready and the answer lists no outcomes: the announced are looked at', run: armedDeleting,
      found: { candidates: [] }, acting: true,
      ops: [{ op: 'weed', candidates: [], retryAnnounced: true }, { op: 'lookAtAnnounced', reason: "the armed watch's answer did not include them" }] },
  ];
  for (const r of rows) it(r.situation, () => assert.deepEqual(laneAnswered(r.run, r.found, r.acting), r.ops));
});

describe('weeder: the arming rules, when a lane fails', () => {
  const rows: { situation: string; run: LaneRun; cancelled: boolean; refusal: boolean; ops: LaneOp[] }[] = [
    { situation: 'the window lane cancelled by the workflow: nothing', run: windowLane, cancelled: true, refusal: false, ops: [] },
    { situation: 'the armed lane deleting at once, cancelled: what it announced is looked at', run: armedDeleting, cancelled: true, refusal: false,
      ops: [{ op: 'lookAtAnnounced', reason: undefined }] },
    { situation: 'a refusal of the Service: the workflow fails with it', run: windowLane, cancelled: false, refusal: true, ops: [{ op: 'refused' }] },
    { situation: 'the armed lane deleting at once, given up: looked at, then the window fails', run: armedDeleting, cancelled: false, refusal: false,
      ops: [{ op: 'lookAtAnnounced', reason: 'the armed watch failed: boom' }, { op: 'fail', reason: 'the armed watch of ns/db gave up: boom' }] },
    { situation: 'the window lane given up: the window fails', run: windowLane, cancelled: false, refusal: false,
      ops: [{ op: 'fail', reason: "the window's watch of ns/db gave up: boom" }] },
  ];
  for (const r of rows) {
    it(r.situation, () => assert.deepEqual(laneFailed(r.run, { cancelled: r.cancelled, refusal: r.refusal, message: 'boom' }, 'ns/db'), r.ops));
  }
  it('an announcement with no armed watch running to answer for it: looked at at once', () => {
    assert.deepEqual(announcementOps(true), []);
    assert.deepEqual(announcementOps(false), [{ op: 'lookAtAnnounced', reason: 'announced by an armed watch that was no longer running' }]);
  });
});

describe('weeder: the arming rules, in the armed watch', () => {
  const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'rs-1', controller: true };
  const pod = (name: string, over: { crashing?: boolean; owned?: boolean; labels?: Record<string, string> } = {}): PodLike => ({
    metadata: { name, namespace: 'ns', uid: `u-${name}`, labels: over.labels ?? { role: 'api' }, ownerReferences: over.owned === false ? [] : [owner] },
    status: { containerStatuses: [{ name: 'c', state: over.crashing === false ? {} : { waiting: { reason: 'CrashLoopBackOff' } } }] },
  });
  const target = { namespace: 'ns', podSelectors: [{ matchLabels: { role: 'api' } }] };
  it('deletes at once when armed with a token, in any attempt: a retry is how another worker takes over', () => {
    const rows: [string, { weedToken?: unknown; openOnReady?: unknown }, string | undefined][] = [
      ['armed', { weedToken: 't', openOnReady: true }, 't'],
      ['the window\'s watch', { weedToken: 't', openOnReady: false }, undefined],
      ['no token', { openOnReady: true }, undefined],
      ['a token that is no string', { weedToken: 7, openOnReady: true }, undefined],
    ];
    for (const [situation, input, want] of rows) assert.equal(deletingToken(input), want, situation);
  });
  it('a pod gone when its DELETE went out: deleted by the attempt before in a retry, skipped in the first attempt', () => {
    assert.deepEqual(goneOutcome('u', 't', 2), { uid: 'u', outcome: 'deleted', at: 't', earlier: true });
    assert.deepEqual(goneOutcome('u', 't', 1), { uid: 'u', outcome: 'skipped', reason: 'gone (or replaced) when deleted' });
  });
  const announceRows: { situation: string; pods: PodLike[]; announced: string[]; handled: string[]; want: string[] }[] = [
    { situation: 'a crash-looping dependant with a controller is announced', pods: [pod('a')], announced: [], handled: [], want: ['a'] },
    { situation: 'announced already, or handled by the window: not again', pods: [pod('a'), pod('b')], announced: ['u-a'], handled: ['u-b'], want: [] },
    { situation: 'no controller (only reported), not crash-looping, or not a dependant: not announced',
      pods: [pod('a', { owned: false }), pod('b', { crashing: false }), pod('c', { labels: { role: 'db' } })], announced: [], handled: [], want: [] },
  ];
  for (const r of announceRows) {
    it(`announces: ${r.situation}`, () => assert.deepEqual(
      toAnnounce(r.pods, { announced: new Set(r.announced), handled: new Set(r.handled) }, target).map((c) => c.name), r.want));
  }
  const deleteRows: { situation: string; candidates: Candidate[]; present: string[]; announced: string[]; held: boolean; announceFirst: string[]; deletable: string[] }[] = [
    { situation: 'announced and present: deleted at once', candidates: [cand('a')], present: ['u-a'], announced: ['u-a'], held: false, announceFirst: [], deletable: ['a'] },
    { situation: 'not announced yet: announced first', candidates: [cand('a'), cand('b')], present: ['u-a', 'u-b'], announced: ['u-a'], held: false, announceFirst: ['b'], deletable: ['a', 'b'] },
    { situation: 'no controller, or gone from the view: not deleted here', candidates: [cand('a', ''), cand('b')], present: ['u-a'], announced: ['u-a', 'u-b'], held: false, announceFirst: [], deletable: [] },
    { situation: 'held by the safety gates: nothing (the workflow judges them afresh)', candidates: [cand('a')], present: ['u-a'], announced: ['u-a'], held: true, announceFirst: [], deletable: [] },
  ];
  for (const r of deleteRows) {
    it(`deletes at once: ${r.situation}`, () => {
      const d = deleteAtOnce(r.candidates, { present: new Set(r.present), announced: new Set(r.announced), held: r.held });
      assert.deepEqual({ announceFirst: d.announceFirst.map((c) => c.name), deletable: d.deletable.map((c) => c.name) }, { announceFirst: r.announceFirst, deletable: r.deletable });
    });
  }
  it('answers for every announced pod: its outcome, handed back as a candidate, or skipped with why', () => {
    const outcomes = new Map([['u-a', deleted('a')]]);
    const answer = answerAnnounced([cand('a'), cand('b'), cand('c')], outcomes, [cand('a'), cand('b'), cand('d')], 'recovered');
    assert.deepEqual(answer.weeded, [deleted('a'), { uid: 'u-c', outcome: 'skipped', reason: 'recovered' }]);
    assert.deepEqual(answer.candidates.map((c) => c.name), ['b', 'd']);
  });
});
