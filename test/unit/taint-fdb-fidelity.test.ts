// The FoundationDB operator's readings that taint replacement keeps: maxFaultDomainsWithTaintedProcessGroups
// as an IntOrString over the fault domains (rounded down, at least 1), a toleration matched as
// Kubernetes matches it, pods a FoundationDBCluster owns refused unless acknowledged, and a Node
// that does not exist named as such.
import assert from 'node:assert/strict';
import { configProblems } from '../harness/config-error.ts';
import { configWarnings, parseConfig } from '../../src/config/load.ts';
import { breakerFromFaultDomains, describeTaintReplacement } from '../../src/config/taint-replacement.ts';
import { breakerOpen, faultDomainLimit } from '../../src/taint/breaker.ts';
import {
  applyMoves, decideNode, markWritten, newNodeTaintData, observeTaints, reconcilePods, statusRows, type ListedPod, type TaintSettings,
} from '../../src/taint/node.ts';
import { untaintedRefusal } from '../../src/taint/node-machine.ts';
import { faultDomainCounts, foundationDBOwner, foundationDBRefusal, tolerates, toleratesConfigured, type Toleration } from '../../src/taint/pod-rules.ts';
import { Slots } from '../../src/taint/slots.ts';

/** A FoundationDBCluster's spec.automationOptions.replacements, as pasted in. */
const pasted = (limit: string) => `
taintReplacement:
  podSelector: { matchLabels: { app: fdb } }
  enabled: true
  maxConcurrentReplacements: 1
  taintReplacementTimeSeconds: 1800
  maxFaultDomainsWithTaintedProcessGroups: ${limit}
  taintReplacementOptions:
    - key: "*"
      durationInSeconds: 3600
`;

describe('taint: maxFaultDomainsWithTaintedProcessGroups as the FoundationDB operator reads it', () => {
  // GetMaxFaultDomainsWithTaintedProcessGroups: GetScaledValueFromIntOrPercent(value, faultDomains, roundUp=false), then at least 1.
  const cases: { limit: number | string; domains: number; want: number }[] = [
    { limit: '10%', domains: 0, want: 1 },
    { limit: '10%', domains: 5, want: 1 },
    { limit: '10%', domains: 19, want: 1 },
    { limit: '10%', domains: 20, want: 2 },
    { limit: '10%', domains: 29, want: 2 },
    { limit: '10%', domains: 30, want: 3 },
    { limit: '33%', domains: 10, want: 3 },
    { limit: '0%', domains: 100, want: 1 },
    { limit: '100%', domains: 7, want: 7 },
    { limit: 0, domains: 10, want: 1 },
    { limit: 3, domains: 2, want: 3 },
  ];
  for (const c of cases) {
    it(`${JSON.stringify(c.limit)} of ${c.domains} fault domains: ${c.want}`, () => assert.equal(faultDomainLimit(c.limit, c.domains), c.want));
  }

  it('the breaker opens only past that limit (FDB allows while limit >= tainted fault domains)', () => {
    assert.equal(breakerOpen(1, 5, '10%', true), false, 'at least 1: one tainted fault domain of 5 is allowed');
    assert.equal(breakerOpen(2, 5, '10%', true), true);
    assert.equal(breakerOpen(2, 20, '10%', true), false);
    assert.equal(breakerOpen(3, 20, '10%', true), true);
    // tend's own breaker.maxTaintedNodes keeps its reading: 10% of 5 nodes is 0, one tainted node opens it.
    assert.equal(breakerOpen(1, 5, '10%'), true);
  });

  it('counts the nodes holding managed pods, and of those the ones carrying a taint it acts on', () => {
    const taints: Record<string, { key: string; effect: string }[]> = {
      a: [{ key: 'example.org/maintenance', effect: 'NoSchedule' }],
      b: [{ key: 'example.org/ignored', effect: 'NoSchedule' }],
      c: [],
      d: [{ key: 'example.org/maintenance', effect: 'NoSchedule' }],
    };
    const options = [{ key: 'example.org/maintenance', durationInSeconds: 0 }, { key: 'example.org/ignored', durationInSeconds: Number.MAX_SAFE_INTEGER }];
    // d holds no managed pod: not one of the fault domains, tainted or not; a pod not yet scheduled counts nowhere.
    const pods = [{ nodeName: 'a' }, { nodeName: 'a' }, { nodeName: 'b' }, { nodeName: 'c' }, {}];
    assert.deepEqual(faultDomainCounts(pods, (n) => taints[n], options), { taintedNodes: 1, totalNodes: 3 });
  });

  it('the coordinator\'s slots: a "10%" limit from the worker holds the grants of a second tainted fault domain of 5', () => {
    const s = new Slots();
    s.setSettings({ maxConcurrentReplacements: 5, maxTaintedNodes: '10%', faultDomains: true });
    s.setCounts({ taintedNodes: 2, totalNodes: 5 });
    s.request({ node: 'n1', uid: 'a', pod: 'ns/a', requestedAt: 0 }, 0);
    assert.deepEqual(s.decideGrants(0), []);
    assert.equal(s.toData().faultDomains, true);
    s.setCounts({ taintedNodes: 1, totalNodes: 5 });
    assert.deepEqual(s.decideGrants(0).map((g) => g.uid), ['a']);
  });

  it('a pasted block with "10%" validates and is the breaker\'s limit, read over fault domains', () => {
    const c = parseConfig(pasted('"10%"'), 'fdb.yaml').taintReplacement!;
    assert.equal(c.maxFaultDomainsWithTaintedProcessGroups, '10%');
    assert.deepEqual(c.breaker, { maxTaintedNodes: '10%' });
    assert.ok(breakerFromFaultDomains(c));
    assert.match(configWarnings({ taintReplacement: c }).join('\n'), /maxFaultDomainsWithTaintedProcessGroups: 10%: .*read as FDB reads it, over the nodes holding managed pods/);
    assert.match(describeTaintReplacement(c), /more than 10% \(at least 1\) of the nodes holding managed pods/);
    // A whole number is a count; tend's own breaker, when given, wins and keeps its reading.
    assert.ok(breakerFromFaultDomains(parseConfig(pasted('3'), 'fdb.yaml').taintReplacement!));
    const own = parseConfig(`${pasted('"10%"')}  breaker: { maxTaintedNodes: 2 }\n`, 'fdb.yaml').taintReplacement!;
    assert.ok(!breakerFromFaultDomains(own));
    assert.ok(!breakerFromFaultDomains(parseConfig('taintReplacement: { podSelector: { matchLabels: { a: b } } }', 't.yaml').taintReplacement!));
  });

  for (const [bad, reason] of [
    ['"110%"', /percentage from 0% to 100%/], ['"abc"', /whole number of fault domains or a percentage/], ['-1', /must be 0 or more/],
    ['"-1"', /whole number of fault domains or a percentage/], ['1.5', /whole number of fault domains/], ['"10.5%"', /percentage from 0% to 100%/],
  ] as const) {
    it(`refuses ${bad} with its path and reason`, () => {
      const p = configProblems(pasted(bad));
      assert.equal(p.length, 1, p.join('\n'));
      assert.match(p[0]!, /^taintReplacement\.maxFaultDomainsWithTaintedProcessGroups: /);
      assert.match(p[0]!, reason);
    });
  }
});

