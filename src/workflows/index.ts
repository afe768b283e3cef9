// Every workflow the worker hosts.
export { checkWorkflow } from './check.ts';
