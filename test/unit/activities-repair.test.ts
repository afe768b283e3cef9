// src/activities/repair.ts: what the command activities send to Temporal, and the Node behind an address.
// What the command activities send to Temporal: the exit code and a few words,
// never the argv, the address or what the command printed (every Web UI viewer
// reads the history). Those go to the entry's log file on the worker's host,
// shown by `tend repair-queue logs INDEX`.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { parseConfig } from '../../src/config/load.ts';
import { createRepairActivities, REPAIR_CORDON_ANNOTATION, type CommandResult } from '../../src/activities/repair.ts';
import { entryLogFiles } from '../../src/repair/process.ts';
import type { KubeClients } from '../../src/kube/client.ts';

describe('repair command activities: nothing from a command reaches history', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tend-repair-activity-'));
  const { repair } = parseConfig(`
repair:
  state_dir: ${dir}
  repair_procedures:
    - machine_types: [sim]
      repair_operations:
        - operation: leaky
          repair_steps:
            - { repair_command: [sh, -c, 'echo ipmitool -P hunter2secret -H "$0"; echo "bad password for $0" >&2; exit 3'], command_retries: 1 }
          health_check_command: [sh, -c, 'echo true']
        - operation: noisy
          repair_steps:
            - { repair_command: [sh, -c, 'head -c 1048576 /dev/zero | tr "\\\\0" "\\\\1"'] }
          health_check_command: [sh, -c, 'head -c 1048576 /dev/zero | tr "\\\\0" "\\\\1"']
`, 'c.yaml');
  const acts = createRepairActivities(undefined, repair);
  const key = { index: '3', address: '10.77.0.3', machine_type: 'sim', operation: 'leaky' };

  it('a failing command: ok false, its exit code, and where its output is; no argv, address or output', async () => {
    const r: CommandResult = await new MockActivityEnvironment().run(acts.repairRunCommand, { ...key, step: 0, kind: 'repair_command' as const });
    assert.equal(r.ok, false);
    assert.equal(r.exitCode, 3);
    assert.equal(r.attempts, 2);
    assert.equal(r.error, 'exit code 3; output: tend repair-queue logs 3');
    const sent = JSON.stringify(r);
    for (const s of ['ipmitool', 'hunter2secret', '10.77.0.3', 'bad password', 'sh -c']) assert.ok(!sent.includes(s), `${s} in ${sent}`);
    // The entry's log file has both runs, argv and output.
    const text = readFileSync(entryLogFiles(dir, '3').current, 'utf8');
    assert.equal(text.match(/^=== .* repair_command run \d: sh -c echo ipmitool/gm)?.length, 2);
    assert.match(text, /hunter2secret -H 10\.77\.0\.3[\s\S]*bad password for 10\.77\.0\.3/);
  });

  it('1 MiB of control characters: the result stays a few words (it was about 6 MiB escaped, past the payload limit)', async () => {
    const noisy = { ...key, index: '4', operation: 'noisy' };
    const r: CommandResult = await new MockActivityEnvironment().run(acts.repairRunCommand, { ...noisy, step: 0, kind: 'repair_command' as const });
    assert.equal(r.ok, true, r.error);
    assert.ok(JSON.stringify(r).length < 300, `${JSON.stringify(r).length} characters`);
    const h = await new MockActivityEnvironment().run(acts.repairWatchHealth, { ...noisy, step: 0, until: Date.now() });
    assert.deepEqual(h, { healthy: false, checks: 1 });
  });
});

// The Node behind an address: two Nodes with the same InternalIP are refused,
// naming both, before anything is cordoned; never the first one found.
const node = (name: string, address: string, annotations?: Record<string, string>): k8s.V1Node => ({
  metadata: { name, uid: `uid-${name}`, resourceVersion: '1', ...(annotations ? { annotations } : {}) },
  status: { addresses: [{ type: 'InternalIP', address }] },
});

/** Lists the Nodes given; any write or other read fails the test. */
function kubeWith(nodes: k8s.V1Node[]): { kube: KubeClients; writes: string[] } {
  const writes: string[] = [];
  const core = {
    listNode: async () => ({ items: nodes }),
    readNode: async ({ name }: { name: string }) => nodes.find((n) => n.metadata!.name === name),
    patchNode: async ({ name }: { name: string }) => {
      writes.push(`patch ${name}`);
      return nodes.find((n) => n.metadata!.name === name);
    },
  };
  return { kube: { core, events: { createNamespacedEvent: async () => ({}) } } as unknown as KubeClients, writes };
}

describe('repair: the Node behind an address', () => {
  const heal = { operation: 'heal', repair_steps: [{ repair_command: ['fix'], need_drain: true }], health_check_command: ['check'] };
  const { repair } = parseConfig(JSON.stringify({ repair: { repair_procedures: [{ machine_types: ['sim'], repair_operations: [heal] }] } }), 'c.yaml');
  const key = { index: '3', address: '10.0.0.7', machine_type: 'sim', operation: 'heal' };
  const twins = () => kubeWith([node('worker-a', '10.0.0.7'), node('other', '10.0.0.8'), node('worker-b', '10.0.0.7')]);

  it('two Nodes with the same InternalIP: refused by name (both), nothing cordoned', async () => {
    const { kube, writes } = twins();
    const acts = createRepairActivities(kube, repair);
    const refused = (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure, String(err));
      assert.equal(err.nonRetryable, true);
      assert.equal(err.type, 'RepairNotConfigured');
      assert.match(err.message, /address 10\.0\.0\.7 is the InternalIP of 2 Nodes \(worker-a, worker-b\): which one to repair is ambiguous/);
      return true;
    };
    await assert.rejects(new MockActivityEnvironment().run(acts.repairLocate, key), refused);
    await assert.rejects(new MockActivityEnvironment().run(acts.repairDrain, { ...key, step: 0, deadline: Date.now() + 60_000 }), refused);
    assert.deepEqual(writes, []);
  });

  it('one Node: found; an uncordon with twins lifts only the Node this entry cordoned', async () => {
    const one = createRepairActivities(kubeWith([node('worker-a', '10.0.0.7'), node('other', '10.0.0.8')]).kube, repair);
    const located: { nodename: string } = await new MockActivityEnvironment().run(one.repairLocate, key);
    assert.equal(located.nodename, 'worker-a');
    const { kube, writes } = kubeWith([node('worker-a', '10.0.0.7'), node('worker-b', '10.0.0.7', { [REPAIR_CORDON_ANNOTATION]: '3' })]);
    const acts = createRepairActivities(kube, repair);
    (await kube.core.readNode({ name: 'worker-b' }) as k8s.V1Node).spec = { unschedulable: true };
    assert.equal(await new MockActivityEnvironment().run(acts.repairUncordon, { index: '3', address: '10.0.0.7' }), 'changed');
    assert.deepEqual(writes, ['patch worker-b']);
  });
});
