// Scrapes in Prometheus text format, and the part of PromQL the dashboard's
// gauge panels use, evaluated as an instant query over them: selectors with
// label matchers (=, !=, =~, !~), the aggregations sum, max, min, avg and count
// with `by (...)` or `without (...)`, and arithmetic or a comparison with a
// number (`* 1000`). Anything else (rate, increase, a range, a function) is
// refused by name, so a query this cannot read is never evaluated wrongly.

/** One sample: its labels (the metric's name as __name__) and value. */
export interface Sample {
  labels: Record<string, string>;
  value: number;
}

const unescape = (s: string) => s.replace(/\\(["\\n])/g, (_m, c: string) => (c === 'n' ? '\n' : c));

/** The samples of a text-format exposition, each given `extra` labels (job, instance: what Prometheus adds). */
export function parseExposition(text: string, extra: Record<string, string> = {}): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)(\s+-?\d+)?$/.exec(line);
    if (!m) throw new Error(`not a sample line of the text format: ${line.slice(0, 200)}`);
    const labels: Record<string, string> = { __name__: m[1]! };
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = unescape(l[2]!);
    out.push({ labels: { ...labels, ...extra }, value: Number(m[3]!.replace(/^\+?Inf$/, 'Infinity')) });
  }
  return out;
}

type Matcher = { label: string; op: '=' | '!=' | '=~' | '!~'; value: string };
type Node =
  | { kind: 'selector'; name: string; matchers: Matcher[] }
  | { kind: 'aggregate'; op: string; by?: string[]; without?: string[]; arg: Node }
  | { kind: 'scalar'; op: string; left: Node; number: number };

const AGGREGATIONS = new Set(['sum', 'max', 'min', 'avg', 'count']);
const OPERATORS = ['==', '!=', '>=', '<=', '*', '/', '+', '-', '>', '<'];

function tokens(expr: string): string[] {
  const out: string[] = [];
  const re = /\s*("(?:[^"\\]|\\.)*"|=~|!~|==|!=|>=|<=|[a-zA-Z_:][a-zA-Z0-9_:]*|\d+(?:\.\d+)?(?:e[+-]?\d+)?|[(){},=*/+\-<>[\]])\s*/gy;
  let at = 0;
  while (at < expr.length) {
    re.lastIndex = at;
    const m = re.exec(expr);
    if (!m) throw new Error(`cannot read the query at ${JSON.stringify(expr.slice(at, at + 20))}`);
    out.push(m[1]!);
    at = re.lastIndex;
  }
  return out;
}

/** The query as a tree; throws naming what it does not support. */
export function parseQuery(expr: string): Node {
  const t = tokens(expr);
  let i = 0;
  const peek = () => t[i];
  const take = (want?: string) => {
    const got = t[i++];
    if (got === undefined || (want !== undefined && got !== want)) throw new Error(`expected ${want ?? 'more'} in ${expr}, found ${got ?? 'the end'}`);
    return got;
  };
  const labelList = () => {
    take('(');
    const names: string[] = [];
    while (peek() !== ')') {
      names.push(take());
      if (peek() === ',') take(',');
    }
    take(')');
    return names;
  };
  const term = (): Node => {
    const word = take();
    if (word === '(') {
      const inner = expression();
      take(')');
      return inner;
    }
    if (AGGREGATIONS.has(word)) {
      let by: string[] | undefined;
      let without: string[] | undefined;
      const clause = peek();
      if (clause === 'by' || clause === 'without') {
        take();
        if (clause === 'by') by = labelList();
        else without = labelList();
      }
      take('(');
      const arg = expression();
      take(')');
      if (peek() === 'by' && !by && !without) {
        take();
        by = labelList();
      }
      return { kind: 'aggregate', op: word, ...(by ? { by } : {}), ...(without ? { without } : {}), arg };
    }
    if (!/^[a-zA-Z_:]/.test(word)) throw new Error(`unsupported in ${expr}: ${word}`);
    if (peek() === '(') throw new Error(`unsupported function in ${expr}: ${word}`);
    const matchers: Matcher[] = [];
    if (peek() === '{') {
      take('{');
      while (peek() !== '}') {
        const label = take();
        const op = take() as Matcher['op'];
        if (!['=', '!=', '=~', '!~'].includes(op)) throw new Error(`unsupported matcher ${op} in ${expr}`);
        const quoted = take();
        if (!quoted.startsWith('"')) throw new Error(`expected a quoted value in ${expr}`);
        matchers.push({ label, op, value: unescape(quoted.slice(1, -1)) });
        if (peek() === ',') take(',');
      }
      take('}');
    }
    if (peek() === '[') throw new Error(`unsupported range in ${expr}: only instant selectors`);
    return { kind: 'selector', name: word, matchers };
  };
  const expression = (): Node => {
    let left = term();
    while (peek() !== undefined && OPERATORS.includes(peek()!)) {
      const op = take();
      const n = Number(take());
      if (!Number.isFinite(n)) throw new Error(`unsupported in ${expr}: ${op} with anything but a number`);
      left = { kind: 'scalar', op, left, number: n };
    }
    return left;
  };
  const tree = expression();
  if (i !== t.length) throw new Error(`unexpected ${t[i]} in ${expr}`);
  return tree;
}

