// The one config loader: reads a file or a ConfigMap key, parses YAML,
// validates it against the schema, and reports every problem at once with
// its path and line, so that a bad config stops tend before anything starts.
import { resolve } from 'node:path';
import type { z } from 'zod';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { expandHome } from '../kube/basics.ts';
import type { KubeOptions } from '../kube/client.ts';
import { registerSecret } from '../log.ts';
import { ConfigError, type ConfigProblem } from '../errors.ts';
import { readConfigMap } from './config-map.ts';
import { issueMessage, pathString, problemsOf, type DocumentPath } from './problems.ts';
import { configSchema, temporalOrigins, type Config } from './schema.ts';
import { sections, type Section, type SectionName } from './sections.ts';
import { modesOf, type ModeCapability } from './mode.ts';
import { anchorHint } from './anchors.ts';
import { includeFromFiles, placeIncluded } from './from-file.ts';
import { taintReplacementWarnings } from './taint-replacement.ts';
import { readConfigText, textSizeProblem } from './size.ts';
import { cut } from './bounds.ts';

const MODE_CAPABILITY_OF: Record<SectionName, ModeCapability> = { weeder: 'weeder', taintReplacement: 'taint', apps: 'apps', repair: 'repair', nodeRepair: 'nodeRepair' };

export type { Config } from './schema.ts';
export { parseConfigMapRef, type ConfigMapRef } from './config-map.ts';

export type ConfigSource = { file: string } | ({ configMap: string } & KubeOptions);

export async function loadConfig(source: ConfigSource): Promise<Config> {
  // A file or ConfigMap that says nothing is a mistake (the wrong file, a key not filled in), not
  // a wish for every default: that is written `{}`.
  const config = 'file' in source
    ? parseConfig(await readConfigFile(source.file), source.file, { file: source.file, refuseEmpty: true })
    : parseConfig(await readConfigMap(source), `configmap ${source.configMap}`, { refuseEmpty: true });
  sources.set(config.temporal, source);
  return config;
}

/**
 * Where each loaded configuration came from, so that a worker can read it again. Keyed by its
 * `temporal` section: a copy that changes other sections (the --kubeconfig and --context flags
 * replace `kubernetes`) still shares it, and the configuration itself stays a plain object.
 */
const sources = new WeakMap<object, ConfigSource>();

/** Where `config` was read from (loadConfig), so that it can be read again; undefined for parsed text. */
export function sourceOf(config: Pick<Config, 'temporal'>): ConfigSource | undefined {
  return sources.get(config.temporal);
}

/** The most aliases a configuration resolves (the yaml package's own default, said here): past it is a "billion laughs". */
const MAX_ALIASES = 100;

/** An error's words, bounded: a problem may quote what it was given. */
const MESSAGE_MAX = 400;
/** A key shown in a problem's path, bounded: YAML takes keys of any length. */
const KEY_SHOWN_MAX = 64;

const shownPath = (path: DocumentPath) => pathString(path.map((segment) => (typeof segment === 'string' ? cut(segment, KEY_SHOWN_MAX) : segment)));

/** Every problem's path and words bounded, whatever they quote. */
function refused(origin: string, problems: ConfigProblem[]): ConfigError {
  return new ConfigError(origin, problems.map((p) => ({ ...p, message: cut(p.message, MESSAGE_MAX) })));
}

/**
 * Parses and validates config text; `origin` names where it came from in errors. `file`: the
 * file it was read from, which a section's `fromFile` is relative to (from-file.ts).
 * `refuseEmpty`: text with no settings (nothing, comments, `---`, `null`) is refused; otherwise
 * it means every default (a command run with the environment alone).
 */
export function parseConfig(text: string, origin: string, opts: { file?: string; refuseEmpty?: boolean } = {}): Config {
  const tooLarge = textSizeProblem(text);
  if (tooLarge) throw new ConfigError(origin, [{ path: '', message: tooLarge }]);
  registerWrittenSecrets(text);
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  // Only the first YAML error: the ones after it are mostly its echoes. (Nesting too deep is
  // one of them: the yaml package refuses it as RESOURCE_EXHAUSTION.)
  const [error] = doc.errors;
  if (error) {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    const reason = error.code === 'MULTIPLE_DOCS' ? 'holds more than one YAML document; tend reads one' : error.message;
    throw refused(origin, [{ path: '', line, message: `invalid YAML at line ${line}, column ${col}: ${reason}` }]);
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    // Resolving aliases can still fail (too many of them: a "billion laughs").
    throw refused(origin, [{ path: '', message: `invalid YAML: ${(err as Error).message}` }]);
  }
  if (data == null && opts.refuseEmpty) {
    throw new ConfigError(origin, [{
      path: '',
      message: 'holds no settings (it is empty, or only comments, "---" or null): is it the configuration file? To run with every default, write {}',
    }]);
  }
  // Sections read from their users' own files (fromFile): merged in before validation.
  const { included, problems: notIncluded } = includeFromFiles(data, opts.file);
  if (notIncluded.length > 0) {
    throw refused(origin, notIncluded.map(({ path, message }) => {
      const line = lineOf(doc, lineCounter, path);
      return { path: shownPath(path), message, ...(line !== undefined && { line }) };
    }));
  }
  const written = (data as { temporal?: { apiKey?: unknown } } | null)?.temporal?.apiKey;
  if (typeof written === 'string') registerSecret(written);
  // Text with no settings, where it is not refused, means every default.
  const result = configSchema.safeParse(data ?? {}, { reportInput: true, error: issueMessage });
  if (result.success) {
    // The key read from temporal.apiKeyEnv's variable.
    registerSecret(result.data.temporal.apiKey);
    return result.data;
  }
  const problems = problemsOf(result.error.issues, configSchema).map(({ path, message }): ConfigProblem => {
    // A field that came from a fromFile: named in that file, at its line there.
    const there = placeIncluded(included, path, lineOf);
    if (there) return { path: shownPath(path), message: `${message} (in ${cut(there.file, 200)}${there.line !== undefined ? `, line ${there.line}` : ''})` };
    const line = lineOf(doc, lineCounter, path);
    return { path: shownPath(path), message, ...(line !== undefined && { line }) };
  });
  // An anchor's own file given as it is: say where its content goes first.
  const hint = anchorHint(data);
  if (hint) problems.unshift({ path: '', message: hint });
  // Document order reads best; problems that cannot be placed come first.
  problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  throw refused(origin, problems);
}

