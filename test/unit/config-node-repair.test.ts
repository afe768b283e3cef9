// src/config/node-repair.ts: the nodeRepair section in NHC's and CKE's shapes, its defaults, and
// every refusal with its path and its exact words.
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { parseNodeRepair, type NodeRepairConfig } from '../../src/config/node-repair.ts';

/** The section as written in a config file. */
const fromYaml = (text: string) => parseNodeRepair((parse(text) as { nodeRepair: unknown }).nodeRepair);

function config(text: string): NodeRepairConfig {
  const r = fromYaml(text);
  if ('problems' in r) assert.fail(`refused: ${r.problems.join('; ')}`);
  return r.config;
}

function problems(text: string): string[] {
  const r = fromYaml(text);
  if ('config' in r) assert.fail('accepted');
  return r.problems;
}

const minimal = `
nodeRepair:
  nodeSelector: { matchLabels: { node-role.kubernetes.io/worker: "" } }
  machineTypeLabel: example.com/machine-type
  limits: { maximumRepairQueueEntries: 3 }
`;

/** The minimal section with `extra` lines added under nodeRepair (indented two spaces). */
const withLines = (...extra: string[]) => `${minimal}${extra.map((l) => `  ${l}\n`).join('')}`;
/** The minimal section's limits replaced. */
const withLimits = (limits: string) => minimal.replace('limits: { maximumRepairQueueEntries: 3 }', `limits: ${limits}`);

