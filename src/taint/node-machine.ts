// One node's decide / forget / ask / give-back sequence, as the workflow `taint/<node>` runs it
// at every turn of its loop, over the node's data (plain, carried over continue-as-new). Pure:
// it changes the machine's own data only, never what it is handed, and returns what the
// workflow has to do (the condition writes, then the replacement steps); the workflow runs
// them as activities and hands their outcomes back (node.ts markWritten, replace.ts
// evictDone / awaitDone).
//
//   decide(now)                       -> the writes to make now (moves of waiting pods applied)
//   settle(decision, written, running, now)
//                                     -> pods forgotten (only once their clears landed),
//                                        due pods asked for, withdrawn ones given back,
//                                        grants taken; the replacement steps to start
//   slots()                           -> what it holds and asks for (the coordinator's check)
import { applyMoves, decideNode, type NodeDecision, type NodeTaintData } from './node.ts';
import { askFor, decideReplacements, giveBack, holders, takeGrants, type ReplaceDecision } from './replace.ts';
import type { NodeSlots } from './messages.ts';

export class NodeMachine {
  /** The node's data: the machine's own (a copy of what it is given). */
  readonly data: NodeTaintData;

  constructor(data: NodeTaintData) {
    // Plain data (JSON's values only), copied so that the caller's stays as it was.
    this.data = JSON.parse(JSON.stringify(data)) as NodeTaintData;
  }

  /** What to write now; the waiting pods' moves are applied to the machine's data. */
  decide(now: number): NodeDecision {
    const decision = decideNode(this.data, now);
    applyMoves(this.data, decision.moves);
    return decision;
  }

  /**
   * After the decision's writes (`written`: they landed): a pod to forget is forgotten only
   * when its clear landed (else it is cleared again next time), due pods ask for a slot,
   * withdrawn ones give theirs back, grants received are taken. Returns the replacement
   * steps for the pods holding a slot that have no activity `running`.
   */
  settle(decision: Readonly<NodeDecision>, written: boolean, running: ReadonlySet<string>, now: number): ReplaceDecision {
    const d = this.data;
    const unwritten = new Set(written ? [] : decision.writes.map((w) => w.uid));
    for (const uid of decision.forget) if (!unwritten.has(uid)) delete d.pods[uid];
    askFor(d, decision.request);
    for (const uid of decision.withdraw) giveBack(d, uid);
    takeGrants(d);
    return decideReplacements(d, now, running);
  }

  /** The slots the node holds and asks for. */
  slots(): NodeSlots {
    return nodeSlots(this.data);
  }
}

/** The slots a node's data holds (granted, not yet taken, or in use) and asks for. */
export function nodeSlots(d: Readonly<NodeTaintData>): NodeSlots {
  const queued = Object.values(d.pods).filter((p) => p.state === 'Queued').map((p) => p.uid);
  return { held: [...new Set([...holders(d), ...(d.granted ?? [])])], asking: [...new Set([...(d.outbox?.request ?? []), ...queued])] };
}
