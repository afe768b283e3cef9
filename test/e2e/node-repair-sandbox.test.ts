// deploy/demo/node-repair.yaml's repair command and health check, run as the repair worker runs
// them (the Node's InternalIP appended, the worker's environment: tend on PATH, the sandbox's state
// folder in TEND_SANDBOX_DIR) against the test sandbox: the command brings a stopped Node back, and
// the health check answers false while it is down and true once it is Ready.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { runCommand, runTend, type CliResult } from '../harness/cli.ts';
import { repoRoot, testStateDir } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';

const configFile = join(repoRoot, 'deploy/demo/node-repair.yaml');

interface Procedure {
  machine_types: string[];
  repair_operations: { operation: string; repair_steps: { repair_command: string[] }[]; health_check_command: string[] }[];
}

/** The operation nodeRepair asks for on Ready=Unknown, as the file configures it. */
function configured() {
  const doc = parse(readFileSync(configFile, 'utf8')) as {
    repair: { repair_procedures: Procedure[] };
    nodeRepair: { machineTypeLabel: string; nodeSelector: { matchLabels: Record<string, string> } };
  };
  const op = doc.repair.repair_procedures.flatMap((p) => p.repair_operations.map((o) => ({ ...o, types: p.machine_types })))
    .find((o) => o.operation === 'unreachable');
  assert.ok(op, 'a repair operation "unreachable"');
  assert.equal(op.repair_steps.length, 1);
  return { repair: op.repair_steps[0]!.repair_command, health: op.health_check_command, types: op.types, nodeRepair: doc.nodeRepair };
}

/** A configured command with the address appended, in the environment the worker gives its commands. */
function runConfigured(argv: string[], address: string): Promise<CliResult> {
  return runCommand(argv[0]!, [...argv.slice(1), address], {
    env: { ...process.env, PATH: `${join(repoRoot, 'bin')}:${process.env.PATH ?? ''}`, TEND_SANDBOX_DIR: testStateDir },
    timeoutMs: 60_000,
  });
}

describe('node repair on the sandbox: the configured commands', function () {
  this.timeout(180_000);
  const { repair, health, types, nodeRepair } = configured();
  let kube: ReturnType<typeof admin>;
  let node = '';
  let address = '';
  const readyOf = async () => (await kube.core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status;

  before(async () => {
    kube = admin();
    node = `sim-${sandbox().settings.nodes}`;
    const n = await kube.core.readNode({ name: node });
    address = n.status!.addresses!.find((a) => a.type === 'InternalIP')!.address;
    // The Node is what nodeRepair selects, and its machine type one the procedure repairs.
    for (const [k, v] of Object.entries(nodeRepair.nodeSelector.matchLabels)) assert.equal(n.metadata!.labels![k], v, k);
    assert.ok(types.includes(n.metadata!.labels![nodeRepair.machineTypeLabel]!), `machine type ${n.metadata!.labels![nodeRepair.machineTypeLabel]}`);
  });

  after(async () => {
    await runTend(['sandbox', 'node', 'start', node, '--state-dir', testStateDir]);
  });

  it('is a configuration tend config validate accepts', async () => {
    const r = await runTend(['config', 'validate', configFile]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /nodeRepair: Nodes unhealthy when Ready=Unknown for 20s/);
  });

  it('brings a stopped Node back through its InternalIP, and the health check follows it', async () => {
    assert.equal((await runConfigured(health, address)).stdout.trim(), 'true', 'healthy before the stop');
    const stop = await runTend(['sandbox', 'node', 'stop', address, '--state-dir', testStateDir]);
    assert.equal(stop.code, 0, stop.stderr);
    await waitFor(`${node} Ready=Unknown`, async () => (await readyOf()) === 'Unknown', {
      timeoutMs: (sandbox().settings.nodeMonitorGraceSeconds + 30) * 1000, intervalMs: 500,
    });
    const down = await runConfigured(health, address);
    assert.deepEqual([down.code, down.stdout.trim()], [0, 'false'], down.stderr);

    const run = await runConfigured(repair, address);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`node ${node}: heartbeats resumed`));
    await waitFor(`${node} Ready=True`, async () => (await readyOf()) === 'True', { timeoutMs: 60_000, intervalMs: 500 });
    const up = await runConfigured(health, address);
    assert.deepEqual([up.code, up.stdout.trim()], [0, 'true'], up.stderr);
  });

  it('refuses an address that is no Node\'s, naming it, and touches no Node', async () => {
    const before = (await kube.core.listNode()).items.map((n) => [n.metadata!.name, n.metadata!.annotations?.['sim.tend.dev/heartbeat']]);
    for (const argv of [repair, health]) {
      const r = await runConfigured(argv, '10.99.0.1');
      assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /no simulated Node is named "10\.99\.0\.1"/);
    }
    assert.deepEqual((await kube.core.listNode()).items.map((n) => [n.metadata!.name, n.metadata!.annotations?.['sim.tend.dev/heartbeat']]), before);
  });
});
