// Builds the stand-in images deploy/compose/standins.yml names, for running docker-compose.yml
// where the public images cannot be pulled: Temporal's server, its admin tools and its Web UI from
// what scripts/binaries.sh --cluster builds (the same versions), PostgreSQL from Debian, all on the
// base `npm run image` builds tend on. An image labelled with the hash of the same inputs is not
// rebuilt. Prints the images' references, one a line. docs/compose.md says how to run compose so.
//
//   node scripts/compose-standins.ts
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { base, engine, fail, inspect, output, run, type Engine } from './image.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const standins = join(root, 'deploy', 'compose', 'standins');
const LABEL = 'dev.tend.standin';

/** A version scripts/binaries.sh sets (`NAME=v1.2.3`), without the v. */
export function binariesVersion(name: string): string {
  const m = new RegExp(`^${name}=v(\\d+\\.\\d+\\.\\d+)$`, 'm').exec(readFileSync(join(root, 'scripts', 'binaries.sh'), 'utf8'));
  if (!m) fail(`scripts/binaries.sh sets no ${name}=vX.Y.Z`);
  return m[1]!;
}

/** The stand-ins' references, as deploy/compose/standins.yml names them. */
export function standinImages(): Record<'postgresql' | 'server' | 'adminTools' | 'ui', string> {
  const server = binariesVersion('TEMPORAL_SERVER_VERSION');
  return {
    postgresql: 'localhost/tend-standin/postgresql:15',
    server: `localhost/tend-standin/temporal-server:${server}`,
    adminTools: `localhost/tend-standin/temporal-admin-tools:${server}`,
    ui: `localhost/tend-standin/temporal-ui:${binariesVersion('TEMPORAL_UI_VERSION')}`,
  };
}

/** The folder of Go module `path@version` (downloaded through the Go module proxy when missing). */
function moduleDir(spec: string): string {
  const r = output('go', ['mod', 'download', '-json', spec], { env: { ...process.env, PATH: `${process.env.PATH}:/usr/local/go/bin`, GOFLAGS: '-mod=mod' }, cwd: tmpdir() });
  const dir = r.ok ? (JSON.parse(r.stdout) as { Dir?: string }).Dir : undefined;
  if (!dir) fail(`go mod download ${spec} failed`);
  return dir;
}

/** Builds `name`.Dockerfile with these files in its context, unless built already from the same inputs. */
function build(e: Engine, baseId: string, baseRef: string, ref: string, name: string, files: Record<string, string>): void {
  const dockerfile = join(standins, `${name}.Dockerfile`);
  const hash = createHash('sha256').update(baseId).update(readFileSync(dockerfile));
  for (const [as, from] of Object.entries(files).sort()) hash.update(`${as}\0${from}\0`);
  // The cached binaries' folders are named by version: their paths stand for their contents.
  const key = hash.digest('hex');
  if (inspect(e, ref)?.labels[LABEL] === key) {
    process.stderr.write(`compose-standins: ${ref} is built already\n`);
    return;
  }
  const context = mkdtempSync(join(tmpdir(), `tend-standin-${name}-`));
  try {
    for (const [as, from] of Object.entries(files)) cpSync(from, join(context, as), { recursive: true });
    copyFileSync(dockerfile, join(context, 'Dockerfile'));
    process.stderr.write(`compose-standins: building ${ref}\n`);
    run('nice', ['-n', '10', e.command, 'build', '--build-arg', `BASE=${baseRef}`, '--label', `${LABEL}=${key}`, '--tag', ref, context], { env: e.env });
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

function main(): void {
  const e = engine();
  const from = base(e);
  const baseId = inspect(e, from.ref)?.id ?? fail(`${from.ref} is not here`);
  const made = spawnSync(join(root, 'scripts', 'binaries.sh'), ['--cluster'], { stdio: ['ignore', 2, 2] });
  if (made.status !== 0) fail('scripts/binaries.sh --cluster failed');
  const paths = Object.fromEntries(output(join(root, 'scripts', 'binaries.sh'), ['--print']).stdout.trim().split('\n')
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])) as Record<string, string>;
  const server = paths.TEMPORAL_SERVER ?? fail('scripts/binaries.sh --print names no TEMPORAL_SERVER');
  const cli = paths.TEMPORAL ?? fail('scripts/binaries.sh --print names no TEMPORAL');
  const images = standinImages();
  const serverModule = moduleDir(`go.temporal.io/server@v${binariesVersion('TEMPORAL_SERVER_VERSION')}`);
  const uiModule = moduleDir(`github.com/temporalio/ui-server/v2@v${binariesVersion('TEMPORAL_UI_VERSION')}`);

  build(e, baseId, from.ref, images.postgresql, 'postgresql', { 'postgresql-entrypoint.sh': join(standins, 'postgresql-entrypoint.sh') });
  build(e, baseId, from.ref, images.server, 'temporal-server', {
    'temporal-server': join(server, 'temporal-server'), 'entrypoint.sh': join(serverModule, 'docker', 'scripts', 'sh', 'entrypoint.sh'),
  });
  build(e, baseId, from.ref, images.adminTools, 'temporal-admin-tools', {
    'temporal-sql-tool': join(server, 'temporal-sql-tool'), temporal: cli, schema: join(server, 'schema'),
  });
  build(e, baseId, from.ref, images.ui, 'temporal-ui', {
    'temporal-ui-server': join(server, 'temporal-ui-server'), 'docker.yaml': join(uiModule, 'config', 'docker.yaml'),
  });
  for (const ref of Object.values(images)) console.log(ref);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