describe('taint: a toleration matched as Kubernetes matches it', () => {
  const taint = { key: 'example.org/maintenance', value: 'now', effect: 'NoSchedule' };
  const cases: { name: string; t: Toleration; want: boolean }[] = [
    { name: 'Equal, same key, value and effect', t: { key: 'example.org/maintenance', operator: 'Equal', value: 'now', effect: 'NoSchedule' }, want: true },
    { name: 'no operator is Equal', t: { key: 'example.org/maintenance', value: 'now' }, want: true },
    { name: 'Equal, another value', t: { key: 'example.org/maintenance', operator: 'Equal', value: 'later' }, want: false },
    { name: 'Equal without a value against a valued taint', t: { key: 'example.org/maintenance', operator: 'Equal' }, want: false },
    { name: 'Exists, any value', t: { key: 'example.org/maintenance', operator: 'Exists' }, want: true },
    { name: 'Exists, another key', t: { key: 'example.org/other', operator: 'Exists' }, want: false },
    { name: 'another effect', t: { key: 'example.org/maintenance', operator: 'Exists', effect: 'NoExecute' }, want: false },
    { name: 'empty effect: every effect', t: { key: 'example.org/maintenance', operator: 'Exists', effect: '' }, want: true },
    { name: 'empty key with Exists: everything', t: { operator: 'Exists' }, want: true },
    { name: 'an unknown operator', t: { key: 'example.org/maintenance', operator: 'In', value: 'now' }, want: false },
  ];
  for (const c of cases) it(`${c.name}: ${c.want}`, () => assert.equal(tolerates(c.t, taint), c.want));

  it('a pod is left alone only when it tolerates every taint the configuration acts on', () => {
    const options = [{ key: 'a', durationInSeconds: 0 }, { key: 'b', durationInSeconds: 0 }, { key: 'ignored', durationInSeconds: Number.MAX_SAFE_INTEGER }];
    const both = [{ key: 'a', effect: 'NoSchedule' }, { key: 'b', effect: 'NoExecute' }, { key: 'ignored', effect: 'NoSchedule' }, { key: 'unnamed', effect: 'NoSchedule' }];
    assert.equal(toleratesConfigured([{ key: 'a', operator: 'Exists' }], both, options), false);
    assert.equal(toleratesConfigured([{ key: 'a', operator: 'Exists' }, { key: 'b', operator: 'Exists' }], both, options), true, 'ignored and unnamed keys need no toleration');
    assert.equal(toleratesConfigured([{ operator: 'Exists' }], both, options), true);
    assert.equal(toleratesConfigured([], both, options), false);
    assert.equal(toleratesConfigured(undefined, both, options), false);
    assert.equal(toleratesConfigured([{ operator: 'Exists' }], [{ key: 'unnamed', effect: 'NoSchedule' }], options), false, 'no configured taint: nothing to leave alone');
  });

  it('toleratingPods: replace by default, leave when asked; anything else refused', () => {
    assert.equal(parseConfig(pasted('1'), 't.yaml').taintReplacement!.toleratingPods, 'replace');
    const leave = parseConfig(`${pasted('1')}  toleratingPods: leave\n`, 't.yaml').taintReplacement!;
    assert.equal(leave.toleratingPods, 'leave');
    assert.match(describeTaintReplacement(leave), /pods that tolerate the taints are left alone/);
    assert.match(configProblems(`${pasted('1')}  toleratingPods: skip\n`)[0]!, /^taintReplacement\.toleratingPods: must be replace \(the default\) or leave/);
  });
});

