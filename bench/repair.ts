// The repair queue benchmark (not a test): on a running sandbox, N entries
// (500) with trivial commands at max_concurrent_repairs 20, through the real
// `tend run` worker and `tend repair-queue add-file`. Prints throughput, the
// per-entry overhead beyond the commands' own time, and the Temporal actions
// per entry counted from the workflows' histories.
//
//   node bench/repair.ts [--state-dir DIR] [--entries 500] [--concurrency 20]
//
// Each entry: a health check (unhealthy), the repair command (touch), a watch
// whose first check is healthy. Addresses are 198.18.x.y (not Nodes: no drain).
import { Connection, Client } from '@temporalio/client';
import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify as toYaml } from 'yaml';
import { currentSandbox } from '../src/sandbox/sandbox.ts';
import { grantRightsFor } from '../src/sandbox/bootstrap.ts';
import { runOnce } from '../src/activities/repair.ts';
import { listQuery, REPAIR_QUEUE_WORKFLOW_ID } from '../src/repair/messages.ts';
import type { RepairQueueEntry } from '../src/repair/entry.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const cli = join(repo, 'src/starters/cli.ts');
const { values: opts } = parseArgs({ options: {
  'state-dir': { type: 'string' },
  entries: { type: 'string', default: '500' },
  concurrency: { type: 'string', default: '20' },
} });
const N = Number(opts.entries);
const CONCURRENCY = Number(opts.concurrency);

const info = await currentSandbox(opts['state-dir'] ?? process.env.TEND_SANDBOX_DIR);
if (!info) throw new Error('no sandbox: run `tend sandbox up` (or give --state-dir)');

const dir = await mkdtemp(join(tmpdir(), 'tend-repair-bench-'));
const repairCommand = ['sh', '-c', `touch ${dir}/"$0"`];
const healthCommand = ['sh', '-c', `test -f ${dir}/"$0" && echo true || echo false`];
const taskQueue = `tend-repair-bench-${Date.now()}`;
const config = join(dir, 'tend.yaml');
await writeFile(config, toYaml({
  temporal: { address: info.temporalAddress, taskQueue },
  kubernetes: { kubeconfig: info.tendKubeconfig },
  repair: {
    max_concurrent_repairs: CONCURRENCY,
    repair_procedures: [{ machine_types: ['bench'], repair_operations: [{ operation: 'fix', repair_steps: [{ repair_command: repairCommand, watch_seconds: 60 }], health_check_command: healthCommand }] }],
  },
}));// The rights `tend rbac` generates for this configuration, as an operator would apply them.
await grantRightsFor(info.kubeconfig, config, 'tend-bench');

const addresses = Array.from({ length: N }, (_, i) => `198.18.${Math.floor(i / 250)}.${(i % 250) + 1}`);
const file = join(dir, 'requests.txt');
await writeFile(file, addresses.map((a) => `fix bench ${a}`).join('\n') + '\n');

// The commands' own time: each entry runs the health check twice and the repair command once.
const t0 = performance.now();
for (let i = 0; i < 20; i++) {
  await runOnce(healthCommand, `bench-probe-${i}`, 30);
  await runOnce(repairCommand, `bench-probe-${i}`, 30);
  await runOnce(healthCommand, `bench-probe-${i}`, 30);
}
const commandMs = (performance.now() - t0) / 20;

const connection = await Connection.connect({ address: info.temporalAddress });
const client = new Client({ connection });
// A fresh queue on this run's task queue.
await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).terminate('repair benchmark').catch(() => undefined);

const tend = spawn(process.execPath, [cli, 'run', '--config', config], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TEND_LOG_LEVEL: 'warn' } });
let tendErr = '';
tend.stderr.on('data', (d) => (tendErr += d));
const run = (args: string[]) => new Promise<string>((resolve, reject) => {
  const c = spawn(process.execPath, [cli, ...args, '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  c.stdout.on('data', (d) => (out += d));
  c.stderr.on('data', (d) => (out += d));
  c.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`tend ${args.join(' ')}: exit ${code}: ${out}`))));
});

