// -n/--namespace NAMESPACE, as kubectl has it, for the commands that take a NAMESPACE/NAME: with
// it, NAME alone names the object in that namespace (`tend app status -n demo web` is
// `tend app status demo/web`); NAMESPACE/NAME keeps working with or without it, and the two
// naming different namespaces is a usage error (exit 2) that names both. A command that lists
// takes it as kubectl get does: only the rows of that namespace. docs/cli.md.
import { Option } from 'commander';
import { UsageError } from '../errors.ts';
import { preview } from '../checks/preview.ts';

/** -n/--namespace; `what` says what it does for a command that lists (kubectl get -n). */
export const namespaceOption = (what = 'the namespace of NAME, as kubectl\'s -n (NAMESPACE/NAME needs none)') => new Option('-n, --namespace <namespace>', what);

/**
 * `text` as NAMESPACE/NAME: as given when it has a slash (its namespace the same as -n's, if
 * given), else in -n's namespace. `what` names the argument in errors; the key is checked by
 * the caller's own parser, as before.
 */
export function namespacedKey(text: string, namespace: string | undefined, what: string): string {
  if (namespace === undefined) return text;
  refuseEmpty(namespace);
  const slash = text.indexOf('/');
  if (slash < 0) return `${namespace}/${text}`;
  const given = text.slice(0, slash);
  if (given !== namespace) {
    throw new UsageError(`-n ${preview(namespace, 80)} and the ${what} ${preview(text, 160)} name two namespaces (${preview(namespace, 80)} and ${preview(given, 80)}): ` +
      `give -n NAMESPACE NAME, or NAMESPACE/NAME alone`);
  }
  return text;
}

/** For a command that lists: whether a row of `rowNamespace` is shown (every row without -n). */
export function namespaceFilter(namespace: string | undefined): (rowNamespace: string | undefined) => boolean {
  if (namespace !== undefined) refuseEmpty(namespace);
  return (rowNamespace) => namespace === undefined || rowNamespace === namespace;
}

function refuseEmpty(namespace: string): void {
  if (namespace === '') throw new UsageError('-n/--namespace is empty: give a namespace');
}
