// Whether a Service is ready, decided the way tend's weeder decides it: over all
// of the Service's EndpointSlices, ready when at least one endpoint is not
// explicitly unready. `conditions.ready` absent means ready (the API documents
// nil as "unknown state, interpret as ready"); a Service with no endpoint at
// all, or no slice at all, is not ready.
import type { V1EndpointSlice } from '@kubernetes/client-node';

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** `namespace/name` of the Service a slice belongs to; undefined for a slice no Service owns. */
export function serviceKeyOf(slice: V1EndpointSlice): string | undefined {
  const name = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
  if (!name) return undefined;
  return `${slice.metadata?.namespace || 'default'}/${name}`;
}

export function sliceHasReadyEndpoint(slice: V1EndpointSlice): boolean {
  return (slice.endpoints ?? []).some((e) => e.conditions?.ready !== false);
}

export function serviceReady(slices: Iterable<V1EndpointSlice>): boolean {
  for (const slice of slices) if (sliceHasReadyEndpoint(slice)) return true;
  return false;
}
