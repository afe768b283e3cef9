// A periodic fresh list guards against a watch that stalls without an error.
// Its result may be older than what the watch delivered meanwhile, so the two
// are merged object by object, the newer resourceVersion winning: a resync
// adds what the watch missed and never rolls back what it saw.
import { olderVersion } from '../kube/api.ts';

interface Versioned {
  metadata?: { namespace?: string; name?: string; resourceVersion?: string };
}

export function mergeNewest<T extends Versioned>(cached: readonly T[], listed: readonly T[]): T[] {
  const key = (o: T) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
  const merged = new Map(cached.map((o) => [key(o), o]));
  for (const o of listed) {
    const have = merged.get(key(o));
    if (!have || olderVersion(have.metadata, o.metadata)) merged.set(key(o), o);
  }
  return [...merged.values()];
}
