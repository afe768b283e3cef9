// The one check of untrusted messages: measured before it is read, checked field
// by field, each problem named by its path as code writes it, with a preview of
// what came where that helps, and the whole refusal bounded whatever came.
import assert from 'node:assert/strict';
import { checkMessage, pathText } from '../../src/checks/message.ts';
import { array, integer, maxItems, min, number, optional, record, strictObject, string } from '../../src/checks/shape.ts';

const shape = strictObject({
  requests: array(strictObject({ address: string('address must be a string'), port: optional(number(undefined, integer, min(1))) }),
    'requests must be a list', maxItems(3, 'at most 3 requests')),
  labels: optional(record(string(), string())),
}, 'needs {"requests": [...]}');

const reason = (value: unknown, options?: Parameters<typeof checkMessage>[3]) => {
  const r = checkMessage(shape, value, 'add', options);
  assert.equal(r.ok, false, 'accepted');
  return (r as { reason: string }).reason;
};

describe('message checks (src/checks/message.ts)', () => {
  it('accepts what the shape takes', () => {
    assert.deepEqual(checkMessage(shape, { requests: [{ address: 'a', port: 2 }] }, 'add'), { ok: true, value: { requests: [{ address: 'a', port: 2 }] } });
  });

  it('names each problem by its path: indexes in brackets, a key that is not a plain name quoted', () => {
    assert.equal(pathText(['requests', 0, 'address']), 'requests[0].address');
    assert.equal(pathText(['labels', 'a b']), 'labels["a b"]');
    assert.equal(pathText([]), '');
    assert.match(reason({ requests: [{ address: 'a' }, {}] }), /^add: requests\[1\]\.address: address must be a string$/);
    assert.match(reason({ requests: [], labels: { 'a\nb': 7 } }), /^add: labels\["a\\nb"\]: Invalid input: expected string, received number \(got 7\)$/);
  });

  it('shows what came where the type was wrong or a value broke a rule, and not when the message quotes it or it is a whole list', () => {
    assert.equal(reason('junk'), 'add: needs {"requests": [...]} (got "junk")');
    assert.equal(reason({ requests: [{ address: 'a', port: 1.5 }] }), 'add: requests[0].port: Invalid input: expected int, received number (got 1.5)');
    assert.equal(reason({ requests: [{ address: 'a' }, { address: 'b' }, { address: 'c' }, { address: 'd' }] }), 'add: requests: at most 3 requests');
    assert.equal(reason({ requests: [{}] }), 'add: requests[0].address: address must be a string', 'nothing there, nothing shown');
    assert.equal(reason({ requests: [], x: 1 }), 'add: Unrecognized key: "x"');
  });

  it('names the first problems (4, or as asked) and counts the others', () => {
    const many = { requests: Array.from({ length: 3 }, () => ({ address: 1 })), a: 1 };
    assert.match(reason(many), /requests\[2\]\.address.*; Unrecognized key: "a"$/);
    assert.match(reason(many, { problems: 1 }), /^add: requests\[0\]\.address: address must be a string \(got 1\); and 3 more$/);
  });

  it('refuses past its limits unread, and anything that cannot be read, without a throw', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    assert.match(reason(deep), /^add: refused unread: nested deeper than 8 levels$/);
    assert.match(reason({ requests: [] }, { limits: { maxDepth: 8, maxNodes: 2, maxChars: 100 } }), /^add: refused unread: more than 2 values in all$/);
    const trap = new Proxy({}, { ownKeys: () => { throw new Error('trap'); } });
    assert.match(reason(trap), /^add: refused/);
  });

  it('bounds every refusal: long keys, long values, thousands of problems, control characters', () => {
    const hostile: unknown[] = [
      { requests: [{ address: 'a' }], labels: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`${'k'.repeat(200)}${i}`, i])) },
      { requests: Array.from({ length: 5000 }, () => ({ address: { a: 'x'.repeat(500) }, port: -1, ['\u0000'.repeat(300)]: 1 })) },
      { requests: [{ address: 'a', port: 'p'.repeat(100_000) }] },
    ];
    for (const v of hostile) {
      const r = reason(v, { problems: 50 });
      assert.ok(r.length < 1100, `${r.length} characters`);
      assert.doesNotMatch(r, /[\u0000-\u001f]/);
    }
  });
});
