// docs/getting-started.md, run as written against the lane's sandbox, so that the page cannot rot.
//
// The page's convention, read here:
//   - every ```sh block is run, in order, as one bash script (`set -eo pipefail`), from the
//     checkout's top folder; its exit code must be 0;
//   - a ```text block right after it is the output the page promises: each of its non-empty lines
//     must be found, in order, in the command's output (stdout and stderr), `…` standing for
//     anything and a run of spaces for any run of spaces (tables are padded to their content);
//   - `<!-- ci: retry -->` before a block: a read that shows what happened a moment ago; it is run
//     again until its output is the promised one (at most 3 minutes);
//   - `<!-- ci: skip: REASON -->` before a block: not run here, for the reason given (a push to a
//     registry, a port-forward to an in-cluster Temporal: neither exists on the sandbox);
//   - the blocks under `## Clean up` are run last, and again (failures ignored) when a test fails.
// The page has at most 15 commands before its clean-up.
//
// The substitutions, and nothing else: KUBECONFIG is the sandbox's administrator kubeconfig
// (kubectl's current context), TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE the sandbox's Temporal, IMAGE
// the local image `npm run image` builds (localhost/tend:<version>) for the registry placeholder, and
// the sandbox's kubelet runs that image for real with podman (src/sandbox/kubelet/podman-pod.ts);
// PATH has the checkout's bin/tend, kubectl, helm and temporal; HOME is an empty folder and
// TEND_SANDBOX_DIR names no sandbox, so that tend reads nothing but the kubeconfig and TEMPORAL_*,
// as on a newcomer's machine. The sandbox is not an empty cluster: its bootstrap granted its own tend
// (deploy/kubernetes's RBAC) cluster roles named as the chart's release `tend` names its own; they
// are set aside for the test and put back after.
// At the end the weeder window and the taint workflow are looked up through the Web UI's HTTP API
// (the sandbox's dev server), as the page's Web UI URL shows them; then everything is removed:
// the release, the namespaces, the taint, the workflows the page started, the containers.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { ensureBinaries } from '../../src/sandbox/binaries.ts';
import { repoRoot } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { containersConf, containersWithLabel, kubeletRunsImages } from './kubelet-runtime.ts';
import { kubeletLabel } from '../../src/sandbox/kubelet/podman-leftovers.ts';

const page = join(repoRoot, 'docs/getting-started.md');
const MAX_COMMANDS = 15;
const RETRY_MS = 180_000;
/** The sandbox's own tend's cluster-wide objects whose names the release `tend` uses too. */
const SET_ASIDE = ['tend', 'tend-repair', 'tend-taint-replacement-nodes'];
/** The same for the sandbox's namespaced rights that share a name and namespace with the chart's: the Nodes' Events are recorded in default. */
const SET_ASIDE_IN_DEFAULT = ['tend-taint-replacement-node-events'];

interface Step {
  script: string;
  expected: string[];
  retry: boolean;
  skip?: string;
  cleanup: boolean;
  /** Where on the page, for messages. */
  line: number;
}

/** The page's steps, by the convention in this file's header. */
function pageSteps(markdown: string): Step[] {
  const lines = markdown.split('\n');
  const steps: Step[] = [];
  let cleanup = false;
  let marker: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^## /.test(line)) cleanup = /^## Clean up/.test(line);
    const m = /^<!-- ci: (retry|skip: (.+)) -->$/.exec(line);
    if (m) {
      marker = m[1];
      continue;
    }
    if (line === '```sh') {
      const start = i + 1;
      const body: string[] = [];
      for (i++; lines[i] !== '```'; i++) body.push(lines[i]);
      const step: Step = { script: body.join('\n'), expected: [], retry: marker === 'retry', cleanup, line: start };
      if (marker?.startsWith('skip: ')) step.skip = marker.slice('skip: '.length);
      // The promised output: the next block, if it is a text block with nothing but blank lines between.
      let j = i + 1;
      while (lines[j] === '') j++;
      if (lines[j] === '```text') {
        for (j++; lines[j] !== '```'; j++) if (lines[j].trim() !== '') step.expected.push(lines[j]);
        i = j;
      }
      steps.push(step);
    }
    if (line.trim() !== '') marker = undefined;
  }
  return steps;
}

