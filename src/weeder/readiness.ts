// Readiness of a Service, decided over all of its EndpointSlices, as
// docs/weeder.md defines it: ready when at least one endpoint's `conditions.ready`
// is not false (the API documents a missing value as ready); a Service with no
// endpoint at all is not ready. Pure: used by the watcher and the activity.

/** The parts of an EndpointSlice readiness reads (structurally a V1EndpointSlice). */
export interface SliceLike {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    creationTimestamp?: Date | string;
    ownerReferences?: { kind: string; uid: string; controller?: boolean }[];
  };
  endpoints?: { conditions?: { ready?: boolean | null }; targetRef?: { uid?: string }; addresses?: string[] }[] | null;
}

/** The UID of the Service a slice was made for (its controlling owner), when it names one. */
export function sliceServiceUid(slice: SliceLike): string | undefined {
  return slice.metadata?.ownerReferences?.find((o) => o.kind === 'Service' && o.controller === true)?.uid;
}

/**
 * The slices that stand for the Service as it is now. The endpointslice
 * controller makes each slice owned by its Service; a Service deleted and
 * applied again is a new object (a new UID), and the old one's slices may
 * linger until they are collected: only the newest Service's slices count
 * (and slices that name no Service, kept by hand).
 */
export function currentSlices<S extends SliceLike>(slices: readonly S[]): S[] {
  const created = (s: SliceLike) => new Date(s.metadata?.creationTimestamp ?? 0).getTime() || 0;
  let newest: { uid: string; at: number } | undefined;
  for (const s of slices) {
    const uid = sliceServiceUid(s);
    if (uid !== undefined && (!newest || created(s) > newest.at)) newest = { uid, at: created(s) };
  }
  return slices.filter((s) => { const uid = sliceServiceUid(s); return uid === undefined || uid === newest?.uid; });
}

/** The UID of the Service the slices stand for now; undefined when none names one. */
export function serviceUidOf(slices: readonly SliceLike[]): string | undefined {
  for (const s of currentSlices(slices)) {
    const uid = sliceServiceUid(s);
    if (uid) return uid;
  }
  return undefined;
}

/** The label the endpointslice controller puts on every slice of a Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export function sliceHasReadyEndpoint(slice: SliceLike): boolean {
  return (slice.endpoints ?? []).some((e) => e.conditions?.ready !== false);
}

export function serviceReady(slices: readonly SliceLike[]): boolean {
  return currentSlices(slices).some(sliceHasReadyEndpoint);
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
  for (const slice of currentSlices(slices)) {
    for (const e of slice.endpoints ?? []) {
      if (e.conditions?.ready === false) continue;
      ids.add(e.targetRef?.uid ?? (e.addresses ?? []).join('|'));
    }
  }
  return [...ids].sort();
}
