// A label selector (metav1.LabelSelector) as tend holds one, and the two things
// tend does with it: test a pod's labels against it, and turn it into the
// `labelSelector` query parameter for list and watch. Pure and free of zod:
// imported by workflow code. Its validation, for configuration, is in
// label-selector.ts.

export const selectorOperators = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
export type SelectorOperator = (typeof selectorOperators)[number];

export interface LabelSelectorRequirement {
  key: string;
  operator: SelectorOperator;
  values?: string[] | undefined;
}

export interface LabelSelector {
  matchLabels?: Record<string, string> | undefined;
  matchExpressions?: LabelSelectorRequirement[] | undefined;
}

export type Labels = Readonly<Record<string, string>>;

/** Whether labels satisfy every term of the selector, as the API server decides. */
export function matches(selector: LabelSelector, labels: Labels = {}): boolean {
  const has = (key: string) => Object.hasOwn(labels, key);
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!has(key) || labels[key] !== value) return false;
  }
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    switch (operator) {
      case 'In':
        if (!has(key) || !values.includes(labels[key]!)) return false;
        break;
      case 'NotIn':
        if (has(key) && values.includes(labels[key]!)) return false;
        break;
      case 'Exists':
        if (!has(key)) return false;
        break;
      case 'DoesNotExist':
        if (has(key)) return false;
        break;
    }
  }
  return true;
}

/**
 * The selector in the API's query syntax (`a=b,c in (x,y),!d`). Terms are
 * sorted by key and values sorted and de-duplicated, as apimachinery prints
 * them, so one selector always gives one string.
 */
export function toSelectorString(selector: LabelSelector): string {
  const terms: { key: string; text: string }[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    terms.push({ key, text: `${key}=${value}` });
  }
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const set = [...new Set(values)].sort().join(',');
    const text = {
      In: `${key} in (${set})`,
      NotIn: `${key} notin (${set})`,
      Exists: key,
      DoesNotExist: `!${key}`,
    }[operator];
    terms.push({ key, text });
  }
  return terms
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((term) => term.text)
    .join(',');
}
