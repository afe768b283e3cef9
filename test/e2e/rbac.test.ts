// RBAC least privilege, asked of the API server itself with the real
// `kubectl auth can-i`: tend's ServiceAccount on the sandbox holds what
// deploy/kubernetes ships plus what `tend rbac` generates for the sandbox's
// configuration, and nothing wider; a generated file grants in exactly the
// namespaces its configuration names.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { ensureBinaries } from '../../src/sandbox/binaries.ts';
import { runTend } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { repoRoot } from '../harness/env.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const TEND = 'system:serviceaccount:tend-system:tend';

interface Run { code: number; stdout: string; stderr: string }

function run(cmd: string, args: string[], input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
      if (code === -1) reject(err);
      else resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

let kubectlPath: string;
async function kubectl(args: string[], input?: string): Promise<Run> {
  return run(kubectlPath, args, input);
}

/**
 * `kubectl auth can-i VERB RESOURCE ...`: true for yes (exit 0, "yes"), false
 * for no (exit 1, "no"); anything else (an error) fails the test.
 */
async function canI(verb: string, resource: string, where: { namespace?: string; all?: boolean; subresource?: string },
  who: { as?: string; kubeconfig?: string } = {}): Promise<boolean> {
  const args = ['auth', 'can-i', verb, resource, '--kubeconfig', who.kubeconfig ?? sandbox().kubeconfig];
  if (who.as) args.push('--as', who.as);
  if (where.all) args.push('--all-namespaces');
  if (where.namespace) args.push('-n', where.namespace);
  if (where.subresource) args.push('--subresource', where.subresource);
  const r = await kubectl(args);
  const answer = r.stdout.trim();
  assert.ok((r.code === 0 && answer === 'yes') || (r.code === 1 && answer === 'no'),
    `kubectl ${args.join(' ')}: exit ${r.code}, stdout ${JSON.stringify(r.stdout)}, stderr ${r.stderr}`);
  return r.code === 0;
}

/** Asserts each [verb, resource, where, expected] line, naming every wrong answer at once. */
async function expectAnswers(who: { as?: string; kubeconfig?: string },
  lines: [string, string, { namespace?: string; all?: boolean; subresource?: string }, boolean][]): Promise<void> {
  const wrong: string[] = [];
  for (const [verb, resource, where, expected] of lines) {
    const got = await canI(verb, resource, where, who);
    if (got !== expected) {
      const place = where.all ? 'all namespaces' : where.namespace ? `namespace ${where.namespace}` : 'cluster scope';
      wrong.push(`${verb} ${resource}${where.subresource ? `/${where.subresource}` : ''} in ${place}: ${got ? 'yes' : 'no'}, expected ${expected ? 'yes' : 'no'}`);
    }
  }
  assert.deepEqual(wrong, [], `as ${who.as ?? who.kubeconfig}`);
}

describe('rbac: tend\'s Kubernetes rights, asked with kubectl auth can-i', function () {
  this.timeout(120_000);
  let kube: KubeClients;
  let unconfigured: string;

  before(async () => {
    kubectlPath = (await ensureBinaries()).kubectl;
    kube = admin();
    unconfigured = await tempNamespace(kube, 'rbac-none');
  });
  after(async () => {
    await deleteNamespace(kube, unconfigured);
  });

  it('the sandbox\'s tend (its own token, and --as its ServiceAccount) may patch no Service, anywhere', async () => {
    for (const who of [{ kubeconfig: sandbox().tendKubeconfig }, { as: TEND }]) {
      await expectAnswers(who, [
        ['patch', 'services', { all: true }, false],
        ['update', 'services', { all: true }, false],
        ['create', 'services', { all: true }, false],
        ['delete', 'services', { all: true }, false],
        // Namespaces its configuration names for the weeder: still no write.
        ['patch', 'services', { namespace: 'control-plane' }, false],
        ['patch', 'services', { namespace: 'demo' }, false],
        ['patch', 'services', { namespace: unconfigured }, false],
        ['patch', 'services', { namespace: 'tend-system' }, false],
      ]);
    }
  });

  it('it may create or delete Deployments only where apps.namespaces says (demo), not in a namespace no capability names', async () => {
    for (const who of [{ kubeconfig: sandbox().tendKubeconfig }, { as: TEND }]) {
      await expectAnswers(who, [
        ['create', 'deployments', { namespace: unconfigured }, false],
        ['delete', 'deployments', { namespace: unconfigured }, false],
        ['update', 'deployments', { namespace: unconfigured }, false],
        ['create', 'deployments', { namespace: 'kube-system' }, false],
        ['delete', 'deployments', { namespace: 'default' }, false],
        ['create', 'deployments', { all: true }, false],
        ['delete', 'deployments', { all: true }, false],
        // The sandbox's tend.yaml: apps.namespaces [demo], the generated Role there.
        ['create', 'deployments', { namespace: 'demo' }, true],
        ['delete', 'deployments', { namespace: 'demo' }, true],
        ['update', 'deployments', { namespace: 'demo' }, true],
      ]);
    }
  });

  it('nothing else broad: no Secrets, no RBAC, no ConfigMap writes but the weeder\'s record, no impersonation', async () => {
    await expectAnswers({ kubeconfig: sandbox().tendKubeconfig }, [
      ['get', 'secrets', { all: true }, false],
      ['list', 'secrets', { namespace: 'tend-system' }, false],
      ['create', 'roles', { all: true }, false],
      ['create', 'rolebindings', { namespace: 'tend-system' }, false],
      ['escalate', 'clusterroles', {}, false],
      ['impersonate', 'serviceaccounts', { all: true }, false],
      ['create', 'pods', { all: true }, false],
      ['update', 'configmaps', { namespace: 'tend-system' }, false],
      ['update', 'configmaps/tend-config', { namespace: 'tend-system' }, false],
      ['get', 'configmaps/tend-config', { namespace: 'tend-system' }, true],
      ['update', 'configmaps/tend-weeder-readiness', { namespace: 'tend-system' }, true],
      ['update', 'configmaps/tend-weeder-readiness', { namespace: 'demo' }, false],
      ['create', 'configmaps', { namespace: unconfigured }, false],
      ['delete', 'configmaps', { namespace: 'tend-system' }, false],
      ['patch', 'apps.tend.dev', { namespace: unconfigured }, false],
      ['patch', 'apps.tend.dev', { namespace: 'demo' }, true],
    ]);
  });

  describe('a file generated by `tend rbac`, applied with kubectl', () => {
    let configured: string;
    let other: string;
    let home: string;
    let dir: string;
    const prefix = 'rbac-probe';
    let probe: string;

    before(async () => {
      configured = await tempNamespace(kube, 'rbac-on');
      other = await tempNamespace(kube, 'rbac-off');
      // A ServiceAccount of its own, so the answers come from this file alone.
      home = await tempNamespace(kube, 'rbac-home');
      await kube.core.createNamespacedServiceAccount({ namespace: home, body: { metadata: { name: 'probe' } } });
      probe = `system:serviceaccount:${home}:probe`;
      dir = await mkdtemp(join(tmpdir(), 'tend-rbac-'));
    });
    after(async () => {
      for (const ns of [configured, other, home]) await deleteNamespace(kube, ns);
      // The cluster-wide objects this file generated: their names carry its prefix.
      const listed = await kubectl(['get', 'clusterrole,clusterrolebinding', '-l', 'rbac.tend.dev/generated=true', '-o', 'name',
        '--kubeconfig', sandbox().kubeconfig]);
      const mine = listed.stdout.split('\n').filter((n) => n.split('/')[1]?.startsWith(`${prefix}-${home}-`));
      if (mine.length) await kubectl(['delete', ...mine, '--kubeconfig', sandbox().kubeconfig, '--ignore-not-found']);
    });

    async function generate(sections: Record<string, unknown>): Promise<string> {
      const file = join(dir, `tend-${Object.keys(sections).join('-')}.yaml`);
      await writeFile(file, toYaml({ temporal: { address: sandbox().temporalAddress }, ...sections }));
      const r = await runTend(['rbac', '--config', file, '--namespace', home, '--service-account', 'probe', '--name', `${prefix}-${home}`]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout;
    }

    async function apply(yaml: string): Promise<void> {
      const r = await kubectl(['apply', '-f', '-', '--kubeconfig', sandbox().kubeconfig], yaml);
      assert.equal(r.code, 0, `kubectl apply: ${r.stderr}`);
    }

    it('grants apps, weeder and taint rights in the namespace they name, and not in another', async () => {
      const selector = { matchLabels: { app: 'x' } };
      await apply(await generate({
        apps: { namespaces: [configured] },
        weeder: { namespaces: [configured], servicesAndDependantSelectors: { etcd: { podSelectors: [selector] } } },
        taintReplacement: { namespaces: [configured], podSelector: selector, taintReplacementOptions: [{ key: 'x.org/m', durationInSeconds: 1 }] },
      }));
      await expectAnswers({ as: probe }, [
        ['create', 'deployments', { namespace: configured }, true],
        ['delete', 'deployments', { namespace: configured }, true],
        ['create', 'deployments', { namespace: other }, false],
        ['delete', 'deployments', { namespace: other }, false],
        ['create', 'deployments', { all: true }, false],
        ['delete', 'pods', { namespace: configured }, true],
        ['delete', 'pods', { namespace: other }, false],
        ['patch', 'pods', { namespace: configured, subresource: 'status' }, true],
        ['patch', 'pods', { namespace: other, subresource: 'status' }, false],
        ['create', 'pods', { namespace: configured, subresource: 'eviction' }, true],
        ['create', 'pods', { namespace: other, subresource: 'eviction' }, false],
        ['watch', 'endpointslices.discovery.k8s.io', { namespace: configured }, true],
        ['watch', 'endpointslices.discovery.k8s.io', { namespace: other }, false],
        ['get', 'services', { namespace: configured }, true],
        ['patch', 'services', { namespace: configured }, false],
        ['patch', 'services', { all: true }, false],
        ['update', 'configmaps/tend-weeder-readiness', { namespace: home }, true],
        ['update', 'configmaps/another', { namespace: home }, false],
        ['create', 'configmaps', { namespace: home }, true],
        ['create', 'configmaps', { namespace: configured }, false],
        // Taint replacement watches Nodes cluster-wide; without repair, none is patched.
        ['watch', 'nodes', {}, true],
        ['patch', 'nodes', {}, false],
        ['list', 'namespaces', {}, false],
        ['create', 'events.events.k8s.io', { namespace: configured }, true],
        ['create', 'events.events.k8s.io', { namespace: other }, false],
      ]);
    });

    it('a section without namespaces is cluster-wide, and the file says so', async () => {
      const yaml = await generate({ apps: {} });
      assert.match(yaml, /cluster-wide: apps has no namespaces/);
      await apply(yaml);
      await expectAnswers({ as: probe }, [
        ['create', 'deployments', { namespace: other }, true],
        ['create', 'deployments', { all: true }, true],
        ['patch', 'services', { all: true }, false],
      ]);
    });

    it("the documented prune deletes one tend's rights it no longer needs, and none of another tend's (another --name)", async () => {
      // The selector docs/rbac.md gives, for the tend named `tend`: each tend names itself in it.
      const documented = /--prune -l (\S+)/.exec(await readFile(join(repoRoot, 'docs/rbac.md'), 'utf8'))?.[1];
      assert.ok(documented?.includes('=tend'), `docs/rbac.md's prune selector: ${documented}`);
      const selectorOf = (name: string) => documented!.replace(/=tend(?=,|$)/, `=${name}`);
      const [first, second] = [`${prefix}-${home}-a`, `${prefix}-${home}-b`];
      const file = join(dir, 'two-tends.yaml');
      const repair = { repair_procedures: [{ machine_types: ['sim'], repair_operations: [{ operation: 'reboot', repair_steps: [{ repair_command: ['true'] }], health_check_command: ['true'] }] }] };
      const both = { apps: { namespaces: [configured] }, repair };
      const rbacOf = async (name: string, sections: Record<string, unknown>) => {
        await writeFile(file, toYaml({ temporal: { address: sandbox().temporalAddress }, ...sections }));
        const r = await runTend(['rbac', '--config', file, '--namespace', home, '--service-account', 'probe', '--name', name]);
        assert.equal(r.code, 0, r.stderr);
        return r.stdout;
      };
      await apply(await rbacOf(first, both));
      await apply(await rbacOf(second, both));
      // The first tend no longer repairs: its file has its apps Role only, applied with its prune.
      const pruned = await kubectl(['apply', '-f', '-', '--prune', '-l', selectorOf(first),
        ...['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].map((k) => `--prune-allowlist=rbac.authorization.k8s.io/v1/${k}`),
        '--kubeconfig', sandbox().kubeconfig], await rbacOf(first, { apps: both.apps }));
      assert.equal(pruned.code, 0, pruned.stderr);
      const exists = async (kind: string, name: string, namespace?: string) =>
        (await kubectl(['get', kind, name, ...(namespace ? ['-n', namespace] : []), '--kubeconfig', sandbox().kubeconfig, '-o', 'name'])).code === 0;
      assert.equal(await exists('clusterrole', `${first}-repair`), false, "the first tend's repair rights are pruned");
      assert.equal(await exists('clusterrolebinding', `${first}-repair`), false);
      assert.equal(await exists('role', `${first}-apps`, configured), true, "the first tend's apps rights stay");
      for (const [kind, namespace] of [['clusterrole'], ['clusterrolebinding'], ['role', configured], ['rolebinding', configured]] as const) {
        const name = `${second}-${namespace ? 'apps' : 'repair'}`;
        assert.equal(await exists(kind, name, namespace), true, `the second tend's ${kind} ${name} stays`);
      }
    });

    it('a bad configuration: exit 2, the problem named, nothing printed', async () => {
      const file = join(dir, 'bad.yaml');
      await writeFile(file, toYaml({ apps: { namespaces: ['Not_A_Namespace'] }, weeder: { servicesAndDependantSelectors: {} } }));
      const r = await runTend(['rbac', '--config', file]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /apps\.namespaces\[0\]/);
      assert.match(r.stderr, /weeder\.servicesAndDependantSelectors: must name at least one Service/);
      assert.equal(r.stdout, '');
      const missing = await runTend(['rbac', '--config', join(dir, 'absent.yaml')]);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /file not found/);
    });
  });
});
