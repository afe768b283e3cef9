// State a run carries into the next by continue-as-new travels in the next run's start input, and a
// start input is untrusted: anyone with access to the namespace can start a workflow by hand with
// any input. Only the workflow itself can continue-as-new, and Temporal records that on the new
// run (its continuedFromExecutionRunId), so carried state is taken only by a run that was
// continued into; a run started any other way ignores it and reads the world afresh.
import { log, workflowInfo } from '@temporalio/workflow';

/** `carried`, when this run was continued into by its own workflow; otherwise undefined (and said). */
export function carriedFromOwnRun<T>(carried: T | undefined | null): T | undefined {
  if (carried === undefined || carried === null) return undefined;
  const info = workflowInfo();
  if (info.continuedFromExecutionRunId) return carried;
  log.warn('state in the start input ignored: only a run this workflow continued as new carries state; starting afresh', {
    workflowId: info.workflowId, workflowType: info.workflowType,
  });
  return undefined;
}
