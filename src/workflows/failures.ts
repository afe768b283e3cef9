// How workflows read the failures their activities, children and signals end
// with: one failure's own words (through its causes), and whether it is a
// refusal (a non-retryable ApplicationFailure of a named type: the input or
// the key is not acceptable, and retrying cannot help). Every workflow uses
// these; the refusal types are named in each capability's messages.ts.
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/** How deep the cause chain is followed. */
const MAX_CAUSES = 4;
/** Longest message kept (failures can carry an untrusted value's text). */
const MAX_MESSAGE = 1000;

interface FailureLike { message?: unknown; cause?: unknown; type?: unknown; activityType?: unknown }

const asFailure = (e: unknown): FailureLike | undefined => (typeof e === 'object' && e !== null ? e as FailureLike : undefined);

/**
 * A failure's words: its message and its causes' (`activity X gave up: ...` for an
 * activity), at most MAX_MESSAGE characters. Total: any value gives a string.
 */
export function failureMessage(err: unknown): string {
  const words: string[] = [];
  if (err instanceof ActivityFailure) words.push(`${err.activityType} gave up`);
  let e = asFailure(err);
  let first = true;
  for (let i = 0; e && i < MAX_CAUSES; i++, e = asFailure(e.cause)) {
    // An ActivityFailure's own message ("Activity task failed") adds nothing to its cause's.
    if (first && err instanceof ActivityFailure) {
      first = false;
      continue;
    }
    first = false;
    if (typeof e.message === 'string' && e.message !== '' && words.at(-1) !== e.message) words.push(e.message);
  }
  const text = words.join(': ') || (typeof err === 'string' ? err : 'unknown failure');
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
}

/**
 * The refusal in a failure's cause chain (an ApplicationFailure whose type is one of `types`),
 * or undefined. An activity's failure arrives as its cause; a local activity's may be the
 * ApplicationFailure itself.
 */
export function refusalOf(err: unknown, types: readonly string[]): ApplicationFailure | undefined {
  let e: unknown = err;
  for (let i = 0; e && i < MAX_CAUSES; i++, e = asFailure(e)?.cause) {
    if (e instanceof ApplicationFailure && typeof e.type === 'string' && types.includes(e.type)) return e;
  }
  return undefined;
}
