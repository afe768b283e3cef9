// A value that changes often, delivered somewhere (a signal) one send at a time, where a caller
// needs to know that what was delivered is at least as new as what it had seen.

/**
 * Delivers `read()` through `send`, one send at a time, skipping a value equal (as JSON) to the
 * last delivered. `changed()` says the value may have changed. `deliver()` resolves true once a
 * value read after every `changed()` made before the call has been delivered (or was equal to
 * the delivered one), false when the send it waited for failed (it is not retried here). Calls
 * that find a send in flight wait for it, and are done with it when it was read late enough; the
 * calls that were not share the next send. So while the value changes all the time, a call waits
 * for at most two sends, however many callers there are.
 */
export class LatestSender<T> {
  private readonly read: () => T;
  private readonly send: (value: T) => Promise<void>;
  private version = 0;
  /** Bumped by forget(): a send begun before it does not count as delivered. */
  private epoch = 0;
  private delivered = -1;
  private lastKey: string | undefined;
  private inFlight: { version: number; done: Promise<boolean> } | undefined;

  constructor(read: () => T, send: (value: T) => Promise<void>) {
    this.read = read;
    this.send = send;
  }

  /** The value may have changed: a later deliver() sends it again unless it is the same. */
  changed(): void {
    this.version++;
  }

  /** The receiver lost what it was sent (it was started afresh): the next deliver() sends the value again. */
  forget(): void {
    this.epoch++;
    this.lastKey = undefined;
    this.delivered = -1;
    this.version++;
  }

  async deliver(): Promise<boolean> {
    const need = this.version;
    for (;;) {
      if (this.delivered >= need) return true;
      const current = this.inFlight;
      if (current) {
        if (!(await current.done)) return false;
        continue;
      }
      const version = this.version;
      const value = this.read();
      const key = JSON.stringify(value);
      if (key === this.lastKey) {
        this.delivered = Math.max(this.delivered, version);
        return true;
      }
      const epoch = this.epoch;
      const done = this.send(value).then(() => {
        if (epoch !== this.epoch) return true;
        this.lastKey = key;
        this.delivered = Math.max(this.delivered, version);
        return true;
      }, () => false);
      this.inFlight = { version, done };
      try {
        return await done;
      } finally {
        if (this.inFlight?.done === done) this.inFlight = undefined;
      }
    }
  }
}