try {
  const start = performance.now();
  console.log(await run(['repair-queue', 'add-file', file]));
  let list: RepairQueueEntry[] = [];
  for (;;) {
    list = await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).query(listQuery);
    if (list.length === N && list.every((e) => e.status === 'succeeded' || e.status === 'failed')) break;
    if (performance.now() - start > 30 * 60_000) throw new Error('not finished after 30 min');
    await sleep(500);
  }
  const wallS = (performance.now() - start) / 1000;
  const failed = list.filter((e) => e.status !== 'succeeded').length;

  // Actions and durations from histories (a sample of entries, and every run of the queue).
  const actionEvents = new Set([
    'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED', 'EVENT_TYPE_TIMER_STARTED', 'EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
    'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED', 'EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
    'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW',
  ]);
  const proto = (await import('@temporalio/proto')).default;
  const EventType = proto.temporal.api.enums.v1.EventType;
  const count = async (workflowId: string, runId?: string) => {
    const h = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const by: Record<string, number> = {};
    for (const ev of h.events ?? []) {
      const name = EventType[ev.eventType as number] as string;
      const key = `EVENT_TYPE_${name}`.replace('EVENT_TYPE_EVENT_TYPE_', 'EVENT_TYPE_');
      if (actionEvents.has(key)) by[key] = (by[key] ?? 0) + 1;
    }
    return by;
  };
  const sample = list.filter((_, i) => i % Math.max(1, Math.floor(N / 25)) === 0);
  const entryTotals: Record<string, number> = {};
  const durations: number[] = [];
  for (const e of sample) {
    const by = await count(`repair/${e.index}`);
    for (const [k, v] of Object.entries(by)) entryTotals[k] = (entryTotals[k] ?? 0) + v / sample.length;
    const d = await client.workflow.getHandle(`repair/${e.index}`).describe();
    durations.push(d.closeTime!.getTime() - d.startTime.getTime());
  }
  // Every run of the queue (continue-as-new chain) that served this benchmark.
  const queueTotals: Record<string, number> = {};
  let queueRuns = 0;
  for await (const w of client.workflow.list({ query: `WorkflowId="${REPAIR_QUEUE_WORKFLOW_ID}" AND TaskQueue="${taskQueue}"` })) {
    queueRuns++;
    for (const [k, v] of Object.entries(await count(w.workflowId, w.runId))) queueTotals[k] = (queueTotals[k] ?? 0) + v;
  }
  const perEntry = Object.values(entryTotals).reduce((a, b) => a + b, 0);
  const queuePerEntry = Object.values(queueTotals).reduce((a, b) => a + b, 0) / N;
  const mean = durations.reduce((a, b) => a + b, 0) / durations.length;
  const sorted = [...durations].sort((a, b) => a - b);
  console.log(JSON.stringify({
    entries: N, concurrency: CONCURRENCY, failed, wallSeconds: +wallS.toFixed(1), entriesPerSecond: +(N / wallS).toFixed(2),
    entryDurationMs: { mean: Math.round(mean), p50: sorted[Math.floor(sorted.length / 2)], max: sorted[sorted.length - 1] },
    commandsOwnMs: Math.round(commandMs),
    overheadPerEntryMs: Math.round(mean - commandMs),
    actionsPerEntry: { entryWorkflow: Object.fromEntries(Object.entries(entryTotals).map(([k, v]) => [k.replace('EVENT_TYPE_', ''), +v.toFixed(2)])), queueShare: +queuePerEntry.toFixed(2), total: +(perEntry + queuePerEntry).toFixed(2) },
    queue: { runs: queueRuns, actions: queueTotals },
    heartbeats: 'none reach the server for activities shorter than 1 s (the first heartbeat is sent after 1 s)',
  }, null, 2));
} finally {
  tend.kill('SIGTERM');
  await new Promise((r) => tend.once('exit', r));
  await client.workflow.getHandle(REPAIR_QUEUE_WORKFLOW_ID).terminate('repair benchmark done').catch(() => undefined);
  await connection.close();
  if (tendErr.includes('"level":50')) console.error(tendErr.split('\n').filter((l) => l.includes('"level":50')).slice(0, 5).join('\n'));
}
process.exit(0);
