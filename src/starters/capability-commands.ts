// Each capability's own `tend` subcommands, registered in one place.
import type { Command } from 'commander';
import { registerWeederCommands } from './weeder-commands.ts';
import { registerAppCommands } from './apps-commands.ts';
import { registerRepairCommands } from './repair-commands.ts';
import { registerTaintCommands } from './taint-commands.ts';
import { registerRbacCommands } from './rbac-commands.ts';

export function registerCapabilityCommands(_program: Command): void {
  registerWeederCommands(_program);
  registerAppCommands(_program);
  registerRepairCommands(_program);
  registerTaintCommands(_program);
  registerRbacCommands(_program);
}
