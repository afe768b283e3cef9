// How workflows read failures (src/workflows/failures.ts): one failure's words through its causes,
// bounded, from any value; the refusal of a named type found where an activity, a local activity
// or a child puts it.
import assert from 'node:assert/strict';
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { failureMessage, refusalOf } from '../../src/workflows/failures.ts';
import { REFUSAL } from '../../src/repair/messages.ts';

const activityFailed = (cause: Error) => new ActivityFailure('Activity task failed', 'repairDrain', '7', RetryState.NON_RETRYABLE_FAILURE, 'worker', cause);

describe('workflow failures', () => {
  describe('failureMessage', () => {
    const cases: { name: string; err: unknown; want: string }[] = [
      { name: 'an activity: its type, then its cause (its own message adds nothing)', err: activityFailed(ApplicationFailure.nonRetryable('pod a/b: forbidden', REFUSAL.drainRefused)), want: 'repairDrain gave up: pod a/b: forbidden' },
      { name: 'a cause chain, a repeated message said once', err: new Error('outer', { cause: new Error('outer', { cause: new Error('inner') }) }), want: 'outer: inner' },
      { name: 'a string', err: 'plain words', want: 'plain words' },
      { name: 'undefined', err: undefined, want: 'unknown failure' },
      { name: 'a number', err: 42, want: 'unknown failure' },
      { name: 'an object whose message is not a string', err: { message: { nested: true } }, want: 'unknown failure' },
    ];
    for (const c of cases) it(c.name, () => assert.equal(failureMessage(c.err), c.want));

    it('follows at most four causes', () => {
      let e = new Error('m5');
      for (let i = 4; i >= 1; i--) e = new Error(`m${i}`, { cause: e });
      assert.equal(failureMessage(e), 'm1: m2: m3: m4');
    });

    it('keeps at most 1,000 characters of an untrusted message', () => {
      const text = failureMessage(new Error('x'.repeat(50_000)));
      assert.equal(text.length, 1001);
      assert.ok(text.endsWith('…'));
    });

    it('stays total on a cause that refers back to itself', () => {
      const e = new Error('loop') as Error & { cause?: unknown };
      e.cause = e;
      assert.equal(failureMessage(e), 'loop');
    });
  });

  describe('refusalOf', () => {
    const types = [REFUSAL.invalidInput, REFUSAL.drainRefused];
    const refused = ApplicationFailure.nonRetryable('no', REFUSAL.drainRefused);
    const cases: { name: string; err: unknown; want: ApplicationFailure | undefined }[] = [
      { name: "an activity's refusal, its cause", err: activityFailed(refused), want: refused },
      { name: "a local activity's refusal, the failure itself", err: refused, want: refused },
      { name: 'another type', err: activityFailed(ApplicationFailure.nonRetryable('busy', 'Other')), want: undefined },
      { name: 'a plain error', err: new Error('x'), want: undefined },
      { name: 'not a failure at all', err: 'refused', want: undefined },
      { name: 'nothing', err: undefined, want: undefined },
    ];
    for (const c of cases) it(c.name, () => assert.equal(refusalOf(c.err, types), c.want));

    it('looks no deeper than four causes', () => {
      let e: Error = refused;
      for (let i = 0; i < 4; i++) e = new Error(`wrap ${i}`, { cause: e });
      assert.equal(refusalOf(e, types), undefined);
      assert.equal(refusalOf(e.cause, types), refused);
    });
  });
});
