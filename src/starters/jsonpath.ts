// kubectl's JSONPath template (`-o jsonpath=`) over a command's JSON output: text outside braces
// printed as it is; `{.path}`, `{@.path}` or `{$.path}` the values a path selects (several joined
// by a space, strings bare, the rest as JSON); `{"\n"}` a quoted string; `{range .path}...{end}`
// the inner template once per value selected, its paths from that value. The paths themselves
// (fields, [n], [*], [a:b], .., ['key'], [?(@.x=="y")]) are jsonpath-plus's, which is what the
// Kubernetes client uses; this layer adds only the template around them. docs/cli.md.

export type TemplateNode =
  | { kind: 'text'; text: string }
  | { kind: 'path'; path: string }
  | { kind: 'range'; path: string; body: TemplateNode[] };

/** The values `path` (a JSONPath rooted at `$`) selects in `json`. */
export type Evaluate = (path: string, json: unknown) => unknown[];

/** The template's nodes, or why it does not parse (its first problem, with where). */
export function parseTemplate(template: string): { nodes: TemplateNode[]; problem?: undefined } | { nodes?: undefined; problem: string } {
  const stack: { path: string; body: TemplateNode[] }[] = [{ path: '', body: [] }];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open < 0) {
      stack.at(-1)!.body.push({ kind: 'text', text: template.slice(i) });
      break;
    }
    if (open > i) stack.at(-1)!.body.push({ kind: 'text', text: template.slice(i, open) });
    const close = closingBrace(template, open + 1);
    if (typeof close === 'string') return { problem: `${close} (the { at character ${open + 1})` };
    const inner = template.slice(open + 1, close).trim();
    const at = `the {${inner}} at character ${open + 1}`;
    if (inner === 'end') {
      if (stack.length === 1) return { problem: `${at}: an {end} with no {range} before it` };
      const done = stack.pop()!;
      stack.at(-1)!.body.push({ kind: 'range', path: done.path, body: done.body });
    } else if (/^range\s/.test(inner)) {
      const path = rootedPath(inner.slice('range'.length).trim());
      if (path === undefined) return { problem: `${at}: range takes a path (.field, @, $...)` };
      stack.push({ path, body: [] });
    } else if (inner.startsWith('"') || inner.startsWith("'")) {
      const text = quoted(inner);
      if (text === undefined) return { problem: `${at}: not a whole quoted string` };
      stack.at(-1)!.body.push({ kind: 'text', text });
    } else {
      const path = rootedPath(inner);
      if (path === undefined) return { problem: `${at}: expected a path (.field, @, $...), a quoted string, range PATH or end` };
      stack.at(-1)!.body.push({ kind: 'path', path });
    }
    i = close + 1;
  }
  if (stack.length > 1) return { problem: `a {range ${stack.at(-1)!.path.replace(/^\$/, '')}} with no {end}` };
  return { nodes: stack[0]!.body };
}

/** Where the brace opened before `from` closes (quotes, brackets and parentheses skipped), or what is unclosed. */
function closingBrace(template: string, from: number): number | string {
  const open: string[] = [];
  for (let i = from; i < template.length; i++) {
    const c = template[i]!;
    if (c === '"' || c === "'") {
      const end = quoteEnd(template, i);
      if (end < 0) return `an unterminated ${c === '"' ? 'double' : 'single'}-quoted string`;
      i = end;
    } else if (c === '[' || c === '(') open.push(c === '[' ? ']' : ')');
    else if (c === ']' || c === ')') {
      if (open.pop() !== c) return `an unbalanced ${c}`;
    } else if (c === '}' && open.length === 0) return i;
    else if (c === '{' && open.length === 0) return 'a { inside braces';
  }
  return open.length > 0 ? `an unclosed ${open.at(-1) === ']' ? '[' : '('}` : 'no closing }';
}

/** The index of the quote closing the one at `start` (backslash escapes skipped), or -1. */
function quoteEnd(s: string, start: number): number {
  for (let i = start + 1; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === s[start]) return i;
  }
  return -1;
}

const ESCAPES: Readonly<Record<string, string>> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'", '0': '\0' };

/** A whole quoted string's text, its escapes (\n, \t, \r, \\, \", \') read; undefined if it is not one. */
function quoted(s: string): string | undefined {
  if (quoteEnd(s, 0) !== s.length - 1) return undefined;
  let out = '';
  for (let i = 1; i < s.length - 1; i++) {
    if (s[i] !== '\\') out += s[i];
    else {
      const e = ESCAPES[s[++i]!];
      if (e === undefined) return undefined;
      out += e;
    }
  }
  return out;
}

/** kubectl's `.a.b`, `@.a`, `$.a`, `[0]` as a path from `$`; undefined if it starts otherwise. */
function rootedPath(expr: string): string | undefined {
  if (expr === '' || /\s/.test(expr.replace(/(["'])(?:\\.|(?!\1).)*\1/g, '').replace(/\[\?\([^\]]*\)\]/g, ''))) return undefined;
  if (expr === '@' || expr === '$' || expr === '.') return '$';
  if (expr.startsWith('@') || expr.startsWith('$')) return `$${expr.slice(1)}`;
  if (expr.startsWith('.') || expr.startsWith('[')) return `$${expr}`;
  return undefined;
}

/** One value as kubectl prints it: a string bare, null as nothing, anything else as JSON. */
function printed(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  return JSON.stringify(v);
}

/** The template's output over `root`; inside a range, paths start from the value it is at. */
export function renderTemplate(nodes: readonly TemplateNode[], root: unknown, evaluate: Evaluate): string {
  const at = (path: string, current: unknown) => {
    if (current === null || typeof current !== 'object') return path === '$' ? [current] : [];
    return evaluate(path, current);
  };
  const walk = (list: readonly TemplateNode[], current: unknown): string => list.map((n) => {
    if (n.kind === 'text') return n.text;
    if (n.kind === 'path') return at(n.path, current).map(printed).join(' ');
    return at(n.path, current).map((v) => walk(n.body, v)).join('');
  }).join('');
  return walk(nodes, root);
}

/** What a template reads: `data` as JSON would have it, a list as kubectl's List (`{.items[*]...}`). */
export function jsonpathInput(data: unknown): unknown {
  const json: unknown = data === undefined ? null : JSON.parse(JSON.stringify(data));
  return Array.isArray(json) ? { kind: 'List', items: json } : json;
}
