// `tend completion bash|zsh`: a completion script made from the CLI's own command tree, so it
// never falls behind the commands. zsh loads the bash function through bashcompinit.
import { type Command } from 'commander';
import { UsageError } from './cli-support.ts';

/** Every command path ("" for tend itself, "repair-queue add", ...) with its subcommands and options. */
export function commandTree(program: Command): Map<string, { commands: string[]; options: string[] }> {
  const tree = new Map<string, { commands: string[]; options: string[] }>();
  const walk = (cmd: Command, path: string[]) => {
    const visible = cmd.commands.filter((c) => c.name() !== 'help');
    tree.set(path.join(' '), {
      commands: visible.map((c) => c.name()),
      options: [...cmd.options.flatMap((o) => [o.long, o.short]).filter((f): f is string => f !== undefined), '--help'],
    });
    for (const c of visible) walk(c, [...path, c.name()]);
  };
  walk(program, []);
  return tree;
}

const quote = (words: string[]) => `(${words.join(' ')})`;

/** The bash function: the deepest command the words so far name, then its subcommands and options. */
export function bashCompletion(program: Command): string {
  const tree = commandTree(program);
  const cases = [...tree.entries()].map(([path, { commands, options }]) =>
    `    ${JSON.stringify(path)}) tend_words=${quote([...commands, ...options])} ;;`).join('\n');
  return `# tend completion for bash: source <(tend completion bash), or save it under
# /etc/bash_completion.d/tend. Made from tend's own command tree.
# (Names are tend_-prefixed: zsh ties "path" to PATH and gives "words" a meaning of its own.)
_tend() {
  local tend_cur=\${COMP_WORDS[COMP_CWORD]} tend_at="" tend_try tend_w tend_i
  local -a tend_words=()
  for ((tend_i = 1; tend_i < COMP_CWORD; tend_i++)); do
    tend_w=\${COMP_WORDS[tend_i]}
    [[ $tend_w == -* ]] && continue
    tend_try=\${tend_at:+$tend_at }$tend_w
    _tend_known "$tend_try" && tend_at=$tend_try
  done
  case "$tend_at" in
${cases}
  esac
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
complete -F _tend tend
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
    .argument('<shell>', 'bash or zsh')
    .action((shell: string) => {
      process.stdout.write(completionScript(program, shell));
    });
}
