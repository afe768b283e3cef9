// `tend weeder list`: the open weeder windows, their Service, until when, and
// the pods weeded so far (asked of each window's workflow); and the armed
// ones, whose Service is not ready (they weed the moment it is ready again).
import type { Command } from 'commander';
import { readerConfig, taskQueueOption, withConfigOptions, type ReadFlags } from './cli-support.ts';
import { namespaceFilter, namespaceOption } from './namespace-option.ts';
import { columns, formatOf, jsonAliasOption, outputOption, printOutput, type OutputFormat } from './output.ts';

export interface WindowRow {
  workflowId: string;
  service: string;
  /** `open`: weeding until `until`; `armed`: the Service is not ready, watched until `until` at the latest. */
  state: 'open' | 'armed';
  until: string;
  /** Armed: since when the Service is not ready (also while a window is open). */
  notReadySince?: string;
  transitions: number;
  weeded: string[];
  reported: string[];
  /** Observe mode: the pods whose deletion was recorded, not made. */
  observed: string[];
  /** The pods whose deletion the pause holds now. */
  held: string[];
}

export function registerWeederCommands(program: Command): void {
  const weeder = program.command('weeder').description('weeder windows: crash-looping dependants deleted when their Service recovers');
  withConfigOptions(weeder
    .command('list')
    .description('open windows (and armed ones, whose Service is not ready): their Service, until when, and the pods weeded so far'))
    .addOption(taskQueueOption())
    .addOption(namespaceOption('only the windows of Services in this namespace'))
    .addOption(outputOption())
    .addOption(jsonAliasOption())
    .action(async (flags: ReadFlags & { output: OutputFormat; json?: boolean; namespace?: string }) => {
      const shown = namespaceFilter(flags.namespace);
      const { config } = await readerConfig(flags);
      const listed = await listWindows(config.temporal);
      // A window's Service is NAMESPACE/NAME, its workflow id weeder/NAMESPACE/NAME.
      const rows = listed.rows.filter((r) => shown(r.service.split('/')[0]));
      const unanswered = listed.unanswered.filter((id) => shown(id.split('/')[1]));
      // -o name: a window is its workflow, weeder/NAMESPACE/SERVICE.
      await printOutput(formatOf(flags), rows, (wide) => formatWindows(rows, wide), () => rows.map((r) => r.workflowId));
      if (unanswered.length > 0) {
        process.stderr.write(`tend: ${unanswered.length} running window${unanswered.length > 1 ? 's' : ''} did not answer within ${QUERY_TIMEOUT_MS / 1000} s ` +
          `(is a worker polling ${config.temporal.taskQueue}?), not listed: ${unanswered.join(', ')}\n`);
      }
    });
}

/** `weeder list`: a line per window (observed and held pods when there are); wide adds its workflow id. */
export function formatWindows(rows: readonly WindowRow[], wide: boolean): string {
  if (rows.length === 0) return 'no weeder windows open or armed';
  // Observe mode and the pause: their columns only when some window has such pods.
  const safety = rows.some((r) => r.observed.length > 0 || r.held.length > 0);
  const header = ['SERVICE', 'STATE', 'UNTIL', 'NOT READY SINCE', 'TRANSITIONS', 'WEEDED', 'REPORTED (no controller)',
    ...(safety ? ['OBSERVED (not deleted)', 'HELD (paused)'] : []), ...(wide ? ['WORKFLOW'] : [])];
  return columns(header, rows.map((r) => [r.service, r.state, r.until, r.notReadySince ?? '-', String(r.transitions),
    r.weeded.join(',') || '-', r.reported.join(',') || '-',
    ...(safety ? [r.observed.join(',') || '-', r.held.join(',') || '-'] : []), ...(wide ? [r.workflowId] : [])]));
}

/** How long `weeder list` waits for a window's answer: a run no worker serves is named, not waited for. */
const QUERY_TIMEOUT_MS = 5_000;
/** Windows asked at once. */
const QUERIES_AT_ONCE = 20;

async function listWindows(temporal: Parameters<typeof import('../temporal/connection.ts').connectClient>[0]): Promise<{ rows: WindowRow[]; unanswered: string[] }> {
  const { connectClient } = await import('../temporal/connection.ts');
  const { queryEach } = await import('../temporal/query-each.ts');
  const { windowQuery } = await import('../weeder/messages.ts');
  const client = await connectClient(temporal);
  try {
    const found: { workflowId: string; runId: string }[] = [];
    for await (const wf of client.workflow.list({ query: 'TendCapability="weeder" AND ExecutionStatus="Running"' })) found.push(wf);
    // Asked side by side, each with a deadline: a window whose worker is gone (its task queue
    // unpolled) would otherwise hold the whole list for the server's query timeout.
    const { answers, unanswered } = await queryEach(client, found, windowQuery, { timeoutMs: QUERY_TIMEOUT_MS, atOnce: QUERIES_AT_ONCE });
    const rows = answers.map(({ run, value: w }): WindowRow => {
      const open = w.deadline > Date.now() || !w.armed;
      return {
        workflowId: run.workflowId,
        service: run.workflowId.replace(/^weeder\//, ''),
        state: open ? 'open' : 'armed',
        until: new Date(open ? w.deadline : w.armed!.until).toISOString(),
        notReadySince: w.armed ? new Date(w.armed.since).toISOString() : undefined,
        transitions: w.transitions,
        weeded: w.weeded.map((p) => p.name),
        reported: w.reported.map((p) => p.name),
        observed: (w.observed ?? []).map((p) => p.name),
        held: (w.held ?? []).map((p) => p.name),
      };
    });
    return { rows: rows.sort((a, b) => a.service.localeCompare(b.service)), unanswered };
  } finally {
    await client.connection.close();
  }
}
