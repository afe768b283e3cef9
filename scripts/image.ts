// `npm run image`: builds tend's container image from the Dockerfile, as it is, with docker where
// its daemon answers, else with podman (its settings from deploy/containers/containers.conf).
//
//   npm run image [-- --tag TAG]       (default tag: localhost/tend:<package.json version>)
//
// The base is the Dockerfile's NODE_IMAGE (or the environment's NODE_IMAGE). Where it is neither
// present nor can be pulled, a stand-in of the same Debian release and Node version is assembled
// here (mmdebstrap, and Node's binary from the npm registry's node-linux-<arch> package), tagged
// locally and passed as --build-arg NODE_IMAGE; stderr says so. The stand-in is kept for the next
// run, and an image labelled with the hash of the same sources, base and commit is not rebuilt.
// The last line of stdout is one JSON object:
//   {"image":"<ref>","id":"sha256:…","bytes":<uncompressed size>,"base":"<NODE_IMAGE>","standIn":true|false,
//    "sources":"<the hash of the sources, base and commit, also the image's label dev.tend.source>"}
// docs/image.md describes the image and the stand-in.
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const SOURCE_LABEL = 'dev.tend.source';
const BASE_LABEL = 'dev.tend.base-recipe';

/** What the build context holds (.dockerignore admits these), and the build's own files. */
const CONTEXT = ['Dockerfile', '.dockerignore', 'package.json', 'package-lock.json', 'bin', 'src', 'scripts/image-prune.ts'];

export interface Engine {
  command: 'docker' | 'podman';
  env: NodeJS.ProcessEnv;
}

/** docker when its daemon answers, else podman with the project's containers.conf. */
export function engine(): Engine {
  const docker = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'ignore', timeout: 15_000 });
  if (docker.status === 0) return { command: 'docker', env: process.env };
  return { command: 'podman', env: { ...process.env, CONTAINERS_CONF: join(root, 'deploy', 'containers', 'containers.conf') } };
}

export function fail(message: string): never {
  process.stderr.write(`image: ${message}\n`);
  process.exit(1);
}

/** Runs a command, its output to stderr (stdout stays for the result line); fails on a non-zero exit. */
export function run(command: string, args: string[], options: SpawnSyncOptions = {}): void {
  const r = spawnSync(command, args, { stdio: ['ignore', 2, 2], ...options });
  if (r.error) fail(`${command}: ${r.error.message}`);
  if (r.status !== 0) fail(`${[command, ...args].join(' ').slice(0, 200)} exited with ${r.status ?? r.signal}`);
}

export function output(command: string, args: string[], options: SpawnSyncOptions = {}): { ok: boolean; stdout: string } {
  const r = spawnSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options });
  return { ok: r.status === 0, stdout: String(r.stdout ?? '') };
}

interface ImageFacts { id: string; bytes: number; labels: Record<string, string> }

/** The local image `ref`, or undefined when there is none. */
export function inspect(e: Engine, ref: string): ImageFacts | undefined {
  let r = output(e.command, ['image', 'inspect', ref], { env: e.env });
  // A pulled name:tag@digest is found by name@digest where an engine does not keep both.
  const pinned = /^(.+):[^:/@]+(@sha256:[0-9a-f]{64})$/.exec(ref);
  if (!r.ok && pinned) r = output(e.command, ['image', 'inspect', `${pinned[1]}${pinned[2]}`], { env: e.env });
  if (!r.ok) return undefined;
  const [image] = JSON.parse(r.stdout) as { Id: string; Size: number; Config?: { Labels?: Record<string, string> | null } }[];
  if (!image) return undefined;
  return { id: image.Id.startsWith('sha256:') ? image.Id : `sha256:${image.Id}`, bytes: image.Size, labels: image.Config?.Labels ?? {} };
}

/** The Dockerfile's default NODE_IMAGE, and the Node version and Debian release its tag names. */
export function pinnedBase(dockerfile: string): { ref: string; node: string; debian: string } {
  const ref = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1];
  if (!ref) fail('the Dockerfile has no `ARG NODE_IMAGE=<image>` line');
  const tag = /^(?:[\w.-]+\/)*node:(\d+\.\d+\.\d+)-([a-z]+)(?:-slim)?(?:@sha256:[0-9a-f]{64})?$/.exec(ref);
  if (!tag) fail(`the Dockerfile's NODE_IMAGE ${ref} is not node:<X.Y.Z>-<debian release>[-slim][@digest]`);
  return { ref, node: tag[1]!, debian: tag[2]! };
}

