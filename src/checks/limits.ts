// Bounds on an untrusted value before anything reads it field by field: its
// nesting depth, its number of nodes and the total length of its strings,
// measured by one iterative walk that stops as soon as a bound is passed, so
// the cost of refusing a huge value is that of the bound, not of the value.

export interface ValueLimits {
  /** Deepest nesting of arrays and objects (a scalar is depth 0). */
  maxDepth: number;
  /** Arrays, objects, keys and scalars, counted together. */
  maxNodes: number;
  /** Characters of every string and key, together. */
  maxChars: number;
}

/** Generous for any message tend itself sends, far below what could slow a workflow task. */
export const MESSAGE_LIMITS: ValueLimits = Object.freeze({ maxDepth: 8, maxNodes: 20_000, maxChars: 512 * 1024 });

/**
 * Why `value` is past `limits`, or undefined when it is within them. Total: never throws
 * (a getter or proxy that throws makes the value refused).
 */
export function pastLimits(value: unknown, limits: ValueLimits = MESSAGE_LIMITS): string | undefined {
  let nodes = 0;
  let chars = 0;
  const stack: { v: unknown; depth: number }[] = [{ v: value, depth: 0 }];
  try {
    while (stack.length > 0) {
      const { v, depth } = stack.pop()!;
      if (++nodes > limits.maxNodes) return `more than ${limits.maxNodes} values in all`;
      if (typeof v === 'string') {
        chars += v.length;
        if (chars > limits.maxChars) return `more than ${limits.maxChars} characters of text in all`;
        continue;
      }
      if (v === null || typeof v !== 'object') continue;
      if (depth + 1 > limits.maxDepth) return `nested deeper than ${limits.maxDepth} levels`;
      if (Array.isArray(v)) {
        if (nodes + v.length > limits.maxNodes) return `more than ${limits.maxNodes} values in all`;
        for (const item of v) stack.push({ v: item, depth: depth + 1 });
        continue;
      }
      for (const k in v) {
        if (!Object.hasOwn(v, k)) continue;
        chars += k.length;
        if (chars > limits.maxChars) return `more than ${limits.maxChars} characters of text in all`;
        if (++nodes > limits.maxNodes) return `more than ${limits.maxNodes} values in all`;
        stack.push({ v: (v as Record<string, unknown>)[k], depth: depth + 1 });
      }
    }
  } catch {
    return 'it could not be read';
  }
  return undefined;
}
