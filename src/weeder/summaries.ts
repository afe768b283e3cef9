// What the Web UI shows beside each activity a weeder window schedules (its summary, one line;
// docs/web-ui.md). Pure: imported by workflow code.
import type { Candidate } from './window.ts';
import type { WeederTarget } from './window-run.ts';

/** At most this many pods named in one line (Temporal bounds a summary to 400 bytes). */
const NAMED = 2;

const svc = (t: WeederTarget) => `Service ${t.namespace}/${t.service}`;
const names = (pods: readonly Candidate[]) =>
  pods.slice(0, NAMED).map((p) => p.name).join(', ') + (pods.length > NAMED ? ` and ${pods.length - NAMED} more` : '');

export const settingsSummary = (t: WeederTarget) => `read the weeder settings of ${svc(t)}`;

/** The window's watch, or the armed one that follows the Service through its outage (and, `deletes`, weeds at once itself). */
export const watchSummary = (t: WeederTarget, armed: boolean, deletes: boolean) => (armed
  ? `follow ${svc(t)} until it is ready again, then ${deletes ? 'delete' : 'find'} its crash-looping dependants`
  : `watch the dependants of ${svc(t)} for CrashLoopBackOff while the window is open`);

export const weedSummary = (t: WeederTarget, pods: readonly Candidate[], held: boolean) =>
  `delete crash-looping dependant${pods.length === 1 ? '' : 's'} ${names(pods)} of ${svc(t)}${held ? ', once the weeder may delete' : ''}`;

export const checkSummary = (t: WeederTarget, pods: readonly Candidate[]) =>
  `check what became of dependant${pods.length === 1 ? '' : 's'} ${names(pods)} of ${svc(t)}`;