describe('nodeRepair: schema', () => {
  it("takes NHC's unhealthyConditions and minHealthy as NHC writes them, with Go durations", () => {
    const c = config(withLines(
      'unhealthyConditions:',
      '  - { type: Ready, status: "False", duration: 300s }',
      '  - { type: Ready, status: Unknown, duration: 5m }',
      '  - { type: example.com/KernelDeadlock, status: "True", duration: 1h30m }',
    ).replace('maximumRepairQueueEntries: 3', 'maximumRepairQueueEntries: 3, minHealthy: "40%"'));
    assert.deepEqual(c.unhealthyConditions, [
      { type: 'Ready', status: 'False', duration: { text: '300s', ms: 300_000 } },
      { type: 'Ready', status: 'Unknown', duration: { text: '5m', ms: 300_000 } },
      { type: 'example.com/KernelDeadlock', status: 'True', duration: { text: '1h30m', ms: 5_400_000 } },
    ]);
    assert.equal(c.limits.minHealthy, '40%');
  });

  it("defaults: NHC's conditions and minHealthy, InternalIP, CKE's wait and operation names", () => {
    const c = config(minimal);
    assert.deepEqual(c.unhealthyConditions, [
      { type: 'Ready', status: 'False', duration: { text: '300s', ms: 300_000 } },
      { type: 'Ready', status: 'Unknown', duration: { text: '300s', ms: 300_000 } },
    ]);
    assert.deepEqual(c.address, { type: 'InternalIP' });
    assert.deepEqual(c.limits, { maximumRepairQueueEntries: 3, waitSecondsToRepairRebooting: 0, minHealthy: '51%' });
    assert.deepEqual(c.operations, { 'Ready/Unknown': 'unreachable', default: 'unhealthy' });
    assert.equal(c.mode, undefined);
  });

  it('default operations without Ready/Unknown among the conditions: unhealthy for every one', () => {
    const c = config(withLines('unhealthyConditions: [{ type: Ready, status: "False", duration: 1m }]'));
    assert.deepEqual(c.operations, { default: 'unhealthy' });
  });

  it('operations written replace the defaults; a default key covers the conditions without their own', () => {
    const c = config(withLines('operations: { Ready/Unknown: power-cycle, default: reimage }'));
    assert.deepEqual(c.operations, { 'Ready/Unknown': 'power-cycle', default: 'reimage' });
    const every = config(withLines('operations: { Ready/Unknown: a, Ready/False: b }'));
    assert.deepEqual(every.operations, { 'Ready/Unknown': 'a', 'Ready/False': 'b' });
  });

  it('the address type, mode, a count for minHealthy, and the reboot wait with its annotation', () => {
    const c = config(withLines('mode: observe', 'address: { type: Hostname }')
      .replace('limits: { maximumRepairQueueEntries: 3 }', 'limits: { maximumRepairQueueEntries: 1, minHealthy: 0, waitSecondsToRepairRebooting: 86400, rebootAnnotation: kured.dev/reboot-in-progress }'));
    assert.equal(c.mode, 'observe');
    assert.equal(c.address.type, 'Hostname');
    assert.deepEqual(c.limits, { maximumRepairQueueEntries: 1, minHealthy: 0, waitSecondsToRepairRebooting: 86400, rebootAnnotation: 'kured.dev/reboot-in-progress' });
  });

  const refused: { name: string; text: string; want: string[] }[] = [
    {
      name: 'no section fields at all',
      text: 'nodeRepair: {}',
      want: ['nodeRepair.nodeSelector: required', 'nodeRepair.machineTypeLabel: required', 'nodeRepair.limits: required'],
    },
    {
      name: 'an empty node selector',
      text: minimal.replace('{ matchLabels: { node-role.kubernetes.io/worker: "" } }', '{}'),
      want: ['nodeRepair.nodeSelector: must set matchLabels or matchExpressions: an empty selector would select every Node; ' +
        'to watch them all, say so: matchExpressions: [{key: kubernetes.io/os, operator: Exists}]'],
    },
    {
      name: 'a selector term without values',
      text: minimal.replace('{ matchLabels: { node-role.kubernetes.io/worker: "" } }', '{ matchExpressions: [{ key: zone, operator: In }] }'),
      want: ['nodeRepair.nodeSelector.matchExpressions[0].values: must list at least one value for operator In'],
    },
    {
      name: 'a misspelt field, with the right one suggested',
      text: withLines('nodeSelecter: { matchLabels: { a: b } }'),
      want: ['nodeRepair.nodeSelecter: unknown field; did you mean nodeSelector?'],
    },
    {
      name: 'an unquoted False, which YAML reads as a boolean',
      text: withLines('unhealthyConditions: [{ type: Ready, status: False, duration: 5m }]'),
      want: ['nodeRepair.unhealthyConditions[0].status: must be "True", "False" or "Unknown": quote True and False, which YAML reads as booleans (got false)'],
    },
    {
      name: 'a status that is no condition status',
      text: withLines('unhealthyConditions: [{ type: Ready, status: NotReady, duration: 5m }]'),
      want: ['nodeRepair.unhealthyConditions[0].status: must be "True", "False" or "Unknown" (got "NotReady")'],
    },
    {
      name: 'a condition type that is no qualified name',
      text: withLines('unhealthyConditions: [{ type: "Ready now", status: Unknown, duration: 5m }]'),
      want: ['nodeRepair.unhealthyConditions[0].type: not a valid condition type: must be a name: its name must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit (got "Ready now")'],
    },
    {
      name: 'durations: seconds as a number, zero, past a day, not Go',
      text: withLines('unhealthyConditions:', '  - { type: A, status: Unknown, duration: 300 }', '  - { type: B, status: Unknown, duration: 0s }',
        '  - { type: C, status: Unknown, duration: 24h1s }', '  - { type: D, status: Unknown, duration: 5 minutes }'),
      want: [
        'nodeRepair.unhealthyConditions[0].duration: must be a Go duration string, like 2m0s, 300ms or 1h30m (got 300)',
        'nodeRepair.unhealthyConditions[1].duration: must be longer than zero (got "0s")',
        'nodeRepair.unhealthyConditions[2].duration: must be at most 24h (a day) (got "24h1s")',
        'nodeRepair.unhealthyConditions[3].duration: must be a Go duration, like 2m0s, 300ms or 1h30m (got "5 minutes")',
      ],
    },
    {
      name: 'no conditions',
      text: withLines('unhealthyConditions: []'),
      want: ['nodeRepair.unhealthyConditions: must list at least one condition, or be left out for NHC\'s default (Ready "False" or "Unknown" for 300s)'],
    },
    {
      name: 'one type and status twice',
      text: withLines('unhealthyConditions: [{ type: Ready, status: Unknown, duration: 5m }, { type: Ready, status: Unknown, duration: 10m }]'),
      want: ['nodeRepair.unhealthyConditions[1]: type Ready, status Unknown is already listed at unhealthyConditions[0]: each pair once'],
    },
    {
      name: 'an address type Kubernetes does not have',
      text: withLines('address: { type: IPv4 }'),
      want: ['nodeRepair.address.type: must be one of InternalIP, ExternalIP, InternalDNS, ExternalDNS, Hostname (got "IPv4")'],
    },
    {
      name: 'a machine type label that is no label key',
      text: minimal.replace('example.com/machine-type', '"a/b/c"'),
      want: ['nodeRepair.machineTypeLabel: must be a label key: a name with at most one "/" prefix, like app.kubernetes.io/name (got "a/b/c")'],
    },
    {
      name: 'an operations key naming no configured condition',
      text: withLines('operations: { Ready/True: x, default: y }'),
      want: ['nodeRepair.operations["Ready/True"]: names no condition of unhealthyConditions: a key is Type/Status of one of them (Ready/False, Ready/Unknown) or default'],
    },
    {
      name: 'a condition without an operation and no default',
      text: withLines('operations: { Ready/Unknown: x }'),
      want: ['nodeRepair.unhealthyConditions[0]: has no operation: add operations["Ready/False"] or operations.default'],
    },
    {
      name: 'an operation name longer than the repair queue takes, and an empty one',
      text: withLines(`operations: { Ready/Unknown: ${'o'.repeat(64)}, default: "" }`),
      want: ['nodeRepair.operations["Ready/Unknown"]: must be at most 63 characters (got "ooooooooooooooooooooooooooooooooooooooooooooooooooooooooo...")', 'nodeRepair.operations.default: must not be empty (got "")'],
    },
    {
      name: 'no maximumRepairQueueEntries',
      text: withLimits('{ minHealthy: 2 }'),
      want: ["nodeRepair.limits.maximumRepairQueueEntries: required: how many repair queue entries (any status) may exist before no more are queued, as CKE's maximum-repair-queue-entries"],
    },
    {
      name: "CKE's default 0 for maximumRepairQueueEntries",
      text: withLimits('{ maximumRepairQueueEntries: 0 }'),
      want: ["nodeRepair.limits.maximumRepairQueueEntries: must be at least 1 (CKE's 0 queues nothing: leave the nodeRepair section out, or set its mode to observe) (got 0)"],
    },
    {
      name: 'a fraction of entries',
      text: withLimits('{ maximumRepairQueueEntries: 2.5 }'),
      want: ['nodeRepair.limits.maximumRepairQueueEntries: must be a whole number (got 2.5)'],
    },
    {
      name: 'minHealthy past 100%',
      text: withLimits('{ maximumRepairQueueEntries: 1, minHealthy: "101%" }'),
      want: ['nodeRepair.limits.minHealthy: must be a whole number of Nodes or a percentage from 0% to 100%, like "51%" (got "101%")'],
    },
    {
      name: 'minHealthy negative',
      text: withLimits('{ maximumRepairQueueEntries: 1, minHealthy: -1 }'),
      want: ['nodeRepair.limits.minHealthy: must be 0 or more (got -1)'],
    },
    {
      name: 'minHealthy a list',
      text: withLimits('{ maximumRepairQueueEntries: 1, minHealthy: [1] }'),
      want: ['nodeRepair.limits.minHealthy: must be a whole number of Nodes or a percentage like "51%"'],
    },
    {
      name: 'a reboot wait past a day',
      text: withLimits('{ maximumRepairQueueEntries: 1, waitSecondsToRepairRebooting: 86401, rebootAnnotation: a }'),
      want: ['nodeRepair.limits.waitSecondsToRepairRebooting: must be at most 86400 seconds (a day) (got 86401)'],
    },
    {
      name: 'a reboot wait without a way to recognise a reboot',
      text: withLimits('{ maximumRepairQueueEntries: 1, waitSecondsToRepairRebooting: 600 }'),
      want: ['nodeRepair.limits.waitSecondsToRepairRebooting: needs limits.rebootAnnotation: without it no Node is ever seen in a planned reboot, and the wait would never apply'],
    },
    {
      name: 'a reboot annotation that is no key',
      text: withLimits('{ maximumRepairQueueEntries: 1, rebootAnnotation: "-x" }'),
      want: ['nodeRepair.limits.rebootAnnotation: not a valid annotation key: must be a key: its name must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit (got "-x")'],
    },
    {
      name: 'a mode that is not one',
      text: withLines('mode: dry-run'),
      want: ['nodeRepair.mode: must be act or observe (got "dry-run")'],
    },
  ];
  for (const c of refused) it(`refuses ${c.name}`, () => assert.deepEqual(problems(c.text), c.want));
});
