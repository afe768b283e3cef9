// `tend completion bash|zsh`: a completion script made from the CLI's own command tree, so it
// never falls behind the commands. zsh loads the bash function through bashcompinit.
import { Argument, type Command } from 'commander';
import { UsageError } from './cli-support.ts';

/** What completes under one command: its subcommands, options, the options that take a value, and its arguments' choices. */
interface Completions {
  commands: string[];
  options: string[];
  /** Each option that takes a value (long and short forms) with its choices, [] for a free value (a file, a name). */
  values: Map<string, string[]>;
  /** The choices of its arguments (`completion <bash|zsh>`), where they have any. */
  argumentChoices: string[];
}

/** Every command path ("" for tend itself, "repair-queue add", ...) with what completes under it; hidden options left out. */
export function commandTree(program: Command): Map<string, Completions> {
  const tree = new Map<string, Completions>();
  const walk = (cmd: Command, path: string[]) => {
    const visible = cmd.commands.filter((c) => c.name() !== 'help');
    const options = cmd.options.filter((o) => !o.hidden);
    const values = new Map<string, string[]>();
    for (const o of options.filter((o) => o.required || o.optional)) {
      // A choice that carries a value (-o jsonpath=TEMPLATE) completes to its prefix (jsonpath=).
      const choices = (o.argChoices ?? []).map((c) => c.replace(/=[A-Z]+$/, '='));
      for (const flag of [o.long, o.short]) if (flag) values.set(flag, choices);
    }
    tree.set(path.join(' '), {
      commands: visible.map((c) => c.name()),
      options: [...options.flatMap((o) => [o.long, o.short]).filter((f): f is string => f !== undefined), '--help'],
      values,
      argumentChoices: cmd.registeredArguments.flatMap((a) => a.argChoices ?? []),
    });
    for (const c of visible) walk(c, [...path, c.name()]);
  };
  walk(program, []);
  return tree;
}

const quote = (words: string[]) => `(${words.join(' ')})`;

/**
 * The bash function: the deepest command the words so far name, then, for the word being typed:
 * after an option that takes a value, its choices, or nothing (bash then completes file names:
 * `complete -o default`); a word starting with "-", the command's options; else its subcommands,
 * or its arguments' choices, or nothing (file names again).
 */
export function bashCompletion(program: Command): string {
  const tree = commandTree(program);
  const cases = [...tree.entries()].map(([path, c]) => {
    const valueCases = [...c.values.entries()].map(([flag, choices]) => `${flag}) tend_words=${quote(choices)}; tend_value=1 ;;`);
    return [
      `    ${JSON.stringify(path)})`,
      `      tend_options=${quote(c.options)}`,
      `      tend_words=${quote(c.commands.length ? c.commands : c.argumentChoices)}`,
      ...(valueCases.length ? [`      case "$tend_prev" in ${valueCases.join(' ')} esac`] : []),
      '      ;;',
    ].join('\n');
  }).join('\n');
  return `# tend completion for bash: source <(tend completion bash), or save it under
# /etc/bash_completion.d/tend. Made from tend's own command tree.
# (Names are tend_-prefixed: zsh ties "path" to PATH and gives "words" a meaning of its own.)
_tend() {
  local tend_cur=\${COMP_WORDS[COMP_CWORD]} tend_prev=\${COMP_WORDS[COMP_CWORD-1]} tend_at="" tend_try tend_w tend_i tend_value=""
  local -a tend_words=() tend_options=()
  for ((tend_i = 1; tend_i < COMP_CWORD; tend_i++)); do
    tend_w=\${COMP_WORDS[tend_i]}
    [[ $tend_w == -* ]] && continue
    tend_try=\${tend_at:+$tend_at }$tend_w
    _tend_known "$tend_try" && tend_at=$tend_try
  done
  case "$tend_at" in
${cases}
  esac
  [[ -z $tend_value && $tend_cur == -* ]] && tend_words=("\${tend_options[@]}")
  COMPREPLY=()
  for tend_w in "\${tend_words[@]}"; do
    [[ $tend_w == "$tend_cur"* ]] && COMPREPLY+=("$tend_w")
  done
  return 0
}
_tend_known() {
  case "$1" in
    ${[...tree.keys()].filter((p) => p !== '').map((p) => JSON.stringify(p)).join('|')}) return 0 ;;
  esac
  return 1
}
complete -o default -F _tend tend
`;
}

export function completionScript(program: Command, shell: string): string {
  if (shell === 'bash') return bashCompletion(program);
  if (shell === 'zsh') {
    return `# tend completion for zsh: source <(tend completion zsh) in ~/.zshrc (after compinit).
autoload -U +X bashcompinit && bashcompinit
${bashCompletion(program)}`;
  }
  throw new UsageError(`completion: shell must be bash or zsh (got "${shell}")`);
}

export function registerCompletionCommand(program: Command): void {
  program
    .command('completion')
    .description('print a shell completion script: source <(tend completion bash), or zsh')
    .addArgument(new Argument('<shell>', 'bash or zsh').choices(['bash', 'zsh']))
    .action((shell: string) => {
      process.stdout.write(completionScript(program, shell));
    });
}
