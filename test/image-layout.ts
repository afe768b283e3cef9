// Checks the container image's layout without a container engine: it lays out the runtime stage of
// the Dockerfile in a temporary folder (the files its COPY lines name, the dependencies installed
// by the deps stage's own RUN line), then, as an unprivileged user with Node 24 first on PATH (as
// the image's /usr/local/bin/node), runs `bin/tend --help` and `config validate`, and
// bundles the workflows the way the worker does at start-up (webpack and swc from production
// dependencies only).
//
//   node_modules/.bin/node test/image-layout.ts      (as root; about a minute with a warm npm cache)
//
// Exit 0 when every check passes; each failed check is printed. docs/deploy.md explains it.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const uid = Number(process.env.TEND_IMAGE_UID ?? 1000);

/** The instructions of one stage of the Dockerfile, continuation lines joined. */
export function stage(dockerfile: string, name: string): string[] {
  const lines = dockerfile.replace(/\\\n\s*/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const start = lines.findIndex((l) => new RegExp(`^FROM\\s+\\S+\\s+AS\\s+${name}$`, 'i').test(l));
  if (start < 0) throw new Error(`Dockerfile has no stage ${name}`);
  const end = lines.findIndex((l, i) => i > start && /^FROM\s/i.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

const failures: string[] = [];
const check = (what: string, ok: boolean, detail = '') => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail && !ok ? `: ${detail}` : ''}`);
  if (!ok) failures.push(what);
};

if (process.getuid?.() !== 0) throw new Error('run as root: the runtime stage is laid out as root and run as uid ' + uid);
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const deps = stage(dockerfile, 'deps');
const runtime = stage(dockerfile, 'runtime');
const top = mkdtempSync(join(tmpdir(), 'tend-image-'));
chmodSync(top, 0o755);
const app = join(top, 'app');
const bin = join(top, 'usr-local-bin');
mkdirSync(app);
mkdirSync(bin);
try {
  // deps stage: its COPY lines, then its RUN line, in /deps.
  const depsDir = join(top, 'deps');
  mkdirSync(depsDir);
  for (const line of deps) {
    const copy = /^COPY\s+(.+)\s+(\S+)$/.exec(line);
    if (copy) for (const src of copy[1]!.split(/\s+/)) cpSync(join(root, src), join(depsDir, src), { recursive: true });
    const run = /^RUN\s+(.+)$/.exec(line);
    if (run) execFileSync('sh', ['-c', run[1]!], { cwd: depsDir, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  // runtime stage: COPY --from=deps from the deps folder, the others from the checkout.
  for (const line of runtime) {
    const copy = /^COPY\s+(--from=(\S+)\s+)?(.+)\s+(\S+)$/.exec(line);
    if (!copy) continue;
    if (copy[2] && copy[2] !== 'deps') throw new Error(`unexpected COPY source stage ${copy[2]}`);
    // Docker's rules for these forms: a folder's contents go into the destination folder; a file
    // goes into a destination ending in "/" under its own name.
    const dest = join(app, copy[4]!);
    for (const src of copy[3]!.split(/\s+/)) {
      const source = copy[2] ? join(depsDir, relative('/app', src)) : join(root, src);
      const target = statSync(source).isDirectory() || !copy[4]!.endsWith('/') ? dest : join(dest, basename(source));
      cpSync(source, target, { recursive: true });
    }
  }
  // The image's node: Node 24 first on PATH (the checkout's system node may be older).
  cpSync(join(root, 'node_modules/node/bin/node'), join(bin, 'node'));
  execFileSync('chmod', ['-R', 'a+rX', top]);

  check('no scripts/setup.mjs in the image', !existsSync(join(app, 'scripts')));
  check('no node_modules/.bin/node in the image (the devDependency node is omitted)', !existsSync(join(app, 'node_modules/.bin/node')));
  for (const dev of ['mocha', 'typescript', 'eslint', 'typescript-eslint', '@temporalio/testing']) {
    check(`devDependency ${dev} absent`, !existsSync(join(app, 'node_modules', dev)));
  }
  for (const dir of ['test', 'bench', 'tools', 'deploy', '.git', '.tend']) check(`${dir}/ absent`, !existsSync(join(app, dir)));
  check('@swc/core platform package present', existsSync(join(app, 'node_modules/@swc/core-linux-x64-gnu')) || existsSync(join(app, 'node_modules/@swc/core-linux-arm64-gnu')));

  writeFileSync(join(top, 'config.yaml'), 'temporal:\n  address: temporal:7233\n  apiKeyEnv: TEMPORAL_API_KEY\n');
  // A key in the environment, as the Secret's env var gives it: it must never be printed.
  const key = 'tend-secret-KEY-1234';
  const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: '/nonexistent', NODE_ENV: 'production', TEMPORAL_API_KEY: key };
  const asUser = (args: string[], cwd = top) => execFileSync('setpriv', [
    `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', ...args,
  ], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const tend = (...args: string[]) => asUser([join(app, 'bin/tend'), ...args]);
  const attempt = (what: string, run: () => string, expect: (out: string) => boolean) => {
    try {
      const out = run();
      check(what, expect(out), out.slice(0, 500));
    } catch (err) {
      check(what, false, `${(err as Error).message}\n${(err as { stderr?: string }).stderr ?? ''}`.slice(0, 2000));
    }
  };
  attempt(`runs as uid ${uid}`, () => asUser(['id', '-u']), (out) => out.trim() === String(uid));
  attempt('node on PATH is Node 24', () => asUser(['node', '--version']), (out) => out.startsWith('v24.'));
  attempt('bin/tend --help', () => tend('--help'), (out) => out.includes('Usage: tend') && out.includes('doctor'));
  attempt('bin/tend config validate', () => tend('config', 'validate', join(top, 'config.yaml')),
    (out) => out.startsWith('config OK') && out.includes('API key from $TEMPORAL_API_KEY') && !out.includes(key));
  attempt('the worker bundles its workflows from production dependencies', () => asUser(['node', '--input-type=module', '-e', `
    import { bundleWorkflowCode } from '@temporalio/worker';
    const { code } = await bundleWorkflowCode({ workflowsPath: ${JSON.stringify(join(app, 'src/workflows/index.ts'))}, logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } });
    console.log('bundled', code.length);
  `], app), (out) => /^bundled \d+/.test(out.trim()));
} finally {
  if (!process.env.TEND_IMAGE_KEEP) rmSync(top, { recursive: true, force: true });
  else console.log(`kept ${top}`);
}
if (failures.length > 0) {
  console.log(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('image layout: every check passed');
