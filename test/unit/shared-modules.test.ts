// src/workers/worker.ts (sharedWorkflowModules) and every module the workflow code (src/workflows/) loads.
// The modules the worker loads once and shares between workflows (sharedWorkflowModules) are
// exactly the workflow code's pure modules, the workflow code loads no package but the SDK's
// (zod costs 1 MiB a workflow and cannot be shared), and none of them keeps anything that could change:
// a module-level `let` or `var`, or a Map or Set written to, would leak one workflow's state
// into another (the SDK freezes what it shares, but neither a binding nor a Map's entries).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { sharedWorkflowModules, workflowsPath } from '../../src/workers/worker.ts';

const srcRoot = fileURLToPath(new URL('../../src', import.meta.url));
const workflowsDir = dirname(workflowsPath);

const parse = (file: string) => ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);

/** The specifiers a module imports for their values (type-only imports are erased). */
function valueImports(sf: ts.SourceFile): string[] {
  const out: string[] = [];
  for (const s of sf.statements) {
    if (ts.isImportDeclaration(s)) {
      const c = s.importClause;
      const typeOnly = c?.isTypeOnly || (c && !c.name && c.namedBindings && ts.isNamedImports(c.namedBindings)
        && c.namedBindings.elements.length > 0 && c.namedBindings.elements.every((e) => e.isTypeOnly));
      if (!typeOnly) out.push((s.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(s) && s.moduleSpecifier && !s.isTypeOnly) {
      out.push((s.moduleSpecifier as ts.StringLiteral).text);
    }
  }
  return out;
}

/** Every module the workflow code loads: tend's own files, and the packages by name. */
function workflowGraph(): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of valueImports(parse(file))) {
      if (!spec.startsWith('.')) {
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
        continue;
      }
      const target = resolve(dirname(file), spec);
      assert.ok(existsSync(target), `${relative(srcRoot, file)} imports ${spec}, which is not a file`);
      visit(target);
    }
  };
  visit(workflowsPath);
  return { files: [...files].sort(), packages: [...packages].sort() };
}

/** What in a module's top level could change after it is loaded. */
function mutableState(file: string): string[] {
  const sf = parse(file);
  const problems: string[] = [];
  const collections: string[] = [];
  for (const s of sf.statements) {
    if (!ts.isVariableStatement(s)) continue;
    const flags = s.declarationList.flags;
    for (const d of s.declarationList.declarations) {
      const name = d.name.getText(sf);
      if (!(flags & ts.NodeFlags.Const)) problems.push(`module-level ${flags & ts.NodeFlags.Let ? 'let' : 'var'} ${name}`);
      if (d.initializer && ts.isNewExpression(d.initializer) && /^(Map|Set|WeakMap|WeakSet)$/.test(d.initializer.expression.getText(sf))) collections.push(name);
    }
  }
  const text = sf.getFullText();
  for (const name of collections) {
    const writes = text.match(new RegExp(`\\b${name}\\.(set|add|delete|clear)\\(`, 'g'));
    if (writes) problems.push(`${name} is written to (${writes.join(', ')})`);
  }
  return problems;
}

describe('modules shared between workflows', () => {
  const graph = workflowGraph();
  const pure = graph.files.filter((f) => dirname(f) !== workflowsDir);

  it('are the workflow code\'s modules outside src/workflows', () => {
    const listed = sharedWorkflowModules.map((m) => relative(srcRoot, m)).sort();
    assert.deepEqual(listed, pure.map((f) => relative(srcRoot, f)));
    assert.ok(pure.length >= 10, `the workflow code's pure modules: ${pure.length}`);
  });

  it('leave no package to load per workflow but the SDK\'s own (which the SDK shares already): no zod', () => {
    assert.deepEqual(graph.packages.filter((p) => !p.startsWith('@temporalio/')), []);
  });

  it('keep nothing that changes', () => {
    const problems = pure.flatMap((f) => mutableState(f).map((p) => `${relative(srcRoot, f)}: ${p}`));
    assert.deepEqual(problems, []);
  });

  it('the check finds a module-level let and a Map written to', () => {
    const problems = mutableState(fileURLToPath(new URL('../fixtures/mutable-module.ts', import.meta.url)));
    assert.deepEqual(problems, ['module-level let counter', 'seen is written to (seen.set()']);
  });
});
