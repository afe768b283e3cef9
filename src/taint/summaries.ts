// What the Web UI shows beside each activity a taint workflow schedules (its summary, one line;
// docs/web-ui.md). Pure: imported by workflow code; names come from the Node and pods read.
import type { ConditionWrite } from './node.ts';

/** At most this many pods named in one line (Temporal bounds a summary to 400 bytes). */
const NAMED = 2;

const podNames = (pods: readonly { namespace: string; name: string }[]) =>
  pods.slice(0, NAMED).map((p) => `${p.namespace}/${p.name}`).join(', ') + (pods.length > NAMED ? ` and ${pods.length - NAMED} more` : '');

export const nodeReadSummary = (node: string) => `read node ${node}'s taints and the taint settings`;
export const nodeStartSummary = (node: string) => `read node ${node}, list its managed pods and mark them`;
export const listSummary = (node: string, marks: boolean) => `list the managed pods on node ${node}${marks ? ' and mark the new ones' : ''}`;

/** Condition writes: marks (NodeTaintDetected, NodeTaintReplacing) or clears. */
export function writeSummary(node: string, writes: readonly ConditionWrite[]): string {
  const what = writes.every((w) => w.detected === null && w.replacing === null) ? 'clear the taint conditions of'
    : writes.some((w) => w.replacing !== null) ? 'mark NodeTaintReplacing on' : 'mark NodeTaintDetected on';
  return `${what} pod${writes.length === 1 ? '' : 's'} ${podNames(writes)} (node ${node})`;
}

export const evictSummary = (p: { node: string; namespace: string; name: string }) => `evict pod ${p.namespace}/${p.name} from node ${p.node}`;
export const awaitSummary = (p: { namespace: string; name: string }) => `wait for the replacement of pod ${p.namespace}/${p.name} to be ready`;

export const slotSettingsSummary = 'read maxConcurrentReplacements and the breaker\'s limit';
export const nodeCountsSummary = 'count the tainted nodes for the breaker';
export const holderSummary = (node: string) => `ask taint/${node} which replacement slots it holds`;

/** The Current Details of a node workflow that ended early (cancelled, or failed): what its ending did. */
export const endedDetails = (node: string, cancelled: boolean) =>
  `${cancelled ? 'Cancelled' : 'Failed'}: the taint conditions this workflow set on the pods of node ${node} are cleared, and its replacement slots given back. ` +
  'While the node carries a configured taint, the watcher starts a new workflow for it at its next resync.';
