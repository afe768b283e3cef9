// The repair operation for the condition a Node meets: nodeRepair.operations is keyed by the
// condition's `Type/Status`, with `default` for every condition without a key of its own. Free
// of zod: workflow code reads it as the schema does.

/** `Type/Status`, the key of a condition in `operations` and in what tend records. */
export const conditionKey = (c: { type: string; status: string }) => `${c.type}/${c.status}`;

/** The operations key for every condition without one of its own. */
export const DEFAULT_OPERATION_KEY = 'default';

/** The operation for the condition, or undefined when operations names neither it nor default. */
export function operationFor(operations: Readonly<Record<string, string>>, condition: { type: string; status: string }): string | undefined {
  const key = conditionKey(condition);
  return Object.hasOwn(operations, key) ? operations[key] : operations[DEFAULT_OPERATION_KEY];
}
