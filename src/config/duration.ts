// Durations written as Go's time.ParseDuration reads them (`2m0s`, `300ms`,
// `1h30m`), because the sections that use them are pasted from Go projects'
// configs (dependency-watchdog's `watchDuration` is a metav1.Duration).
import { z } from 'zod';
import { pastBound, type Bound } from './bounds.ts';

const nanosPerUnit: Record<string, number> = {
  ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9,
};
// Longer units first where one is a prefix of another ("ms" before "m").
const component = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
const maxNanos = 2 ** 63 - 1; // Go's time.Duration is an int64 of nanoseconds

/** Milliseconds in a Go duration string, or undefined if Go would refuse it. */
export function parseGoDuration(text: string): number | undefined {
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let nanos = 0;
  component.lastIndex = 0;
  while (component.lastIndex < rest.length) {
    const match = component.exec(rest);
    if (!match) return undefined;
    nanos += Number(match[1]) * nanosPerUnit[match[2]!]!;
  }
  if (nanos > maxNanos) return undefined;
  return (sign * nanos) / 1e6;
}

/** A duration as written, and its length, for timers. */
export interface GoDuration {
  text: string;
  ms: number;
}

/** A Go duration string longer than zero and at most `max` (`text`: the bound as Go writes it, like 24h). */
export function positiveGoDurationSchema(max: Bound & { text: string }) {
  return z
    .string({ error: 'must be a Go duration string, like 2m0s, 300ms or 1h30m' })
    .transform((text, ctx): GoDuration => {
      const ms = parseGoDuration(text);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: 'must be a Go duration, like 2m0s, 300ms or 1h30m', input: text });
        return z.NEVER;
      }
      if (ms <= 0) {
        ctx.addIssue({ code: 'custom', message: 'must be longer than zero', input: text });
        return z.NEVER;
      }
      if (ms > max.seconds * 1000) {
        ctx.addIssue({ code: 'custom', message: pastBound(max, max.text), input: text });
        return z.NEVER;
      }
      // Timers count whole milliseconds; rounding up keeps a tiny duration from becoming none.
      return { text, ms: Math.ceil(ms) };
    });
}
