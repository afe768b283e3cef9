// `tend taint status`: every managed pod on a tainted node, its node, taint,
// condition, since when, when it will be replaced, and its state; plus the
// cluster-wide slots and breaker. Asked of the taint workflows (queries).
import type { Command } from 'commander';
import { configOrSandbox, withConfigOptions, type ConfigFlags } from './cli-support.ts';
import { columns, outputOption, printOutput, type OutputFormat } from './output.ts';
import type { PodStatusRow } from '../taint/node.ts';
import type { SlotsStatus } from '../taint/messages.ts';
import type { TemporalSettings } from '../temporal/connection.ts';

export interface TaintStatus {
  pods: PodStatusRow[];
  /** Nodes whose workflow runs (tainted, or finishing a replacement). */
  nodes: string[];
  slots?: SlotsStatus;
}

export function registerTaintCommands(program: Command): void {
  const taint = program.command('taint').description('taint replacement: managed pods on tainted nodes, marked then replaced');
  withConfigOptions(taint
    .command('status')
    .description('every managed pod on a tainted node: node, taint, condition, since, replacement time, state'))
    .addOption(outputOption())
    .action(async (flags: ConfigFlags & { output: OutputFormat }) => {
      const config = await configOrSandbox(flags);
      const status = await taintStatus(config.temporal);
      await printOutput(flags.output, status, (wide) => formatTaintStatus(status, wide));
    });
}

export function formatTaintStatus(status: TaintStatus, wide = false): string {
  const lines: string[] = [];
  const s = status.slots;
  if (s) {
    lines.push(`slots: ${s.inFlight.length}/${s.maxConcurrentReplacements} in flight, ${s.queue.length} queued; ` +
      `breaker ${s.breakerOpen ? 'OPEN (no replacement starts)' : 'closed'}: ${s.taintedNodes}/${s.totalNodes} nodes tainted, ` +
      `limit ${s.maxTaintedNodes}`);
  } else {
    lines.push('slots: taint-replacements is not running');
  }
  if (status.pods.length === 0) {
    lines.push(status.nodes.length ? `no managed pods on tainted nodes (${status.nodes.join(', ')})` : 'no tainted nodes');
    return lines.join('\n');
  }
  // wide: the attempts and the last error in columns of their own.
  const header = ['NODE', 'POD', 'TAINT', 'CONDITION', 'SINCE', 'REPLACE AT', 'STATE', ...(wide ? ['ATTEMPTS', 'LAST ERROR'] : [])];
  lines.push(columns(header, status.pods.map((p) => [
    p.node, `${p.namespace}/${p.pod}`, p.taint || '-', p.condition || '-', p.since, p.replaceAt || '-',
    ...(wide ? [p.state, String(p.attempts), p.lastError ?? '-'] : [p.state + (p.lastError ? ` (${p.attempts} attempts: ${p.lastError})` : '')]),
  ])));
  return lines.join('\n');
}

export async function taintStatus(temporal: TemporalSettings): Promise<TaintStatus> {
  const { connectClient } = await import('../temporal/connection.ts');
  const { nodeStatusQuery, slotsStatusQuery, SLOTS_WORKFLOW_ID } = await import('../taint/messages.ts');
  const { runningTaintWorkflows } = await import('../taint/running.ts');
  const client = await connectClient(temporal);
  try {
    const status: TaintStatus = { pods: [], nodes: [] };
    for (const id of await runningTaintWorkflows(client)) {
      try {
        if (id === SLOTS_WORKFLOW_ID) {
          status.slots = await client.workflow.getHandle(id).query(slotsStatusQuery);
        } else {
          status.pods.push(...await client.workflow.getHandle(id).query(nodeStatusQuery));
          status.nodes.push(id.replace(/^taint\//, ''));
        }
      } catch {
        // Closed between the list and the query.
      }
    }
    status.nodes.sort();
    status.pods.sort((a, b) => a.node.localeCompare(b.node) || `${a.namespace}/${a.pod}`.localeCompare(`${b.namespace}/${b.pod}`));
    return status;
  } finally {
    await client.connection.close();
  }
}
