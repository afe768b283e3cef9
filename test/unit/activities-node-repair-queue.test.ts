// src/activities/node-repair-queue.ts, its pure parts and what it does before it reads the
// cluster: what one Node calls for by the worker's sections (nodeCase), the storm limit's counts
// (countNodes), and an ask refused before anything is read. The reads themselves, against a real
// API server: test/e2e/node-repair-assess.test.ts.
import assert from 'node:assert/strict';
import { createNodeRepairQueueActivities, countNodes, nodeCase, type NodeRepairQueueConfig } from '../../src/activities/node-repair-queue.ts';
import { parseNodeRepair, type NodeRepairConfig } from '../../src/config/node-repair.ts';
import type { KubeNodeLike } from '../../src/noderepair/node.ts';
import { NODE_REPAIR_REFUSED } from '../../src/noderepair/messages.ts';

function section(extra: Record<string, unknown> = {}): NodeRepairConfig {
  const r = parseNodeRepair({
    nodeSelector: { matchLabels: { pool: 'a' } }, machineTypeLabel: 'example.com/type',
    unhealthyConditions: [{ type: 'Ready', status: 'Unknown', duration: '20s' }, { type: 'Ready', status: 'False', duration: '5m' }],
    limits: { maximumRepairQueueEntries: 3 }, ...extra,
  });
  if ('problems' in r) assert.fail(r.problems.join('; '));
  return r.config;
}

const repair = { repair_procedures: [{ machine_types: ['qemu', 'sim'], repair_operations: [{ operation: 'unreachable' }, { operation: 'unhealthy' }] }, { machine_types: ['bmc'], repair_operations: [{ operation: 'reboot' }] }] };
const config = (more: Partial<NodeRepairQueueConfig> = {}): NodeRepairQueueConfig => ({ nodeRepair: section(), repair: repair as NodeRepairQueueConfig['repair'], ...more });

const T0 = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

function kubeNode(more: { labels?: Record<string, string>; annotations?: Record<string, string>; unschedulable?: boolean; ready?: string; since?: number; addresses?: { type: string; address: string }[] } = {}): KubeNodeLike {
  return {
    metadata: { name: 'worker-3', labels: more.labels ?? { pool: 'a', 'example.com/type': 'sim' }, ...(more.annotations && { annotations: more.annotations }) },
    ...(more.unschedulable !== undefined && { spec: { unschedulable: more.unschedulable } }),
    status: {
      addresses: more.addresses ?? [{ type: 'Hostname', address: 'worker-3' }, { type: 'InternalIP', address: '10.0.0.3' }],
      conditions: [{ type: 'Ready', status: more.ready ?? 'Unknown', lastTransitionTime: iso(more.since ?? T0) }],
    },
  };
}

