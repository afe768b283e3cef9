// deploy/grafana/tend.json against the metrics tend (src/metrics/) and the SDK export.
// The example Grafana dashboard: valid JSON of Grafana's dashboard shape, and
// every panel's query names only metrics tend or the SDK exports (as
// documented in docs/metrics.md; the e2e test checks a live scrape too).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { repoRoot } from '../harness/env.ts';
import { join } from 'node:path';

interface Panel { id: number; type: string; title: string; gridPos: { h: number; w: number; x: number; y: number }; targets?: { refId: string; expr: string }[] }

export function dashboard(): { title: string; uid: string; schemaVersion: number; panels: Panel[]; templating: { list: { name: string }[] } } {
  return JSON.parse(readFileSync(join(repoRoot, 'deploy/grafana/tend.json'), 'utf8'));
}

const promqlWords = new Set(['sum', 'by', 'rate', 'increase', 'histogram_quantile', 'max', 'min', 'avg', 'le', 'without', 'count']);

/** The metric names a PromQL expression reads (identifiers before `{`, `[` or `)`, not functions or labels). */
export function metricsOf(expr: string): string[] {
  const names = new Set<string>();
  const stripped = expr.replace(/\{[^}]*\}/g, '{}').replace(/\[[^\]]*\]/g, '[]').replace(/by \([^)]*\)/g, '');
  for (const m of stripped.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{|\[|\))/g)) {
    if (!promqlWords.has(m[1]!)) names.add(m[1]!);
  }
  return [...names];
}

/** A histogram's series are read as name_bucket/_sum/_count. */
const family = (name: string) => name.replace(/_(bucket|sum|count)$/, '');

describe('grafana dashboard deploy/grafana/tend.json', () => {
  const d = dashboard();
  const docs = readFileSync(join(repoRoot, 'docs/metrics.md'), 'utf8');

  it("has Grafana's dashboard shape: title, uid, schemaVersion, panels with unique ids, a type and a place", () => {
    assert.equal(typeof d.title, 'string');
    assert.match(d.uid, /^[a-zA-Z0-9_-]{1,40}$/);
    assert.ok(Number.isInteger(d.schemaVersion) && d.schemaVersion >= 30);
    assert.ok(d.panels.length > 0);
    assert.equal(new Set(d.panels.map((p) => p.id)).size, d.panels.length, 'unique panel ids');
    for (const p of d.panels) {
      assert.ok(['row', 'timeseries', 'stat', 'table'].includes(p.type), `${p.title}: type ${p.type}`);
      const g = p.gridPos;
      assert.ok(g && g.w > 0 && g.w <= 24 && g.x >= 0 && g.x + g.w <= 24 && g.h > 0 && g.y >= 0, `${p.title}: gridPos`);
      if (p.type !== 'row') assert.ok((p.targets ?? []).length > 0 && p.targets!.every((t) => t.expr && t.refId), `${p.title}: targets`);
    }
    assert.deepEqual(d.templating.list.map((v) => v.name), ['datasource', 'job']);
  });

  it('reads tend_* and temporal_* metrics, each one documented in docs/metrics.md', () => {
    const used = new Set(d.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => metricsOf(t.expr))).map(family));
    assert.ok([...used].some((n) => n.startsWith('tend_')) && [...used].some((n) => n.startsWith('temporal_')));
    for (const name of used) {
      assert.match(name, /^(tend|temporal)_/, `${name}: neither tend's nor the SDK's`);
      assert.ok(docs.includes(`\`${name}\``), `${name} is not documented in docs/metrics.md`);
    }
  });

  it('finds the metric names in a query', () => {
    assert.deepEqual(metricsOf('histogram_quantile(0.95, sum by (le, task_queue) (rate(temporal_x_bucket{job=~"$job"}[5m])))'), ['temporal_x_bucket']);
    assert.deepEqual(metricsOf('sum(tend_a{job="x"}) / max(tend_b)'), ['tend_a', 'tend_b']);
  });
});
