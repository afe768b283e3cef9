// The coordinator `taint-replacements` as the workflow runs it: what each message does to the
// slots (src/taint/slots.ts), checked as the handler takes it, with the behaviour the workflow's
// patches chose set once (`verifies`: a give-back is a hint, the holder is asked). Pure: each
// message method returns the reason a message (or part of it) was refused, never the value; the
// workflow logs it and runs the activities and signals.
//
//   next(now, turn) -> the next operation of the loop's turn, in this order:
//       read settings, read counts     (when a signal said they may have changed, unless a failed read waits)
//       ask holders (nodes)            (nodes said to have given slots back, or to hold some)
//       send grants (again)            (grants whose holder is due for a check)
//       send grants                    (new ones, oldest request first)
//       announce (nodes)               (nodes refused for room: ask again)
//       continue | again | wait (until)
//   read / readFailed / holder / unanswered / undelivered -> what those operations brought
import { fieldOf, sameNode, takeEach, type SlotSettings } from './messages.ts';
import { nodeNameProblem, SLOT_BOUNDS, Slots, type Grant, type HolderFound } from './slots.ts';
import { STEP_RETRY_MS } from './replace.ts';
import { pastLimits } from '../checks/limits.ts';

/**
 * A give-back (releaseReplacements, withdrawNode) frees a slot only once the node's workflow
 * itself, asked by an activity (taintNodeSlots: its slots query, or a describe when it has
 * ended), no longer holds it: anyone can send the message. Before, the message freed it.
 * docs/contributing/patch-history.md.
 */
export const TAINT_VERIFY_GIVE_BACK_PATCH = 'taint-verify-give-back';

/**
 * A slotsHeld message adopts nothing itself: the node's workflow is asked (taintNodeSlots) and
 * only the holds it confirms (their eviction found them granted) are adopted. Before, every
 * slot the message named was adopted, even past the limit: a forged message (or a node led by a
 * forged grant) put pods in flight the coordinator never granted. docs/contributing/patch-history.md.
 */
export const TAINT_ADOPT_CONFIRMED_PATCH = 'taint-adopt-confirmed';

/**
 * A grant that cannot be delivered (the node's workflow is not running) takes every request and
 * grant of that node out, not only the grant: a flood of requests in the name of a node that has
 * no workflow (anyone can send requestReplacements) costs one grant, not one grant per request,
 * before real nodes are served again. Before, only the undelivered grant was freed.
 * docs/contributing/patch-history.md.
 */
export const TAINT_UNDELIVERED_WITHDRAWS_PATCH = 'taint-undelivered-withdraws';

/**
 * A hint about a node (a give-back, a withdrawal, slots held) that comes while that node's
 * workflow is being asked what it holds has the node asked again after the answer: the answer
 * may predate what the hint tells (a grant the node held when it answered and gave back since).
 * Before, the answer took the node off the list to ask, and the slot stayed in flight until its
 * grant's next check (GRANT_CHECK_SECONDS). docs/contributing/patch-history.md.
 */
export const TAINT_HINT_WHILE_ASKING_PATCH = 'taint-hint-while-asking';

/** The coordinator's patched behaviours, each asked once at its start (docs/contributing/patch-history.md). */
export interface CoordinatorPatches {
  /** TAINT_VERIFY_GIVE_BACK_PATCH */
  verifies: boolean;
  /** TAINT_ADOPT_CONFIRMED_PATCH */
  adoptsConfirmed: boolean;
  /** TAINT_UNDELIVERED_WITHDRAWS_PATCH */
  withdrawsUndelivered: boolean;
  /** TAINT_HINT_WHILE_ASKING_PATCH (off when absent) */
  asksAgain?: boolean;
}

/** Nodes whose workflow is asked what it holds at once. */
export const VERIFY_AT_ONCE = 16;

/** What the workflow does next in a turn of the coordinator's loop (Coordinator.next). */
export type CoordinatorOp =
  | { kind: 'read'; what: 'settings' | 'counts' }
  | { kind: 'ask'; nodes: string[] }
  | { kind: 'send'; grants: Grant[] }
  | { kind: 'announce'; nodes: string[] }
  | { kind: 'continue' }
  | { kind: 'again' }
  | { kind: 'wait'; until: number | undefined };

type Phase = 'settings' | 'counts' | 'ask' | 'check' | 'grant' | 'overflow' | 'end';

export class Coordinator {
  readonly slots: Slots;
  readonly verifies: boolean;
  readonly adoptsConfirmed: boolean;
  readonly withdrawsUndelivered: boolean;
  readonly asksAgain: boolean;
  /** Nodes whose workflow is being asked what it holds (an ask under way). */
  private readonly asking = new Set<string>();
  /** Of those, the ones a hint came for meanwhile: asked again after the answer. */
  private readonly hintedWhileAsking = new Set<string>();
  /** The settings may have changed (a signal said so, or none read yet): read them. */
  settingsStale = true;
  /** The node counts likewise. */
  countsStale = true;
  /** A read or a holder's answer failed: none is asked again before then. */
  retryAt: number | undefined;
  private phase: Phase = 'settings';

  constructor(slots: Slots, patches: CoordinatorPatches) {
    this.slots = slots;
    this.verifies = patches.verifies;
    this.adoptsConfirmed = patches.adoptsConfirmed;
    this.withdrawsUndelivered = patches.withdrawsUndelivered;
    this.asksAgain = patches.asksAgain === true;
  }

  /** A hint about `node` was taken (`why` undefined): if its workflow is being asked, it is asked again after the answer. */
  private hinted(node: unknown, why: string | undefined): string | undefined {
    if (why === undefined && this.asksAgain && typeof node === 'string' && this.asking.has(node)) this.hintedWhileAsking.add(node);
    return why;
  }

