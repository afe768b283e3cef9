// The bounds of configured values. Every duration, timeout and interval has a longest value: Node
// fires a timer of more than 2^31 - 1 ms (24.8 days) at once, and a wait of months in a
// remediation is a typing error more often than a plan. Every name that becomes part of a
// Temporal id, a task queue or a metric label has a longest length. Each bound is named in the
// problem that refuses a value past it (with the setting's path and line, src/config/problems.ts).
import { z } from 'zod';

/** A longest wait, in seconds, and how an operator reads it. */
export interface Bound {
  seconds: number;
  words: string;
}

export const A_DAY: Bound = { seconds: 86_400, words: 'a day' };
export const A_WEEK: Bound = { seconds: 7 * 86_400, words: 'a week' };

/** The problem of a value past `bound`. */
export const pastBound = (bound: Bound, unit = `${bound.seconds} seconds`) => `must be at most ${unit} (${bound.words})`;

/** Whole seconds from 0 to `bound`. */
export function secondsSchema(bound: Bound) {
  return z.number({ error: 'must be a whole number of seconds' }).int('must be a whole number of seconds')
    .min(0, 'must be 0 or more seconds').max(bound.seconds, pastBound(bound));
}

/** A count from 0 up (retries): no bound of time, each attempt's wait is bounded on its own. */
export function countSchema() {
  return z.number({ error: 'must be a whole number' }).int('must be a whole number').min(0, 'must be 0 or more');
}

/** The longest task queue name tend takes (the server's own limit is longer). */
export const TASK_QUEUE_MAX = 200;

/** A Temporal task queue name: the worker polls it and every workflow of tend is started on it. */
export const taskQueueSchema = z.string({ error: 'must be a task queue name' }).min(1, 'must name a task queue: it must not be empty')
  .max(TASK_QUEUE_MAX, `must be at most ${TASK_QUEUE_MAX} characters`)
  .refine((q) => q.trim() === q && !/[\s\u0000-\u001f]/.test(q), 'must be a task queue name without spaces or control characters');

/** The longest Temporal namespace name tend takes. */
export const NAMESPACE_MAX = 255;

/**
 * The longest machine type and operation name: the repair queue's messages take no longer
 * (REPAIR_KEY_MAX in src/repair/messages.ts, which test/unit/config-bounds.test.ts holds equal),
 * and both go into the entry's summary and its metrics labels.
 */
export const REPAIR_NAME_MAX = 63;

/** A string of 1 to `max` characters, the bound named when past it. */
export const boundedName = (max: number) => z.string().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

/**
 * The longest host:port: a DNS name of at most 253 characters (a bracketed IPv6 address is
 * shorter), ":" and a port of at most 5 digits.
 */
export const ADDRESS_MAX = 253 + 1 + 5;

/** The longest file path tend takes: Linux's PATH_MAX. */
export const PATH_MAX = 4096;

/** The longest kubeconfig context name tend takes (cloud providers' are about 100). */
export const CONTEXT_MAX = 1024;

/**
 * `schema` refusing a string past `max` characters before any other check, with a reason that
 * says its length and the bound (`what` says what the bound is made of): a 10,000-character
 * value is too long, whatever characters it holds.
 */
export const lengthFirst = (schema: z.ZodString, max: number, what?: string) =>
  schema.max(max, { abort: true, error: (issue) => `is ${String((issue.input as string).length)} characters long, past the most it may have (${max}${what ? `: ${what}` : ''})` });

/** `text` as it is when at most `max` characters, else its start and "…": a path or a message shown unquoted. */
export const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
