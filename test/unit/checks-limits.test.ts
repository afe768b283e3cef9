// pastLimits (src/checks/limits.ts): the first check of any untrusted message.
// Total (never throws: deep nesting, cycles, throwing getters and proxies),
// each bound reported by name exactly past it and not at it, and its cost that
// of the bound, not of the value.
import assert from 'node:assert/strict';
import { MESSAGE_LIMITS, pastLimits, type ValueLimits } from '../../src/checks/limits.ts';

function nested(depth: number, as: 'array' | 'object', inner: unknown = 0): unknown {
  let v = inner;
  for (let i = 0; i < depth; i++) v = as === 'array' ? [v] : { a: v };
  return v;
}

const small: ValueLimits = { maxDepth: 3, maxNodes: 10, maxChars: 20 };

describe('pastLimits: bounded walk of untrusted values', () => {
  it('takes what tend itself sends (a typical message) within MESSAGE_LIMITS', () => {
    assert.equal(pastLimits({ requests: [{ operation: 'fix', machine_type: 'sim', address: '10.0.0.1' }] }), undefined);
    assert.equal(pastLimits(null), undefined);
    assert.equal(pastLimits('x'), undefined);
    assert.equal(pastLimits([]), undefined);
  });

  it('depth: at the bound taken, one past it refused with the bound named', () => {
    assert.equal(pastLimits(nested(3, 'array'), small), undefined);
    assert.equal(pastLimits(nested(3, 'object'), small), undefined);
    assert.equal(pastLimits(nested(4, 'array'), small), 'nested deeper than 3 levels');
    assert.equal(pastLimits(nested(4, 'object'), small), 'nested deeper than 3 levels');
    assert.equal(pastLimits(nested(MESSAGE_LIMITS.maxDepth, 'array')), undefined);
    assert.equal(pastLimits(nested(MESSAGE_LIMITS.maxDepth + 1, 'array')), `nested deeper than ${MESSAGE_LIMITS.maxDepth} levels`);
  });

  it('nodes: at the bound taken, one past it refused', () => {
    // An array of 9 scalars is 10 values with the array itself.
    assert.equal(pastLimits(Array.from({ length: 9 }, () => 0), small), undefined);
    assert.equal(pastLimits(Array.from({ length: 10 }, () => 0), small), 'more than 10 values in all');
    // Keys count as values: {k0..k4} is 1 object + 5 keys + 5 scalars = 11.
    assert.equal(pastLimits(Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`k${i}`, 0])), small), undefined);
    assert.equal(pastLimits(Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`k${i}`, 0])), small), 'more than 10 values in all');
  });

  it('characters: strings and keys together, at the bound taken, one past it refused', () => {
    assert.equal(pastLimits('x'.repeat(20), small), undefined);
    assert.equal(pastLimits('x'.repeat(21), small), 'more than 20 characters of text in all');
    assert.equal(pastLimits({ ['k'.repeat(10)]: 'v'.repeat(10) }, small), undefined);
    assert.equal(pastLimits({ ['k'.repeat(10)]: 'v'.repeat(11) }, small), 'more than 20 characters of text in all');
    assert.equal(pastLimits('x'.repeat(MESSAGE_LIMITS.maxChars)), undefined);
    assert.equal(pastLimits('x'.repeat(MESSAGE_LIMITS.maxChars + 1)), `more than ${MESSAGE_LIMITS.maxChars} characters of text in all`);
  });

  it('never throws on deep nesting (100,000 levels), cycles, throwing getters and proxies', () => {
    assert.equal(pastLimits(nested(100_000, 'array')), `nested deeper than ${MESSAGE_LIMITS.maxDepth} levels`);
    assert.equal(pastLimits(nested(100_000, 'object')), `nested deeper than ${MESSAGE_LIMITS.maxDepth} levels`);
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    assert.equal(typeof pastLimits(loop), 'string', 'a cycle is past the depth bound, not an endless walk');
    const getter = { get bad(): unknown {
      throw new Error('boom');
    } };
    assert.equal(pastLimits(getter), 'it could not be read');
    const trap = new Proxy({}, {
      ownKeys() {
        throw new Error('no keys');
      },
    });
    assert.equal(pastLimits(trap), 'it could not be read');
    const arrayTrap = new Proxy([1, 2], {
      get(t, k) {
        if (k === Symbol.iterator || k === 'length') throw new Error('no');
        return Reflect.get(t, k);
      },
    });
    assert.equal(typeof pastLimits(arrayTrap), 'string');
  });

  it('costs what the bound costs: a 5,000,000-item array is refused without walking it', () => {
    const huge = new Array(5_000_000).fill(0);
    const t0 = performance.now();
    for (let i = 0; i < 100; i++) assert.equal(pastLimits(huge), `more than ${MESSAGE_LIMITS.maxNodes} values in all`);
    const perCall = (performance.now() - t0) / 100;
    assert.ok(perCall < 5, `${perCall.toFixed(2)} ms a call`);
  });

  it('a huge string is refused at once (one length read), however long', () => {
    const s = 'x'.repeat(50_000_000);
    const t0 = performance.now();
    assert.equal(pastLimits([s]), `more than ${MESSAGE_LIMITS.maxChars} characters of text in all`);
    assert.ok(performance.now() - t0 < 50);
  });
});
