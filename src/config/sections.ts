// The capability sections of the config file. Each capability owns its
// section's schema module; registering it here is the one line that makes
// the root schema accept, type and describe it. A section absent from the
// file means the capability is off.
import type { z } from 'zod';
import { describeWeeder, weederSchema } from './weeder.ts';
import { appsSchema, describeApps } from './apps.ts';
import { describeRepair, repairSchema } from './repair.ts';
import { describeTaintReplacement, taintReplacementSchema } from './taint-replacement.ts';
import { describeNodeRepair, nodeRepairSchema } from './node-repair.ts';

export interface Section<S extends z.ZodType> {
  schema: S;
  /** One line for `tend config validate`. */
  describe: (value: z.output<S>) => string;
}

export function defineSection<S extends z.ZodType>(schema: S, describe: (value: z.output<S>) => string): Section<S> {
  return { schema, describe };
}

export const sections = {
  weeder: defineSection(weederSchema, describeWeeder),
  apps: defineSection(appsSchema, describeApps),
  repair: defineSection(repairSchema, describeRepair),
  taintReplacement: defineSection(taintReplacementSchema, describeTaintReplacement),
  nodeRepair: defineSection(nodeRepairSchema, describeNodeRepair),
};

export type SectionName = keyof typeof sections;
