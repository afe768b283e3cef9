// Checks for the messages that reach tend through Temporal (workflow inputs,
// updates, signals, what a run carries across continue-as-new), field by field,
// with a reason naming the path of each problem.
//
// Workflow code runs these, so they are written for the workflow sandbox: plain
// closures that never change after they are built. The worker loads this module
// and the schemas built with it once and shares them, frozen, between every
// workflow it keeps in its cache (src/workers/worker.ts, sharedWorkflowModules).
// zod, which checks tend's configuration, cannot be shared that way (it adds
// members to a schema on first use) and, evaluated again for each workflow,
// costs about 1 MiB of heap and 15 ms per cached workflow
// (npm run bench -- workflow-memory). The default messages follow zod's, so
// that a refusal reads the same wherever it is made.

export type Path = (string | number)[];

export interface Issue {
  /** Where: the keys and indexes from the checked value to the field. */
  path: Path;
  message: string;
  /** `invalid_type` at the root: the value is not even the right kind of thing. */
  code: 'invalid_type' | 'unrecognized_keys' | 'invalid_union' | 'custom';
}

const INVALID: unique symbol = Symbol('invalid');
type Invalid = typeof INVALID;

export interface Shape<T> {
  /** The checked value, or INVALID after adding the problems to `issues`. */
  readonly run: (value: unknown, path: Path, issues: Issue[]) => T | Invalid;
  readonly optional: boolean;
}
export interface OptionalShape<T> extends Shape<T | undefined> {
  readonly optional: true;
}
export type Infer<S> = S extends Shape<infer T> ? T : never;

/** A check of a value of the right type: what is wrong with it, or undefined. */
export type Rule<T> = (value: T) => string | undefined;

/** The type of a value, as the default messages name it. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : Number.isFinite(value) ? 'number' : 'Infinity';
  return typeof value;
}

const expected = (what: string, value: unknown) => `Invalid input: expected ${what}, received ${kindOf(value)}`;

function shape<T>(run: Shape<T>['run']): Shape<T> {
  return Object.freeze({ run, optional: false });
}

/** Runs every rule; each that fails adds its message. */
function ruled<T>(value: T, rules: readonly Rule<T>[], path: Path, issues: Issue[]): T | Invalid {
  let ok = true;
  for (const rule of rules) {
    const message = rule(value);
    if (message !== undefined) {
      issues.push({ path, message, code: 'custom' });
      ok = false;
    }
  }
  return ok ? value : INVALID;
}

// ------------------------------------------------------------------ scalars

export function string(error?: string, ...rules: Rule<string>[]): Shape<string> {
  return shape((value, path, issues) => {
    if (typeof value !== 'string') {
      issues.push({ path, message: error ?? expected('string', value), code: 'invalid_type' });
      return INVALID;
    }
    return ruled(value, rules, path, issues);
  });
}

export function number(error?: string, ...rules: Rule<number>[]): Shape<number> {
  return shape((value, path, issues) => {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      issues.push({ path, message: error ?? expected('number', value), code: 'invalid_type' });
      return INVALID;
    }
    return ruled(value, rules, path, issues);
  });
}

export function boolean(error?: string): Shape<boolean> {
  return shape((value, path, issues) => {
    if (typeof value === 'boolean') return value;
    issues.push({ path, message: error ?? expected('boolean', value), code: 'invalid_type' });
    return INVALID;
  });
}

export function literal<const V extends string | number | boolean>(wanted: V): Shape<V> {
  return shape((value, path, issues) => {
    if (value === wanted) return wanted;
    issues.push({ path, message: `Invalid input: expected ${JSON.stringify(wanted)}`, code: 'invalid_type' });
    return INVALID;
  });
}

/** One of a list of strings. */
export function oneOf<const V extends readonly string[]>(values: V, error?: string): Shape<V[number]> {
  const message = error ?? `Invalid option: expected one of ${values.map((v) => JSON.stringify(v)).join('|')}`;
  return shape((value, path, issues) => {
    if (typeof value === 'string' && values.includes(value)) return value as V[number];
    issues.push({ path, message, code: 'invalid_type' });
    return INVALID;
  });
}

// ------------------------------------------------------------------ rules

export const pattern = (re: RegExp, message: string): Rule<string> => (s) => (re.test(s) ? undefined : message);
export const minLength = (n: number, message = `Too small: expected string to have >=${n} characters`): Rule<string> =>
  (s) => (s.length >= n ? undefined : message);
export const maxLength = (n: number, message = `Too big: expected string to have <=${n} characters`): Rule<string> =>
  (s) => (s.length <= n ? undefined : message);
export const integer: Rule<number> = (n) => (Number.isSafeInteger(n) ? undefined : 'Invalid input: expected int, received number');
export const min = (n: number): Rule<number> => (v) => (v >= n ? undefined : `Too small: expected number to be >=${n}`);
export const max = (n: number): Rule<number> => (v) => (v <= n ? undefined : `Too big: expected number to be <=${n}`);
export const above = (n: number): Rule<number> => (v) => (v > n ? undefined : `Too small: expected number to be >${n}`);
export const minItems = (n: number, message = `Too small: expected array to have >=${n} items`): Rule<readonly unknown[]> =>
  (a) => (a.length >= n ? undefined : message);
export const maxItems = (n: number, message = `Too big: expected array to have <=${n} items`): Rule<readonly unknown[]> =>
  (a) => (a.length <= n ? undefined : message);

// ------------------------------------------------------------------ structures

