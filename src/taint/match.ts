// Which of a node's taints tend acts on, and how long each must stay before
// its pods are marked for replacement. Pure: used by the watcher and by
// workflow code.

/** The option shape of the taintReplacement section (kept here so workflow code needs no zod). */
export interface TaintOption {
  key: string;
  durationInSeconds: number;
}

/** A taint as the Node carries it; `timeAdded` is set by the API server for NoExecute taints. */
export interface ObservedTaint {
  key: string;
  effect: string;
  /** ISO time, when the Node says. */
  timeAdded?: string;
}

/** A taint tend acts on, with the duration its option gives it. */
export interface MatchedTaint extends ObservedTaint {
  durationInSeconds: number;
  /** The option that matched: the key itself, or "*". */
  matchedBy: string;
  /**
   * When the watcher first saw the taint (ms): its age when it has no
   * timeAdded. The workflow keeps the first value it is given, durably.
   */
  seenAt?: number;
}

export const WILDCARD = '*';

/**
 * A duration this long means "never": the FoundationDB operator's way to ignore a key is
 * `durationInSeconds: 9223372036854775807` (its int64 maximum), which YAML reads past
 * Number.MAX_SAFE_INTEGER. The config keeps such a duration as this value, and a taint it
 * matches is not acted on (nor counted by the breaker); its key still beats the wildcard.
 */
export const IGNORED_DURATION = Number.MAX_SAFE_INTEGER;

/** The option for a taint key: an exact key beats the wildcard; undefined when neither is configured. */
export function optionFor(key: string, options: readonly TaintOption[]): TaintOption | undefined {
  return options.find((o) => o.key === key) ?? options.find((o) => o.key === WILDCARD);
}

/**
 * The node's taints that a configured option matches, sorted by key and
 * effect so that equal sets compare equal. A key carried with two effects
 * (NoSchedule and NoExecute) is two taints, each with its own timeAdded.
 */
export function matchingTaints(
  taints: readonly { key?: string; effect?: string; timeAdded?: string | Date | null }[] | undefined,
  options: readonly TaintOption[],
): MatchedTaint[] {
  const out: MatchedTaint[] = [];
  for (const t of taints ?? []) {
    if (!t.key) continue;
    const option = optionFor(t.key, options);
    if (!option || option.durationInSeconds >= IGNORED_DURATION) continue;
    const timeAdded = t.timeAdded instanceof Date ? t.timeAdded.toISOString() : t.timeAdded ?? undefined;
    out.push({
      key: t.key,
      effect: t.effect ?? '',
      ...(timeAdded ? { timeAdded } : {}),
      durationInSeconds: option.durationInSeconds,
      matchedBy: option.key,
    });
  }
  return out.sort((a, b) => taintId(a).localeCompare(taintId(b)));
}

/** `key:effect`, the identity of a taint on a node. */
export function taintId(t: { key: string; effect: string }): string {
  return `${t.key}:${t.effect}`;
}

/** Whether two matched sets differ in anything the workflow decides on. */
export function sameTaints(a: readonly MatchedTaint[], b: readonly MatchedTaint[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((t, i) => {
    const u = b[i]!;
    return taintId(t) === taintId(u) && t.timeAdded === u.timeAdded && t.durationInSeconds === u.durationInSeconds;
  });
}
