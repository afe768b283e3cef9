// The import graph of src/, read from the files themselves: every static, type-only, re-export
// and dynamic `import('...')` of a relative path, resolved to the file it names. It proves two
// things: the graph has no circle, and no folder imports one of its own layer or above (the
// order of eslint.config.js's layers, whose lint rules see static imports only).
// `node scripts/import-graph.ts` (part of `npm run lint`) prints the folder-to-folder edges and
// any circle or import against the layers, and fails on one; test/unit/layering.test.ts runs
// the same checks.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const srcRoot = fileURLToPath(new URL('../src/', import.meta.url));

/** Every .ts file under `dir`, as paths relative to `root`, sorted. */
function tsFiles(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(root, path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [relative(root, path)] : [];
  }).sort();
}

/** file → the files of `root` it imports (paths relative to `root`); imports of packages left out. */
export function importGraph(root = srcRoot): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of tsFiles(root)) {
    const text = readFileSync(join(root, file), 'utf8');
    // preProcessFile reads import, export-from, import type and import('...') alike, without type-checking.
    const { importedFiles } = ts.preProcessFile(text, true, true);
    const targets = importedFiles
      .map((f) => f.fileName)
      .filter((name) => name.startsWith('./') || name.startsWith('../'))
      .map((name) => relative(root, resolve(root, dirname(file), name)))
      .filter((target) => !target.startsWith('..'));
    graph.set(file, [...new Set(targets)].sort());
  }
  return graph;
}

/**
 * The circles of the graph, each once, as the files around it (first file again at the end).
 * Tarjan's strongly connected components: a component of more than one file, or a file that
 * imports itself, holds a circle; each is shown by one cycle through its first file.
 */
export function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || graph.get(v)?.includes(v)) components.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return components.map((component) => cycleThrough(graph, new Set(component)));
}

/** One cycle inside `component` through its first file (a breadth-first walk back to it). */
function cycleThrough(graph: ReadonlyMap<string, readonly string[]>, component: ReadonlySet<string>): string[] {
  const [start] = component as Set<string>;
  const from = new Map<string, string>();
  const queue = [start!];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!;
    for (const w of graph.get(v) ?? []) {
      if (!component.has(w)) continue;
      if (w === start) {
        const path = [v];
        for (let u = v; u !== start; u = from.get(u)!) path.unshift(from.get(u)!);
        return [...path, start!];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start!, start!];
}

/** A file's layer: its folder under src/, or '.' for the files at src/'s root. */
export const folderOf = (file: string): string => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '.');

/** folder → the other folders its files import, sorted. */
export function folderEdges(graph: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  const edges = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    const set = edges.get(from) ?? new Set<string>();
    for (const target of targets) if (folderOf(target) !== from) set.add(folderOf(target));
    edges.set(from, set);
  }
  return new Map([...edges].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, [...v].sort()]));
}

/** The layers of src/, lowest first, as eslint.config.js declares them. */
export async function declaredLayers(): Promise<readonly (readonly string[])[]> {
  const config: string = '../eslint.config.js';
  return ((await import(config)) as { layers: string[][] }).layers;
}

/** The imports that break the layers: a file importing a folder of its own layer (not its own) or above. */
export function layerViolations(graph: ReadonlyMap<string, readonly string[]>, layers: readonly (readonly string[])[]): string[] {
  const layerOf = (folder: string) => layers.findIndex((layer) => layer.includes(folder));
  const out: string[] = [];
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    for (const target of targets) {
      const to = folderOf(target);
      if (to === from || to === '.') continue;
      if (layerOf(from) === -1 || layerOf(to) === -1) out.push(`${file} → ${target}: ${layerOf(from) === -1 ? from : to} is in no layer`);
      else if (layerOf(to) >= layerOf(from)) out.push(`${file} → ${target}: ${from} imports only from the layers below it`);
    }
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const graph = importGraph();
  for (const [folder, targets] of folderEdges(graph)) console.log(`${folder} → ${targets.join(', ') || '(nothing)'}`);
  const found = circles(graph);
  for (const circle of found) console.log(`circle: ${circle.join(' → ')}`);
  const against = layerViolations(graph, await declaredLayers());
  for (const v of against) console.log(`against the layers: ${v}`);
  console.log(`${found.length} circle(s), ${against.length} import(s) against the layers`);
  process.exitCode = found.length === 0 && against.length === 0 ? 0 : 1;
}
