// The one check of an untrusted message (a signal's, an update's or a query's
// argument, a workflow's start input, a state carried across continue-as-new):
// measured first (limits.ts), so a value too big or too deep is refused by its
// size before any field is read; then checked field by field (shape.ts); and
// refused with a reason that names each problem by its path (`requests[0].address`),
// with a preview of what came where the type was wrong, cut short, so a refusal
// never carries much of what it refuses. Total: any value gives an answer.
import { MESSAGE_LIMITS, pastLimits, type ValueLimits } from './limits.ts';
import { preview } from './preview.ts';
import { parse, type Issue, type Path, type Shape } from './shape.ts';

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

export interface CheckOptions {
  /** What the value may hold before it is read (MESSAGE_LIMITS when absent). */
  limits?: ValueLimits;
  /** How many problems a refusal names (4 when absent); the others are counted. */
  problems?: number;
}

/** Each problem at most this long: a path can hold any key a sender chose. */
const PROBLEM_MAX = 200;
/** The problems of one refusal together, at most this long (it goes into history, logs and the CLI's error). */
const PROBLEMS_MAX = 1000;
/** What came, shown beside a problem, at most this long. */
const GOT_MAX = 60;
/** Path segments shown, at most (the value's depth is bounded, but a shape may nest deeper than it shows). */
const PATH_MAX = 10;

/** At most `max` characters, control characters shown as `?`. */
export const cut = (s: string, max = PROBLEM_MAX): string => (s.length > max ? `${s.slice(0, max)}…` : s).replace(/[\u0000-\u001f\u007f]/g, '?');

/** A path as code would write it: `requests[0].address`; a key that is not a plain name is quoted, `["a b"]`. */
export function pathText(path: Path): string {
  const shown = path.slice(0, PATH_MAX).map((p) => (typeof p === 'number' ? `[${p}]` : /^[\w-]{1,64}$/.test(p) ? `.${p}` : `[${preview(p, 40)}]`));
  return `${shown.join('').replace(/^\./, '')}${path.length > PATH_MAX ? '…' : ''}`;
}

/** The value at `path` in `value`, own fields only; undefined when it is absent (or cannot be read). */
function at(value: unknown, path: Path): unknown {
  let v = value;
  try {
    for (const p of path) {
      if (typeof v !== 'object' || v === null || !Object.hasOwn(v, p)) return undefined;
      v = (v as Record<string | number, unknown>)[p];
    }
    return v;
  } catch {
    return undefined;
  }
}

/**
 * One problem: its path, its message and, where the value was of the wrong kind or a scalar
 * broke a rule, a preview of what came.
 */
function problem(issue: Issue, value: unknown): string {
  const where = issue.path.length ? `${pathText(issue.path)}: ` : '';
  const v = issue.code === 'invalid_type' || issue.code === 'custom' ? at(value, issue.path) : undefined;
  // Nothing there (a field missing) shows nothing; a rule broken by a list or an object (too many
  // items) is named by the rule alone, and so is text the rule's message quotes already.
  const ruled = issue.code === 'custom';
  const shown = v === undefined || (ruled && typeof v === 'object' && v !== null) ? '' : preview(v, GOT_MAX);
  const got = shown !== '' && !(ruled && typeof v === 'string' && issue.message.includes(shown)) ? ` (got ${shown})` : '';
  return cut(`${where}${issue.message}${got}`);
}

/** The problems of a refused value: the first `shown`, each by its path, and how many more; at most PROBLEMS_MAX characters. */
export function describeProblems(issues: readonly Issue[], value: unknown, shown = 4): string {
  const named = issues.slice(0, shown).map((i) => problem(i, value));
  const more = issues.length > shown ? `; and ${issues.length - shown} more` : '';
  return cut(`${named.join('; ')}${more}`, PROBLEMS_MAX);
}

/** `value` checked against `schema`; a refusal's reason starts with `what`. */
export function checkMessage<T>(schema: Shape<T>, value: unknown, what: string, options: CheckOptions = {}): Checked<T> {
  const past = pastLimits(value, options.limits ?? MESSAGE_LIMITS);
  if (past !== undefined) return { ok: false, reason: `${what}: refused unread: ${past}` };
  let r: ReturnType<typeof parse<T>>;
  try {
    r = parse(schema, value);
  } catch {
    // Payloads are plain JSON; a getter or proxy (only in-process) is refused all the same.
    return { ok: false, reason: `${what}: refused: it could not be read` };
  }
  if (r.ok) return r;
  return { ok: false, reason: `${what}: ${describeProblems(r.issues, value, options.problems)}` };
}
