// Which capability watches run, decided by the configuration: a capability
// whose section is absent watches nothing.
import type { Config } from '../config/load.ts';
import type { CapabilityWatch } from './watcher.ts';
import { tendNamespace } from '../config/weeder.ts';
import { weederWatch } from './weeder-watch.ts';
import { taintWatch } from './taint-watch.ts';
import { appsWatch } from './apps-watch.ts';
import { nodeRepairWatch } from './node-repair-watch.ts';

export function capabilityWatches(_config: Config): Record<string, CapabilityWatch> {
  return {
    ...(_config.weeder ? { weeder: weederWatch(_config.weeder, tendNamespace(_config.kubernetes)) } : {}),
    ...(_config.taintReplacement ? { taintReplacement: taintWatch(_config.taintReplacement) } : {}),
    ...(_config.apps ? { apps: appsWatch(_config.apps) } : {}),
    ...(_config.nodeRepair ? { nodeRepair: nodeRepairWatch(_config.nodeRepair) } : {}),
  };
}
