// `npm run release -- X.Y.Z`: makes tend's release X.Y.Z from a clean checkout (docs/release.md).
//
//   npm run release -- X.Y.Z [--registry HOST[/PATH]] [--skip-image] [--skip-chart]
//
//   1. Refuses (exit 2, nothing changed) a version that is not semantic or not above
//      package.json's, a work tree with changes, an existing tag vX.Y.Z, an empty Unreleased.
//   2. The release commit: package.json's and package-lock.json's version, CHANGELOG.md's
//      Unreleased moved under "## [X.Y.Z] - date", the chart's version and appVersion.
//   3. From that commit: the workflow bundle; the npm tarball tend-X.Y.Z.tgz (a COMMIT file in it);
//      the image localhost/tend:X.Y.Z (scripts/image.ts), saved to tend-image-X.Y.Z.tar, and pushed
//      when --registry is given (only then is its registry digest known).
//   4. The image's reference (tag, and digest when pushed) written into the chart's values and
//      deploy/kubernetes/kustomization.yaml's images:, the chart packaged (tend-chart-X.Y.Z.tgz),
//      a second commit, the tag vX.Y.Z.
//   5. dist/release/X.Y.Z/: the artifacts, image.json, SHA256SUMS. The last line of stdout is JSON.
//
// With SOURCE_DATE_EPOCH set, the changelog's date and both commits' dates come from it, so that
// releasing the same tree again gives the same commits, the same COMMIT and the same tarball.
// --skip-image and --skip-chart leave those parts out (for a machine without podman or helm).
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isMap, isSeq, parseDocument, YAMLMap } from 'yaml';

const root = fileURLToPath(new URL('..', import.meta.url));

export class ReleaseRefusal extends Error {}

// ---------------------------------------------------------------------------------------------
// Semantic versions (semver.org 2.0.0): MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD].
// ---------------------------------------------------------------------------------------------
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

export interface Version { major: number; minor: number; patch: number; prerelease: string[] }

export function parseVersion(text: string): Version | undefined {
  const m = SEMVER.exec(text);
  if (!m) return undefined;
  const numbers = [m[1], m[2], m[3]].map(Number);
  if (!numbers.every(Number.isSafeInteger)) return undefined;
  return { major: numbers[0]!, minor: numbers[1]!, patch: numbers[2]!, prerelease: m[4] ? m[4].split('.') : [] };
}

