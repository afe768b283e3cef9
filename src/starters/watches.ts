// Which capability watches run, decided by the configuration: a capability
// whose section is absent watches nothing.
import type { Config } from '../config/load.ts';
import type { CapabilityWatch } from './watcher.ts';

export function capabilityWatches(_config: Config): Record<string, CapabilityWatch> {
  return {};
}