export function array<T>(item: Shape<T>, error?: string, ...rules: Rule<T[]>[]): Shape<T[]> {
  return shape((value, path, issues) => {
    if (!Array.isArray(value)) {
      issues.push({ path, message: error ?? expected('array', value), code: 'invalid_type' });
      return INVALID;
    }
    const out: T[] = [];
    let ok = true;
    for (const [i, v] of value.entries()) {
      const r = item.run(v, [...path, i], issues);
      if (r === INVALID) ok = false;
      else out.push(r);
    }
    if (!ok) return INVALID;
    return ruled(out, rules, path, issues);
  });
}

type Entries = Record<string, Shape<unknown>>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
export type ObjectOf<E extends Entries> = Simplify<
  { [K in keyof E as E[K] extends { optional: true } ? never : K]: Infer<E[K]> } &
  { [K in keyof E as E[K] extends { optional: true } ? K : never]?: Infer<E[K]> }
>;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * An object with exactly these fields: a field not listed is refused (`Unrecognized key: "x"`),
 * never dropped, so a command slipped into a message is seen and refused.
 */
export function strictObject<E extends Entries>(entries: E, error?: string): Shape<ObjectOf<E>> {
  const keys = Object.keys(entries);
  return shape((value, path, issues) => {
    if (!isRecord(value)) {
      issues.push({ path, message: error ?? expected('object', value), code: 'invalid_type' });
      return INVALID;
    }
    const out: Record<string, unknown> = {};
    let ok = true;
    for (const key of keys) {
      const field = entries[key]!;
      const present = Object.hasOwn(value, key);
      if (!present && field.optional) continue;
      const r = field.run(present ? value[key] : undefined, [...path, key], issues);
      if (r === INVALID) ok = false;
      else if (r !== undefined) out[key] = r;
    }
    const unknown = Object.keys(value).filter((k) => !Object.hasOwn(entries, k));
    if (unknown.length > 0) {
      issues.push({ path, message: `Unrecognized key${unknown.length > 1 ? 's' : ''}: ${unknown.map((k) => JSON.stringify(k)).join(', ')}`, code: 'unrecognized_keys' });
      ok = false;
    }
    return ok ? out as ObjectOf<E> : INVALID;
  });
}

/**
 * An object with at least these fields: a field not listed is dropped, not refused. For the
 * signals whose readers always ignored fields they do not take (a running workflow that took such
 * a message must replay the same way); anything that may carry a command is a strictObject.
 */
export function object<E extends Entries>(entries: E, error?: string): Shape<ObjectOf<E>> {
  const strict = strictObject(entries, error);
  return shape((value, path, issues) => {
    if (!isRecord(value)) return strict.run(value, path, issues);
    const listed: Record<string, unknown> = {};
    for (const key of Object.keys(entries)) if (Object.hasOwn(value, key)) listed[key] = value[key];
    return strict.run(listed, path, issues);
  });
}

/** Any value, unread: its parts are checked by the caller (a list whose bad items are skipped, not refused). */
export const anyValue: Shape<unknown> = shape((value) => value);

/** An object used as a map: every key checked by `key`, every value by `value`. */
export function record<V>(key: Shape<string>, value: Shape<V>): Shape<Record<string, V>> {
  return shape((input, path, issues) => {
    if (!isRecord(input)) {
      issues.push({ path, message: expected('record', input), code: 'invalid_type' });
      return INVALID;
    }
    const out: Record<string, V> = {};
    let ok = true;
    for (const [k, v] of Object.entries(input)) {
      const rk = key.run(k, [...path, k], issues);
      const rv = value.run(v, [...path, k], issues);
      if (rk === INVALID || rv === INVALID) ok = false;
      // Defined, not assigned: a key "__proto__" is a key like any other, never the result's prototype.
      else Object.defineProperty(out, rk, { value: rv, enumerable: true, writable: true, configurable: true });
    }
    return ok ? out : INVALID;
  });
}

/** Absent, or undefined, or what `inner` accepts. */
export function optional<T>(inner: Shape<T>): OptionalShape<T> {
  return Object.freeze({ run: (value: unknown, path: Path, issues: Issue[]) => (value === undefined ? undefined : inner.run(value, path, issues)), optional: true as const });
}

/** The first of `shapes` that accepts the value; when none does, one issue with `error`. */
export function union<S extends readonly Shape<unknown>[]>(shapes: S, error: string): Shape<Infer<S[number]>> {
  return shape((value, path, issues) => {
    for (const s of shapes) {
      const r = s.run(value, path, []);
      if (r !== INVALID) return r as Infer<S[number]>;
    }
    issues.push({ path, message: error, code: 'invalid_union' });
    return INVALID;
  });
}

/** What `inner` accepts, turned into something else. */
export function transform<T, U>(inner: Shape<T>, fn: (value: T) => U): Shape<U> {
  return shape((value, path, issues) => {
    const r = inner.run(value, path, issues);
    return r === INVALID ? INVALID : fn(r);
  });
}

/** A time as Kubernetes and Temporal write one: `2026-01-01T00:00:00Z`, fractions and offsets allowed. */
export const rfc3339 = string(undefined, pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/, 'must be an RFC 3339 time'));

// ------------------------------------------------------------------ use

export type Parsed<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };

export function parse<T>(s: Shape<T>, value: unknown): Parsed<T> {
  const issues: Issue[] = [];
  const r = s.run(value, [], issues);
  return r === INVALID ? { ok: false, issues } : { ok: true, value: r };
}