/** Semver precedence: negative when a comes before b, 0 when equal (build metadata does not count). */
export function compareVersions(a: Version, b: Version): number {
  for (const k of ['major', 'minor', 'patch'] as const) if (a[k] !== b[k]) return a[k] - b[k];
  // A version without a pre-release comes after the same version with one.
  if (a.prerelease.length === 0 || b.prerelease.length === 0) return b.prerelease.length - a.prerelease.length;
  for (let i = 0; i < Math.min(a.prerelease.length, b.prerelease.length); i++) {
    const [x, y] = [a.prerelease[i]!, b.prerelease[i]!];
    if (x === y) continue;
    const [xn, yn] = [/^\d+$/.test(x), /^\d+$/.test(y)];
    if (xn && yn) return Number(x) - Number(y);
    if (xn !== yn) return xn ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return a.prerelease.length - b.prerelease.length;
}

/** Why `wanted` cannot be released after `current`, or undefined. */
export function versionProblem(wanted: string, current: string): string | undefined {
  const w = parseVersion(wanted);
  if (!w) return `"${wanted.slice(0, 80)}" is not a semantic version (MAJOR.MINOR.PATCH, like 0.2.0 or 1.0.0-rc.1; semver.org)`;
  const c = parseVersion(current);
  if (!c) return `package.json's version "${current.slice(0, 80)}" is not a semantic version: set it right first`;
  if (compareVersions(w, c) <= 0) return `${wanted} is not above package.json's version ${current}`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// CHANGELOG.md (Keep a Changelog): the Unreleased section becomes the version's.
// ---------------------------------------------------------------------------------------------

/** The changelog with Unreleased's content under `## [version] - date` and Unreleased left empty; or what is wrong. */
export function moveUnreleased(changelog: string, version: string, date: string): { text: string } | { problem: string } {
  const heading = /^## \[Unreleased\][^\n]*\n/m.exec(changelog);
  if (!heading) return { problem: 'CHANGELOG.md has no "## [Unreleased]" section' };
  const start = heading.index + heading[0].length;
  const next = /^## \[/m.exec(changelog.slice(start));
  const end = next ? start + next.index : changelog.length;
  const content = changelog.slice(start, end).trim();
  if (content === '') return { problem: 'CHANGELOG.md\'s Unreleased section is empty: say what changed first' };
  if (new RegExp(`^## \\[${version.replace(/[.+]/g, '\\$&')}\\]`, 'm').test(changelog)) return { problem: `CHANGELOG.md has a section for ${version} already` };
  const rest = changelog.slice(end);
  return { text: `${changelog.slice(0, start)}\n## [${version}] - ${date}\n\n${content}\n${rest ? `\n${rest}` : ''}` };
}

// ---------------------------------------------------------------------------------------------
// Where the image is named: the chart's values and the kustomization's images:.
// ---------------------------------------------------------------------------------------------
/** The YAML files' own form: long lines not folded, flow sequences unpadded. */
const KEEP_FORM = { lineWidth: 0, flowCollectionPadding: false } as const;

export interface ImageRef { repository: string; tag: string; digest?: string }

/** The chart's values.yaml with image.repository, .tag and .digest set; its comments kept. */
export function chartValuesWith(text: string, image: ImageRef): string {
  const doc = parseDocument(text);
  doc.setIn(['image', 'repository'], image.repository);
  doc.setIn(['image', 'tag'], image.tag);
  doc.setIn(['image', 'digest'], image.digest ?? '');
  return doc.toString(KEEP_FORM);
}

/** The chart's Chart.yaml with version and appVersion set; its comments kept. */
export function chartWithVersion(text: string, version: string): string {
  const doc = parseDocument(text);
  doc.set('version', version);
  doc.set('appVersion', version);
  return doc.toString(KEEP_FORM);
}

/** The kustomization with its images: entry for `tend` (the Deployment's image name) naming `image`. */
export function kustomizationWith(text: string, image: ImageRef): string {
  const doc = parseDocument(text);
  const entry = new YAMLMap();
  entry.set('name', 'tend');
  entry.set('newName', image.repository);
  entry.set('newTag', image.tag);
  if (image.digest) entry.set('digest', image.digest);
  const images = doc.get('images');
  if (isSeq(images)) {
    const at = images.items.findIndex((i) => isMap(i) && i.get('name') === 'tend');
    if (at >= 0) images.items[at] = entry;
    else images.items.push(entry);
  } else {
    doc.set('images', doc.createNode([entry]));
    const set = doc.get('images');
    if (isSeq(set)) set.commentBefore = ' The image of this release (npm run release, docs/release.md): by digest when it was pushed.';
  }
  return doc.toString(KEEP_FORM);
}

/** SHA256SUMS: a line per file, as sha256sum writes it (`sha256sum -c SHA256SUMS` checks them). */
export function sha256sums(dir: string, files: readonly string[]): string {
  return [...files].sort().map((f) => `${createHash('sha256').update(readFileSync(join(dir, f))).digest('hex')}  ${f}\n`).join('');
}

// ---------------------------------------------------------------------------------------------
// The release.
// ---------------------------------------------------------------------------------------------
function say(message: string) {
  process.stderr.write(`release: ${message}\n`);
}

function run(command: string, args: string[], options: SpawnSyncOptions = {}): string {
  const r = spawnSync(command, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024, ...options });
  if (r.error) throw new Error(`${command}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${[command, ...args].join(' ').slice(0, 300)} exited with ${r.status ?? r.signal}`);
  return String(r.stdout ?? '');
}

const git = (args: string[], env?: NodeJS.ProcessEnv) => run('git', args, env ? { env } : {}).trim();

/** The environment of the release's commits: their dates from SOURCE_DATE_EPOCH when set. */
function commitEnv(epoch: string | undefined): NodeJS.ProcessEnv {
  if (!epoch) return process.env;
  const date = `@${epoch} +0000`;
  return { ...process.env, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
}

const CHART = join(root, 'deploy', 'helm', 'tend');
const KUSTOMIZATION = join(root, 'deploy', 'kubernetes', 'kustomization.yaml');

/** What the npm tarball holds, from the release commit: what tend runs on (docs/release.md, "The npm tarball"). */
const PACKED = ['bin', 'src', 'package.json', 'README.md', 'LICENSE', 'CHANGELOG.md'];

interface Options { version: string; registry?: string; skipImage: boolean; skipChart: boolean }

function parseOptions(argv: string[]): Options {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv, allowPositionals: true,
      options: { registry: { type: 'string' }, 'skip-image': { type: 'boolean', default: false }, 'skip-chart': { type: 'boolean', default: false } },
    });
  } catch (err) {
    throw new ReleaseRefusal(`${(err as Error).message} (usage: npm run release -- X.Y.Z [--registry HOST[/PATH]] [--skip-image] [--skip-chart])`);
  }
  const [version, ...extra] = parsed.positionals;
  if (!version || extra.length > 0) throw new ReleaseRefusal('give one version: npm run release -- X.Y.Z');
  const { registry } = parsed.values;
  if (registry !== undefined && !/^[a-z0-9.-]+(:\d+)?(\/[a-z0-9._-]+)*$/.test(registry)) {
    throw new ReleaseRefusal(`--registry must be HOST[:PORT][/PATH], like registry.example.com/platform (got "${registry.slice(0, 80)}")`);
  }
  if (registry !== undefined && parsed.values['skip-image']) throw new ReleaseRefusal('--registry pushes the image: not with --skip-image');
  return { version, ...(registry !== undefined && { registry }), skipImage: parsed.values['skip-image']!, skipChart: parsed.values['skip-chart']! };
}

