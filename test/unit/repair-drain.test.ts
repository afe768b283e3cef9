// The drain's per-pod policy (src/repair/drain.ts): each row of its header's
// table, situation -> next step.
import assert from 'node:assert/strict';
import { namespaceProtected, nextEviction, timeoutReason, type EvictionAnswer, type EvictionStep } from '../../src/repair/drain.ts';

const pod = { namespace: 'shop', name: 'web-1' };
const TWO = 'Cannot evict pod as it would violate the pod\'s disruption budget. This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.';

describe('repair drain: per-pod policy', () => {
  const rows: { situation: string; answer: EvictionAnswer; protected?: boolean; attempt?: number; expect: EvictionStep }[] = [
    { situation: 'evicted', answer: { outcome: 'evicted' }, expect: { op: 'next', evicted: true } },
    { situation: 'gone already', answer: { outcome: 'gone' }, expect: { op: 'next', evicted: false } },
    { situation: '429, namespace not protected', answer: { outcome: 'blocked', message: 'budget' }, protected: false,
      expect: { op: 'delete', why: 'a PodDisruptionBudget refuses its eviction and its namespace is not protected' } },
    { situation: '429, protected, attempts left', answer: { outcome: 'blocked', message: 'budget' }, protected: true, attempt: 3, expect: { op: 'retry', afterMs: 500 } },
    { situation: '429, protected, past evict_retries', answer: { outcome: 'blocked', message: 'budget' }, protected: true, attempt: 4,
      expect: { op: 'give-up', refused: 'shop/web-1 (4 time(s): budget)' } },
    { situation: 'two budgets (blocked answer)', answer: { outcome: 'blocked', message: TWO }, protected: false,
      expect: { op: 'refuse', why: `eviction of shop/web-1 refused: 500: ${TWO}` } },
    { situation: 'two budgets (500 error)', answer: { outcome: 'error', status: 500, message: TWO }, expect: { op: 'refuse', why: `eviction of shop/web-1 refused: 500: ${TWO}` } },
    { situation: '403 (RBAC, a webhook)', answer: { outcome: 'error', status: 403, message: 'denied' }, expect: { op: 'refuse', why: 'eviction of shop/web-1 refused: 403: denied' } },
    { situation: '400', answer: { outcome: 'error', status: 400, message: 'bad' }, expect: { op: 'refuse', why: 'eviction of shop/web-1 refused: 400: bad' } },
    { situation: '422', answer: { outcome: 'error', status: 422, message: 'invalid' }, expect: { op: 'refuse', why: 'eviction of shop/web-1 refused: 422: invalid' } },
    { situation: 'another 500', answer: { outcome: 'error', status: 500, message: 'etcd' }, expect: { op: 'rethrow' } },
    { situation: 'no status (a connection reset)', answer: { outcome: 'error', message: 'ECONNRESET' }, expect: { op: 'rethrow' } },
  ];
  for (const r of rows) {
    it(`${r.situation}: ${r.expect.op}`, () => {
      assert.deepEqual(nextEviction({ pod, answer: r.answer, attempt: r.attempt ?? 1, evictRetries: 3, intervalMs: 500, namespaceProtected: r.protected ?? true }), r.expect);
    });
  }

  it('protected_namespaces absent protects every namespace; a set protects its own', () => {
    assert.equal(namespaceProtected('a', 'all'), true);
    assert.equal(namespaceProtected('a', new Set(['a'])), true);
    assert.equal(namespaceProtected('b', new Set(['a'])), false);
  });

  it('an eviction timeout names how many pods are left and one of them', () => {
    assert.equal(timeoutReason([pod, { namespace: 'x', name: 'y' }]), 'eviction timeout: 2 pod(s) still on the node, e.g. shop/web-1');
  });
});
