// Every workflow the worker hosts.
export { checkWorkflow } from './check.ts';
export { appWorkflow } from './apps.ts';
export { weederWorkflow } from './weeder.ts';
export { repairEntryWorkflow, repairQueueWorkflow } from './repair.ts';
export { taintNodeWorkflow, taintReplacementsWorkflow } from './taint.ts';
export { safetyWorkflow } from './safety.ts';
export { nodeRepairWorkflow } from './node-repair.ts';
