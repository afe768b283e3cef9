// A configuration file that is one of the anchors' own (dependency-watchdog's weeder config,
// CKE's cluster.yaml, a FoundationDBCluster manifest), given to tend as it is: recognised by its
// top-level fields, and answered with where in tend's file its content goes, instead of only
// "unknown field".

/** The hint for a document that looks like an anchor's own file, or undefined. */
export function anchorHint(data: unknown): string | undefined {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return undefined;
  const doc = data as Record<string, unknown>;
  const has = (k: string) => Object.hasOwn(doc, k);
  if (has('servicesAndDependantSelectors') || (has('watchDuration') && !has('weeder'))) {
    return "this looks like dependency-watchdog's weeder configuration (its --config-file): in tend's file it goes, " +
      'as it is, under a `weeder:` section, or point at it: `weeder: { fromFile: FILE }` (docs/weeder.md)';
  }
  if (typeof doc['kind'] === 'string' && doc['kind'] === 'FoundationDBCluster') {
    return 'this looks like a FoundationDBCluster manifest: in tend\'s file, its spec.automationOptions.replacements goes under ' +
      'a `taintReplacement:` section, with a `podSelector` saying which pods are managed, or point at it: ' +
      '`taintReplacement: { fromFile: FILE, podSelector: ... }` (docs/taint.md)';
  }
  if (has('repair') && (has('nodes') || has('service_subnet') || has('control_plane_tolerations') || has('name'))) {
    return "this looks like CKE's cluster.yaml: in tend's file, its `repair` section goes, as it is, under tend's own " +
      '`repair:` section, or point at it: `repair: { fromFile: FILE }` (docs/repair.md); the rest of cluster.yaml is CKE\'s alone';
  }
  return undefined;
}
