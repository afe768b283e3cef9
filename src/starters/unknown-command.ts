// A command line that names a command tend does not have, found before commander parses it:
// commander prints the help asked for (`tend nosuch --help`: exit 0) before it looks at the
// command word, and its own message is not kubectl's. Said as kubectl says it (exit 1):
//   error: unknown command "nosuch" for "tend"
//
//   Did you mean this?
//           app
//
//   Run 'tend --help' for usage.
import type { Command } from 'commander';
import { preview } from '../checks/preview.ts';

export interface UnknownCommand {
  /** The word that names no command, and the command it was given to (`tend`, `tend app`). */
  word: string;
  parent: string;
  suggestions: string[];
}

/**
 * The first word of `argv` (after `tend`) that should name a subcommand and names none: a word
 * given to a command that has subcommands and takes no arguments of its own. Options are skipped, with
 * their value when they take one (`--log-format json`, `--log-format=json`); `--`, an option the
 * command does not have (commander's to refuse), or a command that takes arguments (its words are
 * those) end the search.
 */
export function unknownCommandIn(program: Command, argv: readonly string[]): UnknownCommand | undefined {
  let cmd = program;
  const path = [program.name()];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === '--') return undefined;
    if (word.startsWith('-')) {
      if (word === '-h' || word === '--help') continue;
      const flag = word.startsWith('--') ? word.split('=')[0] : word.slice(0, 2);
      const option = cmd.options.find((o) => o.short === flag || o.long === flag);
      // An option this command does not have: commander names it (exit 2).
      if (!option) return undefined;
      if ((option.required || option.optional) && word === flag) i++;
      continue;
    }
    const next = cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
    // A leaf, or a command that takes arguments besides its subcommands (`tend pause weeder`): the word is an argument.
    if (!next && (cmd.commands.length === 0 || cmd.registeredArguments.length > 0)) return undefined;
    // `tend help X`: X is a command of tend's.
    if (!next && word === 'help' && cmd === program) continue;
    if (!next) return { word, parent: path.join(' '), suggestions: suggestionsFor(word, cmd.commands.map((c) => c.name())) };
    cmd = next;
    path.push(word);
  }
  return undefined;
}

/** Names within two edits of `word`, or that it starts (as cobra, kubectl's library, suggests). */
export function suggestionsFor(word: string, names: readonly string[]): string[] {
  const w = word.toLowerCase();
  return names.filter((n) => n !== 'help' && (n.startsWith(w) || edits(w, n) <= 2));
}

/** Levenshtein distance, a row at a time. */
function edits(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (const [i, ca] of [...a].entries()) {
    row = row.reduce<number[]>((next, above, j) => [...next, j === 0 ? i + 1 : Math.min(above + 1, next[j - 1]! + 1, row[j - 1]! + (ca === b[j - 1] ? 0 : 1))], []);
  }
  return row[b.length]!;
}

/** kubectl's message, for stderr. */
export function unknownCommandMessage(u: UnknownCommand): string {
  const hint = u.suggestions.length > 0 ? `\n\nDid you mean this?\n${u.suggestions.map((s) => `\t${s}\n`).join('')}` : '\n';
  return `error: unknown command ${preview(u.word, 60)} for ${JSON.stringify(u.parent)}${hint}\nRun '${u.parent} --help' for usage.\n`;
}