/** A hash of every file of the build context and of what else the image is built from. */
export function sourceHash(extra: string[]): string {
  const hash = createHash('sha256');
  const add = (path: string) => {
    const entries = readdirSync(path, { withFileTypes: true, recursive: true })
      .filter((d) => d.isFile()).map((d) => join(d.parentPath, d.name)).sort();
    for (const file of entries) hash.update(`${relative(root, file)}\0`).update(readFileSync(file)).update('\0');
  };
  for (const name of CONTEXT) {
    const path = join(root, name);
    if (statSync(path).isDirectory()) add(path);
    else hash.update(`${name}\0`).update(readFileSync(path)).update('\0');
  }
  for (const x of extra) hash.update(`${x}\0`);
  return hash.digest('hex');
}

/** The npm version Node `version` ships, from the release notes inside its npm package. */
function bundledNpm(changelog: string, version: string): string {
  const at = changelog.indexOf(`<a id="${version}"></a>`);
  const m = at < 0 ? null : /upgrade npm to (\d+\.\d+\.\d+)/.exec(changelog.slice(at));
  if (!m) fail(`cannot tell which npm Node ${version} ships (its CHANGELOG.md names no npm upgrade at or before it)`);
  return m[1]!;
}

/** Unpacks npm package `spec` from the npm registry (npm checks its integrity) into `dir`/package. */
function npmPackage(spec: string, dir: string): string {
  const r = output('npm', ['pack', spec, '--pack-destination', dir, '--silent']);
  if (!r.ok) fail(`npm pack ${spec} failed`);
  const file = join(dir, r.stdout.trim().split('\n').pop()!);
  const into = join(dir, spec.replace(/[^\w.-]/g, '_'));
  run('mkdir', ['-p', into]);
  run('tar', ['-xzf', file, '-C', into]);
  return join(into, 'package');
}

/**
 * A stand-in for node:<node>-<debian>-slim: Debian `debian` (mmdebstrap, minbase, docs and man
 * pages left out as in Debian's slim images), Node's binary and the npm it ships in /usr/local,
 * and the user `node` (uid and gid 1000, home /home/node), as the official image has them.
 */
function standIn(e: Engine, base: { node: string; debian: string }): string {
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch as string];
  if (!arch) fail(`no Node package for ${process.arch}`);
  const tag = `localhost/tend-node:${base.node}-${base.debian}-slim`;
  // This function and what it calls are the recipe: a change to them makes a new stand-in.
  const recipe = createHash('sha256').update([standIn, npmPackage, bundledNpm].map(String).join('\n'))
    .update(`${base.node} ${base.debian} ${arch}`).digest('hex');
  const found = inspect(e, tag);
  if (found?.labels[BASE_LABEL] === recipe) {
    process.stderr.write(`image: the stand-in base ${tag} is built already\n`);
    return tag;
  }
  process.stderr.write(`image: assembling the stand-in base ${tag} (Debian ${base.debian}, Node ${base.node} from the npm registry's node-linux-${arch})\n`);
  const dir = mkdtempSync(join(tmpdir(), 'tend-node-base-'));
  try {
    const node = npmPackage(`node-linux-${arch}@${base.node}`, dir);
    const npmVersion = bundledNpm(readFileSync(join(node, 'CHANGELOG.md'), 'utf8'), base.node);
    const npm = npmPackage(`npm@${npmVersion}`, dir);
    const rootfs = join(dir, 'rootfs.tar');
    const slim = ['/usr/share/doc/*', '/usr/share/man/*', '/usr/share/info/*', '/usr/share/groff/*', '/usr/share/lintian/*', '/usr/share/locale/*'];
    const mirror = 'http://deb.debian.org/debian';
    run('mmdebstrap', [
      // merged /usr made by mmdebstrap itself, as debootstrap does: no usrmerge, hence no perl.
      '--variant=minbase', '--mode=root', '--format=tar', '--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr',
      ...slim.map((p) => `--dpkgopt=path-exclude=${p}`),
      '--dpkgopt=path-include=/usr/share/doc/*/copyright',
      `--customize-hook=install -m 0755 '${join(node, 'bin', 'node')}' "$1/usr/local/bin/node"`,
      `--customize-hook=mkdir -p "$1/usr/local/lib/node_modules" && cp -a '${npm}' "$1/usr/local/lib/node_modules/npm"`,
      '--customize-hook=ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"',
      '--customize-hook=chroot "$1" groupadd --gid 1000 node && chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node',
      base.debian, rootfs,
      `deb ${mirror} ${base.debian} main`, `deb ${mirror} ${base.debian}-updates main`, `deb ${mirror}-security ${base.debian}-security main`,
    ], { env: { ...process.env, LC_ALL: 'C.UTF-8' } });
    run(e.command, [
      'import',
      '--change', `ENV NODE_VERSION=${base.node}`,
      '--change', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      '--change', `LABEL ${BASE_LABEL}=${recipe}`,
      '--change', 'CMD ["node"]',
      rootfs, tag,
    ], { env: e.env });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const made = inspect(e, tag);
  if (made?.labels[BASE_LABEL] !== recipe) fail(`${tag} was imported without its label`);
  process.stderr.write(`image: built the stand-in base ${tag} (${Math.round(made.bytes / 1e6)} MB)\n`);
  return tag;
}

