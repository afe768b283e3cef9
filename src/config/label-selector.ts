// metav1.LabelSelector as configs write it, with the API server's validation
// rules. What tend does with a selector (match labels, print it for a query) is
// in selector.ts, free of zod, and re-exported here.
import { z } from 'zod';
import { kubeNameSchema, labelKeyProblem, labelValueProblem } from './kube-names.ts';
import { selectorOperators, type LabelSelector } from './selector.ts';

export { matches, selectorOperators, toSelectorString } from './selector.ts';
export type { LabelSelector, LabelSelectorRequirement, Labels, SelectorOperator } from './selector.ts';

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
  }) satisfies z.ZodType<LabelSelector>;