describe('taint: pods a FoundationDBCluster owns', () => {
  const owner = { apiVersion: 'apps.foundationdb.org/v1beta2', kind: 'FoundationDBCluster', name: 'sample', uid: 'u', controller: true };

  it('are found by the kind in the FoundationDB operator\'s API group, any version', () => {
    assert.equal(foundationDBOwner([{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs' }, owner])?.name, 'sample');
    assert.ok(foundationDBOwner([{ ...owner, apiVersion: 'apps.foundationdb.org/v1beta1' }]));
    assert.equal(foundationDBOwner([{ ...owner, apiVersion: 'example.org/v1' }]), undefined);
    assert.equal(foundationDBOwner([{ ...owner, apiVersion: 'apps.foundationdb.org.example.com/v1' }]), undefined);
    assert.equal(foundationDBOwner(undefined), undefined);
  });

  it('are refused with the reason and the field that allows them; acknowledged, not refused', () => {
    assert.match(foundationDBRefusal([owner], false)!, /^owned by FoundationDBCluster sample: tend evicts without excluding FoundationDB processes first; set taintReplacement\.evictFoundationDBPodsWithoutExclusion: true/);
    assert.equal(foundationDBRefusal([owner], true), undefined);
    assert.equal(foundationDBRefusal([{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs' }], false), undefined);
    const c = parseConfig(`${pasted('1')}  evictFoundationDBPodsWithoutExclusion: true\n`, 't.yaml');
    assert.equal(c.taintReplacement!.evictFoundationDBPodsWithoutExclusion, true);
    assert.match(configWarnings(c).join('\n'), /evictFoundationDBPodsWithoutExclusion: pods a FoundationDBCluster owns are evicted like any other/);
    assert.equal(parseConfig(pasted('1'), 't.yaml').taintReplacement!.evictFoundationDBPodsWithoutExclusion, false);
  });

  it('a refused pod is marked, then Refused when due: never queued, the reason in its status row', () => {
    const settings: TaintSettings = {
      taintReplacementOptions: [{ key: 'm', durationInSeconds: 1 }], taintReplacementTimeSeconds: 1, maxConcurrentReplacements: 1, podSelector: { matchLabels: { a: 'b' } },
    };
    const T0 = Date.parse('2026-11-22T00:00:00Z');
    const d = newNodeTaintData('sim-1', settings);
    observeTaints(d, [{ key: 'm', effect: 'NoSchedule', durationInSeconds: 1, matchedBy: 'm' }], settings, T0);
    const why = foundationDBRefusal([owner], false)!;
    const pods: ListedPod[] = [{ uid: 'f', namespace: 'ns', name: 'fdb', controllerUid: 'u', refused: why }, { uid: 'p', namespace: 'ns', name: 'plain', controllerUid: 'rs' }];
    reconcilePods(d, pods, T0);
    const requested: string[] = [];
    for (const at of [0, 1, 2, 3, 4]) {
      const dec = decideNode(d, T0 + at * 1000);
      applyMoves(d, dec.moves);
      dec.writes.forEach((w) => markWritten(d, w));
      requested.push(...dec.request);
    }
    assert.deepEqual(requested, ['p']);
    assert.equal(d.pods['f']!.state, 'Refused');
    const row = statusRows(d).find((r) => r.pod === 'fdb')!;
    assert.equal(row.state, 'Refused');
    assert.equal(row.replaceAt, `never: ${why}`);
    // The configuration changed (acknowledged): the next listing lifts the refusal, and the pod asks for a slot.
    reconcilePods(d, [{ ...pods[0]!, refused: undefined }, pods[1]!], T0 + 5000);
    const dec = decideNode(d, T0 + 5000);
    assert.deepEqual(dec.request, ['f']);
  });
});

describe('taint: a Node that does not exist', () => {
  it('is refused as such, not as a node without the configured taints', () => {
    assert.equal(untaintedRefusal('no-such-node', true, [{ key: 'm', durationInSeconds: 1 }]), 'node no-such-node does not exist: no Node has that name (kubectl get node no-such-node)');
    assert.equal(untaintedRefusal('sim-1', false, [{ key: 'm', durationInSeconds: 1 }]), 'node sim-1 carries none of the configured taints (m)');
  });
});
