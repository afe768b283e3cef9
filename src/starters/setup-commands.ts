// `tend setup ...`: preparing what tend needs outside itself.
import type { Command } from 'commander';

export function registerSetupCommands(program: Command): void {
  program.command('setup').description('prepare what tend needs on a Temporal server');
}