/**
 * Registers (log.ts) what the text gives as an API key, before it is parsed: so that even a file
 * that is not valid YAML, or holds the key in the wrong form, never has it shown in an error.
 */
function registerWrittenSecrets(text: string) {
  for (const match of text.matchAll(/\bapiKey["']?\s*:[ \t]*(?:"((?:[^"\\\n]|\\.)*)"?|'([^'\n]*)'?|([^\s,}\]#'"][^\s,}\]]*))/g)) {
    registerSecret(match[1] ?? match[2] ?? match[3]);
  }
}

/** The line of the deepest part of `path` that the document has (a missing field: its parent's line). */
function lineOf(doc: Document, lineCounter: LineCounter, path: DocumentPath): number | undefined {
  let node: unknown = doc.contents;
  let offset: number | undefined;
  for (const segment of path) {
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === String(segment));
      if (!pair) break;
      offset = (pair.key as { range?: [number, number, number] }).range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number' && node.items[segment] !== undefined) {
      node = node.items[segment];
      offset = (node as { range?: [number, number, number] }).range?.[0] ?? offset;
    } else {
      break;
    }
  }
  return offset === undefined ? undefined : lineCounter.linePos(offset).line;
}

async function readConfigFile(file: string): Promise<string> {
  const path = expandHome(file);
  let read: ReturnType<typeof readConfigText>;
  try {
    read = readConfigText(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const where = resolve(path) === path ? '' : ` (looked for ${resolve(path)})`;
    const reason =
      code === 'ENOENT' ? `file not found${where}`
      : code === 'EISDIR' ? 'is a directory, not a file'
      : code === 'EACCES' ? 'permission denied'
      : `cannot be read: ${(err as Error).message}`;
    throw new ConfigError(file, [{ path: '', message: reason }]);
  }
  if ('tooLarge' in read) throw new ConfigError(file, [{ path: '', message: read.tooLarge }]);
  return read.text;
}

/** A few lines saying what the config will do, for `tend config validate`. */
/** Fields accepted for compatibility that tend does not honour as their source system does, each saying what tend does instead. */
export function configWarnings(config: Pick<Config, 'taintReplacement'>): string[] {
  return config.taintReplacement ? taintReplacementWarnings(config.taintReplacement) : [];
}

export function describeConfig(config: Config): string {
  const { temporal, kubernetes } = config;
  const tls = temporal.tls === true ? 'TLS with system roots' : temporal.tls ? 'TLS' : 'no TLS';
  const origins = temporalOrigins(temporal);
  const apiKey = temporal.apiKeyEnv ? `API key from $${temporal.apiKeyEnv}`
    : temporal.apiKey ? (origins?.apiKey && !origins.apiKey.startsWith('temporal.') ? `API key from ${origins.apiKey}` : 'API key')
    : 'no API key';
  const from = (origin: string | undefined) => (origin && !origin.startsWith('temporal.') ? ` (from ${origin})` : '');
  const kube = kubernetes.kubeconfig
    ? `kubeconfig ${kubernetes.kubeconfig}`
    : 'in-cluster credentials (outside a cluster: $KUBECONFIG or ~/.kube/config)';
  const lines = [
    `temporal: ${temporal.address}${from(origins?.address)}, namespace ${temporal.namespace}${from(origins?.namespace)}, task queue ${temporal.taskQueue}, ${tls}, ${apiKey}`,
    `kubernetes: ${kube}${kubernetes.context ? `, context ${kubernetes.context}` : ''}`,
  ];
  if (temporal.deployment) {
    const d = temporal.deployment;
    lines.splice(1, 0, `worker versioning: deployment ${d.name}, build id ${d.buildId ?? 'from the code\'s fingerprint'}, ` +
      (d.promote === 'newest' ? 'made current when it is the newest version' : 'made current by the operator'));
  }
  const modes = modesOf(config);
  for (const [name, section] of Object.entries(sections)) {
    const value = config[name as SectionName];
    // Each section describes its own value; the union of them is not worth spelling out to the compiler.
    const describe = (section as Section<z.ZodType>).describe;
    const observed = value !== undefined && modes[MODE_CAPABILITY_OF[name as SectionName]] === 'observe' ? ' (observe mode: records what it would do, writes nothing)' : '';
    lines.push(`${name}: ${value === undefined ? 'off' : describe(value)}${observed}`);
  }
  for (const w of configWarnings(config)) lines.push(`warning: ${w}`);
  return lines.join('\n');
}
