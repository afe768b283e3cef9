// One tend configuration with all four capabilities, as a Deployment of tend runs them: the tests
// that run every capability through one tend (two replicas; the image) write it.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { sandbox } from './hooks.ts';
import type { RepairWorld } from './repair.ts';
import { managedLabel } from './taint.ts';

export interface AllCapabilities {
  taskQueue: string;
  kubeconfig: string;
  /** The weeder section (dbWithDependants'), its window 1 minute long. */
  weeder: object;
  /** Managed pods of this namespace are replaced off nodes tainted with `taintKey`, two at a time. */
  taintNs: string;
  taintKey: string;
  appsNs: string;
  /** The repair section is this world's. */
  world: RepairWorld;
}

export function allCapabilities(o: AllCapabilities): object {
  return {
    temporal: { address: sandbox().temporalAddress, taskQueue: o.taskQueue },
    kubernetes: { kubeconfig: o.kubeconfig },
    weeder: { ...o.weeder, watchDuration: '1m' },
    taintReplacement: {
      podSelector: { matchLabels: managedLabel(o.taintNs) }, namespaces: [o.taintNs],
      taintReplacementOptions: [{ key: o.taintKey, durationInSeconds: 5 }], taintReplacementTimeSeconds: 1, maxConcurrentReplacements: 2,
    },
    apps: { namespaces: [o.appsNs] },
    repair: (parse(readFileSync(o.world.config, 'utf8')) as { repair: object }).repair,
  };
}
