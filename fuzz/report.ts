// The message fuzzer's table: per workflow type and handler, the messages
// sent and what became of them, and every violation with what caused it.
import { appOfWorkflowId, appWorkflowId } from '../src/apps/types.ts';
import { REPAIR_QUEUE_WORKFLOW_ID, repairEntryWorkflowId } from '../src/repair/messages.ts';
import { SAFETY_WORKFLOW_ID } from '../src/safety/messages.ts';
import { nodeWorkflowId, SLOTS_WORKFLOW_ID } from '../src/taint/messages.ts';
import { nodeOfId } from '../src/taint/node-machine.ts';
import { serviceOfWeederId } from '../src/weeder/messages.ts';
import type { Violation } from './invariants.ts';
import { type Kind, type Message, weederWorkflowId } from './targets.ts';

export interface Row {
  type: string;
  handler: string;
  kind: Kind;
  sent: number;
  /** Refused: by a validator, the handler, the server (too large, no such workflow), or a start that failed. */
  refused: number;
  /** Signals the server took that the workflow logged as ignored. */
  ignored: number;
  /** Taken in: an update answered, a query answered, a signal not logged as ignored, a start that ran. */
  accepted: number;
  /** Signals the server took (ignored + accepted of them). */
  delivered: number;
  violations: number;
  families: Partial<Record<string, number>>;
}

export const rowKey = (type: string, handler: string, kind: string) => `${type}\t${handler}\t${kind}`;

const str = (v: unknown) => (typeof v === 'string' ? v : '');

/**
 * The workflow id a hand start should run under: the one its input names, or, for the per-object
 * workflows, the id it was started under when that names an object (the run serves that object and
 * ignores its input: docs/security.md).
 */
export function expectedId(m: Pick<Message, 'type' | 'args' | 'workflowId'>): string | undefined {
  const a = (m.args[0] ?? {}) as Record<string, unknown>;
  switch (m.type) {
    case 'repair-queue': return REPAIR_QUEUE_WORKFLOW_ID;
    case 'repair/<index>': return repairEntryWorkflowId(str(a.index));
    case 'taint-replacements': return SLOTS_WORKFLOW_ID;
    case 'taint/<node>': return nodeOfId(m.workflowId) ? m.workflowId : nodeWorkflowId(str(a.node));
    case 'weeder': return serviceOfWeederId(m.workflowId) ? m.workflowId : weederWorkflowId(str(a.namespace), str(a.service));
    case 'app': return appOfWorkflowId(m.workflowId) ? m.workflowId : appWorkflowId(str(a.namespace), str(a.name));
    case 'tend-safety': return SAFETY_WORKFLOW_ID;
    default: return m.workflowId;
  }
}

/** The table, then the violations grouped by invariant and row, each with its first details. */
export function formatReport(rows: Row[], violations: (Violation & { batch: number })[], seed: number, sent: number, batches: number, refusals: Map<string, string>): string {
  const head = ['TYPE', 'HANDLER', 'KIND', 'SENT', 'REFUSED', 'IGNORED', 'ACCEPTED', 'VIOLATIONS'];
  const extra = new Map<string, number>();
  for (const v of violations) if (!rows.some((r) => r.type === v.type && r.handler === v.handler)) extra.set(rowKey(v.type, v.handler, '-'), (extra.get(rowKey(v.type, v.handler, '-')) ?? 0) + 1);
  const cells = [
    ...rows.map((r) => [r.type, r.handler, r.kind, String(r.sent), String(r.refused), String(r.ignored), String(r.accepted), String(r.violations)]),
    ...[...extra].map(([k, n]) => [...k.split('\t'), '-', '-', '-', '-', String(n)]),
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => (i >= 3 ? x.padStart(widths[i]!) : x.padEnd(widths[i]!))).join('  ').trimEnd();
  const lines = [`message fuzzer, seed ${seed}: ${sent} message(s) in ${batches} batch(es)`, line(head), ...cells.map(line)];
  if (refusals.size) {
    lines.push('', 'FIRST REFUSAL PER HANDLER (what refusing reads like; not violations)');
    for (const [k, why] of refusals) lines.push(`- ${k.replaceAll('\t', ' ')}: ${why}`);
  }
  if (!violations.length) {
    lines.push('', 'no violations');
    return lines.join('\n');
  }
  lines.push('', `VIOLATIONS (${violations.length})`);
  const groups = new Map<string, (Violation & { batch: number })[]>();
  for (const v of violations) {
    const k = `${v.invariant}\t${v.type}\t${v.handler}`;
    groups.set(k, [...(groups.get(k) ?? []), v]);
  }
  for (const [k, vs] of groups) {
    const [invariant, type, handler] = k.split('\t');
    lines.push(`- ${invariant}: ${type} ${handler} (${vs.length}×, batch${vs.length > 1 ? 'es' : ''} ${[...new Set(vs.map((v) => v.batch + 1))].join(', ')})`);
    for (const v of vs.slice(0, 3)) lines.push(`    ${v.detail}`);
  }
  return lines.join('\n');
}
