// The repair queue's read of a Node (nodeRepairAssess, src/activities/node-repair-queue.ts) run
// directly against the sandbox's API server, under tend's own ServiceAccount with the rights
// `tend rbac` generates for a configuration with repair and nodeRepair: a healthy Node and a
// missing one need nothing; a simulated Node stopped (Kubernetes marks it Ready=Unknown) maps to
// the entry of its InternalIP and machine type once its condition's duration has run out, with the
// selected Nodes counted by their health; a planned reboot gives since when; the pause refuses,
// observe mode answers observe.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createNodeRepairQueueActivities, type NodeRepairAssessment, type NodeRepairCase } from '../../src/activities/node-repair-queue.ts';
import { parseConfig, type Config } from '../../src/config/load.ts';
import { mergePatch } from '../../src/kube/api.ts';
import { kubeClients, loadKubeConfig, type KubeClients } from '../../src/kube/client.ts';
import { INSTANCE_TYPE_LABEL } from '../../src/sandbox/kubelet/node-status.ts';
import type { SafetyGates } from '../../src/safety/gate.ts';
import { runTend } from '../harness/cli.ts';
import { testStateDir } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, grantConfiguredRights } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';

const REBOOT = 'reboot.tend.dev/planned';

describe('node repair: the repair queue\'s read of a Node (sandbox)', function () {
  this.timeout(240_000);
  let kube: KubeClients;
  /** tend's own identity, with the configuration's rights. */
  let tend: KubeClients;
  let config: Config;
  let nodes: string[];
  let stopped: string | undefined;

  /** The configuration: every simulated Node, Ready=Unknown for 2s, its machine type the instance-type label. */
  function configOf(extra: Record<string, unknown> = {}) {
    return {
      temporal: { address: sandbox().temporalAddress, taskQueue: 'tend-node-repair-assess' },
      kubernetes: { kubeconfig: sandbox().tendKubeconfig },
      repair: {
        repair_procedures: [{
          machine_types: ['sim'],
          repair_operations: [{ operation: 'unreachable', repair_steps: [{ repair_command: ['true'] }], health_check_command: ['echo', 'true'] }],
        }],
      },
      nodeRepair: {
        nodeSelector: { matchExpressions: [{ key: INSTANCE_TYPE_LABEL, operator: 'Exists' }] },
        unhealthyConditions: [{ type: 'Ready', status: 'Unknown', duration: '2s' }],
        machineTypeLabel: INSTANCE_TYPE_LABEL,
        limits: { maximumRepairQueueEntries: 2, waitSecondsToRepairRebooting: 600, rebootAnnotation: REBOOT },
        ...extra,
      },
    };
  }
  const parsed = (c: object) => parseConfig(stringify(c), 'node-repair-assess');
  /** A page of one Node: the count follows the LIST's continue tokens through every page. */
  const assess = (node: string, c: Config = config, gates?: SafetyGates): Promise<NodeRepairAssessment> =>
    createNodeRepairQueueActivities(tend, c, gates, { pageSize: 1 }).nodeRepairAssess({ node });

  before(async () => {
    kube = admin();
    const file = join(await mkdtemp(join(tmpdir(), 'tend-node-repair-assess-')), 'tend.yaml');
    await writeFile(file, stringify(configOf()));
    config = parsed(configOf());
    await grantConfiguredRights(file);
    tend = kubeClients(loadKubeConfig({ kubeconfig: sandbox().tendKubeconfig }));
    nodes = (await kube.core.listNode()).items.map((n) => n.metadata!.name!).sort();
    assert.ok(nodes.length >= 3, `the sandbox's Nodes: ${nodes.join(', ')}`);
    // Every Node Ready before the test: an earlier test may have stopped one.
    await waitFor('every Node Ready', async () => (await kube.core.listNode()).items.every((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
      { timeoutMs: 60_000 });
  });

  after(async () => {
    if (!stopped) return;
    await kube.core.patchNode({ name: stopped, body: { spec: { unschedulable: null }, metadata: { annotations: { [REBOOT]: null } } } }, mergePatch).catch(() => undefined);
    await runTend(['sandbox', 'node', 'start', stopped, '--state-dir', testStateDir]);
    await waitFor(`${stopped} Ready again`, async () => (await kube.core.readNode({ name: stopped! })).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'), { timeoutMs: 60_000 });
  });

  it('a Ready Node, and a Node that does not exist, need nothing', async () => {
    assert.deepEqual(await assess(nodes[0]!), { answer: { decision: 'not-needed', sentence: `Node ${nodes[0]} meets no unhealthy condition of nodeRepair: it is healthy again` } });
    assert.deepEqual(await assess('no-such-node.example'), { answer: { decision: 'not-needed', sentence: 'Node no-such-node.example is gone: nothing to repair' } });
  });

  it('a stopped Node: not yet, then the entry of its InternalIP and machine type, the selected Nodes counted; a planned reboot, the pause and observe mode', async () => {
    const node = nodes[nodes.length - 1]!;
    const n = await kube.core.readNode({ name: node });
    const address = n.status!.addresses!.find((a) => a.type === 'InternalIP')!.address;
    stopped = node;
    const stop = await runTend(['sandbox', 'node', 'stop', node, '--state-dir', testStateDir]);
    assert.equal(stop.code, 0, stop.stderr);
    const since = await waitFor(`${node} Ready=Unknown`, async () => {
      const ready = (await kube.core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready');
      return ready?.status === 'Unknown' && new Date(ready.lastTransitionTime!).getTime();
    }, { timeoutMs: 60_000 });

    // With a duration of 10m, it meets the condition and is not unhealthy yet.
    const long = parsed(configOf({ unhealthyConditions: [{ type: 'Ready', status: 'Unknown', duration: '10m' }] }));
    const early = await assess(node, long);
    assert.ok('answer' in early && early.answer.decision === 'not-needed', JSON.stringify(early));
    assert.equal(early.answer.sentence, `Node ${node} meets Ready=Unknown since ${new Date(since).toISOString()}, not yet for 10m: it is unhealthy from ${new Date(since + 600_000).toISOString()} on`);

    const want: NodeRepairCase = {
      node, request: { address, machineType: 'sim', operation: 'unreachable' }, reason: 'Ready=Unknown for 2s',
      nodes: { selected: nodes.length, healthy: nodes.length - 1 },
      limits: { maximumRepairQueueEntries: 2, waitSecondsToRepairRebooting: 600, minHealthy: '51%' }, observe: false,
    };
    const found = await waitFor('its 2s run out', async () => {
      const a = await assess(node);
      return !('answer' in a) && a;
    }, { timeoutMs: 30_000 });
    assert.deepEqual(found, want);
    // The same count in one page.
    const whole = await createNodeRepairQueueActivities(tend, config, undefined).nodeRepairAssess({ node });
    assert.deepEqual(whole, want);

    // A Node that is not selected (any more) needs nothing.
    const other = parsed(configOf({ nodeSelector: { matchLabels: { 'pool.tend.dev/none': 'x' } } }));
    const unselected = await assess(node, other);
    assert.ok('answer' in unselected && unselected.answer.decision === 'not-needed' && /not selected by nodeRepair.nodeSelector/.test(unselected.answer.sentence));

    // Cordoned with the reboot annotation: a planned reboot, since the condition began.
    await kube.core.patchNode({ name: node, body: { spec: { unschedulable: true }, metadata: { annotations: { [REBOOT]: 'kured' } } } }, mergePatch);
    assert.deepEqual(await assess(node), { ...want, rebootingSince: since });
    await kube.core.patchNode({ name: node, body: { spec: { unschedulable: null }, metadata: { annotations: { [REBOOT]: null } } } }, mergePatch);

    // repair paused: refused paused; nodeRepair in observe mode: observe, the pause not asked.
    const paused: SafetyGates = { pause: { check: () => ({ state: 'paused', revision: 3, reason: 'maintenance', by: 'ops' }) } };
    const held = await assess(node, config, paused);
    assert.ok('answer' in held && held.answer.decision === 'refused' && held.answer.reason === 'paused', JSON.stringify(held));
    assert.match(held.answer.sentence, /^no repair entry is queued while repair is paused: repair: paused since \? by ops: maintenance/);
    const observing: SafetyGates = { ...paused, modes: { mode: (c) => (c === 'nodeRepair' ? 'observe' : 'act') } };
    assert.deepEqual(await assess(node, config, observing), { ...want, observe: true });
    // The section's own mode, when the worker has no mode gate.
    assert.deepEqual(await assess(node, parsed(configOf({ mode: 'observe' }))), { ...want, observe: true });
  });
});
