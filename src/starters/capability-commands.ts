// Each capability's own `tend` subcommands, registered in one place.
import type { Command } from 'commander';

export function registerCapabilityCommands(_program: Command): void {
}
