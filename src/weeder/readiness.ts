// Readiness of a Service, decided over all of its EndpointSlices, as
// DESIGN.md defines it: ready when at least one endpoint's `conditions.ready`
// is not false (the API documents a missing value as ready); a Service with no
// endpoint at all is not ready. Pure: used by the watcher and the activity.

/** The parts of an EndpointSlice readiness reads (structurally a V1EndpointSlice). */
export interface SliceLike {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  endpoints?: { conditions?: { ready?: boolean | null }; targetRef?: { uid?: string }; addresses?: string[] }[] | null;
}

/** The label the endpointslice controller puts on every slice of a Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export function sliceHasReadyEndpoint(slice: SliceLike): boolean {
  return (slice.endpoints ?? []).some((e) => e.conditions?.ready !== false);
}

export function serviceReady(slices: readonly SliceLike[]): boolean {
  return slices.some(sliceHasReadyEndpoint);
}

/** `namespace/name` of the Service a slice belongs to, or undefined when it names none. */
export function serviceKeyOf(slice: SliceLike): string | undefined {
  const service = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
  const namespace = slice.metadata?.namespace;
  return service && namespace ? `${namespace}/${service}` : undefined;
}

/**
 * Who serves the Service now: the ready endpoints' pod UIDs (their addresses
 * when an endpoint names no pod), sorted. The watcher records them with the
 * readiness, so that after a restart it can tell "still the same ready pods"
 * from "went down and came back while I was away".
 */
export function readyEndpointIds(slices: readonly SliceLike[]): string[] {
  const ids = new Set<string>();
  for (const slice of slices) {
    for (const e of slice.endpoints ?? []) {
      if (e.conditions?.ready === false) continue;
      ids.add(e.targetRef?.uid ?? (e.addresses ?? []).join('|'));
    }
  }
  return [...ids].sort();
}
