// FDB's replacements block, read with fromFile from a FoundationDBCluster manifest, end to end:
// a key ignored the FDB way (durationInSeconds: 9223372036854775807) is never acted on, not
// even marked; maxConcurrentReplacements: 0 marks the pods
// on a tainted node and never evicts them, past the time it would have.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TendProcess } from '../harness/cli.ts';
import { admin, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { cleanUpTaintTest, condition, managedLabel, readPod, readyPodsOn, taint, taintConfig, taintStatusFor } from '../harness/taint.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const IGNORED = 'example.org/ignored';
const MAINTENANCE = 'example.org/maintenance';

describe('taint replacement: FDB\'s whole block from a FoundationDBCluster manifest (e2e)', function () {
  this.timeout(240_000);
  let kube: KubeClients;
  let ns: string;
  let tend: TendProcess | undefined;
  let config: string | undefined;
  const tainted = new Set<string>();

  before(async () => {
    kube = admin();
    ns = await tempNamespace(kube, 'taint-fdb');
  });
  after(async () => {
    await cleanUpTaintTest({ kube, ns, tend, config, tainted, settleMs: 30_000 });
  });

  it('an ignored key is never acted on; maxConcurrentReplacements 0 marks and never evicts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tend-fdb-'));
    const manifest = join(dir, 'fdb-cluster.yaml');
    await writeFile(manifest, [
      'apiVersion: apps.foundationdb.org/v1beta2', 'kind: FoundationDBCluster', 'metadata:', '  name: sample', 'spec:', '  version: 7.1.26',
      '  automationOptions:', '    replacements:', '      enabled: true', '      failureDetectionTimeSeconds: 7200',
      '      faultDomainBasedReplacements: true', '      maxFaultDomainsWithTaintedProcessGroups: 1', '      maxConcurrentReplacements: 0',
      '      taintReplacementTimeSeconds: 1', '      taintReplacementOptions:',
      `        - key: ${IGNORED}`, '          durationInSeconds: 9223372036854775807',
      '        - key: "*"', '          durationInSeconds: 2', '',
    ].join('\n'));
    config = await taintConfig({ fromFile: manifest, podSelector: { matchLabels: managedLabel(ns) }, namespaces: [ns] });
    tend = new TendProcess(['run', '--config', config]);
    await waitFor('tend to start its worker and taint watch',
      () => tend!.output.includes('taint watch synced') && tend!.output.includes('worker started'), { timeoutMs: 120_000 });
    // The fields tend does not honour as FDB does are named at start-up, with what it does instead.
    assert.match(tend.logs, /faultDomainBasedReplacements: accepted, not used/);
    assert.match(tend.logs, /maxFaultDomainsWithTaintedProcessGroups: 1: .*\(now 1\), taken from this field/);

    const [quiet] = await readyPodsOn(kube, ns, 'quiet', 'sim-1', 1);
    const [held] = await readyPodsOn(kube, ns, 'held', 'sim-2', 1);
    tainted.add(`sim-1|${IGNORED}`);
    await taint(kube, 'sim-1', { key: IGNORED, value: 'x', effect: 'NoSchedule' });
    tainted.add(`sim-2|${MAINTENANCE}`);
    await taint(kube, 'sim-2', { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });

    const replacing = await waitFor('the pod on sim-2 marked NodeTaintReplacing', async () =>
      condition(await readPod(kube, ns, held.metadata!.name!), 'NodeTaintReplacing'), { timeoutMs: 60_000 });
    const status = await taintStatusFor(config);
    const row = status.pods.find((r) => r.pod === held.metadata!.name);
    assert.equal(row?.replaceAt, 'never: maxConcurrentReplacements is 0', JSON.stringify(row));
    assert.ok(!status.pods.some((r) => r.pod === quiet.metadata!.name), `the pod under the ignored key is listed: ${JSON.stringify(status.pods)}`);
    assert.ok(!status.nodes.includes('sim-1'), `a workflow runs for the ignored key's node: ${status.nodes.join(', ')}`);

    // Past the moment it would have been evicted (marked + taintReplacementTimeSeconds), with margin: still there.
    const due = Date.parse(String(replacing.lastTransitionTime)) + 1000;
    await waitFor('the replacement time passed by 10 s', () => Date.now() > due + 10_000, { timeoutMs: 30_000, intervalMs: 500 });
    const after = await readPod(kube, ns, held.metadata!.name!);
    assert.equal(after?.metadata?.uid, held.metadata!.uid, 'replaced with maxConcurrentReplacements 0');
    assert.ok(!after?.metadata?.deletionTimestamp, 'evicted with maxConcurrentReplacements 0');
    const quietNow = await readPod(kube, ns, quiet.metadata!.name!);
    assert.equal(condition(quietNow, 'NodeTaintDetected'), undefined, 'the pod under the ignored key was marked');
    assert.equal(quietNow?.metadata?.uid, quiet.metadata!.uid);
  });
});
