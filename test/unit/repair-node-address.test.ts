// The Node behind an address: two Nodes with the same InternalIP are refused,
// naming both, before anything is cordoned; never the first one found.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { parseConfig } from '../../src/config/load.ts';
import { createRepairActivities, REPAIR_CORDON_ANNOTATION } from '../../src/activities/repair.ts';
import type { KubeClients } from '../../src/kube/client.ts';

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
