// `mode: act | observe`: at the top level (the default for every section) and
// on each capability's section. In observe mode a capability runs exactly as
// in act mode (windows open, countdowns run, queue entries advance) but every
// destructive write is replaced by a record of what it would have done
// (docs/safety.md). The worker reads the modes again when its configuration
// changes, so a switch needs no restart (src/safety/modes.ts).
import { z } from 'zod';

export const MODES = ['act', 'observe'] as const;
export type Mode = (typeof MODES)[number];

export const modeSchema = z.enum(MODES, {
  error: "must be act or observe",
});

/** The capability sections' names, as in the config file. */
export const MODE_SECTIONS = { weeder: 'weeder', taint: 'taintReplacement', apps: 'apps', repair: 'repair', nodeRepair: 'nodeRepair' } as const;
export type ModeCapability = keyof typeof MODE_SECTIONS;

/** The mode of each capability: its section's `mode`, else the top-level `mode`, else act. */
export function modesOf(config: { mode?: Mode; weeder?: { mode?: Mode }; taintReplacement?: { mode?: Mode }; apps?: { mode?: Mode }; repair?: { mode?: Mode }; nodeRepair?: { mode?: Mode } }): Record<ModeCapability, Mode> {
  const top = config.mode ?? 'act';
  return {
    weeder: config.weeder?.mode ?? top,
    taint: config.taintReplacement?.mode ?? top,
    apps: config.apps?.mode ?? top,
    repair: config.repair?.mode ?? top,
    nodeRepair: config.nodeRepair?.mode ?? top,
  };
}
