// `-o/--output` for every read command, as kubectl has it: `table` (the default, or the
// command's own), `wide` (more columns), `json`, `yaml`, `name` (a `kind/name` line per row) and
// `jsonpath=TEMPLATE` (kubectl's template over the JSON output). A format that is none of them,
// or a template that does not parse, is refused by the option parser, before anything connects
// (exit 2). docs/cli.md describes the formats and the names each command prints.
import { InvalidArgumentError, Option } from 'commander';
import { UsageError } from '../errors.ts';
import { preview } from '../checks/preview.ts';
import { jsonpathInput, parseTemplate, renderTemplate } from './jsonpath.ts';

/** The formats by name; `jsonpath=TEMPLATE` is the one that carries a value. */
export const OUTPUT_FORMATS = ['table', 'wide', 'json', 'yaml', 'name'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number] | `jsonpath=${string}`;

const JSONPATH = 'jsonpath=';
const ALLOWED = `${OUTPUT_FORMATS.join(', ')}, jsonpath=TEMPLATE`;

/**
 * The format `v` names, its template checked; what is wrong is thrown as `make(message)` (the
 * option parser's error, or UsageError for a command that reads -o itself). `=json` as `-o=json`
 * leaves it.
 */
export function parseOutputFormat(v: string, make: (message: string) => Error = (m) => new UsageError(m)): OutputFormat {
  const format = v.startsWith('=') ? v.slice(1) : v;
  if ((OUTPUT_FORMATS as readonly string[]).includes(format)) return format as OutputFormat;
  if (format === 'jsonpath' || format === JSONPATH) throw make('jsonpath needs a template: -o jsonpath={.items[*].metadata.name}');
  if (format.startsWith(JSONPATH)) {
    const problem = parseTemplate(format.slice(JSONPATH.length)).problem;
    if (problem) throw make(`bad jsonpath template ${preview(format.slice(JSONPATH.length), 120)}: ${problem}`);
    return format as OutputFormat;
  }
  throw make(`Allowed choices are ${ALLOWED} (got ${preview(format, 60)}).`);
}

/** -o/--output FORMAT, `fallback` when absent; `-o=json` as kubectl takes it, as well as `-o json` and `-ojson`. */
export function outputOption(fallback: OutputFormat = 'table'): Option {
  // The choices are listed in --help; the parser below, not commander's, checks them (and a template).
  return new Option('-o, --output <format>', 'output format').choices([...OUTPUT_FORMATS, 'jsonpath=TEMPLATE']).default(fallback)
    .argParser((v: string) => parseOutputFormat(v, (m) => new InvalidArgumentError(m)));
}

/** --json, kept for scripts written before -o: the same as -o json (not listed in --help). */
export function jsonAliasOption(): Option {
  return new Option('--json', 'the same as -o json').hideHelp();
}

/** The format asked for: -o, or --json. */
export function formatOf(flags: { output: OutputFormat; json?: boolean }): OutputFormat {
  return flags.json ? 'json' : flags.output;
}

/**
 * What -o name prints of a command's data: a line per row, `kind/[namespace/]name` (app/ns/name,
 * pod/ns/name, node/name), or the workflow id where the row is a workflow (weeder/ns/service).
 */
export type NamesOf<T> = (data: T) => readonly string[];

/**
 * Prints `data` as JSON or YAML, what `text` makes of it for table and wide, what `names` makes
 * of it for -o name (a command without names refuses -o name), or a jsonpath template over its
 * JSON (a list is seen as kubectl's List, under `.items`); the template's output ends where it
 * ends, with no newline added, as kubectl's does.
 */
export async function printOutput<T>(format: OutputFormat, data: T, text: (wide: boolean) => string, names?: NamesOf<T>): Promise<void> {
  if (format === 'json') console.log(JSON.stringify(data, null, 2));
  else if (format === 'yaml') console.log((await import('yaml')).stringify(data).trimEnd());
  else if (format === 'name') {
    if (!names) throw new UsageError('-o name: this command has no names to print; use -o json or -o jsonpath=');
    const lines = names(data);
    if (lines.length > 0) console.log(lines.join('\n'));
  } else if (format.startsWith(JSONPATH)) process.stdout.write(await jsonpathOutput(format.slice(JSONPATH.length), data));
  else console.log(text(format === 'wide'));
}

/** The template's output over `data`'s JSON; an expression the evaluator refuses is a usage error naming the template. */
export async function jsonpathOutput(template: string, data: unknown): Promise<string> {
  const parsed = parseTemplate(template);
  if (!parsed.nodes) throw new UsageError(`bad jsonpath template ${preview(template, 120)}: ${parsed.problem}`);
  const { JSONPath } = await import('jsonpath-plus');
  try {
    return renderTemplate(parsed.nodes, jsonpathInput(data), (path, json) => JSONPath({ path, json: json as object, wrap: true, eval: 'safe' }) as unknown[]);
  } catch (err) {
    throw new UsageError(`jsonpath template ${preview(template, 120)}: ${preview((err as Error)?.message ?? err, 200)}`);
  }
}

/** Rows as aligned columns, two spaces apart, the header first; no trailing blanks. */
export function columns(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}
