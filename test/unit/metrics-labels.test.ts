// src/metrics/labels.ts against src/metrics/registry.ts and every metric defined in src/.
// No tend_* metric has a label whose values grow with events: every label of every metric
// in the registry, and every `labelNames` written anywhere in src/, is in LABEL_BOUNDS (with
// the reason its values stay few), and none is a name that grows with events (a pod, an
// index, an address...). The e2e test test/e2e/metrics-replicas.test.ts checks the values
// a live scrape carries.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Gauge, Registry } from 'prom-client';
import { LABEL_BOUNDS, UNBOUNDED_LABELS } from '../../src/metrics/labels.ts';
import { registry } from '../../src/metrics/registry.ts';
import { repoRoot } from '../harness/env.ts';

/** What is wrong with each metric's labels: not in the allow-list, or one that grows with events. */
function labelProblems(metrics: readonly { name: string; labelNames: readonly string[] }[]): string[] {
  return metrics.flatMap(({ name, labelNames }) => labelNames.flatMap((label) => [
    ...((UNBOUNDED_LABELS as readonly string[]).includes(label) ? [`${name}: label ${label} grows with events`] : []),
    ...(Object.hasOwn(LABEL_BOUNDS, label) ? [] : [`${name}: label ${label} is not in LABEL_BOUNDS (src/metrics/labels.ts): add it with why its values stay few, or drop it`]),
  ]));
}

const ofRegistry = (r: Registry) => r.getMetricsAsArray()
  .map((m) => ({ name: m.name, labelNames: (m as unknown as { labelNames?: string[] }).labelNames ?? [] }))
  .filter((m) => m.name.startsWith('tend_'));

/** Every `labelNames: [...]` written in src/, as a metric named by its file and line. */
function ofSources(): { name: string; labelNames: string[] }[] {
  const out: { name: string; labelNames: string[] }[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts')) {
        const text = readFileSync(path, 'utf8');
        for (const m of text.matchAll(/labelNames:\s*\[([^\]]*)\]/g)) {
          const line = text.slice(0, m.index).split('\n').length;
          out.push({ name: `${relative(repoRoot, path)}:${line}`, labelNames: [...m[1]!.matchAll(/['"`]([^'"`]+)['"`]/g)].map((l) => l[1]!) });
        }
      }
    }
  };
  walk(join(repoRoot, 'src'));
  return out;
}

describe('metrics: no label whose values grow with events', () => {
  it("every label of every tend_* metric in the registry is in the allow-list, with a reason", () => {
    const metrics = ofRegistry(registry);
    assert.ok(metrics.length > 20 && metrics.some((m) => m.labelNames.length > 0), 'the registry holds tend\'s metrics');
    assert.deepEqual(labelProblems(metrics), []);
  });

  it('so is every labelNames written anywhere in src/ (metrics defined outside src/metrics too)', () => {
    const found = ofSources();
    assert.ok(found.length > 10, 'labelNames found in src/');
    assert.deepEqual(labelProblems(found), []);
  });

  it('the allow-list gives each label a reason and holds no label that grows with events', () => {
    for (const [label, why] of Object.entries(LABEL_BOUNDS)) assert.ok(why.length > 10, `${label}: no reason`);
    assert.deepEqual(UNBOUNDED_LABELS.filter((l) => Object.hasOwn(LABEL_BOUNDS, l)), []);
  });

  it('refuses a metric with an index or a pod label, and one with a label nobody said is bounded', () => {
    const probe = new Registry();
    new Gauge({ name: 'tend_probe_entry', help: 'probe', labelNames: ['index', 'status'], registers: [probe] });
    new Gauge({ name: 'tend_probe_pods', help: 'probe', labelNames: ['pod'], registers: [probe] });
    new Gauge({ name: 'tend_probe_other', help: 'probe', labelNames: ['flavour'], registers: [probe] });
    const problems = labelProblems(ofRegistry(probe));
    for (const want of [/tend_probe_entry: label index grows/, /tend_probe_pods: label pod grows/, /tend_probe_other: label flavour is not in LABEL_BOUNDS/]) {
      assert.ok(problems.some((p) => want.test(p)), `${want} in:\n${problems.join('\n')}`);
    }
    assert.ok(!problems.some((p) => /label status/.test(p)));
  });
});
