// docker-compose.yml and deploy/compose/ against src/sandbox/temporal-cluster.ts, src/search-attributes.ts and scripts/binaries.sh.
// docker-compose.yml runs the Temporal that `tend sandbox up --temporal cluster` runs: the same
// server and Web UI versions (scripts/binaries.sh), the same dynamic configuration file, the
// namespace deploy/compose/config.yaml names, and the same search attributes with the same types.
// The compose file never runs here (no Docker engine): its two one-shot scripts run under /bin/sh
// with stand-ins for the temporal CLI and temporal-sql-tool, and the sandbox's own registration
// runs against the same stand-in, so both are compared by what they do.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import {
  DEFAULT_DB, DYNAMIC_CONFIG_FILE, NAMESPACE_RETENTION, readDynamicConfig, registerNamespace, TEND_SEARCH_ATTRIBUTES, VISIBILITY_DB, writeServerConfig,
  clusterPorts,
} from '../../src/sandbox/temporal-cluster.ts';
import * as searchAttributeKeys from '../../src/search-attributes.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

interface Service {
  image?: string;
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: (string | { source?: string; target?: string })[];
  command?: string | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
}
interface Compose { services: Record<string, Service> }

/** What the sandbox runs, read from the project's own sources. */
interface Facts {
  serverVersion: string;
  uiVersion: string;
  dynamicConfigFile: string;
  namespace: string;
  retention: string;
  searchAttributes: readonly { name: string; type: string }[];
}

/** A version from scripts/binaries.sh (`NAME=v1.2.3`), without the v. */
function binariesVersion(name: string): string {
  const text = readFileSync(join(root, 'scripts', 'binaries.sh'), 'utf8');
  const m = new RegExp(`^${name}=v(\\d+\\.\\d+\\.\\d+)$`, 'm').exec(text);
  assert.ok(m, `scripts/binaries.sh sets no ${name}=vX.Y.Z`);
  return m[1]!;
}

function facts(): Facts {
  const tend = parseYaml(readFileSync(join(root, 'deploy', 'compose', 'config.yaml'), 'utf8')) as { temporal?: { namespace?: string } };
  return {
    serverVersion: binariesVersion('TEMPORAL_SERVER_VERSION'),
    uiVersion: binariesVersion('TEMPORAL_UI_VERSION'),
    dynamicConfigFile: DYNAMIC_CONFIG_FILE,
    namespace: tend.temporal?.namespace ?? 'default',
    retention: NAMESPACE_RETENTION,
    searchAttributes: TEND_SEARCH_ATTRIBUTES,
  };
}

function readCompose(): Compose {
  // Compose merges `<<: *anchor` keys (YAML 1.1), as tend's services use.
  return parseYaml(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as Compose;
}

function env(service: Service | undefined): Record<string, string> {
  const e = service?.environment;
  if (!e) return {};
  if (Array.isArray(e)) return Object.fromEntries(e.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  return Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v == null ? '' : String(v)]));
}

/** `name=type name=type`, as the setup job's TEND_SEARCH_ATTRIBUTES lists them. */
function parseAttributeList(list: string): { name: string; type: string }[] {
  return list.split(/\s+/).filter(Boolean).map((p) => ({ name: p.slice(0, p.indexOf('=')), type: p.slice(p.indexOf('=') + 1) }));
}
const sorted = (as: readonly { name: string; type: string }[]) => as.map((a) => `${a.name}=${a.type}`).sort();

/** A compose script as the container's shell receives it: compose turns `$$` into `$`. */
function script(service: Service | undefined): string {
  const c = service?.command;
  const text = Array.isArray(c) ? c.join('\n') : c ?? '';
  // A lone `$` would be a compose variable, filled in (or emptied) before the shell sees it.
  assert.doesNotMatch(text.replaceAll('$$', ''), /\$/, 'a single $ in a compose script');
  return text.replaceAll('$$', '$');
}

