// deploy/grafana/tend.json against @grafana/schema.
// The example dashboard against Grafana's own dashboard schema: the types
// Grafana generates from its schema and publishes as @grafana/schema. The
// dashboard's JSON is type-checked as an object literal of type `Dashboard`
// by the TypeScript compiler, so a field Grafana's dashboard does not have
// (a misspelt key), a value of the wrong type, or a value outside an
// enumeration (a panel or variable type, a sort order) is an error, named
// with its place in the file.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { repoRoot } from '../harness/env.ts';

const DASHBOARD = join(repoRoot, 'deploy/grafana/tend.json');

/** The compiler's complaints about `json` as a Grafana Dashboard, each as "line:col message". */
function checkAsDashboard(json: string): string[] {
  const file = join(repoRoot, 'test/unit/__grafana_dashboard_check__.ts');
  const prefix = "import type { Dashboard } from '@grafana/schema';\nexport const dashboard: Dashboard = ";
  const text = `${prefix}${json.trim()};\n`;
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2023, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true, noEmit: true, skipLibCheck: true, types: [],
  };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  const exists = host.fileExists.bind(host);
  const getSource = host.getSourceFile.bind(host);
  host.readFile = (f) => (f === file ? text : read(f));
  host.fileExists = (f) => f === file || exists(f);
  host.getSourceFile = (f, lang, ...rest) => (f === file ? ts.createSourceFile(f, text, lang) : getSource(f, lang, ...rest));
  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file)!;
  return ts.getPreEmitDiagnostics(program).filter((d) => d.file === source).map((d) => {
    const { line, character } = source.getLineAndCharacterOfPosition(d.start ?? 0);
    // Lines of the JSON file: the first line of the check is the import.
    return `tend.json ${line}:${line === 1 ? character - prefix.split('\n')[1]!.length + 1 : character + 1} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

describe("grafana dashboard: Grafana's dashboard schema (@grafana/schema)", function () {
  this.timeout(60_000);

  it('deploy/grafana/tend.json is a Dashboard: no unknown field, no wrong type, no value outside an enumeration', () => {
    assert.deepEqual(checkAsDashboard(readFileSync(DASHBOARD, 'utf8')), []);
  });

  it('the check refuses a misspelt field, and graphTooltip given a string where the schema has a numeric enumeration', () => {
    const d = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Record<string, unknown> & { panels: Record<string, unknown>[] };
    d.refreshh = '30s';
    const problems = checkAsDashboard(JSON.stringify(d, null, 2));
    assert.ok(problems.some((p) => /refreshh/.test(p)), problems.join('\n'));
    const e = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { graphTooltip?: unknown };
    e.graphTooltip = 'shared';
    const more = checkAsDashboard(JSON.stringify(e, null, 2));
    assert.ok(more.some((p) => /graphTooltip|DashboardCursorSync|not assignable/.test(p)), more.join('\n'));
  });
});
