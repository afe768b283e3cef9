// Run by the Dockerfile's pruned stage, in /app, after `npm ci` (the workflow bundle is made in a
// stage of its own): takes out of node_modules what tend never loads in the image, and says how
// much went. docs/image.md says what and why; test/ship/image.test.ts runs the image through
// every capability.
//
//  - the Temporal core bridge's native libraries for other platforms (it ships five, ~28 MB each);
//    and its Rust sources, from which that library is built;
//  - type declarations, TypeScript sources, source maps, Markdown, and packages' tests, examples
//    and benchmarks (Node loads none of them from node_modules);
//  - bare-*: modules for the Bare runtime, which tar-fs, tar-stream and events-universal load only
//    under Bare's `bare` import condition;
//  - the workflow bundler's own machinery: the image's workers load the bundle made in the build
//    and never bundle. swc (with its native library) and every package that only webpack, swc-loader
//    or @swc/core need (package-lock.json's graph), and of webpack the files that importing
//    @temporalio/worker does not load (the worker's import of the SDK requires webpack's entry).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch } from 'node:os';
import { join, relative } from 'node:path';

const app = process.cwd();
const modules = join(app, 'node_modules');
const before = size(modules);

function size(path: string): number {
  return Number(execFileSync('du', ['-sb', '--apparent-size', path], { encoding: 'utf8' }).split('\t')[0]);
}

// The core bridge: this platform's library only.
const triple = { x64: 'x86_64-unknown-linux-gnu', arm64: 'aarch64-unknown-linux-gnu' }[arch() as string];
const releases = join(modules, '@temporalio', 'core-bridge', 'releases');
if (!triple || !existsSync(join(releases, triple, 'index.node'))) throw new Error(`the Temporal core bridge has no native library for ${arch()}`);
for (const platform of readdirSync(releases)) if (platform !== triple) rmSync(join(releases, platform), { recursive: true });
// Its Rust sources (sdk-core, src, bridge-macros, Cargo files) build that library; Node loads
// index.js, common.js, lib/ and the library alone.
const bridge = join(modules, '@temporalio', 'core-bridge');
for (const entry of readdirSync(bridge)) {
  if (!['index.js', 'common.js', 'lib', 'releases', 'package.json', 'LICENSE', 'LICENSE.md'].includes(entry)) rmSync(join(bridge, entry), { recursive: true });
}

// Packages only the bundler needs: not reachable from package.json's dependencies without passing
// through one of these.
const bundler = new Set(['webpack', 'swc-loader', '@swc/core']);
type Entry = { dev?: boolean; optional?: boolean; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string>; peerDependencies?: Record<string, string> };
const lock = (JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, Entry> }).packages;
const resolve = (from: string, name: string): string | undefined => {
  for (let base = from; ; base = base.includes('/node_modules/') ? base.slice(0, base.lastIndexOf('/node_modules/')) : '') {
    const path = `${base ? `${base}/` : ''}node_modules/${name}`;
    if (lock[path]) return path;
    if (!base) return undefined;
  }
};
const nameOf = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
const reached = new Set<string>();
const queue = Object.keys(lock['']?.dependencies ?? {}).map((n) => resolve('', n));
while (queue.length) {
  const path = queue.pop();
  if (!path || reached.has(path)) continue;
  reached.add(path);
  if (bundler.has(nameOf(path))) continue;
  const e = lock[path]!;
  for (const d of Object.keys({ ...e.dependencies, ...e.optionalDependencies, ...e.peerDependencies })) queue.push(resolve(path, d));
}
const gone: string[] = [];
for (const path of Object.keys(lock)) {
  const name = nameOf(path);
  const bundlerOnly = path && !lock[path]!.dev && !reached.has(path);
  if ((bundlerOnly || name === 'swc-loader' || name.startsWith('@swc/core') || name.startsWith('bare-')) && existsSync(join(app, path))) {
    rmSync(join(app, path), { recursive: true });
    gone.push(name);
  }
}

// webpack: what importing the SDK's worker package loads of it stays.
const require = createRequire(join(app, 'package.json'));
require('@temporalio/worker');
const webpack = join(modules, 'webpack');
const loaded = new Set(Object.keys(require.cache).filter((f) => f.startsWith(`${webpack}/`)));
if (loaded.size === 0) throw new Error('importing @temporalio/worker loaded nothing of webpack: the prune rule is out of date');
for (const file of readdirSync(webpack, { recursive: true, encoding: 'utf8' }).map((f) => join(webpack, f))) {
  if (statSync(file).isFile() && !loaded.has(file) && relative(webpack, file) !== 'package.json' && !/^LICENSE/.test(relative(webpack, file))) rmSync(file);
}

// Declarations, sources, maps and Markdown; packages' tests, examples and benchmarks.
for (const file of readdirSync(modules, { recursive: true, encoding: 'utf8' })) {
  const path = join(modules, file);
  if (!existsSync(path)) continue; // in a folder removed just before
  if (/\.(d\.[cm]?ts|[cm]?ts|map|md)$/i.test(file) && statSync(path).isFile()) rmSync(path);
  else if (/(^|\/)(test|tests|__tests__|example|examples|benchmark|\.github)$/.test(file) && statSync(path).isDirectory()) rmSync(path, { recursive: true });
}

process.stdout.write(`image-prune: node_modules ${(before / 1e6).toFixed(1)} MB -> ${(size(modules) / 1e6).toFixed(1)} MB; ` +
  `kept the core bridge for ${triple}, ${loaded.size} files of webpack; removed ${gone.length} packages: ${gone.sort().join(' ')}\n`);
