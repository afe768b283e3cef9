// The workflows are short shells over their capabilities' pure machines (src/*/...-machine.ts,
// src/taint/coordinator.ts, src/weeder/armed.ts, src/weeder/window-run.ts): handlers that check and hand over, one run loop,
// continue-as-new. Their size is held here, so that decisions grow in the machines, where a table
// test reaches them, and not back into workflow closures.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const dir = fileURLToPath(new URL('../../src/workflows/', import.meta.url));
/** The longest a function in workflow code may be, in lines. */
const MAX_FUNCTION_LINES = 120;
/** The long-lived workflows' shells, in lines. */
const MAX_FILE_LINES: Record<string, number> = { 'repair.ts': 450, 'taint.ts': 450, 'weeder.ts': 450, 'apps.ts': 450 };

const functionsOf = (file: string) => {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: { name: string; line: number; lines: number }[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isFunctionDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isMethodDeclaration(n)) {
      const from = sf.getLineAndCharacterOfPosition(n.getStart()).line;
      const to = sf.getLineAndCharacterOfPosition(n.getEnd()).line;
      const name = (ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n)) && n.name ? n.name.getText() : '(anonymous)';
      out.push({ name, line: from + 1, lines: to - from + 1 });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
};

describe('workflow shells', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

  it(`no function in src/workflows is longer than ${MAX_FUNCTION_LINES} lines`, () => {
    const long = files.flatMap((f) => functionsOf(`${dir}${f}`).filter((fn) => fn.lines > MAX_FUNCTION_LINES).map((fn) => `${f}:${fn.line} ${fn.name} (${fn.lines} lines)`));
    assert.deepEqual(long, []);
  });

  it('the repair, taint, weeder and App shells stay under their sizes', () => {
    for (const [f, max] of Object.entries(MAX_FILE_LINES)) {
      const lines = readFileSync(`${dir}${f}`, 'utf8').split('\n').length;
      assert.ok(lines <= max, `src/workflows/${f} has ${lines} lines, more than ${max}`);
    }
  });

  it('the check finds a long function (it can fail)', () => {
    const body = Array.from({ length: MAX_FUNCTION_LINES + 1 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const tmp = mkdtempSync(join(tmpdir(), 'tend-shells-'));
    try {
      writeFileSync(join(tmp, 'long.ts'), `export function long(): void {\n${body}\n}\n`);
      assert.ok(functionsOf(join(tmp, 'long.ts')).some((fn) => fn.name === 'long' && fn.lines > MAX_FUNCTION_LINES));
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
