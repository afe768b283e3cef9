// `fromFile`: a section may point at the file its user already keeps, relative to tend's
// configuration file, instead of repeating its content:
//
//   weeder:           { fromFile: dep-config.yaml }            # dependency-watchdog's weeder config file, whole
//   taintReplacement: { fromFile: fdb-cluster.yaml, podSelector: ... }   # a FoundationDBCluster manifest: spec.automationOptions.replacements
//   repair:           { fromFile: cluster.yaml }               # CKE's cluster.yaml: its repair section
//
// The part is read and merged into the section before validation; a field given both in the
// section and in the file is refused (keep one). A problem in a field that came from the file
// names that file and its line there.
import { dirname, resolve } from 'node:path';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { expandHome } from '../kube/basics.ts';
import { readConfigText } from './size.ts';

interface FromFileKind {
  /** Where in that file the section's content is. */
  part: string[];
  /** What that file is, for messages. */
  what: string;
}

export const FROM_FILE: Readonly<Record<string, FromFileKind>> = {
  weeder: { part: [], what: "dependency-watchdog's weeder configuration" },
  taintReplacement: { part: ['spec', 'automationOptions', 'replacements'], what: 'a FoundationDBCluster manifest' },
  repair: { part: ['repair'], what: "CKE's cluster.yaml" },
};

/** A part read from another file: enough to place a problem in it. */
export interface Included {
  section: string;
  file: string;
  doc: Document;
  lineCounter: LineCounter;
  part: string[];
  fields: Set<string>;
}

/** Problems found while including, each at a path of tend's file. */
export interface IncludeProblem {
  path: (string | number)[];
  message: string;
}

const isMapping = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * Replaces each `section.fromFile` in `data` (the parsed configuration, changed in place) by the
 * part of the file it names, merged with the section's other fields. `configFile` is tend's
 * configuration file (relative names are read beside it); undefined when it did not come from a
 * file (a ConfigMap), where fromFile is refused.
 */
export function includeFromFiles(data: unknown, configFile: string | undefined): { included: Included[]; problems: IncludeProblem[] } {
  const included: Included[] = [];
  const problems: IncludeProblem[] = [];
  if (!isMapping(data)) return { included, problems };
  for (const [section, value] of Object.entries(data)) {
    if (!isMapping(value) || !Object.hasOwn(value, 'fromFile')) continue;
    const at = [section, 'fromFile'];
    const kind = FROM_FILE[section];
    if (!kind) {
      problems.push({ path: at, message: `${section} has no fromFile: only ${Object.keys(FROM_FILE).join(', ')} read another system's file` });
      continue;
    }
    const name = value['fromFile'];
    if (typeof name !== 'string' || name.trim() === '') {
      problems.push({ path: at, message: `must name a file (${kind.what}), relative to this configuration file` });
      continue;
    }
    if (configFile === undefined) {
      problems.push({ path: at, message: 'needs a configuration file to be relative to: a configuration from a ConfigMap has no folder; put the content in the section instead' });
      continue;
    }
    const file = resolve(dirname(resolve(expandHome(configFile))), expandHome(name));
    let read: ReturnType<typeof readConfigText>;
    try {
      // Bounded as tend's own file is (size.ts): an anchor's file is a few kilobytes too.
      read = readConfigText(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      problems.push({ path: at, message: `${name}: ${code === 'ENOENT' ? `file not found (looked for ${file})` : code === 'EISDIR' ? 'is a directory, not a file' : code === 'EACCES' ? 'permission denied' : (err as Error).message}` });
      continue;
    }
    if ('tooLarge' in read) {
      problems.push({ path: at, message: `${name}: ${read.tooLarge}` });
      continue;
    }
    const lineCounter = new LineCounter();
    const doc = parseDocument(read.text, { lineCounter, prettyErrors: false });
    const [error] = doc.errors;
    if (error) {
      const { line, col } = lineCounter.linePos(error.pos[0]);
      problems.push({ path: at, message: `${name}: invalid YAML at line ${line}, column ${col}: ${error.code === 'MULTIPLE_DOCS' ? 'holds more than one YAML document' : error.message}` });
      continue;
    }
    let part: unknown;
    try {
      part = kind.part.reduce<unknown>((v, k) => (isMapping(v) ? v[k] : undefined), doc.toJS());
    } catch (err) {
      problems.push({ path: at, message: `${name}: invalid YAML: ${(err as Error).message}` });
      continue;
    }
    if (!isMapping(part)) {
      problems.push({ path: at, message: `${name} has no ${kind.part.length ? kind.part.join('.') : 'settings'} (a mapping): is it ${kind.what}?` });
      continue;
    }
    const own = Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'fromFile'));
    for (const k of Object.keys(own)) {
      if (Object.hasOwn(part, k)) problems.push({ path: [section, k], message: `given both here and in ${name}: keep one` });
    }
    data[section] = { ...part, ...own };
    included.push({ section, file: name, doc, lineCounter, part: kind.part, fields: new Set(Object.keys(part)) });
  }
  return { included, problems };
}

/** Where a problem at `path` of tend's file really is, when its field came from an included file. */
export function placeIncluded(
  included: readonly Included[], path: readonly (string | number)[], lineOf: (doc: Document, lc: LineCounter, p: (string | number)[]) => number | undefined,
): { file: string; line?: number } | undefined {
  const [section, field] = path;
  const inc = included.find((i) => i.section === section);
  if (!inc || typeof field !== 'string' || !inc.fields.has(field)) return undefined;
  const line = lineOf(inc.doc, inc.lineCounter, [...inc.part, ...path.slice(1)]);
  return { file: inc.file, ...(line !== undefined && { line }) };
}
