// What the Web UI shows of a repair entry's workflow (docs/web-ui.md): one line per activity it
// schedules (the activity's summary), and the entry's Current Details. Pure: imported by workflow code.
import { details, type EntryState } from './entry-machine.ts';

/** The part of an entry every line names. */
export interface EntryKey {
  index: string;
  address: string;
  operation: string;
}

const of = (k: EntryKey) => `(repair entry ${k.index}, ${k.operation})`;

export const locateSummary = (k: EntryKey) => `find the Node of ${k.address} ${of(k)}`;
export const inspectSummary = (k: EntryKey) => `find the Node of ${k.address} and check its health ${of(k)}`;

/** A health check (until 0: once) or a watch until the step's watch_seconds have passed. */
export const healthSummary = (k: EntryKey, step: number, until: number) =>
  (until > 0 ? `watch the health of ${k.address} after step ${step} ${of(k)}` : `check the health of ${k.address} ${of(k)}`);

export const commandSummary = (k: EntryKey, step: number, kind: 'repair_command' | 'success_command') =>
  (kind === 'repair_command' ? `run the repair command of step ${step} on ${k.address} ${of(k)}` : `run the success command on ${k.address} ${of(k)}`);

export const drainSummary = (k: EntryKey, node: string) => `cordon node ${node} and drain it ${of(k)}`;

export const uncordonSummary = (k: EntryKey, node: string) => `lift the cordon on node ${node || k.address} ${of(k)}`;

export const checkRequestsSummary = (count: number) => `check ${count} repair request${count === 1 ? '' : 's'} against the repair procedures`;
export const queueSettingsSummary = (queued: number) =>
  `read max_concurrent_repairs and the procedures of ${queued} queued entr${queued === 1 ? 'y' : 'ies'}`;

/** The entry's Current Details: what it is about, then where it stands (src/repair/entry-machine.ts). */
export function entryDetails(s: EntryState): string {
  const e = s.entry;
  const steps = s.plan ? ` of ${s.plan.steps.length}` : '';
  const node = e.nodename ? `node ${e.nodename}` : 'no Node (not drained)';
  const head = `Repair entry ${e.index}: ${e.operation} on ${e.machine_type} ${e.address}, ${node}; step ${e.step}${steps}, ${e.step_status}` +
    `${s.cordoned ? ', cordoned by tend' : ''}${s.enabled ? '' : '; the queue is disabled'}.`;
  return [head, details(s)].join('\n');
}
