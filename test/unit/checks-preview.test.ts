// preview (src/checks/preview.ts): the rendering of untrusted values in
// refusals and log lines. Total on anything a message or a hostile caller can
// hand it (deep nesting, cycles, throwing getters and proxies, huge strings
// and arrays), never longer than its bound, and quick whatever the value's size.
import assert from 'node:assert/strict';
import { preview } from '../../src/checks/preview.ts';

/** Arrays (or objects) nested `depth` deep, built without recursion. */
function nested(depth: number, as: 'array' | 'object', inner: unknown = 0): unknown {
  let v = inner;
  for (let i = 0; i < depth; i++) v = as === 'array' ? [v] : { a: v };
  return v;
}

/** The bound and the ellipsis that marks a cut. */
const within = (s: string, max: number) => assert.ok(s.length <= max + 1, `${s.length} characters for a bound of ${max}: ${s.slice(0, 200)}`);

describe('preview: bounded, total rendering of untrusted values', () => {
  it('renders small JSON values as JSON does', () => {
    assert.equal(preview({ a: [1, 'x', null, true] }), JSON.stringify({ a: [1, 'x', null, true] }));
    assert.equal(preview('a"b'), JSON.stringify('a"b'));
    assert.equal(preview([]), '[]');
    assert.equal(preview({}), '{}');
    assert.equal(preview(null), 'null');
  });

  it('never throws on deep nesting, where JSON.stringify does (100,000 levels, arrays and objects)', () => {
    for (const as of ['array', 'object'] as const) {
      const v = nested(100_000, as);
      assert.throws(() => JSON.stringify(v), RangeError, 'JSON.stringify throws here: the case preview exists for');
      const s = preview(v, 80);
      within(s, 80);
      assert.ok(s.endsWith('…'), `a cut is marked: ${s}`);
      assert.ok(s.startsWith(as === 'array' ? '[[[' : '{"a":{"a":'), s);
    }
  });

  it('never throws on cycles, BigInt, functions, symbols and undefined', () => {
    const a: Record<string, unknown> = { name: 'loop' };
    a.self = a;
    const list: unknown[] = [1];
    list.push(list);
    for (const v of [a, list, 10n, { n: 10n }, () => 1, Symbol('s'), undefined, [undefined], { u: undefined }]) {
      const s = preview(v, 60);
      assert.equal(typeof s, 'string');
      within(s, 60);
    }
    assert.equal(preview(10n), '10n');
  });

  it('a getter or proxy that throws ends the rendering, marked as cut', () => {
    const getter = { ok: 1, get bad(): unknown {
      throw new Error('boom');
    } };
    const s = preview(getter, 100);
    assert.ok(s.startsWith('{'), s);
    assert.ok(s.endsWith('…'), s);
    const trap = new Proxy({}, {
      ownKeys() {
        throw new Error('no keys');
      },
    });
    within(preview(trap, 50), 50);
    const getTrap = new Proxy({ a: 1 }, {
      get() {
        throw new Error('no get');
      },
    });
    within(preview(getTrap, 50), 50);
    const arrayProxy = new Proxy([1, 2, 3], {
      get(t, k) {
        if (k === 'length') throw new Error('no length');
        return Reflect.get(t, k);
      },
    });
    within(preview(arrayProxy, 50), 50);
  });

  it('is bounded by its max on huge strings, arrays, objects and keys, and says where it cut', () => {
    const cases: unknown[] = [
      'x'.repeat(10_000_000),
      Array.from({ length: 1_000_000 }, (_, i) => i),
      Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i])),
      { ['k'.repeat(1_000_000)]: 1 },
      ['😀'.repeat(100_000)],
    ];
    for (const max of [0, 1, 5, 120, 1000]) {
      for (const v of cases) {
        const s = preview(v, max);
        within(s, max);
        // Cut by the bound (a trailing ellipsis), or a string cut short inside its quotes.
        assert.ok(max === 0 || s.includes('…'), `the cut is marked (max ${max}): ${s.slice(0, 80)}`);
      }
    }
  });

  it('costs what its bound costs, not what the value costs (a huge array, a huge object: well under a second)', () => {
    const big = Array.from({ length: 2_000_000 }, () => ({ a: 'x'.repeat(10) }));
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) preview(big, 120);
    const perCall = (performance.now() - t0) / 1000;
    assert.ok(perCall < 5, `${perCall.toFixed(2)} ms a call`);
  });

  it('unicode: lone surrogates and control characters are escaped as JSON escapes them, never raw', () => {
    const s = preview({ s: '\u0000\u001b[31m\ud800\n' });
    assert.equal(s, JSON.stringify({ s: '\u0000\u001b[31m\ud800\n' }));
    assert.doesNotMatch(s, /[\u0000-\u001f]/);
  });

  it('the default bound is a short prefix', () => {
    within(preview('y'.repeat(100_000)), 120);
  });
});
