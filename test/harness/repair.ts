// Repair queue e2e helpers: a tend config with a repair section whose
// commands are harmless (touch / test -f in a temp folder), the real
// `tend repair-queue` and `temporal` CLIs, and a clean queue per suite.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { runTend, TendProcess, type CliResult } from './cli.ts';
import { repoRoot } from './env.ts';
import { sandbox } from './hooks.ts';
import { admin, deployment } from './kube.ts';
import { waitFor } from './wait.ts';
import type { RepairQueueEntry } from '../../src/repair/entry.ts';
import { enableAuditLog, TEND_USER } from '../../src/sandbox/sandbox.ts';
import { AuditLog, type Write } from '../../faults/audit.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import type * as k8s from '@kubernetes/client-node';

export const REPAIR_TASK_QUEUE = 'tend-repair';

export { temporalCli } from './temporal.ts';
import { terminateRunning } from './in-process-reads.ts';

/** sh -c SCRIPT: the address arrives as $0. */
const sh = (script: string) => ['sh', '-c', script];

export interface RepairWorld {
  dir: string;
  config: string;
  /** Marks the machine healthy for the health check. */
  healthy: (address: string) => void;
  /** Makes it unhealthy again (a machine repaired before breaks anew). */
  broken: (address: string) => void;
}

/**
 * A temp folder and a config. Health: `DIR/<address>` exists. Every repair
 * command appends a line to `DIR/<address>.log`, so a test can count runs.
 */
export function repairWorld(extra: Record<string, unknown> = {}): RepairWorld {
  const dir = mkdtempSync(join(tmpdir(), 'tend-repair-'));
  const logRun = (what: string) => `echo ${what} >> ${dir}/"$0".log`;
  const heal = `touch ${dir}/"$0"`;
  const step = (command: string, watch: number, more: Record<string, unknown> = {}) => ({ repair_command: sh(command), watch_seconds: watch, ...more });
  const health = sh(`test -f ${dir}/"$0" && echo true || echo false`);
  const op = (operation: string, steps: unknown[], more: Record<string, unknown> = {}) => ({ operation, repair_steps: steps, health_check_command: health, ...more });
  const config = {
    temporal: { address: sandbox().temporalAddress, taskQueue: REPAIR_TASK_QUEUE },
    kubernetes: { kubeconfig: sandbox().tendKubeconfig },
    repair: {
      max_concurrent_repairs: 3,
      time_scale: 0.05, // watch 60 s -> 3 s, back-off 60 s -> 3 s, eviction timeout 200 s -> 10 s
      eviction_timeout_seconds: 200,
      protected_namespaces: { matchLabels: { 'repair.tend.dev/protected': 'true' } },
      repair_procedures: [{
        machine_types: ['sim', 'qemu'],
        repair_operations: [
          op('heal', [step(`${logRun('heal')}; ${heal}`, 60)]),
          op('two-steps', [step(logRun('nothing'), 40), step(`${logRun('heal')}; ${heal}`, 60)]),
          // CKE's defaults: no watch_seconds (one health check, then the next step at once), command_timeout_seconds 0 (none).
          op('no-watch', [{ repair_command: sh(logRun('nothing')) }, { repair_command: sh(`${logRun('heal')}; ${heal}`) }]),
          op('no-watch-never', [{ repair_command: sh(logRun('nothing')) }, { repair_command: sh(logRun('nothing')) }]),
          op('no-timeout', [{ repair_command: sh(`sleep 2; ${logRun('heal')}; ${heal}`), command_timeout_seconds: 0 }], { command_timeout_seconds: 0 }),
          op('never', [step(logRun('nothing'), 20), step(logRun('nothing'), 20)]),
          op('broken', [step(`${logRun('broken')}; exit 3`, 60)]),
          op('heal-bad-success', [step(heal, 60)], { success_command: sh('echo cannot; exit 1') }),
          op('heal-success', [step(heal, 60)], { success_command: sh(`touch ${dir}/"$0".success`) }),
          op('drain', [step(`${logRun('heal')}; ${heal}`, 60, { need_drain: true })]),
          op('slow', [step(`${logRun('start')}; sleep 8; ${logRun('slow')}; ${heal}`, 60)]),
          op('wait-heal', [step(logRun('wait'), 600)]),
          // A drain, then a command that does not heal: the test heals the machine once the entry watches (in act and observe mode alike).
          op('drain-wait', [step(logRun('wait'), 600, { need_drain: true })]),
          // Each run logs its start (ns, entry, step, attempt, its process group) and end (ns): runs of one entry never overlap.
          op('long', [step(`echo start $(date +%s%N) $TEND_REPAIR_INDEX $TEND_REPAIR_STEP $TEND_REPAIR_ATTEMPT $$ >> ${dir}/"$0".times; sleep 20; echo end $(date +%s%N) >> ${dir}/"$0".times; ${heal}`, 60, { command_timeout_seconds: 60 })]),
          op('env', [step(logRun('nothing'), 1), step(`echo "$TEND_REPAIR_INDEX $TEND_REPAIR_STEP $TEND_REPAIR_ATTEMPT $TEND_REPAIR_COMMAND" >> ${dir}/"$0".env; exit 1`, 60, { command_retries: 1 })]),
        ],
      }],
      // Per-entry process group records: this world's own, not the user's.
      state_dir: join(dir, 'state'),
      ...extra,
    },
  };
  const file = join(dir, 'tend.yaml');
  writeFileSync(file, stringify(config));
  return { dir, config: file, healthy: (address) => writeFileSync(join(dir, address), ''), broken: (address) => rmSync(join(dir, address), { force: true }) };
}

