// Turns zod's issues into problems an operator can act on: named by their
// path in the document, worded in the config's terms (a mapping, a list),
// with the offending value, and with unknown fields named one by one.
import type { z } from 'zod';

export type DocumentPath = (string | number)[];

export interface PathProblem {
  path: DocumentPath;
  message: string;
}

/** `a.b[0]["app.kubernetes.io/name"]`: keys that would read ambiguously after a dot are quoted. */
export function pathString(path: readonly PropertyKey[]): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (typeof segment === 'string' && /^[A-Za-z0-9_-]+$/.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(String(segment))}]`;
  }
  return text;
}

const typeNames: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'a mapping',
  record: 'a mapping',
  map: 'a mapping',
  array: 'a list',
};

/**
 * Messages for zod's built-in checks, passed to each parse. A message a schema
 * sets itself takes precedence, so sections only word what is theirs.
 */
export function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'required';
      const expected = `must be ${typeNames[issue.expected] ?? issue.expected}`;
      // YAML reads `1.0`, `true` and `0755` as numbers or booleans, not text.
      const quoteHint = issue.expected === 'string' && ['number', 'boolean'].includes(typeof issue.input);
      return quoteHint ? `${expected}; quote it to make it one` : expected;
    }
    case 'invalid_value':
      if (issue.input === undefined) return `required: one of ${issue.values.map(String).join(', ')}`;
      return issue.values.length === 1
        ? `must be ${String(issue.values[0])}`
        : `must be one of ${issue.values.map(String).join(', ')}`;
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'array') return `must list at least ${min} item${min === 1 ? '' : 's'}`;
      if (issue.origin === 'string') return min === 1 ? 'must not be empty' : `must have at least ${min} characters`;
      return issue.inclusive ? `must be at least ${min}` : `must be more than ${min}`;
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'array') return `must list at most ${max} item${max === 1 ? '' : 's'}`;
      if (issue.origin === 'string') return `must have at most ${max} characters`;
      return issue.inclusive ? `must be at most ${max}` : `must be less than ${max}`;
    }
    case 'unrecognized_keys':
      return 'unknown field';
    case 'invalid_format':
      return 'has the wrong format';
    default:
      return undefined;
  }
}

/** How a value is shown after "got": short, and never a whole mapping. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (Array.isArray(value)) return value.length === 0 ? 'an empty list' : 'a list';
  if (value !== null && typeof value === 'object') return 'a mapping';
  return String(value);
}

const isPrimitive = (value: unknown) => value === null || ['string', 'number', 'boolean', 'bigint'].includes(typeof value);
// Secrets are never echoed back, even when they are the wrong type; nor is what was written as
// apiKeyEnv, which is often the key itself pasted in the wrong field.
const isSecret = (path: DocumentPath) => path.at(-1) === 'apiKey' || path.at(-1) === 'apiKeyEnv';

/** Every problem in the issues, with unions and record keys opened up. */
export function problemsOf(issues: readonly z.core.$ZodIssue[], root: z.ZodType, prefix: DocumentPath = []): PathProblem[] {
  return issues.flatMap((issue): PathProblem[] => {
    const path = [...prefix, ...issue.path] as DocumentPath;
    switch (issue.code) {
      case 'unrecognized_keys': {
        const known = knownFields(root, path);
        return issue.keys.map((key) => ({ path: [...path, key], message: unknownFieldMessage(key, known) }));
      }
      case 'invalid_key':
        return problemsOf(issue.issues, root, path);
      case 'invalid_union': {
        // When the value has the shape of exactly one alternative, that
        // alternative's own problems say more than "none of them matched".
        const nearMisses = issue.errors.filter((branch) => !branch.some(isTypeMismatchAtRoot));
        if (nearMisses.length === 1) return problemsOf(nearMisses[0]!, root, path);
        break;
      }
    }
    const got = 'input' in issue && isPrimitive(issue.input) && !isSecret(path) ? ` (got ${describeValue(issue.input)})` : '';
    return [{ path, message: issue.message + got }];
  });
}

const isTypeMismatchAtRoot = (issue: z.core.$ZodIssue) =>
  issue.path.length === 0 && (issue.code === 'invalid_type' || issue.code === 'invalid_value');

function unknownFieldMessage(key: string, known: string[] | undefined): string {
  if (!known) return 'unknown field';
  const close = known.find((field) => field.toLowerCase() === key.toLowerCase() || editDistance(field, key) <= 2);
  if (close) return `unknown field; did you mean ${close}?`;
  return `unknown field; expected one of ${known.join(', ')}`;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

// Just the parts of zod's schema definitions needed to find an object's fields.
interface SchemaDef {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
}
const defOf = (schema: z.ZodType) => schema._zod.def as unknown as SchemaDef;

/** The field names of the object schema at `path`, to suggest the right one for an unknown field. */
function knownFields(root: z.ZodType, path: DocumentPath): string[] | undefined {
  let schema: z.ZodType | undefined = objectAt(root);
  for (const segment of path) {
    const def: SchemaDef | undefined = schema && defOf(schema);
    if (def?.type === 'object') schema = def.shape?.[segment];
    else if (def?.type === 'record') schema = def.valueType;
    else if (def?.type === 'array') schema = def.element;
    else return undefined;
    schema = schema && objectAt(schema);
  }
  const shape = schema && defOf(schema).shape;
  return shape && Object.keys(shape);
}

/** The schema under optional/default/transform wrappers; for a union, its object alternative. */
function objectAt(schema: z.ZodType): z.ZodType | undefined {
  const def = defOf(schema);
  const inner = def.innerType ?? def.in;
  if (inner) return objectAt(inner);
  if (def.type === 'union') return def.options?.map(objectAt).find((option) => option && defOf(option).type === 'object');
  return schema;
}
