// What /healthz and /readyz answer: each long-running part of the process
// (the worker, the watcher, each informer) registers a check; the process is
// alive when every check says alive, ready when every check says ready.

export interface CheckState {
  /** The part's loop runs (false: it stopped or failed; restarting the process is the remedy). */
  alive: boolean;
  /** The part does its job now (the worker polls, the informers have listed). */
  ready: boolean;
  /** Why not alive or not ready: a few words for the probe's body. */
  reason?: string;
}

export interface HealthAnswer {
  ok: boolean;
  /** One line per check that is not ok (empty when ok). */
  problems: string[];
}

/** A set of named checks; pure bookkeeping, no I/O. */
export class Health {
  private readonly checks = new Map<string, () => CheckState>();

  /** Registers (or replaces) a check; returns a function that removes it. */
  register(name: string, check: () => CheckState): () => void {
    this.checks.set(name, check);
    return () => {
      if (this.checks.get(name) === check) this.checks.delete(name);
    };
  }

  /** A check whose state is set from outside: the part calls `set` as it changes. */
  settable(name: string, initial: CheckState): { set(s: CheckState): void; remove(): void } {
    let state = initial;
    const remove = this.register(name, () => state);
    return { set: (s) => { state = s; }, remove };
  }

  liveness(): HealthAnswer {
    return this.answer((s) => s.alive, 'not alive');
  }

  readiness(): HealthAnswer {
    return this.answer((s) => s.alive && s.ready, 'not ready');
  }

  names(): string[] {
    return [...this.checks.keys()];
  }

  private answer(pass: (s: CheckState) => boolean, fallback: string): HealthAnswer {
    const problems: string[] = [];
    if (this.checks.size === 0) problems.push('starting: nothing has started yet');
    for (const [name, check] of this.checks) {
      let s: CheckState;
      try {
        s = check();
      } catch (err) {
        s = { alive: false, ready: false, reason: `check failed: ${(err as Error)?.message ?? String(err)}` };
      }
      if (!pass(s)) problems.push(`${name}: ${s.reason ?? fallback}`);
    }
    return { ok: problems.length === 0, problems };
  }
}

/** The process's one set of checks. */
export const health = new Health();