export function rq(world: RepairWorld, args: string[]): Promise<CliResult> {
  // Options first, so that `add OP TYPE -- -ADDRESS` keeps working.
  return runTend(['repair-queue', args[0]!, '--config', world.config, ...args.slice(1)]);
}

export async function entries(world: RepairWorld): Promise<RepairQueueEntry[]> {
  const r = await rq(world, ['list']);
  if (r.code !== 0) throw new Error(`repair-queue list: exit ${r.code}: ${r.stderr}`);
  // ckecli prints an empty queue as null.
  return (JSON.parse(r.stdout) as RepairQueueEntry[] | null) ?? [];
}

export async function entry(world: RepairWorld, index: string): Promise<RepairQueueEntry | undefined> {
  return (await entries(world)).find((e) => e.index === index);
}

export async function add(world: RepairWorld, op: string, address: string, type = 'sim'): Promise<RepairQueueEntry> {
  const r = await rq(world, ['add', op, type, address]);
  if (r.code !== 0) throw new Error(`repair-queue add: exit ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as RepairQueueEntry;
}

/** A clean queue, a repair world and `tend run` on it, once its worker polls. */
export async function startRepairTend(timeoutMs = 60_000): Promise<{ world: RepairWorld; tend: TendProcess }> {
  await resetRepairQueue();
  const world = repairWorld();
  const tend = new TendProcess(['run', '--config', world.config]);
  await waitFor('worker started', () => tend.output.includes('worker started'), { timeoutMs });
  return { world, tend };
}

/** No queue, no running entry workflow, no node cordoned by an earlier run: each suite starts clean. */
export async function resetRepairQueue(): Promise<void> {
  // In the test process: two temporal CLI processes or more per suite, for what is not the subject.
  await terminateRunning('TendCapability="repair"', 'test reset');
  const kube = admin();
  for (const n of (await kube.core.listNode()).items) {
    if (n.spec?.unschedulable) {
      await kube.core.patchNode({ name: n.metadata!.name!, body: [{ op: 'remove', path: '/spec/unschedulable' }] }).catch(() => undefined);
    }
  }
}

export async function nodeUnschedulable(name: string): Promise<boolean> {
  return Boolean((await admin().core.readNode({ name })).spec?.unschedulable);
}

export const tendCli = join(repoRoot, 'src/starters/cli.ts');

const FINALIZER = 'test.tend.dev/hold';

export function pinned(namespace: string, name: string, node: string): k8s.V1Deployment {
  const d = deployment({ namespace, name, replicas: 1 });
  d.spec!.template.spec!.nodeSelector = { 'kubernetes.io/hostname': node };
  return d;
}

/** A bare pod on `node` whose deletion hangs on a finalizer: a drain that stays `draining`. */
export async function stuckPod(kube: KubeClients, namespace: string, name: string, node: string): Promise<k8s.V1Pod> {
  return kube.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, namespace, finalizers: [FINALIZER] },
      spec: { nodeName: node, containers: [{ name: 'c', image: 'registry.example/c:1' }] },
    },
  });
}

export async function release(kube: KubeClients, namespace: string, name: string) {
  await kube.core.patchNamespacedPod({ namespace, name, body: [{ op: 'remove', path: '/metadata/finalizers' }] }).catch(() => undefined);
}

export async function podGone(kube: KubeClients, namespace: string, uid: string): Promise<boolean> {
  return !(await kube.core.listNamespacedPod({ namespace })).items.some((p) => p.metadata?.uid === uid);
}


/**
 * tend's writes as kube-apiserver's audit log records them (Events are not recorded):
 * turns the sandbox's audit log on (restarting kube-apiserver the first time).
 */
export async function tendWrites(): Promise<(from: number, to?: number) => Promise<Write[]>> {
  const log = new AuditLog(await enableAuditLog(sandbox().stateDir));
  const start = await log.mark();
  return async (from, to = Infinity) => (await log.since(start)).filter((w) => w.user === TEND_USER && w.at >= from && w.at <= to);
}
