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
