// tend's version and the commit it was built from, for `tend --version` (docs/release.md).
// The commit is read from, in order: the environment variable TEND_COMMIT; a file COMMIT at the
// package root, next to package.json (the image's /app/COMMIT, the release tarball's); `git
// describe` when tend runs from a checkout (a short id, with -dirty when tracked files changed);
// else "unknown".
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root: the folder of tend's package.json (a checkout, /app in the image, or the installed package). */
export const packageRoot = fileURLToPath(new URL('..', import.meta.url));

/** The most of a commit that is shown: a full SHA-256 object id and "-dirty". */
const COMMIT_MAX = 70;

/** Where the commit may be found, each asked only when the ones before it gave nothing. */
export interface CommitSources {
  env: () => string | undefined;
  file: () => string | undefined;
  git: () => string | undefined;
}

/**
 * The commit the first source that has one gives: its first line, trimmed, at most COMMIT_MAX
 * characters; "unknown" when none has one. An empty value (a COMMIT file written with nothing, an
 * unset variable) counts as none.
 */
export function chooseCommit(sources: CommitSources): string {
  for (const source of [sources.env, sources.file, sources.git]) {
    const line = source()?.split('\n')[0]?.trim();
    if (line) return line.slice(0, COMMIT_MAX);
  }
  return 'unknown';
}

/** The file's text; undefined when it cannot be read. */
function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * The commit of the checkout at `root`, short, with -dirty when a tracked file differs from it; one
 * git process. Only where `root` is itself a checkout (has .git): an installed package under some
 * other repository must not report that repository's commit. Undefined without git or a checkout.
 */
export function gitCommit(root: string): string | undefined {
  if (!existsSync(join(root, '.git'))) return undefined;
  try {
    // --exclude '*': no tag name, the commit id alone (--always), whatever tags the checkout has.
    return execFileSync('git', ['describe', '--always', '--dirty', '--abbrev=12', '--exclude', '*'], {
      cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5_000,
    }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The commit this tend was built from (see the file's header). */
export function tendCommit(root = packageRoot, env: NodeJS.ProcessEnv = process.env): string {
  return chooseCommit({
    env: () => env.TEND_COMMIT,
    file: () => readIfPresent(join(root, 'COMMIT')),
    git: () => gitCommit(root),
  });
}

/** tend's version, from its package.json. */
export function tendVersion(root = packageRoot): string {
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}
