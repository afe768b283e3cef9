// The apps section: tend's own (the seed's controllers are configured by
// their CRDs, not a file). Present means the App capability is on;
// `namespaces` limits the watcher to those namespaces (all when absent).
import { z } from 'zod';
import { dns1123LabelProblem, kubeNameSchema } from './kube-names.ts';
import { modeSchema } from './mode.ts';

export const appsSchema = z.strictObject({
  /** act (default: the top-level mode) or observe: record what would be written, write nothing. */
  mode: modeSchema.optional(),
  namespaces: z
    .array(kubeNameSchema(dns1123LabelProblem))
    .min(1, 'must list at least one namespace, or be left out to watch all of them')
    .optional(),
});

export type AppsConfig = z.output<typeof appsSchema>;

export function describeApps(apps: AppsConfig): string {
  return `Apps (apps.tend.dev) in ${apps.namespaces ? `namespaces ${apps.namespaces.join(', ')}` : 'all namespaces'}`;
}