/** The first promised line not found (in order) in `output`; undefined when all are. */
function missingLine(output: string, expected: string[]): string | undefined {
  const out = output.split('\n').map((l) => l.replace(/\s+/g, ' ').trim());
  let at = 0;
  for (const want of expected) {
    const pattern = new RegExp(want.trim().split(/\s+/).map((w) => w.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*?')).join(' '));
    const found = out.findIndex((l, k) => k >= at && pattern.test(l));
    if (found < 0) return want;
    at = found;
  }
  return undefined;
}

interface Ran { code: number | null; output: string }

function bash(script: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', `set -eo pipefail\n${script}`], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('docs/getting-started.md, run against the sandbox', function () {
  this.timeout(40 * 60_000);
  const steps = pageSteps(readFileSync(page, 'utf8'));
  let env: NodeJS.ProcessEnv = {};
  let home = '';
  let setAside: { roles: k8s.V1ClusterRole[]; bindings: k8s.V1ClusterRoleBinding[]; nsRoles: k8s.V1Role[]; nsBindings: k8s.V1RoleBinding[] } =
    { roles: [], bindings: [], nsRoles: [], nsBindings: [] };
  let started = new Date();

  const rbac = () => admin().kc.makeApiClient(k8s.RbacAuthorizationV1Api);

  before(async function () {
    this.timeout(45 * 60_000);
    started = new Date();
    const version = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
    const image = `localhost/tend:${version}`;
    const bin = await ensureBinaries();
    const built = await promisify(execFile)('bash', [join(repoRoot, 'scripts/binaries.sh'), '--helm'], { maxBuffer: 16 << 20, timeout: 45 * 60_000 });
    const helm = built.stdout.trim().split('\n').at(-1)!;
    home = mkdtempSync(join(tmpdir(), 'tend-getting-started-'));
    env = {
      PATH: [join(repoRoot, 'bin'), dirname(bin.kubectl), dirname(helm), dirname(bin.temporal), process.env.PATH].join(':'),
      HOME: home,
      KUBECONFIG: sandbox().kubeconfig,
      TEMPORAL_ADDRESS: sandbox().temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
      IMAGE: image,
      TEND_SANDBOX_DIR: join(home, 'no-sandbox'),
      CONTAINERS_CONF: containersConf,
    };
    await kubeletRunsImages(['localhost/tend']);
    const api = rbac();
    for (const name of SET_ASIDE) {
      const role = await api.readClusterRole({ name }).catch(() => undefined);
      const binding = await api.readClusterRoleBinding({ name }).catch(() => undefined);
      if (role) setAside.roles.push(role);
      if (binding) setAside.bindings.push(binding);
      if (role) await api.deleteClusterRole({ name });
      if (binding) await api.deleteClusterRoleBinding({ name });
    }
    for (const name of SET_ASIDE_IN_DEFAULT) {
      const role = await api.readNamespacedRole({ namespace: 'default', name }).catch(() => undefined);
      const binding = await api.readNamespacedRoleBinding({ namespace: 'default', name }).catch(() => undefined);
      if (role) setAside.nsRoles.push(role);
      if (binding) setAside.nsBindings.push(binding);
      if (role) await api.deleteNamespacedRole({ namespace: 'default', name });
      if (binding) await api.deleteNamespacedRoleBinding({ namespace: 'default', name });
    }
  });

  after(async function () {
    this.timeout(10 * 60_000);
    for (const step of steps.filter((s) => s.cleanup)) await bash(step.script, env, 120_000);
    await bash("kubectl taint node --all example.org/maintenance- || true", env, 60_000);
    await terminateStarted(started);
    const api = rbac();
    for (const role of setAside.roles) {
      await api.createClusterRole({ body: { ...role, metadata: { name: role.metadata!.name, labels: role.metadata!.labels, annotations: role.metadata!.annotations } } }).catch(() => undefined);
    }
    for (const binding of setAside.bindings) {
      await api.createClusterRoleBinding({ body: { ...binding, metadata: { name: binding.metadata!.name, labels: binding.metadata!.labels, annotations: binding.metadata!.annotations } } }).catch(() => undefined);
    }
    const kept = (o: k8s.V1Role | k8s.V1RoleBinding) => ({ name: o.metadata!.name, namespace: 'default', labels: o.metadata!.labels, annotations: o.metadata!.annotations });
    for (const role of setAside.nsRoles) await api.createNamespacedRole({ namespace: 'default', body: { ...role, metadata: kept(role) } }).catch(() => undefined);
    for (const binding of setAside.nsBindings) {
      await api.createNamespacedRoleBinding({ namespace: 'default', body: { ...binding, metadata: kept(binding) } }).catch(() => undefined);
    }
    setAside = { roles: [], bindings: [], nsRoles: [], nsBindings: [] };
    await kubeletRunsImages([]);
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it(`has at most ${MAX_COMMANDS} commands before its clean-up, and says why it skips any`, () => {
    const commands = steps.filter((s) => !s.cleanup);
    assert.ok(commands.length > 0, 'the page has ```sh blocks');
    assert.ok(commands.length <= MAX_COMMANDS, `${commands.length} commands`);
    for (const s of commands) assert.equal(s.script.split('\n').length, 1, `one command per block (line ${s.line})`);
    assert.deepEqual(steps.filter((s) => s.skip).map((s) => s.script.split(' ').slice(0, 2).join(' ')), ['podman push', 'kubectl -n']);
  });

  it('takes the sandbox from nothing of tend to a weeder window and a taint workflow, in observe mode then act', async () => {
    for (const step of steps.filter((s) => !s.cleanup && !s.skip)) {
      const deadline = Date.now() + (step.retry ? RETRY_MS : 0);
      process.stderr.write(`      $ ${step.script}\n`);
      for (;;) {
        const ran = await bash(step.script, env, 15 * 60_000);
        const missing = ran.code === 0 ? missingLine(ran.output, step.expected) : undefined;
        if (ran.code === 0 && missing === undefined) break;
        if (Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 3000));
          continue;
        }
        assert.fail(`docs/getting-started.md line ${step.line}: \`${step.script}\` ${ran.code !== 0 ? `exited ${ran.code}` : `did not print "${missing}"`}; it printed:\n${ran.output.slice(-3000)}`);
      }
    }

    // What the page's Web UI URL shows: the Web UI's own API, on the sandbox's dev server.
    const listed = async (query: string) => {
      const res = await fetch(`${sandbox().webUi}/api/v1/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
      const body = await res.json() as { executions?: { execution: { workflowId: string } }[] };
      return (body.executions ?? []).map((e) => e.execution.workflowId);
    };
    assert.ok((await listed('TendCapability="weeder"')).includes('weeder/shop/db'), 'the weeder window in the Web UI');
    const taint = await listed('TendCapability="taint"');
    assert.ok(taint.some((id) => /^taint\/sim-\d+$/.test(id)), `a node's taint workflow in the Web UI (found ${taint.join(', ')})`);

    for (const step of steps.filter((s) => s.cleanup)) {
      const ran = await bash(step.script, env, 5 * 60_000);
      assert.equal(ran.code, 0, `clean-up \`${step.script}\`: ${ran.output}`);
      assert.equal(missingLine(ran.output, step.expected), undefined, `clean-up \`${step.script}\` printed:\n${ran.output}`);
    }
    await waitFor('the namespaces gone', async () => {
      const names = (await admin().core.listNamespace()).items.map((n) => n.metadata!.name);
      return !names.includes('shop') && !names.includes('tend');
    }, { timeoutMs: 180_000 });
    await waitFor("tend's containers removed", async () => (await containersWithLabel(kubeletLabel(join(sandbox().stateDir, 'pods')))).length === 0, { timeoutMs: 60_000 });
  });
});

/** Ends the workflows the page's tend started (its weeder window, node and coordinator workflows): the next test starts from none. */
async function terminateStarted(since: Date): Promise<void> {
  const connection = await Connection.connect({ address: sandbox().temporalAddress });
  try {
    const client = new Client({ connection, namespace: 'default' });
    const query = `(TendCapability="weeder" OR TendCapability="taint") AND ExecutionStatus="Running" AND StartTime >= "${since.toISOString()}"`;
    for await (const w of client.workflow.list({ query })) {
      await client.workflow.getHandle(w.workflowId, w.runId).terminate('getting-started test cleanup').catch(() => undefined);
    }
  } finally {
    await connection.close();
  }
}
