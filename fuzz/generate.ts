// The message fuzzer's values: random JSON, values at and past each bound,
// deep nesting, huge arrays and strings, wrong types and awkward unicode, all
// drawn from one seeded generator so that a seed gives the same run. Pure: no
// I/O, no clock. Unit-tested in test/unit/fuzz-generate.test.ts.
import { rng } from '../faults/report.ts';

export { rng };

/** How a message was made: the report's notes and the violations name it. */
export const FAMILIES = ['valid', 'random', 'boundary', 'deep', 'huge', 'wrong-type', 'unicode', 'forged', 'arity'] as const;
export type Family = (typeof FAMILIES)[number];

/** A draw from the run's generator, with the helpers every family uses. */
export class Draw {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = rng(seed);
  }

  /** A whole number in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick: nothing to pick from');
    return items[this.int(items.length)]!;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** Strings a handler may choke on: control characters, lone surrogates, right-to-left marks, combining marks, NUL. */
export const AWKWARD_STRINGS: readonly string[] = [
  '', ' ', '\u0000', '\u0000abc', 'a\nb\r\nc', '\t', '\u007f', '\u001b[31mred\u001b[0m', '\ud800', '\udfff', 'x\ud800y',
  '\u202eevil', '\u200b', '\ufeff', 'e\u0301', 'İ', 'ß', '😀', '👩‍👩‍👧‍👦', '𝕏', '漢字', 'ｆｕｌｌ', '../../etc/passwd', '%s%n%x', '${jndi:x}',
  '__proto__', 'constructor', 'toString', 'null', 'undefined', 'NaN', '-0', '1e309', '9007199254740993', '0x10', ' 1 ', '1.0',
];

/** Scalars of every JSON type, and the numbers at the edges of what JSON and JavaScript agree on. */
export const AWKWARD_SCALARS: readonly unknown[] = [
  null, true, false, 0, -0, 1, -1, 0.5, 1e21, -1e21, 2 ** 31, 2 ** 31 - 1, 2 ** 53, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER,
  Number.MAX_VALUE, Number.MIN_VALUE, 1e308, -1e308, '', 'x',
];

/** A random JSON value of at most `depth` levels. */
export function randomJson(d: Draw, depth = 3): unknown {
  const k = d.int(depth > 0 ? 7 : 4);
  switch (k) {
    case 0: return d.pick(AWKWARD_SCALARS);
    case 1: return d.pick(AWKWARD_STRINGS);
    case 2: return d.int(2) ? d.int(1_000_000) - 500_000 : d.next() * 1e12;
    case 3: return randomString(d, d.int(40));
    case 4:
    case 5: return Array.from({ length: d.int(5) }, () => randomJson(d, depth - 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = d.int(5); i > 0; i--) o[d.chance(0.3) ? d.pick(AWKWARD_STRINGS) : randomString(d, 1 + d.int(12))] = randomJson(d, depth - 1);
      return o;
    }
  }
}

/** `n` characters, from printable ASCII mostly, some from anywhere in the BMP and beyond. */
export function randomString(d: Draw, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) {
    const r = d.next();
    if (r < 0.8) s += String.fromCharCode(32 + d.int(95));
    else if (r < 0.95) s += String.fromCharCode(d.int(0x10000));
    else s += String.fromCodePoint(0x10000 + d.int(0x10ffff - 0x10000));
  }
  return s;
}

/** Arrays (or objects, `{"a": ...}`) nested `depth` deep around `inner`, built without recursion. */
export function nested(depth: number, inner: unknown = 0, as: 'array' | 'object' = 'array'): unknown {
  let v = inner;
  for (let i = 0; i < depth; i++) v = as === 'array' ? [v] : { a: v };
  return v;
}

/** The depth of a value's nesting, measured without recursion (for tests and notes). */
export function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: { v: unknown; depth: number }[] = [{ v: value, depth: 0 }];
  while (stack.length) {
    const { v, depth } = stack.pop()!;
    if (v === null || typeof v !== 'object') {
      deepest = Math.max(deepest, depth);
      continue;
    }
    const items = Array.isArray(v) ? v : Object.values(v);
    if (items.length === 0) deepest = Math.max(deepest, depth + 1);
    for (const item of items) stack.push({ v: item, depth: depth + 1 });
  }
  return deepest;
}

/** A path to a place in a value: keys and indexes. */
export type Path = (string | number)[];

/** Every path in `value` (breadth first, at most `max`), the root first. */
export function pathsOf(value: unknown, max = 200): Path[] {
  const out: Path[] = [];
  const queue: { v: unknown; path: Path }[] = [{ v: value, path: [] }];
  while (queue.length && out.length < max) {
    const { v, path } = queue.shift()!;
    out.push(path);
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) v.forEach((item, i) => queue.push({ v: item, path: [...path, i] }));
    else for (const [k, item] of Object.entries(v)) queue.push({ v: item, path: [...path, k] });
  }
  return out;
}

