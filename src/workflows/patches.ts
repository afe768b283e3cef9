// Patches asked for before a workflow's first local activity.
//
// A local activity's answer is recorded as a marker when the workflow task that
// asked for it completes. Usually the code that follows the answer runs in that
// same task, and its commands follow the marker. Under load the task can end
// with the marker alone, and the code after the answer runs in the next task
// (seen in a weeder window's history). A replay runs that code in the first
// task: a patched() asked there for a marker recorded in the next task is not
// yet known, answers false, and the replay fails with a nondeterminism error.
// Asked before the local activity, a patch is marked in the first task, known
// from the start of any replay, and every later patched() of the same id answers
// the same without marking anything again.
import { patched } from '@temporalio/workflow';

/**
 * Marks a history whose workflow asked, before its first local activity, for
 * the patches its code may ask for right after the answer. Histories from before
 * it replay as they ran (those patches asked where the code reaches them).
 * docs/contributing/patch-history.md.
 */
export const PATCHES_BEFORE_LOCAL_ACTIVITY_PATCH = 'patches-before-local-activity';

/** Asks for `ids` now, before the workflow's first local activity (see above); nothing for a history from before. */
export function patchesBeforeLocalActivity(ids: readonly string[]): void {
  if (!patched(PATCHES_BEFORE_LOCAL_ACTIVITY_PATCH)) return;
  for (const id of ids) patched(id);
}