describe('node-repair-queue activity: what a Node calls for (nodeCase)', () => {
  const now = T0 + 60_000;

  it('the entry of a Node whose condition has run out: its address, machine type and the condition\'s operation, with the reason', () => {
    assert.deepEqual(nodeCase('worker-3', kubeNode(), config(), now), {
      request: { address: '10.0.0.3', machineType: 'sim', operation: 'unreachable' }, reason: 'Ready=Unknown for 20s', since: T0, rebooting: false,
    });
    // Ready=False is `unhealthy` by CKE's names.
    const r = nodeCase('worker-3', kubeNode({ ready: 'False', since: T0 - 600_000 }), config(), now);
    assert.ok('request' in r);
    assert.equal(r.request.operation, 'unhealthy');
    assert.equal(r.reason, 'Ready=False for 5m');
  });

  it('a cordoned Node with the reboot annotation is in a planned reboot, since when it met the condition', () => {
    const c = config({ nodeRepair: section({ limits: { maximumRepairQueueEntries: 3, waitSecondsToRepairRebooting: 600, rebootAnnotation: 'example.com/reboot' } }) });
    const r = nodeCase('worker-3', kubeNode({ unschedulable: true, annotations: { 'example.com/reboot': '' } }), c, now);
    assert.ok('request' in r);
    assert.equal(r.rebooting, true);
    assert.equal(r.since, T0);
    // Cordoned without the annotation, or annotated and schedulable: not a planned reboot.
    for (const n of [kubeNode({ unschedulable: true }), kubeNode({ annotations: { 'example.com/reboot': '' } })]) {
      const other = nodeCase('worker-3', n, c, now);
      assert.ok('request' in other);
      assert.equal(other.rebooting, false);
    }
  });

  const answers: { name: string; node: KubeNodeLike | undefined; config?: NodeRepairQueueConfig; now?: number; want: { decision: string; reason?: string; sentence: RegExp } }[] = [
    { name: 'no nodeRepair section: not-configured', node: kubeNode(), config: { repair: repair as NodeRepairQueueConfig['repair'] }, want: { decision: 'refused', reason: 'not-configured', sentence: /no nodeRepair section/ } },
    { name: 'the Node is gone: not-needed', node: undefined, want: { decision: 'not-needed', sentence: /^Node worker-3 is gone/ } },
    { name: 'nodeSelector no longer selects it: not-needed', node: kubeNode({ labels: { pool: 'b', 'example.com/type': 'sim' } }), want: { decision: 'not-needed', sentence: /not selected by nodeRepair.nodeSelector/ } },
    { name: 'it is Ready again: not-needed', node: kubeNode({ ready: 'True' }), want: { decision: 'not-needed', sentence: /meets no unhealthy condition/ } },
    {
      name: 'its duration still runs: not-needed, saying from when it is unhealthy', node: kubeNode({ since: T0 }), now: T0 + 5_000,
      want: { decision: 'not-needed', sentence: new RegExp(`meets Ready=Unknown since ${iso(T0).replace(/\./g, '\\.')}, not yet for 20s: it is unhealthy from ${iso(T0 + 20_000).replace(/\./g, '\\.')} on`) },
    },
    { name: 'no InternalIP: unmappable', node: kubeNode({ addresses: [{ type: 'Hostname', address: 'worker-3' }] }), want: { decision: 'refused', reason: 'unmappable', sentence: /has no InternalIP address/ } },
    { name: 'no machine type label: unmappable', node: kubeNode({ labels: { pool: 'a' } }), want: { decision: 'refused', reason: 'unmappable', sentence: /has no example.com\/type label/ } },
    {
      name: 'an address a kubelet wrote that no entry may have: unmappable, the address shown bounded', node: kubeNode({ addresses: [{ type: 'InternalIP', address: `10.0.0.3;${'x'.repeat(500)}` }] }),
      want: { decision: 'refused', reason: 'unmappable', sentence: /^Node worker-3's InternalIP address cannot be a repair entry's: address "10\.0\.0\.3;x+… is 509 characters long, past the most an address may have \(253/ },
    },
    {
      name: 'a short address no entry may have: unmappable, for its characters', node: kubeNode({ addresses: [{ type: 'InternalIP', address: '10.0.0.3;x' }] }),
      want: { decision: 'refused', reason: 'unmappable', sentence: /^Node worker-3's InternalIP address cannot be a repair entry's: address "10\.0\.0\.3;x" is not an IP address or a DNS name/ },
    },
    { name: 'no repair section: not-configured', node: kubeNode(), config: { nodeRepair: section() }, want: { decision: 'refused', reason: 'not-configured', sentence: /no repair section/ } },
    {
      name: 'a machine type without that operation: not-configured, naming both and the types that have it', node: kubeNode({ labels: { pool: 'a', 'example.com/type': 'bmc' } }),
      want: { decision: 'refused', reason: 'not-configured', sentence: /machine type bmc \(label example.com\/type\) has no repair operation unreachable in the repair section \(machine types with it: qemu, sim\)/ },
    },
    {
      name: 'a machine type the repair section does not know: not-configured', node: kubeNode({ labels: { pool: 'a', 'example.com/type': 'other' } }),
      want: { decision: 'refused', reason: 'not-configured', sentence: /machine type other .* has no repair operation unreachable/ },
    },
  ];
  for (const c of answers) {
    it(c.name, () => {
      const r = nodeCase('worker-3', c.node, c.config ?? config(), c.now ?? now);
      assert.ok('answer' in r, JSON.stringify(r));
      assert.equal(r.answer.decision, c.want.decision);
      if (c.want.reason) assert.equal(r.answer.decision === 'refused' && r.answer.reason, c.want.reason);
      assert.match(r.answer.sentence, c.want.sentence);
      assert.ok(r.answer.sentence.length < 400, `a sentence of ${r.answer.sentence.length} characters`);
    });
  }
});

describe('node-repair-queue activity: the storm limit\'s counts (countNodes)', () => {
  it('counts the selected Nodes, and as healthy those meeting no unhealthy condition (one whose duration still runs is not)', () => {
    const now = T0 + 60_000;
    const nodes = [
      kubeNode({ ready: 'True' }),
      kubeNode({ ready: 'True' }),
      // Unknown for 60 s (run out), for 5 s (still running): neither healthy.
      kubeNode({ since: T0 }),
      kubeNode({ since: now - 5_000 }),
      // Not selected (the API server answered it all the same): not counted.
      kubeNode({ labels: { pool: 'b' }, ready: 'False' }),
      { metadata: { name: 'bare', labels: { pool: 'a' } } },
    ];
    assert.deepEqual(countNodes(nodes, section(), now), { selected: 5, healthy: 3 });
    assert.deepEqual(countNodes([], section(), now), { selected: 0, healthy: 0 });
  });
});

describe('node-repair-queue activity: an ask refused before anything is read', () => {
  for (const bad of [{ node: 'Worker_3' }, { node: 'a'.repeat(254) }, { node: 'worker-3', address: '10.0.0.3' }, {}, null, 'worker-3']) {
    it(`refuses ${JSON.stringify(bad)?.slice(0, 40)} non-retryably`, async () => {
      // No Kubernetes connection: a read would fail otherwise.
      const a = createNodeRepairQueueActivities(undefined, config());
      await assert.rejects(a.nodeRepairAssess(bad as { node: string }), (err: Error & { type?: string; nonRetryable?: boolean }) =>
        err.type === NODE_REPAIR_REFUSED && err.nonRetryable === true && /^node repair: refused: nodeRepairAssess/.test(err.message));
    });
  }

  it('answers not-configured without a nodeRepair section, and without a Kubernetes connection', async () => {
    const none = await createNodeRepairQueueActivities(undefined, { repair: repair as NodeRepairQueueConfig['repair'] }).nodeRepairAssess({ node: 'worker-3' });
    assert.ok('answer' in none && none.answer.decision === 'refused' && none.answer.reason === 'not-configured');
    const noKube = await createNodeRepairQueueActivities(undefined, config()).nodeRepairAssess({ node: 'worker-3' });
    assert.ok('answer' in noKube && noKube.answer.decision === 'refused' && noKube.answer.reason === 'not-configured');
    assert.match(noKube.answer.sentence, /no Kubernetes connection/);
  });
});

describe('node-repair-queue activity: one count of the selected Nodes serves a burst of asks', () => {
  it('asks together share one LIST; a failed LIST is not kept', async () => {
    let lists = 0;
    let fail = false;
    const down = kubeNode({ since: Date.now() - 3_600_000 });
    const kube = {
      core: { readNode: async () => down },
      nodes: {
        list: async () => {
          lists += 1;
          if (fail) throw new Error('429 too many requests');
          return { items: [down, kubeNode({ ready: 'True' }), kubeNode({ ready: 'True' })], metadata: {} };
        },
      },
    } as unknown as Parameters<typeof createNodeRepairQueueActivities>[0];
    const a = createNodeRepairQueueActivities(kube, config());
    const answers = await Promise.all(Array.from({ length: 20 }, () => a.nodeRepairAssess({ node: 'worker-3' })));
    assert.equal(lists, 1, 'twenty asks at once: one LIST');
    for (const r of answers) assert.deepEqual('nodes' in r && r.nodes, { selected: 3, healthy: 2 });
    const later = createNodeRepairQueueActivities(kube, config());
    fail = true;
    await assert.rejects(later.nodeRepairAssess({ node: 'worker-3' }), /429/);
    fail = false;
    const again = await later.nodeRepairAssess({ node: 'worker-3' });
    assert.equal(lists, 3, 'a failed count is read again by the next ask');
    assert.deepEqual('nodes' in again && again.nodes, { selected: 3, healthy: 2 });
  });
});
