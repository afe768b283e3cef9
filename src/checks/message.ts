// The one check of an untrusted message (a signal's, an update's or a query's
// argument, a workflow's start input, a state carried across continue-as-new):
// measured first (limits.ts), so a value too big or too deep is refused by its
// size before any field is read; then checked field by field (shape.ts); and
// refused with a reason that names each problem by its path, cut short, so a
// refusal never carries much of what it refuses. Total: any value gives an answer.
import { MESSAGE_LIMITS, pastLimits, type ValueLimits } from './limits.ts';
import { parse, type Issue, type Shape } from './shape.ts';

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

export interface CheckOptions {
  /** What the value may hold before it is read (MESSAGE_LIMITS when absent). */
  limits?: ValueLimits;
  /** How many problems a refusal names (4 when absent); the others are counted. */
  problems?: number;
}

/** Each problem at most this long: a path can hold any key a sender chose. */
const PROBLEM_MAX = 200;

/** At most `max` characters, control characters shown as `?`. */
export const cut = (s: string, max = PROBLEM_MAX): string => (s.length > max ? `${s.slice(0, max)}…` : s).replace(/[\u0000-\u001f\u007f]/g, '?');

/** The problems of a refused value: the first `shown`, each by its path, and how many more. */
export function describeProblems(issues: readonly Issue[], shown = 4): string {
  const named = issues.slice(0, shown).map((i) => cut(i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message));
  const more = issues.length > shown ? `; and ${issues.length - shown} more` : '';
  return `${named.join('; ')}${more}`;
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
  return { ok: false, reason: `${what}: ${describeProblems(r.issues, options.problems)}` };
}