/** The base to build on: NODE_IMAGE when present or pullable, else the stand-in. */
export function base(e: Engine, dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8')): { ref: string; standIn: boolean } {
  const pinned = pinnedBase(dockerfile);
  const wanted = process.env.NODE_IMAGE || pinned.ref;
  if (inspect(e, wanted)) return { ref: wanted, standIn: false };
  const pull = spawnSync(e.command, ['pull', wanted], { env: e.env, stdio: ['ignore', 2, 2], timeout: 300_000 });
  if (pull.status === 0) return { ref: wanted, standIn: false };
  if (process.env.NODE_IMAGE) fail(`NODE_IMAGE ${wanted} is not here and cannot be pulled`);
  process.stderr.write(`image: ${wanted} cannot be pulled here; building on a stand-in of the same Debian release and Node version instead\n`);
  return { ref: standIn(e, pinned), standIn: true };
}

function main(): void {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const { values } = parseArgs({ options: { tag: { type: 'string', default: `localhost/tend:${pkg.version}` } } });
  const tag = values.tag!;
  const e = engine();
  process.stderr.write(`image: building with ${e.command}\n`);
  const from = base(e);
  const baseId = inspect(e, from.ref)?.id ?? fail(`${from.ref} is not here`);
  const commit = output('git', ['rev-parse', 'HEAD'], { cwd: root });
  const commitId = commit.ok ? commit.stdout.trim() : '';
  if (!commitId) process.stderr.write('image: not a git checkout: the image gets no COMMIT file\n');
  const hash = sourceHash([baseId, commitId]);

  const existing = inspect(e, tag);
  if (existing?.labels[SOURCE_LABEL] === hash) {
    process.stderr.write(`image: ${tag} is built already from these sources\n`);
  } else {
    const started = Date.now();
    // A proxy's CA bundle for npm in the build, as a secret (it stays out of the image).
    const ca = process.env.NODE_EXTRA_CA_CERTS;
    const secret = ca && existsSync(ca) ? ['--secret', `id=ca,src=${ca}`] : [];
    run('nice', ['-n', '10', e.command, 'build', ...secret,
      '--build-arg', `NODE_IMAGE=${from.ref}`, '--build-arg', `TEND_COMMIT=${commitId}`,
      '--label', `${SOURCE_LABEL}=${hash}`, '--tag', tag, '--file', join(root, 'Dockerfile'), root,
    ], { env: e.env });
    process.stderr.write(`image: built ${tag} in ${Math.round((Date.now() - started) / 1000)} s\n`);
  }
  const built = inspect(e, tag) ?? fail(`${tag} is not there after the build`);
  console.log(JSON.stringify({ image: tag, id: built.id, bytes: built.bytes, base: from.ref, standIn: from.standIn, sources: hash }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
