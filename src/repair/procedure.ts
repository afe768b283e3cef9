// Which repair operation applies to an entry: the procedure whose
// machine_types holds its machine type, then the operation by name.
// Pure: imported by workflow code.
import type { RepairConfig, RepairOperation } from '../config/repair.ts';
import { addressProblem, serialProblem, type RepairRequest } from './entry.ts';

export type Lookup = { operation: RepairOperation } | { problem: string };

export function lookupOperation(config: RepairConfig, machineType: string, operation: string): Lookup {
  const procedure = config.repair_procedures.find((p) => p.machine_types.includes(machineType));
  if (!procedure) {
    const known = config.repair_procedures.flatMap((p) => p.machine_types);
    return { problem: `unknown machine type ${JSON.stringify(machineType)}: the repair section knows ${known.join(', ')}` };
  }
  const op = procedure.repair_operations.find((o) => o.operation === operation);
  if (!op) {
    const known = procedure.repair_operations.map((o) => o.operation);
    return { problem: `unknown operation ${JSON.stringify(operation)} for machine type ${machineType}: it has ${known.join(', ')}` };
  }
  return { operation: op };
}

/** Every reason a request cannot be queued, empty when it can. */
export function requestProblems(config: RepairConfig | undefined, r: RepairRequest): string[] {
  const problems: string[] = [];
  if (!config) return ['tend has no repair section in its configuration: add repair.repair_procedures'];
  const lookup = lookupOperation(config, r.machine_type, r.operation);
  if ('problem' in lookup) problems.push(lookup.problem);
  const a = addressProblem(r.address);
  if (a) problems.push(a);
  const s = serialProblem(r.serial);
  if (s) problems.push(s);
  return problems;
}

/** Names an entry's key in refusals: `operation "reboot" of machine type "qemu"`. */
export const keyName = (machineType: string, operation: string) =>
  `operation ${JSON.stringify(operation)} of machine type ${JSON.stringify(machineType)}`;

/**
 * What an entry's workflow may know of its operation: numbers for its
 * timers and activity timeouts, never a command. The worker's own
 * configuration answers it (the repairInspect activity) when the entry starts.
 */
export interface RepairPlan {
  steps: { need_drain: boolean; watch_seconds: number; command_timeout_seconds: number; command_retries: number; command_interval: number }[];
  /** The health check's timeout. */
  command_timeout_seconds: number;
  /** The success command's timeout, or undefined when there is none. */
  success_command_timeout?: number;
  eviction_timeout_seconds: number;
  time_scale: number;
}

export function planOf(config: RepairConfig, op: RepairOperation): RepairPlan {
  return {
    steps: op.repair_steps.map((s) => ({
      need_drain: s.need_drain, watch_seconds: s.watch_seconds,
      command_timeout_seconds: s.command_timeout_seconds, command_retries: s.command_retries, command_interval: s.command_interval,
    })),
    command_timeout_seconds: op.command_timeout_seconds,
    ...(op.success_command ? { success_command_timeout: op.success_command_timeout } : {}),
    eviction_timeout_seconds: config.eviction_timeout_seconds,
    time_scale: config.time_scale,
  };
}

export interface ResolvedCommand {
  argv: string[];
  timeoutSeconds: number;
  retries: number;
  intervalSeconds: number;
}

/**
 * The argv and timing of one command, looked up by (machine type, operation,
 * step, kind) in the worker's configuration; a problem naming the key when it
 * is not configured (any more).
 */
export function lookupCommand(config: RepairConfig | undefined, machineType: string, operation: string, step: number,
  kind: 'repair_command' | 'health_check_command' | 'success_command'): ResolvedCommand | { problem: string } {
  if (!config) return { problem: 'the worker has no repair section in its configuration' };
  const lookup = lookupOperation(config, machineType, operation);
  if ('problem' in lookup) return { problem: `${keyName(machineType, operation)} is not configured: ${lookup.problem}` };
  const op = lookup.operation;
  const scale = config.time_scale;
  switch (kind) {
    case 'health_check_command':
      return { argv: op.health_check_command, timeoutSeconds: op.command_timeout_seconds, retries: 0, intervalSeconds: 0 };
    case 'success_command':
      if (!op.success_command) return { problem: `${keyName(machineType, operation)} has no success_command configured` };
      return { argv: op.success_command, timeoutSeconds: op.success_command_timeout, retries: 0, intervalSeconds: 0 };
    case 'repair_command': {
      const s = Number.isInteger(step) && step >= 0 ? op.repair_steps[step] : undefined;
      if (!s) return { problem: `${keyName(machineType, operation)} has no step ${step} (it has ${op.repair_steps.length}, numbered from 0)` };
      return { argv: s.repair_command, timeoutSeconds: s.command_timeout_seconds, retries: s.command_retries, intervalSeconds: s.command_interval * scale };
    }
  }
}
