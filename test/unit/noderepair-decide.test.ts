// src/noderepair/decide.ts and node.ts: when a Node meets an unhealthy condition (NHC's reading),
// the repair entry it maps to (CKE's), and whether the queue adds it (CKE's limiters in CKE's
// order, then NHC's minHealthy), table-driven with no cluster.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import {
  enqueueDecision, matchReason, minHealthyCount, unhealthyMatch, wouldEnqueueSentence, type EnqueueContext, type EnqueueDecision,
} from '../../src/noderepair/decide.ts';
import { inPlannedReboot, nodeViewOf, repairRequestOf, type NodeView } from '../../src/noderepair/node.ts';
import { parseNodeRepair, type NodeRepairConfig, type UnhealthyCondition } from '../../src/config/node-repair.ts';

function section(extra: Record<string, unknown> = {}): NodeRepairConfig {
  const r = parseNodeRepair({ nodeSelector: { matchLabels: { pool: 'a' } }, machineTypeLabel: 'example.com/type', limits: { maximumRepairQueueEntries: 3 }, ...extra });
  if ('problems' in r) assert.fail(r.problems.join('; '));
  return r.config;
}

const MIN = 60_000;
const T0 = Date.parse('2026-01-01T00:00:00Z');
const cond = (type: string, status: string, minutes: number): UnhealthyCondition => ({ type, status: status as UnhealthyCondition['status'], duration: { text: `${minutes}m`, ms: minutes * MIN } });
const node = (conditions: NodeView['conditions']): NodeView => ({ name: 'n1', conditions });

describe('nodeRepair: unhealthyMatch', () => {
  const configured = [cond('Ready', 'False', 5), cond('Ready', 'Unknown', 10), cond('DiskPressure', 'True', 2)];
  const cases: { name: string; conditions: NodeView['conditions']; now: number; want: { index: number; since: number; sinceKnown: boolean; expiresAt: number; expired: boolean } | undefined }[] = [
    { name: 'a healthy Node meets nothing', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: T0 }], now: T0 + 60 * MIN, want: undefined },
    { name: 'a Node without conditions meets nothing', conditions: undefined, now: T0, want: undefined },
    { name: 'a type that is configured with another status', conditions: [{ type: 'DiskPressure', status: 'False', lastTransitionTime: T0 }], now: T0 + 60 * MIN, want: undefined },
    { name: 'a condition no configuration names', conditions: [{ type: 'MemoryPressure', status: 'True', lastTransitionTime: T0 }], now: T0 + 60 * MIN, want: undefined },
    { name: 'Ready=Unknown, its duration still running', conditions: [{ type: 'Ready', status: 'Unknown', lastTransitionTime: T0 }], now: T0 + 10 * MIN - 1, want: { index: 1, since: T0, sinceKnown: true, expiresAt: T0 + 10 * MIN, expired: false } },
    { name: 'Ready=Unknown, exactly at since + duration: run out', conditions: [{ type: 'Ready', status: 'Unknown', lastTransitionTime: T0 }], now: T0 + 10 * MIN, want: { index: 1, since: T0, sinceKnown: true, expiresAt: T0 + 10 * MIN, expired: true } },
    { name: 'no lastTransitionTime: counted from now', conditions: [{ type: 'Ready', status: 'False' }], now: T0, want: { index: 0, since: T0, sinceKnown: false, expiresAt: T0 + 5 * MIN, expired: false } },
    {
      name: 'two met, neither run out: the one that runs out first',
      conditions: [{ type: 'Ready', status: 'Unknown', lastTransitionTime: T0 }, { type: 'DiskPressure', status: 'True', lastTransitionTime: T0 + MIN }],
      now: T0 + 2 * MIN, want: { index: 2, since: T0 + MIN, sinceKnown: true, expiresAt: T0 + 3 * MIN, expired: false },
    },
    {
      name: 'two run out: the first in configuration order, as NHC',
      conditions: [{ type: 'DiskPressure', status: 'True', lastTransitionTime: T0 }, { type: 'Ready', status: 'Unknown', lastTransitionTime: T0 + MIN }],
      now: T0 + 60 * MIN, want: { index: 1, since: T0 + MIN, sinceKnown: true, expiresAt: T0 + 11 * MIN, expired: true },
    },
    {
      name: 'one type twice on the Node: the last counts',
      conditions: [{ type: 'Ready', status: 'Unknown', lastTransitionTime: T0 }, { type: 'Ready', status: 'True', lastTransitionTime: T0 }],
      now: T0 + 60 * MIN, want: undefined,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const m = unhealthyMatch(node(c.conditions), configured, c.now);
      assert.deepEqual(m && { index: m.index, since: m.since, sinceKnown: m.sinceKnown, expiresAt: m.expiresAt, expired: m.expired }, c.want);
      if (m) assert.equal(m.condition, configured[m.index]);
    });
  }

  it('a Node that recovers meets nothing any more', () => {
    const down = node([{ type: 'Ready', status: 'Unknown', lastTransitionTime: T0 }]);
    assert.equal(unhealthyMatch(down, configured, T0 + MIN)?.index, 1);
    const up = node([{ type: 'Ready', status: 'True', lastTransitionTime: T0 + 2 * MIN }]);
    assert.equal(unhealthyMatch(up, configured, T0 + 3 * MIN), undefined);
  });

  it("reads the configured durations (the section's defaults: 300s)", () => {
    const m = unhealthyMatch(node([{ type: 'Ready', status: 'Unknown', lastTransitionTime: T0 }]), section().unhealthyConditions, T0);
    assert.equal(m?.expiresAt, T0 + 300_000);
    assert.equal(matchReason(m!), 'Ready=Unknown for 300s');
  });
});

