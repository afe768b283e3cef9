// Untrusted values in refusals and log lines: never more than a fixed prefix,
// and never a throw, whatever the value (deep nesting, cycles, getters that
// throw, huge strings, proxies). JSON.stringify walks the whole value and can
// throw (RangeError on deep nesting, TypeError on cycles and BigInt); this
// walks it iteratively and stops at the budget.

const DEFAULT_MAX = 120;

/**
 * A JSON-like rendering of `value`, cut at `max` characters (an ellipsis
 * marks the cut). Total: returns a string for every input.
 */
export function preview(value: unknown, max = DEFAULT_MAX): string {
  const out: string[] = [];
  let length = 0;
  let cut = false;
  const push = (s: string): boolean => {
    if (length + s.length > max) {
      out.push(s.slice(0, Math.max(0, max - length)));
      length = max;
      cut = true;
      return false;
    }
    out.push(s);
    length += s.length;
    return true;
  };
  // An explicit stack of what is still to write: values, or literal text.
  const stack: ({ text: string } | { value: unknown })[] = [{ value }];
  try {
    while (stack.length > 0) {
      const next = stack.pop()!;
      if ('text' in next) {
        if (!push(next.text)) break;
        continue;
      }
      const v = next.value;
      if (!push(scalar(v) ?? '')) break;
      if (v === null || typeof v !== 'object') continue;
      // Only as many members as the budget could ever show: each takes at least one character.
      const room = max - length + 1;
      if (Array.isArray(v)) {
        const shownItems = Math.min(v.length, room);
        stack.push({ text: v.length > shownItems ? ',…]' : ']' });
        for (let i = shownItems - 1; i >= 0; i--) {
          stack.push({ value: v[i] });
          if (i > 0) stack.push({ text: ',' });
        }
        continue;
      }
      const keys: string[] = [];
      for (const k in v) {
        if (!Object.hasOwn(v, k)) continue;
        if (keys.length >= room) break;
        keys.push(k);
      }
      stack.push({ text: '}' });
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push({ value: (v as Record<string, unknown>)[keys[i]!] });
        stack.push({ text: `${quote(keys[i]!, max)}:` });
        if (i > 0) stack.push({ text: ',' });
      }
    }
  } catch {
    // A getter or proxy that throws: what was written so far stands.
    cut = true;
  }
  const s = out.join('');
  return cut ? `${s.slice(0, max)}…` : s;
}

/** The opening of a value: a scalar's whole text, `[` or `{` for a structure. */
function scalar(v: unknown): string | undefined {
  if (v === null) return 'null';
  if (Array.isArray(v)) return '[';
  switch (typeof v) {
    case 'string': return quote(v, DEFAULT_MAX * 4);
    case 'number': return String(v);
    case 'boolean': return String(v);
    case 'undefined': return 'undefined';
    case 'bigint': return `${v}n`;
    case 'object': return '{';
    default: return typeof v;
  }
}

/** A string quoted as JSON would, its first `max` characters only. */
function quote(s: string, max: number): string {
  const head = s.length > max ? s.slice(0, max) : s;
  return JSON.stringify(head).slice(0, s.length > max ? -1 : undefined) + (s.length > max ? '…"' : '');
}