/** Every difference between the compose file and the sandbox; none when they match. */
function parityProblems(compose: Compose, f: Facts): string[] {
  const problems: string[] = [];
  const s = compose.services ?? {};
  const expect = (what: string, actual: unknown, wanted: unknown) => {
    if (JSON.stringify(actual) !== JSON.stringify(wanted)) problems.push(`${what}: ${JSON.stringify(actual)}, expected ${JSON.stringify(wanted)}`);
  };

  // Versions: the server and both admin-tools jobs at the sandbox's server version, the UI at its UI version.
  expect('temporal image', s.temporal?.image, `temporalio/server:${f.serverVersion}`);
  for (const job of ['temporal-schema', 'temporal-setup']) expect(`${job} image`, s[job]?.image, `temporalio/admin-tools:${f.serverVersion}`);
  for (const [name, svc] of Object.entries(s)) {
    const m = /^temporalio\/([^:]+):(.*)$/.exec(svc.image ?? '');
    if (m && m[1] !== 'ui') expect(`${name} image tag`, m[2], f.serverVersion);
  }
  expect('temporal-ui image', s['temporal-ui']?.image, `temporalio/ui:${f.uiVersion}`);

  // The dynamic configuration: the file the sandbox copies, mounted where the server reads it.
  const target = env(s.temporal).DYNAMIC_CONFIG_FILE_PATH;
  if (!target) problems.push('temporal: no DYNAMIC_CONFIG_FILE_PATH');
  const mounts = (s.temporal?.volumes ?? []).map((v) => typeof v === 'string'
    ? { source: v.split(':')[0]!, target: v.split(':')[1] }
    : { source: v.source ?? '', target: v.target });
  const mount = mounts.find((m) => m.target === target);
  if (!mount) problems.push(`temporal: nothing mounted at DYNAMIC_CONFIG_FILE_PATH ${target}`);
  else expect('dynamic config file mounted', resolve(root, mount.source), f.dynamicConfigFile);

  // The namespace and search attributes the setup job registers.
  const setup = env(s['temporal-setup']);
  expect('temporal-setup TEMPORAL_NAMESPACE', setup.TEMPORAL_NAMESPACE, f.namespace);
  expect('temporal-setup NAMESPACE_RETENTION', setup.NAMESPACE_RETENTION, f.retention);
  expect('temporal-ui TEMPORAL_DEFAULT_NAMESPACE', env(s['temporal-ui']).TEMPORAL_DEFAULT_NAMESPACE, f.namespace);
  expect('temporal-setup TEND_SEARCH_ATTRIBUTES', sorted(parseAttributeList(setup.TEND_SEARCH_ATTRIBUTES ?? '')), sorted(f.searchAttributes));

  // tend waits for the setup job, which waits for the server, which waits for the schemas.
  const waitsFor = (svc: string, dep: string, condition?: string) => {
    const d = s[svc]?.depends_on;
    const ok = Array.isArray(d) ? d.includes(dep) && !condition : d?.[dep] !== undefined && (!condition || d[dep]?.condition === condition);
    if (!ok) problems.push(`${svc} does not wait for ${dep}${condition ? ` (${condition})` : ''}`);
  };
  waitsFor('temporal', 'temporal-schema', 'service_completed_successfully');
  waitsFor('tend-worker', 'temporal-setup', 'service_completed_successfully');
  waitsFor('tend-watcher', 'temporal-setup', 'service_completed_successfully');
  return problems;
}

/** Every Temporal image tag a page names (`temporalio/<image>:<tag>`) that is not the sandbox's version. */
function docsProblems(text: string, f: Facts): string[] {
  const problems: string[] = [];
  const found = [...text.matchAll(/temporalio\/([a-z-]+):([\w.-]+)/g)];
  if (!found.length) problems.push('names no Temporal image');
  for (const [all, image, tag] of found) {
    const wanted = image === 'ui' ? f.uiVersion : image === 'server' || image === 'admin-tools' ? f.serverVersion : undefined;
    if (tag !== wanted) problems.push(`${all}: expected ${wanted ? `${image}:${wanted}` : 'server, admin-tools or ui'}`);
  }
  return problems;
}

// A stand-in for the temporal CLI: logs its calls, answers as Temporal v1.30 does (an attribute
// that exists with the same type is left as it is; with another type the CLI refuses). FAKE_EXISTING
// lists the namespace's attributes (name=type); FAKE_OLD_SERVER makes an existing one an error
// ("already exists"), as older servers answer. Successful creations are logged as `CREATED name=type`.
const FAKE_TEMPORAL = `#!/bin/sh
printf '%s\\n' "$*" >> "$FAKE_LOG"
case "$1 $2" in
  "operator cluster") echo SERVING; exit 0 ;;
  "operator namespace") echo "Namespace $4 created"; exit 0 ;;
esac
[ "$3" = list ] && { echo '[]'; exit 0; }
shift 3
created=""
while [ $# -gt 0 ]; do
  case "$1" in
    --name) n=$2; shift 2 ;;
    --type)
      t=$2; shift 2
      for e in \${FAKE_EXISTING:-}; do
        [ "\${e%%=*}" = "$n" ] || continue
        if [ "\${e#*=}" != "$t" ]; then echo "search attribute $n already exists and has different type \${e#*=}" >&2; exit 1; fi
        if [ -n "\${FAKE_OLD_SERVER:-}" ]; then echo "Search attribute $n already exists." >&2; exit 1; fi
        continue 2
      done
      created="$created $n=$t" ;;
    *) shift ;;
  esac
done
for c in $created; do echo "CREATED $c" >> "$FAKE_LOG"; done
echo "Search attributes have been added"
`;