/** Every check that can refuse, before anything is changed. */
function check(o: Options, date: string): { changelog: string; pkg: { version: string } } {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const problem = versionProblem(o.version, pkg.version);
  if (problem) throw new ReleaseRefusal(problem);
  const changed = git(['status', '--porcelain']);
  if (changed) throw new ReleaseRefusal(`the work tree has changes (git status): a release is built from a commit; commit them first\n${changed.split('\n').slice(0, 10).join('\n')}`);
  if (git(['tag', '--list', `v${o.version}`])) throw new ReleaseRefusal(`tag v${o.version} exists already`);
  if (!o.skipChart && !existsSync(join(CHART, 'Chart.yaml'))) throw new ReleaseRefusal(`no chart at ${relative(root, CHART)}: give --skip-chart`);
  const moved = moveUnreleased(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'), o.version, date);
  if ('problem' in moved) throw new ReleaseRefusal(moved.problem);
  return { changelog: moved.text, pkg };
}

function setVersion(file: string, version: string, lock: boolean) {
  const data = JSON.parse(readFileSync(file, 'utf8')) as { version: string; packages?: Record<string, { version?: string }> };
  data.version = version;
  if (lock && data.packages?.['']) data.packages[''].version = version;
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
}

/** The npm tarball, from the release commit's files (nothing uncommitted), with the bundle and COMMIT. */
function pack(out: string, commit: string): string {
  const stage = join(out, '.pack');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  run('bash', ['-c', 'set -o pipefail; c=$1; shift; git archive --format=tar "$c" -- "$@" | tar -x -C "$0"', stage, commit, ...PACKED]);
  // The dependencies the release was tested with, pinned for `npm install -g` (npm packs no package-lock.json).
  cpSync(join(root, 'package-lock.json'), join(stage, 'npm-shrinkwrap.json'));
  mkdirSync(join(stage, 'dist'));
  for (const f of ['workflow-bundle.js', 'workflow-bundle.fingerprint']) cpSync(join(root, 'dist', f), join(stage, 'dist', f));
  writeFileSync(join(stage, 'COMMIT'), `${commit}\n`);
  const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', out], { cwd: stage })) as { filename: string }[];
  rmSync(stage, { recursive: true, force: true });
  return packed[0]!.filename;
}

async function buildImage(o: Options, out: string): Promise<{ ref: ImageRef; facts: Record<string, unknown>; archive: string }> {
  const local = `localhost/tend:${o.version}`;
  const lines = run(process.execPath, [join(root, 'scripts', 'image.ts'), '--tag', local]).trim().split('\n');
  const facts = JSON.parse(lines[lines.length - 1]!) as { image: string; id: string; bytes: number };
  const { engine } = await import('./image.ts');
  const e = engine();
  const archive = `tend-image-${o.version}.tar`;
  say(`saving ${local} to ${archive}`);
  rmSync(join(out, archive), { force: true });
  run(e.command, ['save', '--format', 'oci-archive', '--output', join(out, archive), local], { env: e.env });
  if (!o.registry) return { ref: { repository: 'localhost/tend', tag: o.version }, facts, archive };
  const remote = `${o.registry}/tend:${o.version}`;
  const digestFile = join(out, '.digest');
  run(e.command, ['tag', local, remote], { env: e.env });
  say(`pushing ${remote}`);
  run(e.command, ['push', '--digestfile', digestFile, remote], { env: e.env });
  const digest = readFileSync(digestFile, 'utf8').trim();
  rmSync(digestFile);
  return { ref: { repository: `${o.registry}/tend`, tag: o.version, digest }, facts: { ...facts, pushed: remote, digest }, archive };
}

async function release(o: Options): Promise<Record<string, unknown>> {
  const epoch = process.env.SOURCE_DATE_EPOCH;
  if (epoch !== undefined && !/^\d+$/.test(epoch)) throw new ReleaseRefusal(`SOURCE_DATE_EPOCH must be whole seconds since 1970 (got "${epoch.slice(0, 40)}")`);
  const date = new Date(epoch ? Number(epoch) * 1000 : Date.now()).toISOString().slice(0, 10);
  const { changelog } = check(o, date);
  const env = commitEnv(epoch);

  say(`release commit for ${o.version}`);
  setVersion(join(root, 'package.json'), o.version, false);
  setVersion(join(root, 'package-lock.json'), o.version, true);
  writeFileSync(join(root, 'CHANGELOG.md'), changelog);
  const bumped = ['package.json', 'package-lock.json', 'CHANGELOG.md'];
  if (!o.skipChart) {
    const chart = join(CHART, 'Chart.yaml');
    writeFileSync(chart, chartWithVersion(readFileSync(chart, 'utf8'), o.version));
    bumped.push(relative(root, chart));
  }
  git(['commit', '--quiet', '-m', `Release ${o.version}`, '--', ...bumped], env);
  const commit = git(['rev-parse', 'HEAD']);

  const out = join(root, 'dist', 'release', o.version);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  say('bundling the workflows');
  run(process.execPath, [join(root, 'scripts', 'bundle-workflows.ts')]);
  say('packing the npm tarball');
  const files = [pack(out, commit)];

  let image: Awaited<ReturnType<typeof buildImage>> | undefined;
  if (!o.skipImage) {
    say(`building the image localhost/tend:${o.version}`);
    image = await buildImage(o, out);
    files.push(image.archive);
    writeFileSync(join(out, 'image.json'), `${JSON.stringify(image.facts, null, 2)}\n`);
    files.push('image.json');
    const placed = [relative(root, KUSTOMIZATION)];
    writeFileSync(KUSTOMIZATION, kustomizationWith(readFileSync(KUSTOMIZATION, 'utf8'), image.ref));
    if (!o.skipChart) {
      const values = join(CHART, 'values.yaml');
      writeFileSync(values, chartValuesWith(readFileSync(values, 'utf8'), image.ref));
      placed.push(relative(root, values));
    }
    git(['commit', '--quiet', '-m', `Release ${o.version}: deploy/ runs ${image.ref.repository}:${image.ref.tag}${image.ref.digest ? `@${image.ref.digest}` : ''}`, '--', ...placed], env);
  }
  if (!o.skipChart) {
    say('packaging the chart');
    const helm = run(join(root, 'scripts', 'binaries.sh'), ['--helm']).trim().split('\n').pop()!;
    const stage = join(out, '.chart');
    rmSync(stage, { recursive: true, force: true });
    run(helm, ['package', CHART, '--destination', stage]);
    const [made] = readdirSync(stage);
    const chartFile = `tend-chart-${o.version}.tgz`;
    cpSync(join(stage, made!), join(out, chartFile));
    rmSync(stage, { recursive: true, force: true });
    files.push(chartFile);
  }
  git(['tag', `v${o.version}`]);
  writeFileSync(join(out, 'SHA256SUMS'), sha256sums(out, files));
  return {
    version: o.version, commit, tag: `v${o.version}`, dir: out, files: [...files, 'SHA256SUMS'],
    ...(image && { image: `${image.ref.repository}:${image.ref.tag}${image.ref.digest ? `@${image.ref.digest}` : ''}`, imageId: image.facts.id }),
  };
}

async function main(): Promise<number> {
  try {
    const result = await release(parseOptions(process.argv.slice(2)));
    say(`done: ${result.dir as string}`);
    console.log(JSON.stringify(result));
    return 0;
  } catch (err) {
    if (err instanceof ReleaseRefusal) {
      process.stderr.write(`release: refused: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`release: failed: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();

