// `tend taint status`: every managed pod on a tainted node, its node, taint,
// condition, since when, when it will be replaced, and its state; plus the
// cluster-wide slots and breaker. Asked of the taint workflows (queries).
import type { Command } from 'commander';
import { OperatorError, readerConfig, taskQueueOption, withConfigOptions, type ReadFlags } from './cli-support.ts';
import { namespaceFilter, namespaceOption } from './namespace-option.ts';
import { columns, outputOption, printOutput, type OutputFormat } from './output.ts';
import type { PodStatusRow } from '../taint/node.ts';
import type { SlotsStatus } from '../taint/messages.ts';
import type { TemporalSettings } from '../temporal/connection.ts';
import type { Client } from '@temporalio/client';
import { impostor } from '../temporal/identity.ts';
import { preview } from '../checks/preview.ts';

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
    .addOption(taskQueueOption())
    .addOption(namespaceOption('only the pods in this namespace'))
    .addOption(outputOption())
    .action(async (flags: ReadFlags & { output: OutputFormat; namespace?: string }) => {
      const shown = namespaceFilter(flags.namespace);
      const { config } = await readerConfig(flags);
      const all = await taintStatus(config.temporal);
      const status = { ...all, pods: all.pods.filter((p) => shown(p.namespace)) };
      await printOutput(flags.output, status, (wide) => formatTaintStatus(status, wide), () => status.pods.map((p) => `pod/${p.namespace}/${p.pod}`));
    });
}

export function formatTaintStatus(status: TaintStatus, wide = false): string {
  const lines: string[] = [];
  const s = status.slots;
  if (s) {
    lines.push(`slots: ${s.inFlight.length}/${s.maxConcurrentReplacements} in flight, ${s.queue.length} queued; ` +
      `breaker ${s.breakerOpen ? 'OPEN (no replacement starts)' : 'closed'}: ` + (s.faultDomains
        ? `${s.taintedNodes}/${s.totalNodes} nodes holding managed pods tainted, limit ${s.maxTaintedNodes} (at least 1: maxFaultDomainsWithTaintedProcessGroups)`
        : `${s.taintedNodes}/${s.totalNodes} nodes tainted, limit ${s.maxTaintedNodes}`));
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
  const client = await connectClient(temporal);
  try {
    return await taintStatusOf(client, temporal.taskQueue);
  } finally {
    await client.connection.close();
  }
}

/**
 * The status, asked of the taint workflows tend runs on `taskQueue`. What runs under the
 * coordinator's id is described first (an impostor need not carry tend's search attributes),
 * and every listed taint workflow is checked for its type and task queue: an impostor is
 * refused (exit 1), named with how to end it, and nothing it would answer is shown.
 */
export async function taintStatusOf(client: Client, taskQueue: string): Promise<TaintStatus> {
  const { nodeStatusQuery, slotsStatusQuery, SLOTS_WORKFLOW_ID, SLOTS_WORKFLOW_TYPE, NODE_WORKFLOW_TYPE } = await import('../taint/messages.ts');
  const { runningTaintExecutions } = await import('../taint/running.ts');
  const { WorkflowNotFoundError } = await import('@temporalio/client');
  const expected = (id: string) => ({ type: id === SLOTS_WORKFLOW_ID ? SLOTS_WORKFLOW_TYPE : NODE_WORKFLOW_TYPE, taskQueues: [taskQueue] });
  const coordinator = await client.workflow.getHandle(SLOTS_WORKFLOW_ID).describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  });
  const runs = await runningTaintExecutions(client);
  const found = [...(coordinator?.status.name === 'RUNNING' ? [{ id: SLOTS_WORKFLOW_ID, type: coordinator.type, taskQueue: coordinator.taskQueue }] : []), ...runs];
  const impostors = [...new Set(found.flatMap((r) => {
    const why = impostor(r.id, r, expected(r.id));
    return why ? [`${why}; end it with: temporal workflow terminate --workflow-id ${preview(r.id, 300)}`] : [];
  }))];
  if (impostors.length > 0) throw new OperatorError(`taint status: not shown, as what runs under tend's ids is not all tend's:\n  ${impostors.join('\n  ')}`);
  const status: TaintStatus = { pods: [], nodes: [] };
  for (const { id } of runs) {
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
}
