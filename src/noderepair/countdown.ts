// A Node's countdown (`node/<name>`) as a pure machine: from what the Node was last read as and
// what the repair queue last answered, what the workflow does next (ask the queue, wait until a
// time or a change of the Node, or end). The workflow shell (src/workflows/node-repair.ts) reads
// the Node, asks the queue and sleeps; every decision is here. Times are epoch ms, workflow time.
import type { NodeRepairAnswer, NodeRepairCarried, NodeRepairPhase, NodeRepairStatus } from './messages.ts';

/** What the countdown's activity read of the Node (src/activities/node-repair.ts). */
export type CountdownReading =
  | { state: 'off' | 'gone' | 'unselected' | 'healthy' }
  | { state: 'unhealthy'; reason: string; since: number; expiresAt: number };

/**
 * A countdown started with a carried entry asks the queue once before it follows it: the entry
 * is confirmed (the queue's own, unfinished: the same entry back; or the machine's recent entry),
 * else it is dropped and the countdown asks as usual. Runs recorded before trusted it.
 */
export const NODE_REPAIR_VERIFY_CARRIED_PATCH = 'node-repair-verify-carried';

/** How long after a refusal (but a planned reboot's, which says when) the queue is asked again. */
export const ASK_AGAIN_MS = 30_000;
/**
 * While it waits (its entry queued, or a time), the Node is read again at least this often: the
 * watcher's signal on each change is what wakes it, this only covers a signal lost meanwhile.
 */
export const REREAD_MS = 5 * 60_000;

export type CountdownStep =
  | { kind: 'end'; why: string }
  | { kind: 'ask' }
  /** Wait until `until` (or a change of the Node); read the Node again after. */
  | { kind: 'wait'; until: number };

const ENDS: Record<Exclude<CountdownReading['state'], 'unhealthy'>, string> = {
  off: 'node repair is not configured on this worker',
  gone: 'the Node is gone',
  unselected: 'nodeRepair.nodeSelector no longer selects the Node',
  healthy: 'the Node meets no unhealthy condition',
};

export class Countdown {
  queued: NodeRepairCarried['queued'];
  observed: boolean;
  refusals: number;
  /** When the queue may be asked again after a refusal. */
  askAt = 0;
  answer: NodeRepairAnswer | undefined;
  reading: CountdownReading | undefined;
  private phase: NodeRepairPhase = 'counting';
  private until: number | undefined;
  readonly node: string;

  /** A carried entry not yet confirmed by the queue (NODE_REPAIR_VERIFY_CARRIED_PATCH): asked once before it is trusted. */
  private unconfirmed = false;

  /**
   * `verifyCarried`: a carried entry is confirmed by one ask before it is followed. A start's input
   * is anyone's who may start workflows: an entry it claims would otherwise hold back the Node's repair.
   */
  constructor(node: string, carried?: NodeRepairCarried, verifyCarried = false) {
    this.node = node;
    this.queued = carried?.queued;
    this.unconfirmed = verifyCarried && carried?.queued !== undefined;
    this.observed = carried?.observed === true;
    this.refusals = carried?.refusals ?? 0;
    this.askAt = carried?.askAt ?? 0;
  }

  /** What to do, the Node read as `reading`, at `now`. */
  next(reading: CountdownReading, now: number): CountdownStep {
    this.reading = reading;
    if (reading.state !== 'unhealthy') {
      this.phase = 'recovered';
      this.until = undefined;
      const after = this.queued ? ` after repair entry ${this.queued.index} was queued` : '';
      return { kind: 'end', why: `${ENDS[reading.state]}${after}: the countdown ends` };
    }
    if (this.unconfirmed) {
      this.phase = 'asking';
      this.until = undefined;
      return { kind: 'ask' };
    }
    if (this.queued || this.observed) {
      this.phase = this.queued ? 'queued' : 'observed';
      this.until = undefined;
      return { kind: 'wait', until: now + REREAD_MS };
    }
    const due = Math.max(reading.expiresAt, this.askAt);
    if (now >= due) {
      this.phase = 'asking';
      this.until = undefined;
      return { kind: 'ask' };
    }
    this.phase = this.askAt > reading.expiresAt ? 'waiting' : 'counting';
    this.until = due;
    return { kind: 'wait', until: Math.min(due, now + REREAD_MS) };
  }

  /** The queue's answer to an ask made at `now`. */
  answered(answer: NodeRepairAnswer, now: number): void {
    this.answer = answer;
    if (this.unconfirmed) {
      this.unconfirmed = false;
      // The queue holds an entry for this machine (its own, or a finished one): followed as before.
      if (answer.decision === 'refused' && answer.reason === 'recent-entry') return;
      this.queued = undefined;
    }
    switch (answer.decision) {
      case 'enqueued':
        this.queued = { index: answer.index, address: answer.address, operation: answer.operation };
        return;
      case 'observed':
        // Recorded once: the countdown then waits for the Node to recover, as if its entry were queued.
        this.observed = true;
        return;
      case 'refused':
        this.refusals += 1;
        this.askAt = answer.retryAt !== undefined && answer.retryAt > now ? answer.retryAt : now + ASK_AGAIN_MS;
        return;
      case 'not-needed':
        // The queue read the Node otherwise than this countdown did (it recovered meanwhile, or
        // its condition has not run out by the queue's clock): read again, ask no sooner than this.
        this.askAt = now + ASK_AGAIN_MS;
        return;
    }
  }

  /** What continue-as-new carries. */
  carried(): NodeRepairCarried {
    return {
      ...(this.queued ? { queued: this.queued } : {}), ...(this.observed ? { observed: true } : {}),
      refusals: this.refusals, ...(this.askAt > 0 ? { askAt: this.askAt } : {}),
    };
  }

  status(): NodeRepairStatus {
    const reason = this.reading?.state === 'unhealthy' ? this.reading.reason : undefined;
    return {
      node: this.node, phase: this.phase, refusals: this.refusals,
      ...(reason !== undefined ? { reason } : {}), ...(this.until !== undefined ? { until: this.until } : {}),
      ...(this.answer ? { answer: this.answer } : {}),
    };
  }

  /** The Web UI's Current Details: one short paragraph. */
  details(): string {
    const s = this.status();
    const at = (ms: number) => new Date(ms).toISOString();
    const lines = [`**Node ${this.node}**: ${s.phase}${s.reason ? ` (${s.reason})` : ''}`];
    if (s.phase === 'counting' && s.until) lines.push(`repair asked at ${at(s.until)} unless the Node recovers first`);
    if (s.phase === 'waiting' && s.until) lines.push(`asked again at ${at(s.until)}`);
    if (this.queued) lines.push(`repair entry ${this.queued.index} queued (${this.queued.operation} of ${this.queued.address}); waiting for the Node to recover`);
    if (s.answer) lines.push(`the repair queue's last answer: ${s.answer.decision}: ${s.answer.sentence}`);
    if (s.refusals > 0) lines.push(`${s.refusals} refusal(s) so far`);
    return lines.join('\n\n');
  }
}
