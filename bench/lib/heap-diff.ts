// What grew between two V8 heap snapshots (the .heapsnapshot files node:v8 writes), by kind:
// objects by constructor, closures by function name, strings and arrays by type alone. For the
// benchmarks that look for what a cached workflow or a watched object holds.
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Self size and count per kind ("object Foo", "closure bar", "string"). */
export function heapByKind(path: string): Map<string, { count: number; bytes: number }> {
  const s = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const fields = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const kinds = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + typeAt]!]!;
    const named = type === 'object' || type === 'closure' || type === 'native' || type === 'hidden' || type === 'synthetic';
    const kind = named ? `${type} ${s.strings[s.nodes[i + nameAt]!]!.slice(0, 60)}` : type;
    const k = kinds.get(kind) ?? { count: 0, bytes: 0 };
    k.count++;
    k.bytes += s.nodes[i + sizeAt]!;
    kinds.set(kind, k);
  }
  return kinds;
}

/** Prints the kinds that grew most from `before` to `after`, in total and per one of `per` things added. */
export function printHeapDiff(before: string, after: string, per: number, top = 25): void {
  const a = heapByKind(before);
  const b = heapByKind(after);
  const grown = [...b].map(([kind, v]) => {
    const was = a.get(kind) ?? { count: 0, bytes: 0 };
    return { kind, count: v.count - was.count, bytes: v.bytes - was.bytes };
  }).sort((x, y) => y.bytes - x.bytes);
  const total = grown.reduce((n, g) => n + g.bytes, 0);
  console.log(`heap grown by ${(total / 2 ** 20).toFixed(1)} MiB (self sizes), ${(total / per / 1024).toFixed(1)} KiB per each of ${per}; most:`);
  for (const g of grown.slice(0, top)) {
    console.log(`  ${(g.bytes / 2 ** 20).toFixed(2).padStart(7)} MiB ${(g.bytes / per).toFixed(0).padStart(7)} B each ${String(g.count).padStart(8)} (${(g.count / per).toFixed(1)} each)  ${g.kind}`);
  }
}
