// src/version.ts: where `tend --version` finds the commit tend was built from, in order: TEND_COMMIT,
// the package's COMMIT file, the checkout's git, else "unknown".
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chooseCommit, gitCommit, tendCommit, type CommitSources } from '../../src/version.ts';

describe('chooseCommit: the first source that has a commit', () => {
  const rows: { name: string; env?: string; file?: string; git?: string; want: string; asked: string[] }[] = [
    { name: 'TEND_COMMIT first; the others not even asked', env: 'e1', file: 'f1', git: 'g1', want: 'e1', asked: ['env'] },
    { name: 'the COMMIT file when TEND_COMMIT is unset', file: 'f1\n', git: 'g1', want: 'f1', asked: ['env', 'file'] },
    { name: 'an empty TEND_COMMIT counts as unset', env: '', file: 'f1', want: 'f1', asked: ['env', 'file'] },
    { name: 'git when neither', git: 'g1-dirty\n', want: 'g1-dirty', asked: ['env', 'file', 'git'] },
    { name: 'an empty COMMIT file (an image built without one) counts as none', file: '  \n', git: 'g1', want: 'g1', asked: ['env', 'file', 'git'] },
    { name: '"unknown" when none has one', want: 'unknown', asked: ['env', 'file', 'git'] },
    { name: 'the first line only, trimmed', env: '  abc123 \nsecond line', want: 'abc123', asked: ['env'] },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const asked: string[] = [];
      const source = (name: keyof CommitSources, value: string | undefined) => () => {
        asked.push(name);
        return value;
      };
      assert.equal(chooseCommit({ env: source('env', row.env), file: source('file', row.file), git: source('git', row.git) }), row.want);
      assert.deepEqual(asked, row.asked);
    });
  }

  it('a value past 70 characters is cut there', () => {
    assert.equal(chooseCommit({ env: () => 'a'.repeat(500), file: () => undefined, git: () => undefined }), 'a'.repeat(70));
  });
});

describe('gitCommit and tendCommit on real folders', () => {
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
  const checkout = () => {
    const dir = mkdtempSync(join(tmpdir(), 'tend-version-'));
    git(dir, 'init', '-q');
    writeFileSync(join(dir, 'package.json'), '{"version":"1.2.3"}\n');
    git(dir, 'add', 'package.json');
    git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'one');
    return dir;
  };

  it('a clean checkout: its commit, 12 hex digits; a changed tracked file adds -dirty', () => {
    const dir = checkout();
    const head = git(dir, 'rev-parse', 'HEAD');
    assert.equal(gitCommit(dir), head.slice(0, 12));
    writeFileSync(join(dir, 'package.json'), '{"version":"1.2.4"}\n');
    assert.equal(gitCommit(dir), `${head.slice(0, 12)}-dirty`);
  });

  it('a tag on the commit does not replace its id', () => {
    const dir = checkout();
    git(dir, 'tag', 'v1.2.3');
    assert.equal(gitCommit(dir), git(dir, 'rev-parse', 'HEAD').slice(0, 12));
  });

  it('a package folder inside another checkout is not that checkout: no git commit, "unknown"', () => {
    const outer = checkout();
    const installed = join(outer, 'lib', 'node_modules', 'tend');
    mkdirSync(installed, { recursive: true });
    assert.equal(gitCommit(installed), undefined);
    assert.equal(tendCommit(installed, {}), 'unknown');
  });

  it('the COMMIT file beside package.json wins over git, and TEND_COMMIT over both', () => {
    const dir = checkout();
    writeFileSync(join(dir, 'COMMIT'), 'feedface\n');
    assert.equal(tendCommit(dir, {}), 'feedface');
    assert.equal(tendCommit(dir, { TEND_COMMIT: 'cafe01' }), 'cafe01');
  });
});
