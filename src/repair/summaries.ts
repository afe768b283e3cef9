// What the Web UI shows of the repair workflows (docs/web-ui.md): one line per activity they
// schedule (the activity's summary), and the Current Details of an entry and of the queue.
// Pure: imported by workflow code.
import { details, type EntryState } from './entry-machine.ts';
import type { RepairQueueEntry } from './entry.ts';

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
/** request-node-repair's read of the Node, the worker's nodeRepair section and the selected Nodes' health. */
export const nodeRepairAssessSummary = (node: string) => `read Node ${node}, its unhealthy condition and the selected Nodes' health for its repair`;
export const queueSettingsSummary = (queued: number) =>
  `read max_concurrent_repairs and the procedures of ${queued} queued entr${queued === 1 ? 'y' : 'ies'}`;

/** The entry's Current Details: what it is about, then where it stands (src/repair/entry-machine.ts). */
export function entryDetails(s: EntryState): string {
  const e = s.entry;
  const steps = s.plan ? ` of ${s.plan.steps.length}` : '';
  const node = e.nodename ? `node ${e.nodename}` : 'no Node (not drained)';
  const head = `Repair entry ${e.index}: ${e.operation} on ${e.machine_type} ${e.address}, ${node}; step ${e.step}${steps}, ${e.step_status}` +
    `${s.cordoned ? ', cordoned by tend' : ''}${s.enabled ? '' : '; the queue is disabled'}.`;
  // details() begins with the step, which the head says already; its other lines (paused, lifting, observed) follow.
  return [head, ...details(s).split('\n').slice(1)].join('\n\n');
}

/** The Current Details of an entry cancelled (deleted, or cancelled in the Web UI): what its ending did. */
export function cancelledDetails(s: EntryState): string {
  const e = s.entry;
  const cordon = s.cordoned || s.lifting ? `the cordon on node ${e.nodename} is still on: repair/${e.index}/lift lifts it`
    : e.nodename ? `node ${e.nodename} is not cordoned by tend` : 'no Node was cordoned';
  return `Repair entry ${e.index} cancelled (deleted, or cancelled in the Web UI) at step ${e.step}, ${e.step_status}: ${cordon}; the entry has left the queue.`;
}

/** At most this many entries of a status named in the queue's details. */
const LISTED = 10;

/** The queue's Current Details: its switch, its limit, and its entries by status. */
export function queueDetails(s: { entries: readonly RepairQueueEntry[]; enabled: boolean; closing: Record<string, string> }, maxConcurrent: number | undefined): string {
  const limit = maxConcurrent === undefined ? '' : ` (max_concurrent_repairs ${maxConcurrent})`;
  const lines = [`Repair queue ${s.enabled ? 'enabled' : 'DISABLED: no drain or repair command starts'}${limit}; ${s.entries.length} entr${s.entries.length === 1 ? 'y' : 'ies'}.`];
  for (const status of ['processing', 'queued', 'failed', 'succeeded'] as const) {
    const of = s.entries.filter((e) => e.status === status);
    if (of.length === 0) continue;
    const shown = of.slice(0, LISTED).map((e) => `${e.index} ${e.operation} on ${e.address}${status === 'processing' ? ` (step ${e.step} ${e.step_status})` : ''}`);
    lines.push(`${status[0]!.toUpperCase()}${status.slice(1)} (${of.length}): ${shown.join(', ')}${of.length > LISTED ? ', ...' : ''}.`);
  }
  const closing = Object.keys(s.closing).length;
  if (closing > 0) lines.push(`Deleted, their workflows cleaning up: ${closing}.`);
  return lines.join('\n\n');
}
