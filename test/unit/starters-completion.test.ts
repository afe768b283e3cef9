// `tend completion bash|zsh`: the script, sourced in the real shell, completes tend's commands,
// subcommands and options from the words typed so far.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../../src/starters/cli.ts', import.meta.url));
const script = (shell: string) => execFileSync(process.execPath, [cli, 'completion', shell], { encoding: 'utf8' });

const cases: [string[], string[]][] = [
  [['tend', 'rep'], ['repair-queue']],
  [['tend', 'repair-queue', 'a'], ['add', 'add-file']],
  // Options and their values do not stop the walk down the tree.
  [['tend', '--config', 'x.yaml', 'repair-queue', 'add', '--c'], ['--config', '--config-map', '--context']],
  [['tend', 'pause', 's'], ['status']],
  // A command's arguments' choices; nothing for a file argument (bash then completes file names).
  [['tend', 'completion', ''], ['bash', 'zsh']],
  [['tend', 'config', 'validate', ''], []],
  [['tend', 'config', 'validate', '-'], ['--help']],
  // After an option that takes a value: its choices, or nothing (file names) for a free one.
  [['tend', 'app', 'status', 'demo/web', '-o', ''], ['table', 'wide', 'json', 'yaml', 'name', 'jsonpath=']],
  [['tend', 'weeder', 'list', '-o', 'j'], ['json', 'jsonpath=']],
  // -n takes a free value (a namespace): nothing offered; the walk goes on after it.
  [['tend', 'app', 'status', '-n', ''], []],
  [['tend', 'app', 'status', '-n', 'demo', 'web', '--nam'], ['--namespace']],
  [['tend', 'app', 'status', 'demo/web', '--output', 'y'], ['yaml']],
  [['tend', 'run', '--config', ''], []],
  [['tend', 'run', '--config', 'tend.yaml', '--'], ['--config', '--config-map', '--kubeconfig', '--context', '--http-address', '--help']],
  // Subcommands, not options, for a word that does not start with "-"; hidden options never.
  [['tend', 'pause', ''], ['status']],
  [['tend', 'app', 'status', 'demo/web', '--j'], []],
];

describe('tend completion', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tend-completion-'));
  for (const shell of ['bash', 'zsh'] as const) {
    it(`${shell}: completes commands, subcommands and options from the words so far`, () => {
      const file = join(dir, `tend.${shell}`);
      writeFileSync(file, script(shell));
      // zsh runs a bash completion function through bashcompinit, with bash's 0-based arrays (ksharrays).
      const prelude = shell === 'zsh' ? 'autoload -U compinit && compinit -u; ' : '';
      const call = (words: string[]) => `${shell === 'zsh' ? 'setopt ksharrays; ' : ''}COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); ` +
        `COMP_CWORD=${words.length - 1}; _tend; echo "\${COMPREPLY[*]}"`;
      const out = execFileSync(shell, shell === 'zsh' ? ['-f', '-c', `${prelude}source ${file}; ${cases.map(([w]) => call(w)).join('; ')}`]
        : ['-c', `source ${file}; ${cases.map(([w]) => call(w)).join('; ')}`], { encoding: 'utf8' });
      // One line per case, an empty one for no completions.
      const lines = out.split('\n');
      assert.equal(lines.length, cases.length + 1, out);
      assert.deepEqual(lines.slice(0, cases.length).map((l) => l.split(' ').filter(Boolean)), cases.map(([, want]) => want));
    });
  }
  it('another shell is a usage error (exit 2) naming the choices', () => {
    assert.throws(() => execFileSync(process.execPath, [cli, 'completion', 'fish'], { encoding: 'utf8', stdio: 'pipe' }),
      (err: { status: number; stderr: string }) => err.status === 2 && /value 'fish' is invalid for argument 'shell'\. Allowed choices are bash, zsh/.test(err.stderr));
  });
  it('bash falls back to file names where tend offers nothing (complete -o default)', () => {
    assert.match(script('bash'), /^complete -o default -F _tend tend$/m);
  });
});
