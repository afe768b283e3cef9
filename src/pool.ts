// Bounded concurrency for a list of async jobs.

/** Runs `fn` on every item, at most `size` at a time: a new one starts as soon as one ends. */
export async function pool<T>(items: readonly T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(size, items.length)) }, lane));
}

/** Keys waiting for work, and the work: drainKeyed's queues. */
export interface KeyedQueue {
  pending: Set<string>;
  run: (key: string) => Promise<void>;
}

/**
 * Works through the keys pending in `queues`, `size` lanes at once, each lane taking the
 * next key as soon as it is free: the first queue's keys before the next queue's. A key
 * is never run twice at once, whichever queue it comes from: one that is pending again
 * while it runs waits for that run (the lane running it takes it next), so the newest
 * state is acted on last. Keys may be added while it works. Resolves when no key is
 * pending that is not running; `run` does its own error handling (a rejection ends its lane).
 */
export async function drainKeyed(queues: readonly KeyedQueue[], size: number): Promise<void> {
  const busy = new Set<string>();
  const take = (): [KeyedQueue, string] | undefined => {
    for (const q of queues) {
      for (const key of q.pending) {
        if (busy.has(key)) continue;
        q.pending.delete(key);
        busy.add(key);
        return [q, key];
      }
    }
    return undefined;
  };
  const lane = async () => {
    for (let next = take(); next; next = take()) {
      const [q, key] = next;
      await q.run(key).finally(() => busy.delete(key));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, size) }, lane));
}
