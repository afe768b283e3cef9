// `-o/--output` for every read command, as kubectl has it: `table` (the default, or the
// command's own), `wide` (more columns), `json`, `yaml`. A format that is not one of them is
// refused by the option parser, before anything connects (exit 2).
import { InvalidArgumentError, Option } from 'commander';

export const OUTPUT_FORMATS = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** -o/--output FORMAT, `fallback` when absent; `-o=json` as kubectl takes it, as well as `-o json` and `-ojson`. */
export function outputOption(fallback: OutputFormat = 'table'): Option {
  return new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default(fallback)
    .argParser((v: string) => {
      const format = v.startsWith('=') ? v.slice(1) : v;
      if (!(OUTPUT_FORMATS as readonly string[]).includes(format)) throw new InvalidArgumentError(`Allowed choices are ${OUTPUT_FORMATS.join(', ')}.`);
      return format as OutputFormat;
    });
}

/** --json, kept for scripts written before -o: the same as -o json (not listed in --help). */
export function jsonAliasOption(): Option {
  return new Option('--json', 'the same as -o json').hideHelp();
}

/** The format asked for: -o, or --json. */
export function formatOf(flags: { output: OutputFormat; json?: boolean }): OutputFormat {
  return flags.json ? 'json' : flags.output;
}

/** Prints `data` as JSON or YAML, or what `text` makes of it for table and wide. */
export async function printOutput<T>(format: OutputFormat, data: T, text: (wide: boolean) => string): Promise<void> {
  if (format === 'json') console.log(JSON.stringify(data, null, 2));
  else if (format === 'yaml') console.log((await import('yaml')).stringify(data).trimEnd());
  else console.log(text(format === 'wide'));
}

/** Rows as aligned columns, two spaces apart, the header first; no trailing blanks. */
export function columns(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}
