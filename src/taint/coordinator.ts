// The coordinator `taint-replacements` as the workflow runs it: what each message does to the
// slots (src/taint/slots.ts), checked as the handler takes it, with the behaviour the workflow's
// patches chose set once (`verifies`: a give-back is a hint, the holder is asked). Pure: each
// method returns the reason a message (or part of it) was refused, never the value; the
// workflow logs it and runs the activities and signals.
import { fieldOf, sameNode, takeEach, type SlotSettings } from './messages.ts';
import { nodeNameProblem, SLOT_BOUNDS, Slots } from './slots.ts';
import { pastLimits } from '../checks/limits.ts';

/**
 * A give-back (releaseReplacements, withdrawNode) frees a slot only once the node's workflow
 * itself, asked by an activity (taintNodeSlots: its slots query, or a describe when it has
 * ended), no longer holds it: anyone can send the message. Before, the message freed it.
 * docs/upgrading.md.
 */
export const TAINT_VERIFY_GIVE_BACK_PATCH = 'taint-verify-give-back';

/**
 * A slotsHeld message adopts nothing itself: the node's workflow is asked (taintNodeSlots) and
 * only the holds it confirms (their eviction found them granted) are adopted. Before, every
 * slot the message named was adopted, even past the limit: a forged message (or a node led by a
 * forged grant) put pods in flight the coordinator never granted. docs/upgrading.md.
 */
export const TAINT_ADOPT_CONFIRMED_PATCH = 'taint-adopt-confirmed';

export class Coordinator {
  readonly slots: Slots;
  readonly verifies: boolean;
  readonly adoptsConfirmed: boolean;

  constructor(slots: Slots, verifies: boolean, adoptsConfirmed = false) {
    this.slots = slots;
    this.verifies = verifies;
    this.adoptsConfirmed = adoptsConfirmed;
  }

  /** requestReplacements: each request queued (its node the message's). */
  requests(m: unknown, now: number): string | undefined {
    return takeEach(m, 'requests', SLOT_BOUNDS.requestsPerSignal, (r, node) => sameNode(r, node) ?? this.slots.request(r, now));
  }

  /** releaseReplacements: verified, a hint that the node's holder is asked; before, each slot freed. */
  releases(m: unknown): string | undefined {
    if (this.verifies) return pastLimits(m) ?? this.slots.giveBackHint(fieldOf(m, 'node'));
    return takeEach(m, 'uids', SLOT_BOUNDS.requestsPerSignal, (uid) => {
      if (typeof uid === 'string') this.slots.release(uid);
      return undefined;
    });
  }

  /** withdrawNode: verified, a hint as releaseReplacements; before, all the node's slots freed. */
  withdrawal(m: unknown): string | undefined {
    const why = pastLimits(m);
    if (this.verifies || why) return why ?? this.slots.giveBackHint(fieldOf(m, 'node'));
    if (!nodeNameProblem(fieldOf(m, 'node'))) this.slots.withdraw(fieldOf(m, 'node') as string);
    return undefined;
  }

  /** slotsHeld: a fresh coordinator told the slots a node holds: a hint that the node is asked; before, each adopted. */
  held(m: unknown, now: number): string | undefined {
    if (this.adoptsConfirmed) return pastLimits(m) ?? this.slots.holdsHint(fieldOf(m, 'node'));
    return takeEach(m, 'held', SLOT_BOUNDS.requestsPerSignal, (h, node) => sameNode(h, node) ?? this.slots.adopt(h, now));
  }

  /** A read of the settings or of the node counts. */
  read(v: SlotSettings | { taintedNodes: number; totalNodes: number }): void {
    if ('taintedNodes' in v) this.slots.setCounts(v);
    else this.slots.setSettings(v);
  }

  /** A grant could not be delivered: the node's workflow has ended, nobody will use or release these slots. */
  undelivered(node: string, uids: readonly string[]): void {
    for (const uid of uids) this.slots.release(uid, node);
  }

  /** Asking a node's workflow what it holds failed; whether to ask again later (a refusal: never). */
  unanswered(node: string, refused: boolean): boolean {
    if (refused) this.slots.verify.delete(node);
    return !refused;
  }
}
