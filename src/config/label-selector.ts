// metav1.LabelSelector as configs write it, with the API server's validation
// rules, plus the two things tend does with one: test a pod's labels against
// it, and turn it into the `labelSelector` query parameter for list and watch.
import { z } from 'zod';
import { kubeNameSchema, labelKeyProblem, labelValueProblem } from './kube-names.ts';

export const selectorOperators = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
export type SelectorOperator = (typeof selectorOperators)[number];

export const labelSelectorRequirementSchema = z
  .strictObject({
    key: kubeNameSchema(labelKeyProblem),
    operator: z.enum(selectorOperators),
    values: z.array(kubeNameSchema(labelValueProblem)).optional(),
  })
  .superRefine((requirement, ctx) => {
    const { operator, values = [] } = requirement;
    if ((operator === 'In' || operator === 'NotIn') && values.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['values'], message: `must list at least one value for operator ${operator}` });
    }
    if ((operator === 'Exists' || operator === 'DoesNotExist') && values.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['values'],
        message: `must be absent for operator ${operator} (got ${JSON.stringify(values)})`,
      });
    }
  });

/**
 * A selector that must select something: Kubernetes reads an empty selector
 * as "everything", which in a remediation config would act on every pod.
 */
export const labelSelectorSchema = z
  .strictObject({
    matchLabels: z.record(kubeNameSchema(labelKeyProblem), kubeNameSchema(labelValueProblem)).optional(),
    matchExpressions: z.array(labelSelectorRequirementSchema).optional(),
  })
  .superRefine((selector, ctx) => {
    const labels = Object.keys(selector.matchLabels ?? {}).length;
    const expressions = selector.matchExpressions?.length ?? 0;
    if (labels + expressions === 0) {
      ctx.addIssue({
        code: 'custom',
        message: 'must set matchLabels or matchExpressions: an empty selector would select every pod',
      });
    }
  });

export type LabelSelectorRequirement = z.output<typeof labelSelectorRequirementSchema>;
export type LabelSelector = z.output<typeof labelSelectorSchema>;
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