export function getAt(value: unknown, path: Path): unknown {
  let v = value;
  for (const p of path) v = v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[p] : undefined;
  return v;
}

/** A copy of `value` (JSON values only) with the place at `path` replaced by `replacement`. */
export function setAt(value: unknown, path: Path, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  const copy: Record<string | number, unknown> | unknown[] = Array.isArray(value) ? [...value] : { ...(value as Record<string, unknown>) };
  (copy as Record<string | number, unknown>)[head!] = setAt((value as Record<string | number, unknown>)[head!], rest, replacement);
  return copy;
}

/** A value of another JSON type than `v`. */
export function wrongTypeOf(d: Draw, v: unknown): unknown {
  const others: unknown[] = [null, 0, -1, 1.5, '', 'x', true, false, [], {}, [v], { value: v }, 1e308];
  const kind = (x: unknown) => (x === null ? 'null' : Array.isArray(x) ? 'array' : typeof x);
  const choices = others.filter((o) => kind(o) !== kind(v));
  return d.pick(choices);
}

/**
 * A bound the fuzzer aims at: a length (of a string or an array) or a count.
 * Read from the exported constants of the messages modules, and the shared value limits.
 */
export interface Bound {
  /** Where it comes from, e.g. `src/safety/messages.ts REASON_MAX`. */
  name: string;
  value: number;
}

/** A string of exactly `n` characters (cheap for any n: a repeated pattern). */
export function sized(n: number, unit = 'x'): string {
  return unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
}

/** Just below, at and just above a bound (never negative). */
export function around(b: number): number[] {
  return [...new Set([b - 1, b, b + 1])].filter((n) => n >= 0);
}

/**
 * A value at a bound placed at `path` of a valid template: a string or an array of
 * that length where the template has one (or anything, at the root), or a number there.
 */
export function boundaryAt(template: unknown, path: Path, n: number, d: Draw): unknown {
  const here = getAt(template, path);
  if (typeof here === 'number') return setAt(template, path, d.pick([n, -n, n + 0.5]));
  if (Array.isArray(here)) {
    const item = here.length ? here[0] : 0;
    // Huge arrays repeat one item: the payload stays what is measured, not the generator's cost.
    return setAt(template, path, Array.from({ length: n }, () => item));
  }
  return setAt(template, path, sized(n, d.pick(['x', 'é', '😀', 'a\u0000'])));
}

/** Most bytes a fuzzer message may have: past the server's 2 MB payload limit (a refusal to see) but short of its 4 MB gRPC limit. */
export const MAX_MESSAGE_BYTES = 3 * 1024 * 1024;

/** A rough JSON size of a value, computed without building its text (stops counting past `stop`). */
export function approxBytes(value: unknown, stop = MAX_MESSAGE_BYTES * 2): number {
  let bytes = 0;
  const stack: unknown[] = [value];
  while (stack.length && bytes <= stop) {
    const v = stack.pop();
    if (typeof v === 'string') bytes += v.length * 2 + 2;
    else if (v === null || typeof v !== 'object') bytes += 8;
    else if (Array.isArray(v)) {
      bytes += 2 + v.length;
      for (const x of v) stack.push(x);
    } else {
      for (const [k, x] of Object.entries(v)) {
        bytes += k.length + 4;
        stack.push(x);
      }
    }
  }
  return bytes;
}

/**
 * JSON text of a JSON value, written without recursion: JSON.stringify throws
 * (RangeError) on a value nested a few thousand deep, which an attacker's
 * client need not be limited by (the temporal CLI sends such text as it is).
 */
export function jsonText(value: unknown): string {
  const out: string[] = [];
  const stack: ({ text: string } | { value: unknown })[] = [{ value }];
  while (stack.length) {
    const next = stack.pop()!;
    if ('text' in next) {
      out.push(next.text);
      continue;
    }
    const v = next.value;
    if (v === null || typeof v !== 'object') {
      out.push(v === undefined ? 'null' : JSON.stringify(v) ?? 'null');
      continue;
    }
    if (Array.isArray(v)) {
      out.push('[');
      stack.push({ text: ']' });
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ value: v[i] });
        if (i > 0) stack.push({ text: ',' });
      }
      continue;
    }
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    out.push('{');
    stack.push({ text: '}' });
    for (let i = entries.length - 1; i >= 0; i--) {
      stack.push({ value: entries[i]![1] });
      stack.push({ text: `${JSON.stringify(entries[i]![0])}:` });
      if (i > 0) stack.push({ text: ',' });
    }
  }
  return out.join('');
}
