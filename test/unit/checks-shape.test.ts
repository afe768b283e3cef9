// The checks of messages that reach tend through Temporal (src/checks/shape.ts):
// what each accepts, the reason and path of each refusal, and that a schema
// still works deeply frozen, as the worker shares it between workflows.
import assert from 'node:assert/strict';
import {
  above, anyValue, array, boolean, integer, literal, max, maxItems, maxLength, min, minItems, number, object, oneOf, optional, parse,
  pattern, record, strictObject, string, transform, union, type Shape,
} from '../../src/checks/shape.ts';

const reasons = <T>(s: Shape<T>, value: unknown) => {
  const r = parse(s, value);
  assert.equal(r.ok, false, `accepted ${JSON.stringify(value)}`);
  return (r as { issues: { path: (string | number)[]; message: string; code: string }[] }).issues
    .map((i) => `${i.path.join('.')}|${i.message}|${i.code}`);
};
const accepted = <T>(s: Shape<T>, value: unknown): T => {
  const r = parse(s, value);
  assert.ok(r.ok, `refused ${JSON.stringify(value)}: ${JSON.stringify(!r.ok && r.issues)}`);
  return r.value;
};

function deepFreeze(o: unknown, seen = new Set<unknown>()): void {
  if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) return;
  seen.add(o);
  for (const k of Reflect.ownKeys(o)) deepFreeze((o as Record<string | symbol, unknown>)[k], seen);
  Object.freeze(o);
}

describe('message checks', () => {
  it('scalars: types with zod\'s messages or the one given, and every failing rule', () => {
    assert.deepEqual(reasons(string(), 3), ['|Invalid input: expected string, received number|invalid_type']);
    assert.deepEqual(reasons(string('name must be a string'), null), ['|name must be a string|invalid_type']);
    assert.deepEqual(reasons(string(undefined, maxLength(2), pattern(/^a/, 'must start with a')), 'bcd'),
      ['|Too big: expected string to have <=2 characters|custom', '|must start with a|custom']);
    assert.deepEqual(reasons(number(), Number.NaN), ['|Invalid input: expected number, received NaN|invalid_type']);
    assert.deepEqual(reasons(number(), Infinity), ['|Invalid input: expected number, received Infinity|invalid_type']);
    assert.deepEqual(reasons(number(undefined, integer, min(1), max(5)), 0.5), ['|Invalid input: expected int, received number|custom', '|Too small: expected number to be >=1|custom']);
    assert.deepEqual(reasons(number(undefined, above(0)), 0), ['|Too small: expected number to be >0|custom']);
    assert.deepEqual(reasons(boolean(), 'true'), ['|Invalid input: expected boolean, received string|invalid_type']);
    assert.deepEqual(reasons(literal(true), false), ['|Invalid input: expected true|invalid_type']);
    assert.deepEqual(reasons(oneOf(['a', 'b']), 'c'), ['|Invalid option: expected one of "a"|"b"|invalid_type']);
    assert.equal(accepted(oneOf(['a', 'b']), 'b'), 'b');
    assert.equal(accepted(number(undefined, integer), 7), 7);
  });

  it('objects: every field checked with its path, unknown keys refused and named, absent optional fields left out', () => {
    const s = strictObject({ name: string(), tags: optional(array(string(), undefined, maxItems(2))), on: boolean() }, 'needs {name, on}');
    assert.deepEqual(accepted(s, { name: 'x', on: true }), { name: 'x', on: true });
    assert.deepEqual(accepted(s, { name: 'x', on: false, tags: undefined }), { name: 'x', on: false });
    assert.deepEqual(reasons(s, 'x'), ['|needs {name, on}|invalid_type']);
    assert.deepEqual(reasons(s, ['x']), ['|needs {name, on}|invalid_type']);
    assert.deepEqual(reasons(s, { name: 1, tags: ['a', 2, 'c'], command: 'rm', argv: [] }), [
      'name|Invalid input: expected string, received number|invalid_type',
      'tags.1|Invalid input: expected string, received number|invalid_type',
      'on|Invalid input: expected boolean, received undefined|invalid_type',
      '|Unrecognized keys: "command", "argv"|unrecognized_keys',
    ]);
    assert.deepEqual(reasons(s, JSON.parse('{"name":"x","on":true,"__proto__":{"polluted":1}}')), ['|Unrecognized key: "__proto__"|unrecognized_keys']);
    assert.deepEqual(reasons(s, { name: 'x', on: true, tags: ['a', 'b', 'c'] }), ['tags|Too big: expected array to have <=2 items|custom']);
  });

  it('loose objects: the listed fields checked as a strict object checks them, the others dropped; any value taken unread', () => {
    const s = object({ uid: string(), at: optional(number()), extra: optional(anyValue) }, 'needs {uid}');
    assert.deepEqual(accepted(s, { uid: 'u', command: 'rm', argv: [] }), { uid: 'u' });
    assert.deepEqual(accepted(s, { uid: 'u', extra: [1, { a: 2 }] }), { uid: 'u', extra: [1, { a: 2 }] });
    assert.deepEqual(reasons(s, 'x'), ['|needs {uid}|invalid_type']);
    assert.deepEqual(reasons(s, { uid: 1, at: 'now', command: 'rm' }), [
      'uid|Invalid input: expected string, received number|invalid_type',
      'at|Invalid input: expected number, received string|invalid_type',
    ]);
    const taken = accepted(s, JSON.parse('{"uid":"u","__proto__":{"polluted":1}}'));
    assert.deepEqual(Object.keys(taken), ['uid']);
    assert.equal(({} as { polluted?: number }).polluted, undefined);
  });

  it('arrays, records, unions and transforms', () => {
    assert.deepEqual(reasons(array(number(), 'a list of numbers', minItems(1, 'at least one')), []), ['|at least one|custom']);
    assert.deepEqual(reasons(array(number(), 'a list of numbers'), {}), ['|a list of numbers|invalid_type']);
    const r = record(string(undefined, pattern(/^\d+$/, 'digits')), string());
    assert.deepEqual(accepted(r, { 1: 'a' }), { 1: 'a' });
    assert.deepEqual(reasons(r, { x: 'a', 2: 3 }), ['2|Invalid input: expected string, received number|invalid_type', 'x|digits|custom']);
    const any = accepted(record(string(), number()), JSON.parse('{"__proto__":1,"a":2}'));
    assert.equal(Object.getPrototypeOf(any), Object.prototype);
    assert.deepEqual(Object.entries(any), [['__proto__', 1], ['a', 2]]);
    const u = union([string(undefined, pattern(/^\d+$/, 'digits')), transform(number(undefined, integer, above(0)), String)], 'an index');
    assert.equal(accepted(u, '3'), '3');
    assert.equal(accepted(u, 4), '4');
    assert.deepEqual(reasons(u, -1), ['|an index|invalid_union']);
  });

  it('a schema deeply frozen works as before (the worker shares it frozen between workflows)', () => {
    const s = strictObject({ index: string(undefined, pattern(/^\d+$/, 'digits')), n: optional(number(undefined, integer)), kind: oneOf(['a', 'b']) });
    deepFreeze(s);
    assert.deepEqual(accepted(s, { index: '1', kind: 'a' }), { index: '1', kind: 'a' });
    assert.deepEqual(reasons(s, { index: 'x', n: 1.5, kind: 'c', extra: 1 }), [
      'index|digits|custom', 'n|Invalid input: expected int, received number|custom',
      'kind|Invalid option: expected one of "a"|"b"|invalid_type', '|Unrecognized key: "extra"|unrecognized_keys',
    ]);
  });
});
