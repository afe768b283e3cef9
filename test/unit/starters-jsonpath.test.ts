// src/starters/jsonpath.ts and output.ts's -o name and -o jsonpath=: kubectl's template over a
// command's JSON output (a list seen as kubectl's List), a template that does not parse refused
// by the option parser naming it, and the `kind/name` lines a command gives for -o name.
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { jsonpathOutput, outputOption, parseOutputFormat, printOutput } from '../../src/starters/output.ts';
import { parseTemplate } from '../../src/starters/jsonpath.ts';
import { UsageError } from '../../src/errors.ts';

/** What the process prints on stdout (console.log and process.stdout.write) while `fn` runs. */
async function printed(fn: () => Promise<void>): Promise<string> {
  let out = '';
  const log = console.log;
  const write = process.stdout.write;
  console.log = (...a: unknown[]) => void (out += `${a.join(' ')}\n`);
  process.stdout.write = ((chunk: string) => { out += chunk; return true; }) as typeof process.stdout.write;
  try {
    await fn();
  } finally {
    console.log = log;
    process.stdout.write = write;
  }
  return out;
}

const apps = [
  { metadata: { namespace: 'demo', name: 'web', labels: { 'app.kubernetes.io/name': 'shop' } }, spec: { instances: 2 }, status: { ready: true } },
  { metadata: { namespace: 'demo', name: 'api' }, spec: { instances: 1 }, status: { ready: false } },
];

describe('-o jsonpath= and -o name', () => {
  it('a list is read as kubectl reads a List: {.items[*].metadata.name} joins by a space, no newline added', async () => {
    assert.equal(await jsonpathOutput('{.items[*].metadata.name}', apps), 'web api');
    assert.equal(await printed(() => printOutput('jsonpath={.items[*].metadata.name}', apps, () => 'table')), 'web api');
  });

  it('range ... end, quoted strings with escapes, text outside braces', async () => {
    assert.equal(await jsonpathOutput('{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\t"}{.spec.instances}{"\\n"}{end}', apps),
      'demo/web\t2\ndemo/api\t1\n');
    assert.equal(await jsonpathOutput('names: {range .items[*]}[{@.metadata.name}]{end}.', apps), 'names: [web][api].');
  });

  it('filters, indexes, slices, recursive descent, bracketed keys', async () => {
    assert.equal(await jsonpathOutput('{.items[?(@.spec.instances==1)].metadata.name}', apps), 'api');
    assert.equal(await jsonpathOutput('{.items[?(@.metadata.name == "web")].spec.instances}', apps), '2');
    assert.equal(await jsonpathOutput('{.items[-1:].metadata.name}', apps), 'api');
    assert.equal(await jsonpathOutput('{.items[0].status}', apps), '{"ready":true}');
    assert.equal(await jsonpathOutput('{..name}', apps), 'web api');
    assert.equal(await jsonpathOutput("{.items[0].metadata.labels['app.kubernetes.io/name']}", apps), 'shop');
  });

  it('an object is read as it is; a missing field prints nothing, as kubectl does', async () => {
    const one = { metadata: { name: 'web', generation: 3 }, spec: { instances: 2 } };
    assert.equal(await jsonpathOutput('{.metadata.generation} {.spec.instances}', one), '3 2');
    assert.equal(await jsonpathOutput('[{.nope.deeper}]', one), '[]');
    assert.equal(await jsonpathOutput('[{.items[*]}]', null), '[]');
  });

  it('a template that does not parse is refused by the option parser, naming the template and what is wrong', () => {
    const cases: [string, RegExp][] = [
      ['{.items[*].metadata.name', /no closing \}/],
      ['{.items[0}', /an unclosed \[/],
      ['{range .items[*]}{.x}', /a \{range \.items\[\*\]\} with no \{end\}/],
      ['{.x}{end}', /an \{end\} with no \{range\}/],
      ['{metadata.name}', /expected a path/],
      ['{"abc}', /unterminated double-quoted string/],
      ['{"\\q"}', /not a whole quoted string/],
    ];
    for (const [template, why] of cases) {
      const cmd = new Command().exitOverride().configureOutput({ writeErr: () => undefined }).addOption(outputOption()).action(() => undefined);
      assert.throws(() => cmd.parse(['-o', `jsonpath=${template}`], { from: 'user' }), (err: Error) => {
        assert.match(err.message, /bad jsonpath template/, template);
        assert.ok(err.message.includes(JSON.stringify(template)), `${template}: ${err.message}`);
        assert.match(err.message, why, template);
        return true;
      });
      assert.ok(parseTemplate(template).problem);
    }
    assert.throws(() => parseOutputFormat('jsonpath'), (err: unknown) => err instanceof UsageError && /needs a template/.test(err.message));
    assert.throws(() => parseOutputFormat('jsonpath='), /needs a template/);
    assert.throws(() => parseOutputFormat('go-template={{.x}}'), /Allowed choices are table, wide, json, yaml, name, jsonpath=TEMPLATE/);
  });

  it('-o takes a template as kubectl does: -o jsonpath=T, -o=jsonpath=T, --output=jsonpath=T', () => {
    for (const args of [['-o', 'jsonpath={.a}'], ['-o=jsonpath={.a}'], ['--output=jsonpath={.a}'], ['-ojsonpath={.a}']]) {
      const cmd = new Command().exitOverride().addOption(outputOption()).action(() => undefined);
      cmd.parse(args, { from: 'user' });
      assert.equal(cmd.opts().output, 'jsonpath={.a}', args.join(' '));
    }
  });

  it('a path the evaluator refuses is a usage error naming the template', async () => {
    await assert.rejects(jsonpathOutput('{.items[?(process.exit(3))]}', apps), (err: unknown) =>
      err instanceof UsageError && err.message.includes('{.items[?(process.exit(3))]}'));
  });

  it('-o name prints what the command names, a line each; nothing for none; refused by a command with no names', async () => {
    const names = (rows: typeof apps) => rows.map((a) => `app/${a.metadata.namespace}/${a.metadata.name}`);
    assert.equal(await printed(() => printOutput('name', apps, () => 'table', names)), 'app/demo/web\napp/demo/api\n');
    assert.equal(await printed(() => printOutput('name', [], () => 'table', names)), '');
    await assert.rejects(printOutput('name', apps, () => 'table'), (err: unknown) => err instanceof UsageError && /-o name/.test(err.message));
  });
});
