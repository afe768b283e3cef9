// -n/--namespace NAMESPACE, as kubectl has it, for the commands that take a NAMESPACE/NAME: with
// it, NAME alone names the object in that namespace (`tend app status -n demo web` is
// `tend app status demo/web`); NAMESPACE/NAME keeps working with or without it, and the two
// naming different namespaces is a usage error (exit 2) that names both. docs/cli.md.
import { Option } from 'commander';
import { UsageError } from '../errors.ts';
import { preview } from '../checks/preview.ts';

export const namespaceOption = () => new Option('-n, --namespace <namespace>', 'the namespace of NAME, as kubectl\'s -n (NAMESPACE/NAME needs none)');

/**
 * `text` as NAMESPACE/NAME: as given when it has a slash (its namespace the same as -n's, if
 * given), else in -n's namespace. `what` names the argument in errors; the key is checked by
 * the caller's own parser, as before.
 */
export function namespacedKey(text: string, namespace: string | undefined, what: string): string {
  if (namespace === undefined) return text;
  if (namespace === '') throw new UsageError('-n/--namespace is empty: give a namespace');
  const slash = text.indexOf('/');
  if (slash < 0) return `${namespace}/${text}`;
  const given = text.slice(0, slash);
  if (given !== namespace) {
    throw new UsageError(`-n ${preview(namespace, 80)} and the ${what} ${preview(text, 160)} name two namespaces (${preview(namespace, 80)} and ${preview(given, 80)}): ` +
      `give -n NAMESPACE NAME, or NAMESPACE/NAME alone`);
  }
  return text;
}
