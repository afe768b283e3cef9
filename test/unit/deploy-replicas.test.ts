// The Deployment deploy/kubernetes ships: two replicas, spread by a preferred anti-affinity, and a
// PodDisruptionBudget over the same pods that lets a drain take one at a time.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const base = fileURLToPath(new URL('../../deploy/kubernetes/', import.meta.url));
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const read = (file: string) => parse(readFileSync(join(base, file), 'utf8')) as any;
const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

describe('deploy/kubernetes: two replicas', () => {
  const deployment = read('deployment.yaml');
  const pdb = read('pdb.yaml');
  const podLabels = deployment.spec.template.metadata.labels as Record<string, string>;

  it('the Deployment runs two pods', () => {
    assert.equal(deployment.spec.replicas, 2);
    assert.ok(matches(deployment.spec.selector.matchLabels, podLabels));
  });

  it('a preferred anti-affinity spreads them over nodes and zones, selecting tend\'s own pods', () => {
    const terms = deployment.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution as
      { weight: number; podAffinityTerm: { topologyKey: string; labelSelector: { matchLabels: Record<string, string> } } }[];
    assert.deepEqual(terms.map((t) => t.podAffinityTerm.topologyKey), ['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
    for (const t of terms) assert.ok(matches(t.podAffinityTerm.labelSelector.matchLabels, podLabels), JSON.stringify(t));
    assert.equal(deployment.spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution, undefined,
      'a required anti-affinity would leave the second pod pending on a one-node cluster');
  });

  it('the PodDisruptionBudget covers the same pods, one disruption at a time, and kustomize applies it', () => {
    assert.equal(pdb.kind, 'PodDisruptionBudget');
    assert.equal(pdb.metadata.namespace, deployment.metadata.namespace);
    assert.ok(matches(pdb.spec.selector.matchLabels, podLabels));
    assert.equal(pdb.spec.maxUnavailable, 1);
    assert.equal(pdb.spec.minAvailable, undefined);
    assert.ok((read('kustomization.yaml').resources as string[]).includes('pdb.yaml'));
  });
});
