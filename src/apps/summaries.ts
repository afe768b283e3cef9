// What the Web UI shows of an App's workflow (docs/web-ui.md): a line beside each activity it
// schedules (its summary), and its Current Details. Pure: imported by workflow code.
import type { AppEntityData } from './entity.ts';

export const reconcileSummary = (app: string, command: { kind: string } | undefined) =>
  `reconcile App ${app}${command ? ` (${command.kind} command)` : ''}: its workloads and status`;
export const waitSummary = (app: string) => `wait for App ${app}'s workloads to be ready`;

/** At most this many workloads named in the details. */
const LISTED = 5;

/** The App's Current Details once a reconcile has run (failures, observe mode and the pause say their own). */
export function appDetails(e: AppEntityData): string {
  const app = `App ${e.namespace}/${e.name}`;
  const r = e.last;
  if (!r) return `${app}: not reconciled yet.`;
  const lines = [`${app}: desired ${r.desiredState ?? '?'}, actual ${r.actualState ?? '?'}${r.settled ? ', settled' : ', settling'}` +
    `${r.lastSeen ? ` (generation ${r.lastSeen.generation}, app-rev ${r.lastSeen.appRev})` : ''}.`];
  if (r.workloads.length > 0) lines.push(`Workloads: ${r.workloads.slice(0, LISTED).join(', ')}${r.workloads.length > LISTED ? ', ...' : ''}.`);
  const waiting = e.commands.length;
  if (waiting > 0) lines.push(`Commands waiting: ${waiting}.`);
  if (r.problem) lines.push(`Problem: ${r.problem}`);
  if (e.lastError) lines.push(`Last failure (${e.lastError.at})${e.lastError.recovered ? ', recovered' : ''}: ${e.lastError.message}`);
  return lines.join('\n\n');
}