  /** requestReplacements: each request queued (its node the message's). */
  requests(m: unknown, now: number): string | undefined {
    return takeEach(m, 'requests', SLOT_BOUNDS.requestsPerSignal, (r, node) => sameNode(r, node) ?? this.slots.request(r, now));
  }

  /** releaseReplacements: verified, a hint that the node's holder is asked; before, each slot freed. */
  releases(m: unknown): string | undefined {
    if (this.verifies) return pastLimits(m) ?? this.hinted(fieldOf(m, 'node'), this.slots.giveBackHint(fieldOf(m, 'node')));
    return takeEach(m, 'uids', SLOT_BOUNDS.requestsPerSignal, (uid) => {
      if (typeof uid === 'string') this.slots.release(uid);
      return undefined;
    });
  }

  /** withdrawNode: verified, a hint as releaseReplacements; before, all the node's slots freed. */
  withdrawal(m: unknown): string | undefined {
    const why = pastLimits(m);
    if (this.verifies || why) return why ?? this.hinted(fieldOf(m, 'node'), this.slots.giveBackHint(fieldOf(m, 'node')));
    if (!nodeNameProblem(fieldOf(m, 'node'))) this.slots.withdraw(fieldOf(m, 'node') as string);
    return undefined;
  }

  /** slotsHeld: a fresh coordinator told the slots a node holds: a hint that the node is asked; before, each adopted. */
  held(m: unknown, now: number): string | undefined {
    if (this.adoptsConfirmed) return pastLimits(m) ?? this.hinted(fieldOf(m, 'node'), this.slots.holdsHint(fieldOf(m, 'node')));
    return takeEach(m, 'held', SLOT_BOUNDS.requestsPerSignal, (h, node) => sameNode(h, node) ?? this.slots.adopt(h, now));
  }

  /**
   * The turn's next operation (see the head of this file). `woken`: something changed since the
   * turn began; `continueSuggested`: the history is long enough to continue as new.
   */
  next(now: number, turn: { woken: boolean; continueSuggested: boolean }): CoordinatorOp {
    for (;;) {
      switch (this.phase) {
        case 'settings':
          if (this.retryAt !== undefined && now >= this.retryAt) this.retryAt = undefined;
          this.phase = 'counts';
          if (this.settingsStale && this.retryAt === undefined) return { kind: 'read', what: 'settings' };
          break;
        case 'counts':
          this.phase = 'ask';
          if (this.countsStale && this.retryAt === undefined) return { kind: 'read', what: 'counts' };
          break;
        case 'ask':
          this.phase = 'check';
          if (this.slots.verify.size > 0 && this.retryAt === undefined) {
            const nodes = [...this.slots.verify].slice(0, VERIFY_AT_ONCE);
            for (const node of nodes) this.asking.add(node);
            return { kind: 'ask', nodes };
          }
          break;
        case 'check': {
          // Grants whose holder may have ended without giving them back (terminated, timed out,
          // failed before it could): sent again; see slots.ts.
          this.phase = 'grant';
          const again = this.slots.grantsToCheck(now);
          if (again.length > 0) return { kind: 'send', grants: again };
          break;
        }
        case 'grant': {
          this.phase = 'overflow';
          const grants = this.slots.decideGrants(now);
          if (grants.length > 0) return { kind: 'send', grants };
          break;
        }
        case 'overflow': {
          this.phase = 'end';
          const nodes = this.slots.overflowDue();
          if (nodes.length > 0) return { kind: 'announce', nodes };
          break;
        }
        case 'end':
          this.phase = 'settings';
          if (turn.continueSuggested) return { kind: 'continue' };
          if (turn.woken) return { kind: 'again' };
          return { kind: 'wait', until: earliest(this.slots.nextCheckAt(), this.retryAt) };
      }
    }
  }

  /** Whether the settings or the counts wait to be read (shown in the Web UI). */
  stale(): boolean {
    return this.settingsStale || this.countsStale;
  }

  /** A read of the settings or of the node counts. */
  read(v: SlotSettings | { taintedNodes: number; totalNodes: number }): void {
    if ('taintedNodes' in v) {
      this.slots.setCounts(v);
      this.countsStale = false;
    } else {
      this.slots.setSettings(v);
      this.settingsStale = false;
    }
  }

  /** A read failed (its activity gave up): no read, nor holder's answer, is asked again for STEP_RETRY_MS. */
  readFailed(now: number): void {
    this.retryAt = now + STEP_RETRY_MS;
  }

  /** What a node's workflow said it holds (or that it is not running). */
  holder(node: string, found: HolderFound, now: number): void {
    this.asking.delete(node);
    this.slots.holderFound(node, found, now);
    if (this.hintedWhileAsking.delete(node)) this.slots.holdsHint(node);
  }

  /** A grant could not be delivered: the node's workflow has ended, nobody will use or release these slots (nor ask for the rest). */
  undelivered(node: string, uids: readonly string[]): void {
    if (this.withdrawsUndelivered) return this.slots.withdraw(node);
    for (const uid of uids) this.slots.release(uid, node);
  }

  /** Asking a node's workflow what it holds failed: asked again after STEP_RETRY_MS (a refusal: never). */
  unanswered(node: string, refused: boolean, now: number): void {
    this.asking.delete(node);
    this.hintedWhileAsking.delete(node);
    if (refused) this.slots.verify.delete(node);
    else this.retryAt = now + STEP_RETRY_MS;
  }
}

/** The earliest of the times given (undefined: none). */
function earliest(...times: (number | undefined)[]): number | undefined {
  const set = times.filter((t): t is number => t !== undefined);
  return set.length > 0 ? Math.min(...set) : undefined;
}