describe('nodeRepair: a Node as read and its repair entry', () => {
  it("nodeViewOf: times from RFC 3339 text or a Date; an unreadable or absent time is none", () => {
    const v = nodeViewOf({
      metadata: { name: 'n1', labels: { a: 'b' }, annotations: { r: '' } },
      spec: { unschedulable: true },
      status: {
        addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
        conditions: [
          { type: 'Ready', status: 'Unknown', lastTransitionTime: '2026-01-01T00:00:00Z' },
          { type: 'A', status: 'True', lastTransitionTime: new Date(T0 + 1) },
          { type: 'B', status: 'True', lastTransitionTime: 'yesterday' },
          { type: 'C', status: 'True' },
        ],
      },
    });
    assert.deepEqual(v, {
      name: 'n1', labels: { a: 'b' }, annotations: { r: '' }, unschedulable: true, addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
      conditions: [
        { type: 'Ready', status: 'Unknown', lastTransitionTime: T0 },
        { type: 'A', status: 'True', lastTransitionTime: T0 + 1 },
        { type: 'B', status: 'True', lastTransitionTime: undefined },
        { type: 'C', status: 'True', lastTransitionTime: undefined },
      ],
    });
  });

  it('inPlannedReboot: cordoned and annotated; neither alone; never without a configured annotation', () => {
    const limits = { rebootAnnotation: 'example.com/rebooting' };
    assert.equal(inPlannedReboot({ name: 'n', unschedulable: true, annotations: { 'example.com/rebooting': '' } }, limits), true);
    assert.equal(inPlannedReboot({ name: 'n', unschedulable: false, annotations: { 'example.com/rebooting': 'x' } }, limits), false);
    assert.equal(inPlannedReboot({ name: 'n', unschedulable: true, annotations: { other: 'x' } }, limits), false);
    assert.equal(inPlannedReboot({ name: 'n', unschedulable: true, annotations: { 'example.com/rebooting': '' } }, {}), false);
  });

  const config = section({ address: { type: 'InternalIP' } });
  const base: NodeView = {
    name: 'n1', labels: { 'example.com/type': 'qemu' },
    addresses: [{ type: 'Hostname', address: 'n1' }, { type: 'InternalIP', address: '' }, { type: 'InternalIP', address: '10.0.0.1' }, { type: 'InternalIP', address: '10.0.0.2' }],
  };
  const cases: { name: string; node: NodeView; condition: { type: string; status: string }; config?: NodeRepairConfig; want: unknown }[] = [
    { name: 'the first non-empty address of the type, the label, the condition\'s operation', node: base, condition: { type: 'Ready', status: 'Unknown' }, want: { request: { address: '10.0.0.1', machineType: 'qemu', operation: 'unreachable' } } },
    { name: 'a condition without its own operation: the default', node: base, condition: { type: 'Ready', status: 'False' }, want: { request: { address: '10.0.0.1', machineType: 'qemu', operation: 'unhealthy' } } },
    { name: 'another address type configured', node: base, condition: { type: 'Ready', status: 'False' }, config: section({ address: { type: 'Hostname' } }), want: { request: { address: 'n1', machineType: 'qemu', operation: 'unhealthy' } } },
    {
      name: 'a Node without the address type', node: { ...base, addresses: [{ type: 'Hostname', address: 'n1' }] }, condition: { type: 'Ready', status: 'Unknown' },
      want: { problem: 'no-address', sentence: 'Node n1 has no InternalIP address: nothing to repair by' },
    },
    {
      name: 'a Node without addresses at all', node: { ...base, addresses: undefined }, condition: { type: 'Ready', status: 'Unknown' },
      want: { problem: 'no-address', sentence: 'Node n1 has no InternalIP address: nothing to repair by' },
    },
    {
      name: 'a Node without the machine type label (or with it empty)', node: { ...base, labels: { 'example.com/type': '' } }, condition: { type: 'Ready', status: 'Unknown' },
      want: { problem: 'no-machine-type', sentence: 'Node n1 has no example.com/type label: its machine type, which names its repair procedure, is unknown' },
    },
    {
      name: 'no operation for the condition', node: base, condition: { type: 'Ready', status: 'False' },
      config: section({ unhealthyConditions: [{ type: 'Ready', status: 'Unknown', duration: '1m' }], operations: { 'Ready/Unknown': 'x' } }),
      want: { problem: 'no-operation', sentence: 'no operation for Ready/False: operations names neither it nor default' },
    },
  ];
  for (const c of cases) it(`repairRequestOf: ${c.name}`, () => assert.deepEqual(repairRequestOf(c.node, c.condition, c.config ?? config), c.want));
});