/** The metric names a query reads. */
export function metricNames(node: Node): string[] {
  if (node.kind === 'selector') return [node.name];
  return metricNames(node.kind === 'aggregate' ? node.arg : node.left);
}

const matches = (m: Matcher, v: string | undefined) => {
  const value = v ?? '';
  switch (m.op) {
    case '=': return value === m.value;
    case '!=': return value !== m.value;
    case '=~': return new RegExp(`^(?:${m.value})$`).test(value);
    case '!~': return !new RegExp(`^(?:${m.value})$`).test(value);
  }
};

const apply = (op: string, a: number, b: number): number | undefined => {
  switch (op) {
    case '*': return a * b;
    case '/': return a / b;
    case '+': return a + b;
    case '-': return a - b;
    case '>': return a > b ? a : undefined;
    case '<': return a < b ? a : undefined;
    case '>=': return a >= b ? a : undefined;
    case '<=': return a <= b ? a : undefined;
    case '==': return a === b ? a : undefined;
    case '!=': return a !== b ? a : undefined;
  }
  throw new Error(`unsupported operator ${op}`);
};

const withoutName = (labels: Record<string, string>) => Object.fromEntries(Object.entries(labels).filter(([k]) => k !== '__name__'));

/** What an evaluation saw: aggregations that combined series of different `instance`s, by operator. */
export interface Evaluation {
  result: Sample[];
  acrossInstances: string[];
}

/** The query's instant value over `samples` (labels without __name__, as Prometheus drops it once anything is applied). */
export function evaluate(node: Node, samples: readonly Sample[]): Evaluation {
  const acrossInstances: string[] = [];
  const run = (n: Node): Sample[] => {
    if (n.kind === 'selector') {
      return samples.filter((s) => s.labels.__name__ === n.name && n.matchers.every((m) => matches(m, s.labels[m.label])))
        .map((s) => ({ labels: { ...s.labels }, value: s.value }));
    }
    if (n.kind === 'scalar') {
      return run(n.left).flatMap((s) => {
        const v = apply(n.op, s.value, n.number);
        const labels = withoutName(s.labels);
        return v === undefined ? [] : [{ labels: ['*', '/', '+', '-'].includes(n.op) ? labels : s.labels, value: v }];
      });
    }
    const groups = new Map<string, { labels: Record<string, string>; values: number[]; instances: Set<string | undefined> }>();
    for (const s of run(n.arg)) {
      const kept = Object.fromEntries(Object.entries(s.labels).filter(([k]) => k !== '__name__' &&
        (n.by ? n.by.includes(k) : n.without ? !n.without.includes(k) : false)));
      const key = JSON.stringify(Object.entries(kept).sort());
      const g = groups.get(key) ?? { labels: kept, values: [], instances: new Set() };
      g.values.push(s.value);
      g.instances.add(s.labels.instance);
      groups.set(key, g);
    }
    return [...groups.values()].map((g) => {
      if (g.instances.size > 1) acrossInstances.push(n.op);
      const v = g.values;
      const value = n.op === 'sum' ? v.reduce((a, b) => a + b, 0)
        : n.op === 'max' ? Math.max(...v)
          : n.op === 'min' ? Math.min(...v)
            : n.op === 'avg' ? v.reduce((a, b) => a + b, 0) / v.length
              : v.length;
      return { labels: g.labels, value };
    });
  };
  return { result: run(node), acrossInstances };
}

/** A result as `{labels} -> value`, keyed by its labels (without __name__), for comparing results. */
export function byLabels(result: readonly Sample[]): Map<string, number> {
  return new Map(result.map((s) => [JSON.stringify(Object.entries(withoutName(s.labels)).sort()), s.value]));
}
