// The documentation's rules (CONTRIBUTING.md, "Documentation"), over README.md, CONTRIBUTING.md and
// every page under docs/: a page has at most 300 lines, except the benchmark records under
// docs/bench/; no link or image points outside the repository (no http(s) or other scheme, no
// relative path that leaves it); every relative link names a file that exists, and a heading of
// it when it names one; every page is listed in docs/README.md, the index.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAX_LINES = 300;
const INDEX = 'docs/README.md';

/** Every Markdown file the rules cover, relative to the repository, `/`-separated. */
function pages(): string[] {
  const out = ['README.md', 'CONTRIBUTING.md'];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(repoRoot, dir)).sort()) {
      const path = `${dir}/${name}`;
      if (statSync(join(repoRoot, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) out.push(path);
    }
  };
  walk('docs');
  return out;
}

interface Link {
  target: string;
  line: number;
}

/**
 * The targets of a page's links and images: inline (`[t](x)`, `![a](x)`), reference definitions
 * (`[r]: x`), autolinks (`<https://...>`) and HTML `href`/`src`. Fenced code blocks and code spans
 * are not Markdown, so what they hold is left out.
 */
function linksOf(text: string): Link[] {
  const out: Link[] = [];
  for (const { raw, line } of proseLines(text)) {
    const prose = raw.replace(/(`+)[^`]*?\1/g, '');
    for (const m of prose.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1], line });
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(prose);
    if (definition) out.push({ target: definition[1], line });
    for (const m of prose.matchAll(/<((?:[a-z][a-z0-9+.-]*:|www\.)[^>\s]*)>/gi)) out.push({ target: m[1], line });
    for (const m of prose.matchAll(/\b(?:href|src)\s*=\s*["']([^"']*)["']/gi)) out.push({ target: m[1], line });
  }
  return out;
}

/** The lines of a page outside its fenced code blocks, each with its number. */
function proseLines(text: string): { raw: string; line: number }[] {
  const out: { raw: string; line: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, i) => {
    const opener = /^\s*(`{3,}|~{3,})/.exec(raw);
    if (fence) {
      if (opener && opener[1][0] === fence[0] && opener[1].length >= fence.length) fence = undefined;
    } else if (opener) {
      fence = opener[1];
    } else {
      out.push({ raw, line: i + 1 });
    }
  });
  return out;
}

/** The anchors a page's headings get on the code hosts: lower case, punctuation dropped, spaces as `-`, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { raw } of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (!heading) continue;
    const words = heading[1].replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = words.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** What is wrong with one link of `page`: outside the repository, a file that is not there, a heading it does not have. */
function linkProblem(page: string, target: string, read: (path: string) => string | undefined): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//') || /^www\./i.test(target)) return 'points outside the repository';
  if (target === '') return 'has no target';
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const file = path === '' ? page : relative(repoRoot, resolve(repoRoot, dirname(page), decodeURIComponent(path))).split(sep).join('/');
  if (file.startsWith('..') || path.startsWith('/')) return 'leaves the repository';
  if (!existsSync(join(repoRoot, file))) return `names ${file}, which does not exist`;
  if (anchor !== undefined && file.endsWith('.md')) {
    const text = read(file);
    if (text !== undefined && !anchorsOf(text).has(anchor.toLowerCase())) return `names a heading ${file} does not have (#${anchor})`;
  }
  return undefined;
}

const read = (path: string) => (existsSync(join(repoRoot, path)) && statSync(join(repoRoot, path)).isFile() ? readFileSync(join(repoRoot, path), 'utf8') : undefined);

describe('the documentation', () => {
  const all = pages();

  it('has no page over 300 lines, except the benchmark records under docs/bench/', () => {
    const long = all
      .filter((p) => !p.startsWith('docs/bench/'))
      .map((p) => ({ p, lines: read(p)!.replace(/\n$/, '').split('\n').length }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ p, lines }) => `${p}: ${lines} lines`);
    assert.deepEqual(long, []);
  });

  it('links nothing outside the repository, and every relative link (and its heading) exists', () => {
    const problems: string[] = [];
    for (const page of all) {
      for (const { target, line } of linksOf(read(page)!)) {
        const problem = linkProblem(page, target, read);
        if (problem) problems.push(`${page}:${line}: ${target} ${problem}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('lists every page under docs/ in docs/README.md', () => {
    const listed = new Set(linksOf(read(INDEX)!).map(({ target }) => relative(repoRoot, resolve(repoRoot, 'docs', target.split('#')[0])).split(sep).join('/')));
    const missing = all.filter((p) => p.startsWith('docs/') && p !== INDEX && !listed.has(p));
    assert.deepEqual(missing, []);
  });

  describe('its checks', () => {
    it('find links in prose, images, definitions, autolinks and HTML, and nothing in code', () => {
      const text = [
        'See [a](a.md#x) and ![b](img/b.png "b") and <https://example.org/c>.',
        '[d]: ../outside.md',
        'Inline `[not](http://code.example)` and <a href="http://e.example">e</a>.',
        '```sh',
        'curl [f](http://f.example)',
        '```',
        '[g](http://g.example)',
      ].join('\n');
      assert.deepEqual(linksOf(text), [
        { target: 'a.md#x', line: 1 },
        { target: 'img/b.png', line: 1 },
        { target: 'https://example.org/c', line: 1 },
        { target: '../outside.md', line: 2 },
        { target: 'http://e.example', line: 3 },
        { target: 'http://g.example', line: 7 },
      ]);
    });

    it('refuse a site, a path out of the repository, a missing file and a missing heading', () => {
      const none = () => undefined;
      assert.equal(linkProblem('docs/x.md', 'https://example.org', none), 'points outside the repository');
      assert.equal(linkProblem('docs/x.md', 'mailto:someone@example.org', none), 'points outside the repository');
      assert.equal(linkProblem('docs/x.md', '../../seeds/notes.md', none), 'leaves the repository');
      assert.equal(linkProblem('docs/x.md', 'no-such-page.md', none), 'names docs/no-such-page.md, which does not exist');
      const page = () => '# Title\n\n## Cost (Temporal actions)\n\n## Cost (Temporal actions)\n';
      assert.equal(linkProblem('docs/x.md', 'README.md#cost-temporal-actions-1', page), undefined);
      assert.equal(linkProblem('docs/x.md', 'README.md#costs', page), 'names a heading docs/README.md does not have (#costs)');
      assert.equal(linkProblem('docs/x.md', '../README.md', none), undefined);
    });

    it('name headings as the code hosts do', () => {
      assert.deepEqual([...anchorsOf('## Commands on a host of their own (`repair.taskQueue`)\n### `tend weeder list`\n# A, b & c\n')],
        ['commands-on-a-host-of-their-own-repairtaskqueue', 'tend-weeder-list', 'a-b--c']);
    });
  });
});