// A stand-in for temporal-sql-tool: logs its calls; with FAKE_DONE, the databases and version tables exist already.
const FAKE_SQL_TOOL = `#!/bin/sh
printf '%s\\n' "$*" >> "$FAKE_LOG"
case "$*" in
  *create-database*|*setup-schema*) [ -n "\${FAKE_DONE:-}" ] && { echo "pq: relation already exists" >&2; exit 1; } ;;
esac
exit 0
`;

describe('docker-compose.yml matches the cluster sandbox', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tend-compose-parity-'));
    await writeFile(join(dir, 'temporal'), FAKE_TEMPORAL);
    await writeFile(join(dir, 'temporal-sql-tool'), FAKE_SQL_TOOL);
    await chmod(join(dir, 'temporal'), 0o755);
    await chmod(join(dir, 'temporal-sql-tool'), 0o755);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** Runs one of the compose file's scripts with the service's environment and the stand-ins first on PATH. */
  async function runScript(service: string, extraEnv: Record<string, string> = {}) {
    const log = join(dir, `${service}-${Math.random().toString(36).slice(2)}.log`);
    await writeFile(log, '');
    const svc = readCompose().services[service];
    const r = await run('/bin/sh', ['-c', script(svc)], {
      env: { ...env(svc), ...extraEnv, PATH: `${dir}:/usr/bin:/bin`, FAKE_LOG: log }, timeout: 30_000,
    }).then((o) => ({ code: 0, ...o }), (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }));
    return { ...r, calls: (await readFile(log, 'utf8')).split('\n').filter(Boolean) };
  }
  const createdIn = (calls: string[]) => calls.filter((c) => c.startsWith('CREATED ')).map((c) => c.slice('CREATED '.length)).sort();

  it('the versions come from scripts/binaries.sh and the namespace from deploy/compose/config.yaml', () => {
    const f = facts();
    assert.match(f.serverVersion, /^\d+\.\d+\.\d+$/);
    assert.match(f.uiVersion, /^\d+\.\d+\.\d+$/);
    assert.equal(f.namespace, 'default');
  });

  it('tend\'s search attributes are every key src/search-attributes.ts defines, with its type', () => {
    const keys = Object.values(searchAttributeKeys);
    assert.ok(keys.length >= 2);
    assert.deepEqual(TEND_SEARCH_ATTRIBUTES.map((a) => a.name), keys.map((k) => k.name));
    for (const k of keys) assert.equal(TEND_SEARCH_ATTRIBUTES.find((a) => a.name === k.name)?.type.toUpperCase(), k.type.replace('_', ''));
  });

  it('finds no difference', () => {
    assert.deepEqual(parityProblems(readCompose(), facts()), []);
  });

  // Each check on its own: a compose file changed in one place is reported.
  const mutations: [string, (c: Compose) => void, RegExp][] = [
    ['another server tag', (c) => { c.services.temporal!.image = 'temporalio/server:1.29.1'; }, /temporal image/],
    ['the deprecated auto-setup image', (c) => { c.services.temporal!.image = `temporalio/auto-setup:${facts().serverVersion}`; }, /temporal image/],
    ['another admin-tools tag (schema job)', (c) => { c.services['temporal-schema']!.image = 'temporalio/admin-tools:1.29.1-tctl-1.18.4-cli-1.5.0'; }, /temporal-schema image/],
    ['another admin-tools tag (setup job)', (c) => { c.services['temporal-setup']!.image = 'temporalio/admin-tools:1.30.7'; }, /temporal-setup image/],
    ['another UI tag', (c) => { c.services['temporal-ui']!.image = 'temporalio/ui:2.34.0'; }, /temporal-ui image/],
    ['another dynamic config file mounted', (c) => { c.services.temporal!.volumes = ['./dynamicconfig/development-sql.yaml:/etc/temporal/config/dynamicconfig/tend.yaml:ro']; }, /dynamic config file mounted/],
    ['no dynamic config mounted', (c) => { c.services.temporal!.volumes = []; }, /nothing mounted/],
    ['the server reading another path', (c) => { (c.services.temporal!.environment as Record<string, string>).DYNAMIC_CONFIG_FILE_PATH = '/etc/temporal/config/dynamicconfig/docker.yaml'; }, /nothing mounted/],
    ['a search attribute missing', (c) => { env2(c, 'temporal-setup').TEND_SEARCH_ATTRIBUTES = 'TendCapability=Keyword'; }, /TEND_SEARCH_ATTRIBUTES/],
    ['a search attribute of another type', (c) => { env2(c, 'temporal-setup').TEND_SEARCH_ATTRIBUTES = 'TendCapability=Keyword TendTarget=Text'; }, /TEND_SEARCH_ATTRIBUTES/],
    ['a search attribute too many', (c) => { env2(c, 'temporal-setup').TEND_SEARCH_ATTRIBUTES += ' TendExtra=Keyword'; }, /TEND_SEARCH_ATTRIBUTES/],
    ['another namespace', (c) => { env2(c, 'temporal-setup').TEMPORAL_NAMESPACE = 'tend'; }, /TEMPORAL_NAMESPACE/],
    ['another retention', (c) => { env2(c, 'temporal-setup').NAMESPACE_RETENTION = '24h'; }, /NAMESPACE_RETENTION/],
    ['the UI on another namespace', (c) => { env2(c, 'temporal-ui').TEMPORAL_DEFAULT_NAMESPACE = 'tend'; }, /TEMPORAL_DEFAULT_NAMESPACE/],
    ['the server not waiting for the schemas', (c) => { c.services.temporal!.depends_on = ['postgresql']; }, /temporal does not wait for temporal-schema/],
    ['tend not waiting for the setup job', (c) => { c.services['tend-worker']!.depends_on = ['temporal']; }, /tend-worker does not wait/],
  ];
  function env2(c: Compose, service: string): Record<string, string> {
    return c.services[service]!.environment as Record<string, string>;
  }
  for (const [what, change, problem] of mutations) {
    it(`reports ${what}`, () => {
      const c = readCompose();
      change(c);
      const problems = parityProblems(c, facts());
      assert.ok(problems.some((p) => problem.test(p)), `${problem} not in ${JSON.stringify(problems)}`);
    });
  }
  it('reports a version changed in scripts/binaries.sh', () => {
    const f = facts();
    const [maj, min, patch] = f.serverVersion.split('.').map(Number);
    assert.ok(parityProblems(readCompose(), { ...f, serverVersion: `${maj}.${min}.${patch! + 1}` }).length >= 3);
    assert.ok(parityProblems(readCompose(), { ...f, uiVersion: '0.0.1' }).some((p) => /temporal-ui image/.test(p)));
  });

  it('deploy/compose/standins.yml names the stand-ins scripts/compose-standins.ts builds, for the services of the default file', async () => {
    const { standinImages } = await import('../../scripts/compose-standins.ts');
    const images = standinImages();
    const override = parseYaml(readFileSync(join(root, 'deploy', 'compose', 'standins.yml'), 'utf8')) as Compose;
    const wanted: Record<string, string> = {
      postgresql: images.postgresql, 'temporal-schema': images.adminTools, temporal: images.server, 'temporal-setup': images.adminTools, 'temporal-ui': images.ui,
    };
    for (const [service, image] of Object.entries(wanted)) assert.equal(override.services[service]?.image, image, service);
    for (const service of Object.keys(override.services)) assert.ok(readCompose().services[service], `${service} is not a service of docker-compose.yml`);
    assert.ok(images.server.endsWith(`:${facts().serverVersion}`) && images.ui.endsWith(`:${facts().uiVersion}`));
  });

  it('docs/compose.md names the same images and versions', () => {
    const f = facts();
    const text = readFileSync(join(root, 'docs', 'compose.md'), 'utf8');
    assert.deepEqual(docsProblems(text, f), []);
    for (const image of [`temporalio/server:${f.serverVersion}`, `temporalio/admin-tools:${f.serverVersion}`, `temporalio/ui:${f.uiVersion}`]) {
      assert.ok(text.includes(image), `docs/compose.md does not name ${image}`);
    }
    assert.ok(readFileSync(join(root, 'README.md'), 'utf8').includes(`server ${f.serverVersion}`), 'README.md does not name the server version');
    assert.ok(docsProblems(text.replace(`temporalio/ui:${f.uiVersion}`, 'temporalio/ui:2.34.0'), f).length);
    assert.ok(docsProblems(`${text}\ntemporalio/auto-setup:${f.serverVersion}\n`, f).length);
  });

  it('the sandbox copies the same dynamic config file into its state folder, byte for byte', async () => {
    const stateDir = join(dir, 'state');
    await writeServerConfig(stateDir, clusterPorts(7233));
    const copied = await readFile(join(stateDir, 'temporal-config', 'dynamicconfig.yaml'), 'utf8');
    assert.equal(copied, await readFile(DYNAMIC_CONFIG_FILE, 'utf8'));
    const server = parseYaml(await readFile(join(stateDir, 'temporal-config', 'sandbox.yaml'), 'utf8')) as { dynamicConfigClient: { filepath: string } };
    assert.equal(server.dynamicConfigClient.filepath, join(stateDir, 'temporal-config', 'dynamicconfig.yaml'));
    const { config } = await readDynamicConfig();
    assert.deepEqual(config['frontend.enableUpdateWorkflowExecution'], [{ value: true }]);
  });

  it('refuses a dynamic config file that is not one', async () => {
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'frontend.enableUpdateWorkflowExecution: true\n');
    await assert.rejects(readDynamicConfig(bad), /not a dynamic configuration/);
  });

  it('the setup job and the sandbox register the same search attributes, with the same types, in the namespace', async () => {
    const compose = await runScript('temporal-setup');
    assert.equal(compose.code, 0, compose.stderr);
    assert.ok(compose.calls.includes(`operator namespace create --namespace ${facts().namespace} --retention ${NAMESPACE_RETENTION}`), compose.calls.join('\n'));
    assert.ok(compose.calls.some((c) => c.startsWith('operator search-attribute create --namespace default ')), compose.calls.join('\n'));

    const log = join(dir, 'sandbox.log');
    await writeFile(log, '');
    const saved = process.env.FAKE_LOG;
    process.env.FAKE_LOG = log;
    try {
      await registerNamespace(join(dir, 'temporal'), '127.0.0.1:7233', TEND_SEARCH_ATTRIBUTES.map((a) => a.name));
    } finally {
      if (saved === undefined) delete process.env.FAKE_LOG;
      else process.env.FAKE_LOG = saved;
    }
    const sandbox = (await readFile(log, 'utf8')).split('\n').filter(Boolean);
    assert.ok(sandbox.includes(`operator namespace create --namespace default --retention ${NAMESPACE_RETENTION} --address 127.0.0.1:7233`), sandbox.join('\n'));

    assert.deepEqual(createdIn(compose.calls), sorted(TEND_SEARCH_ATTRIBUTES));
    assert.deepEqual(createdIn(sandbox), createdIn(compose.calls));
  });

  it('the setup job leaves attributes that exist, creates the missing one, and fails on another type', async () => {
    const again = await runScript('temporal-setup', { FAKE_EXISTING: 'TendCapability=Keyword TendTarget=Keyword TendNode=Keyword' });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(createdIn(again.calls), []);

    const older = await runScript('temporal-setup', { FAKE_EXISTING: 'TendCapability=Keyword', FAKE_OLD_SERVER: '1' });
    assert.equal(older.code, 0, older.stderr);
    assert.match(older.stdout, /TendCapability already exists/);
    assert.deepEqual(createdIn(older.calls), ['TendNode=Keyword', 'TendTarget=Keyword']);

    const clash = await runScript('temporal-setup', { FAKE_EXISTING: 'TendTarget=Text' });
    assert.notEqual(clash.code, 0);
    assert.match(clash.stderr, /TendTarget already exists and has different type/);
    assert.deepEqual(createdIn(clash.calls), []);
  });

  it('the schema job sets up the databases the server and the sandbox use, again without harm', async () => {
    const server = env(readCompose().services.temporal);
    assert.deepEqual([server.DBNAME, server.VISIBILITY_DBNAME], [DEFAULT_DB, VISIBILITY_DB]);
    for (const extra of [{}, { FAKE_DONE: '1' }] as Record<string, string>[]) {
      const r = await runScript('temporal-schema', extra);
      assert.equal(r.code, 0, r.stderr);
      for (const [db, dir] of [[DEFAULT_DB, 'temporal'], [VISIBILITY_DB, 'visibility']]) {
        const mine = r.calls.filter((c) => c.includes(`--database ${db} `));
        assert.ok(mine.some((c) => c.endsWith(' create-database')), r.calls.join('\n'));
        assert.ok(mine.some((c) => c.endsWith(' setup-schema -v 0.0')), r.calls.join('\n'));
        assert.ok(mine.some((c) => c.endsWith(` update-schema -d /etc/temporal/schema/postgresql/v12/${dir}/versioned`)), r.calls.join('\n'));
      }
    }
  });
});
