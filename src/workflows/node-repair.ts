// `node/<name>`: a Node's countdown. The watcher starts it (or tells it the Node changed) when a
// selected Node meets one of nodeRepair's unhealthy conditions; it reads the Node, sleeps until
// the condition's duration runs out (woken by every change of the Node: recovered first, it
// ends), then asks the repair queue for the Node's entry (request-node-repair): the queue reads
// the Node and the worker's configuration itself and applies the limiters. A refusal is asked
// again later; a queued entry (or observe mode's record) is followed until the Node recovers.
// Every decision is the pure machine src/noderepair/countdown.ts; this file hands it Temporal's
// calls. The start's input is a Node name only (docs/node-repair.md).
import { ApplicationFailure, condition, continueAsNew, patched, proxyActivities, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { preview } from '../checks/preview.ts';
import { parse } from '../checks/shape.ts';
import { nodeNameSchema } from '../repair/validate.ts';
import { Countdown, NODE_REPAIR_VERIFY_CARRIED_PATCH } from '../noderepair/countdown.ts';
import {
  NODE_REPAIR_REFUSED, nodeChangedSignal, nodeRepairStatusQuery, nodeRepairWorkflowId, type NodeRepairCarried, type NodeRepairInput,
} from '../noderepair/messages.ts';
import { said } from './summary.ts';

const acts = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: [NODE_REPAIR_REFUSED] },
});

/** Continue-as-new at Temporal's suggestion, and well before the history limit in any case. */
const HISTORY_LIMIT = 2000;
const historyTooLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > HISTORY_LIMIT;

/** The input, checked: a Node name under its own id, and what an earlier run carried (numbers and keys only). */
function checkedInput(input: unknown): { node: string; carried?: NodeRepairCarried } {
  const refuse = (why: string): never => {
    throw ApplicationFailure.nonRetryable(`nodeRepairWorkflow: refused input: ${why}`, NODE_REPAIR_REFUSED);
  };
  const i = input as Partial<NodeRepairInput> | null | undefined;
  const node = i?.node;
  if (typeof node !== 'string' || !parse(nodeNameSchema, node).ok) return refuse(`node ${preview(node, 80)} is not a Node name`);
  if (workflowInfo().workflowId !== nodeRepairWorkflowId(node)) return refuse(`runs as ${nodeRepairWorkflowId(node)} only (got ${preview(workflowInfo().workflowId, 80)})`);
  const c = i?.carried;
  if (c === undefined) return { node };
  const short = (v: unknown, max: number) => typeof v === 'string' && v.length <= max;
  const q = c?.queued;
  const ok = typeof c === 'object' && c !== null && Number.isSafeInteger(c.refusals) && c.refusals >= 0 &&
    (c.askAt === undefined || Number.isSafeInteger(c.askAt)) && (c.observed === undefined || typeof c.observed === 'boolean') &&
    (q === undefined || (typeof q === 'object' && q !== null && short(q.index, 20) && short(q.address, 253) && short(q.operation, 63)));
  if (!ok) return refuse(`carried ${preview(c, 200)} is not what a countdown carries`);
  return { node, carried: c };
}

export async function nodeRepairWorkflow(input: NodeRepairInput): Promise<string> {
  const { node, carried } = checkedInput(input);
  // Asked only for a start that carries an entry: runs recorded before followed it at once.
  const run = new Countdown(node, carried, carried?.queued !== undefined && patched(NODE_REPAIR_VERIFY_CARRIED_PATCH));
  let changed = true;
  setHandler(nodeChangedSignal, () => {
    changed = true;
  });
  setHandler(nodeRepairStatusQuery, () => run.status());
  for (;;) {
    if (historyTooLong()) return await continueAsNew<typeof nodeRepairWorkflow>({ node, carried: run.carried() });
    changed = false;
    const reading = await acts.nodeRepairRead.executeWithOptions(said(`read Node ${node} against nodeRepair's unhealthy conditions`), [{ node }]);
    const step = run.next(reading, Date.now());
    if (step.kind === 'ask') {
      const answer = await acts.nodeRepairAsk.executeWithOptions(said(`ask the repair queue to repair Node ${node} (${run.status().reason ?? ''})`), [{ node }]);
      run.answered(answer, Date.now());
      await acts.nodeRepairRecord.executeWithOptions(said(`record the repair queue's answer for Node ${node}: ${answer.decision}`), [{ node, answer }]);
      setCurrentDetails(run.details());
      continue;
    }
    setCurrentDetails(run.details());
    if (step.kind === 'end') return step.why;
    await condition(() => changed, Math.max(1, step.until - Date.now()));
  }
}