describe('nodeRepair: minHealthyCount (NHC rounds a percentage up)', () => {
  const cases: { minHealthy: number | string; selected: number; want: number }[] = [
    { minHealthy: '51%', selected: 6, want: 4 },
    { minHealthy: '50%', selected: 5, want: 3 },
    { minHealthy: '40%', selected: 10, want: 4 },
    { minHealthy: '40%', selected: 11, want: 5 },
    { minHealthy: '33%', selected: 3, want: 1 },
    { minHealthy: '0%', selected: 9, want: 0 },
    { minHealthy: '100%', selected: 7, want: 7 },
    { minHealthy: '51%', selected: 0, want: 0 },
    { minHealthy: 3, selected: 100, want: 3 },
  ];
  for (const c of cases) it(`${c.minHealthy} of ${c.selected} is ${c.want}`, () => assert.equal(minHealthyCount(c.minHealthy, c.selected), c.want));
});

describe('nodeRepair: enqueueDecision', () => {
  const request = { address: '10.0.0.1', operation: 'unreachable', machineType: 'qemu' };
  const ctx = (over: Partial<Omit<EnqueueContext, 'limits'>> & { limits?: Partial<EnqueueContext['limits']> } = {}): EnqueueContext => ({
    recentEntries: [], newReports: 0, nodes: { selected: 6, healthy: 5 }, now: T0 + 10 * MIN,
    ...over,
    limits: { maximumRepairQueueEntries: 3, waitSecondsToRepairRebooting: 600, minHealthy: '51%', ...over.limits },
  });
  const enqueue: EnqueueDecision = { decision: 'enqueue', sentence: 'enqueue repair of 10.0.0.1 (unreachable, machine type qemu)' };
  const recentSentence = 'the repair queue already has an entry for 10.0.0.1 (succeeded): one recent entry per machine, until an operator deletes it';
  const rebootSentence = '10.0.0.1 is in a planned reboot: not repaired before 2026-01-01T00:10:00.001Z (waitSecondsToRepairRebooting 600 after it became unhealthy at 2026-01-01T00:00:00.001Z)';
  const cases: { name: string; ctx: EnqueueContext; want: EnqueueDecision }[] = [
    { name: 'nothing in the way', ctx: ctx(), want: enqueue },
    { name: 'an entry for the address, finished: refused', ctx: ctx({ recentEntries: [{ address: '10.0.0.1', status: 'succeeded' }] }), want: { decision: 'refuse', reason: 'recent-entry', sentence: recentSentence } },
    {
      name: 'an entry for the address, for another operation and without a status: refused all the same',
      ctx: ctx({ recentEntries: [{ address: '10.0.0.1' }] }),
      want: { decision: 'refuse', reason: 'recent-entry', sentence: 'the repair queue already has an entry for 10.0.0.1: one recent entry per machine, until an operator deletes it' },
    },
    { name: 'an entry for another address only counts towards the limit', ctx: ctx({ recentEntries: [{ address: '10.0.0.2', status: 'queued' }] }), want: enqueue },
    { name: 'a planned reboot, its wait running', ctx: ctx({ rebooting: { since: T0 + 1 }, now: T0 + 10 * MIN }), want: { decision: 'refuse', reason: 'rebooting', retryAt: T0 + 1 + 10 * MIN, sentence: rebootSentence } },
    { name: 'a planned reboot, exactly at since + wait', ctx: ctx({ rebooting: { since: T0 }, now: T0 + 10 * MIN }), want: enqueue },
    { name: 'a planned reboot with no wait', ctx: ctx({ rebooting: { since: T0 }, now: T0, limits: { waitSecondsToRepairRebooting: 0 } }), want: enqueue },
    { name: 'entries and new reports one below the maximum', ctx: ctx({ recentEntries: [{ address: 'a' }], newReports: 1 }), want: enqueue },
    {
      name: 'entries and new reports exactly at the maximum',
      ctx: ctx({ recentEntries: [{ address: 'a' }, { address: 'b', status: 'failed' }], newReports: 1 }),
      want: { decision: 'refuse', reason: 'cluster-limit', sentence: 'the repair queue has 2 entries and 1 new reports: maximumRepairQueueEntries 3 allows no more' },
    },
    {
      name: 'entries alone at the maximum',
      ctx: ctx({ recentEntries: [{ address: 'a' }, { address: 'b' }, { address: 'c' }] }),
      want: { decision: 'refuse', reason: 'cluster-limit', sentence: 'the repair queue has 3 entries and 0 new reports: maximumRepairQueueEntries 3 allows no more' },
    },
    { name: 'healthy exactly at minHealthy (51% of 6 is 4)', ctx: ctx({ nodes: { selected: 6, healthy: 4 } }), want: enqueue },
    {
      name: 'healthy one below minHealthy',
      ctx: ctx({ nodes: { selected: 6, healthy: 3 } }),
      want: { decision: 'refuse', reason: 'storm', sentence: '3 of the 6 Nodes nodeSelector selects are healthy, fewer than minHealthy 51% (4): no new repair while so many are down' },
    },
    {
      name: 'minHealthy as a count',
      ctx: ctx({ nodes: { selected: 6, healthy: 1 }, limits: { minHealthy: 2 } }),
      want: { decision: 'refuse', reason: 'storm', sentence: '1 of the 6 Nodes nodeSelector selects are healthy, fewer than minHealthy 2: no new repair while so many are down' },
    },
    // CKE's order: the machine's own checks (recent entry, then reboot wait), then the cluster limit; the storm limit last.
    {
      name: 'order: a recent entry is said before a reboot wait and a storm',
      ctx: ctx({ recentEntries: [{ address: '10.0.0.1', status: 'succeeded' }], rebooting: { since: T0 + 1 }, nodes: { selected: 6, healthy: 0 } }),
      want: { decision: 'refuse', reason: 'recent-entry', sentence: recentSentence },
    },
    {
      name: 'order: a reboot wait is said before the cluster limit',
      ctx: ctx({ recentEntries: [{ address: 'a' }, { address: 'b' }, { address: 'c' }], rebooting: { since: T0 + 1 } }),
      want: { decision: 'refuse', reason: 'rebooting', retryAt: T0 + 1 + 10 * MIN, sentence: rebootSentence },
    },
    {
      name: 'order: the cluster limit is said before the storm',
      ctx: ctx({ newReports: 3, nodes: { selected: 6, healthy: 0 } }),
      want: { decision: 'refuse', reason: 'cluster-limit', sentence: 'the repair queue has 0 entries and 3 new reports: maximumRepairQueueEntries 3 allows no more' },
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(enqueueDecision(request, c.ctx), c.want));

  it('an address a kubelet wrote with odd characters is said quoted and bounded', () => {
    const odd = { ...request, address: `10.0.0.1; ${'x'.repeat(200)}` };
    const d = enqueueDecision(odd, ctx());
    assert.equal(d.sentence, `enqueue repair of "10.0.0.1; ${'x'.repeat(69)}… (unreachable, machine type qemu)`);
  });

  it("observe mode's sentence", () => {
    assert.equal(wouldEnqueueSentence(request, 'Ready=Unknown for 5m'), 'would enqueue repair of 10.0.0.1 (unreachable, Ready=Unknown for 5m)');
  });
});

describe('nodeRepair: workflow-safe', () => {
  // src/noderepair/ and config/node-repair-operation.ts run inside workflows: no Node built-ins, no clock, no randomness.
  const dir = new URL('../../src/noderepair/', import.meta.url);
  const files = [...readdirSync(dir).map((f) => new URL(f, dir)), new URL('../../src/config/node-repair-operation.ts', import.meta.url)];
  for (const file of files) {
    it(`${file.pathname.split('/src/')[1]} imports no Node built-in and reads no clock`, () => {
      const text = readFileSync(file, 'utf8');
      assert.doesNotMatch(text, /from '(node:|fs|path|os|crypto|child_process)/);
      assert.doesNotMatch(text, /Date\.now|new Date\(\)|Math\.random|process\./);
      assert.doesNotMatch(text, /^import (?!type)[^;]*from '[./]*config\/node-repair\.ts'/m, 'config/node-repair.ts (zod) is imported for its types only');
    });
  }
});
