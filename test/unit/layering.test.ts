// eslint.config.js's layer rules and scripts/import-graph.ts, over src/.
// The layering of src/ (eslint.config.js's layers) holds and bites: for every folder, an import
// of each folder at or above its layer is reported by the project's own lint configuration
// (static, re-export and dynamic), while an import of a lower layer is not; workflow code gets
// no Node built-ins; and the import graph of src/, walked from the files, has no circle and no
// import against the layers.
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';
import { circles, declaredLayers, importGraph, layerViolations } from '../../scripts/import-graph.ts';

const root = new URL('../..', import.meta.url).pathname;

/** The rules under test only: the parser without type information, so each probe is quick. */
const eslint = new ESLint({
  cwd: root,
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports' || ruleId === 'no-restricted-syntax',
});

/** The 1-based lines of `code`, as a file of `folder`, that the lint configuration reports. */
async function reported(folder: string, code: string): Promise<number[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}src/${folder}/layering-probe.ts` });
  return result!.messages.map((m) => {
    assert.ok(m.ruleId, `not a rule's report: ${m.message}`);
    return m.line;
  });
}

const linesOf = (imports: string[]) => imports.map((_, i) => i + 1);

describe('layering: eslint.config.js', () => {
  let layers: readonly (readonly string[])[];
  before(async () => {
    layers = await declaredLayers();
  });

  it('names every folder of src/ in exactly one layer', () => {
    const folders = new Set([...importGraph().keys()].map((f) => (f.includes('/') ? f.slice(0, f.indexOf('/')) : '.')));
    const named = layers.flat();
    assert.deepEqual([...folders].filter((f) => !named.includes(f)), [], 'folders in no layer');
    assert.equal(new Set(named).size, named.length, 'a folder named twice');
  });

  it('keeps kube, config, safety, checks, temporal and the capabilities below activities, workflows, workers and starters', () => {
    const layerOf = (folder: string) => layers.findIndex((l) => l.includes(folder));
    for (const low of ['kube', 'config', 'safety', 'checks', 'temporal', 'repair', 'taint', 'weeder', 'apps']) {
      for (const high of ['activities', 'workflows', 'workers', 'starters']) {
        assert.ok(layerOf(low) < layerOf(high), `${low} is not below ${high}`);
      }
    }
  });

  // One probe per folder: each line imports one folder it must not (its own layer's others and
  // every layer above), in the three forms a module can take another in; every line is reported.
  for (const folder of ['checks', 'http', 'kube', 'config', 'temporal', 'apps', 'repair', 'taint', 'weeder',
    'metrics', 'safety', 'rbac', 'sandbox', 'activities', 'workflows', 'workers']) {
    it(`reports src/${folder} importing its own layer's others or a layer above`, async () => {
      const at = layers.findIndex((l) => l.includes(folder));
      const forbidden = layers.slice(at).flat().filter((f) => f !== folder);
      assert.ok(forbidden.length > 0);
      const imports = forbidden.flatMap((f) => [
        `import { a${f} } from '../${f}/probe.ts';`,
        `export type { B } from '../${f}/probe.ts';`,
        `export const c${f} = () => import('../${f}/probe.ts');`,
      ]);
      assert.deepEqual(await reported(folder, imports.join('\n')), linesOf(imports));
    });

    it(`lets src/${folder} import the layers below it and its own files`, async () => {
      const at = layers.findIndex((l) => l.includes(folder));
      const below = layers.slice(0, at).flat().filter((f) => f !== '.');
      const imports = [
        "import { log } from '../log.ts';",
        "import { own } from './own.ts';",
        ...below.map((f) => `import { a${f} } from '../${f}/probe.ts';`),
        ...below.map((f) => `export const c${f} = () => import('../${f}/probe.ts');`),
      ];
      assert.deepEqual(await reported(folder, imports.join('\n')), []);
    });
  }

  it("reports a root file of src/ importing any folder, and not another root file", async () => {
    const imports = ["import { a } from './kube/probe.ts';", "export type { B } from './config/probe.ts';", "export const c = () => import('./starters/probe.ts');"];
    const lint = async (code: string) => (await eslint.lintText(code, { filePath: `${root}src/layering-probe.ts` }))[0]!.messages.map((m) => m.line);
    assert.deepEqual(await lint(imports.join('\n')), linesOf(imports));
    assert.deepEqual(await lint("import { log } from './log.ts';\nexport const s = () => import('./sleep.ts');"), []);
  });

  it('reports a subfolder climbing two levels into a layer above (sandbox/kubelet into starters)', async () => {
    const [result] = await eslint.lintText("import { x } from '../../starters/cli.ts';\n", { filePath: `${root}src/sandbox/kubelet/layering-probe.ts` });
    assert.deepEqual(result!.messages.map((m) => m.ruleId), ['no-restricted-imports']);
  });

  it('reports a Node built-in or a client library in workflow code, and not elsewhere', async () => {
    const imports = [
      "import { readFile } from 'node:fs/promises';",
      "import { createHash } from 'crypto';",
      "import { Client } from '@temporalio/client';",
      "import * as k8s from '@kubernetes/client-node';",
    ];
    assert.deepEqual(await reported('workflows', imports.join('\n')), linesOf(imports));
    assert.deepEqual(await reported('activities', imports.join('\n')), []);
  });
});

describe('layering: the import graph of src/', () => {
  it('has no circle', () => {
    assert.deepEqual(circles(importGraph()), []);
  });

  it('has no import against the layers, dynamic ones included', async () => {
    assert.deepEqual(layerViolations(importGraph(), await declaredLayers()), []);
  });

  it('finds a circle and an import against the layers where there is one', () => {
    const graph = new Map([
      ['kube/a.ts', ['kube/b.ts']],
      ['kube/b.ts', ['config/c.ts']],
      ['config/c.ts', ['kube/a.ts', 'log.ts']],
      ['log.ts', []],
      ['workers/w.ts', ['log.ts', 'starters/s.ts']],
      ['starters/s.ts', ['workers/w.ts']],
    ]);
    assert.deepEqual(circles(graph), [
      ['config/c.ts', 'kube/a.ts', 'kube/b.ts', 'config/c.ts'],
      ['starters/s.ts', 'workers/w.ts', 'starters/s.ts'],
    ]);
    assert.deepEqual(layerViolations(graph, [['.'], ['kube'], ['config'], ['workers'], ['starters']]), [
      'kube/b.ts → config/c.ts: kube imports only from the layers below it',
      'workers/w.ts → starters/s.ts: workers imports only from the layers below it',
    ]);
  });
});
