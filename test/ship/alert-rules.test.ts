// tend's alert rules (docs/alerts.md): one source, deploy/helm/tend/files/prometheus-rules.yaml,
// rendered by the chart; the kustomize component's PrometheusRule and deploy/prometheus/tend-rules.yaml
// are made from it by scripts/alert-rules.ts and must be what it makes now. promtool, built from
// its Go module by scripts/binaries.sh --promtool, checks the rules and runs their unit tests
// (deploy/prometheus/tests): each alert fires on some series and stays silent on others, and the
// tests fail when the rules change under them. Each metric a rule reads is tend's
// (src/metrics/registry.ts) or the Temporal SDK's (its core's source), with labels they carry, and
// the cluster-wide gauges are read with max (GAUGE_SCOPE); each alert's runbook_url names its section
// of docs/alerts.md; the kustomize component renders with kubectl kustomize.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { GAUGE_SCOPE, registry } from '../../src/metrics/registry.ts';
import { ensureBinaries } from '../../src/sandbox/binaries.ts';
import { chartRuleGroups, COMPONENT_RULE, expected, PLAIN_RULES, plainText } from '../../scripts/alert-rules.ts';
import { runCommand, type CliResult } from '../harness/cli.ts';
import { repoRoot } from '../harness/env.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;
/** A command to its end from the repository's root (runCommand: refused past `timeoutMs`). */
const run = (command: string, args: string[], timeoutMs = 120_000) => runCommand(command, args, { cwd: repoRoot, timeoutMs });

/** scripts/binaries.sh with one option: the binary's path (its last line), and how long it took. */
async function built(option: string): Promise<{ path: string; stderr: string }> {
  const r = await run('bash', [join(repoRoot, 'scripts/binaries.sh'), option], 45 * 60_000);
  assert.equal(r.code, 0, `scripts/binaries.sh ${option} failed:\n${r.stderr}`);
  return { path: r.stdout.trim().split('\n').at(-1)!, stderr: r.stderr };
}

const TESTS_DIR = join(repoRoot, 'deploy/prometheus/tests');
const testFiles = () => readdirSync(TESTS_DIR).filter((f) => f.endsWith('.yaml')).sort().map((f) => join(TESTS_DIR, f));
const rulesOf = (groups: Obj[]): Obj[] => groups.flatMap((g) => g.rules);
const alertsOf = (groups: Obj[]): Obj[] => rulesOf(groups).filter((r) => r.alert);

/** The metric names a rule reads: in its expression and in its annotations' queries. */
function metricsOf(rule: Obj): Set<string> {
  const text = [rule.expr, ...Object.values(rule.annotations ?? {})].join('\n');
  return new Set([...text.matchAll(/\b((?:tend|temporal)_[a-z0-9_]+)\b/g)].map((m) => m[1]!));
}

/** Each selector's metric and the label names it matches on. */
function selectorsOf(rule: Obj): { metric: string; labels: string[] }[] {
  return [...String(rule.expr).matchAll(/\b((?:tend|temporal)_[a-z0-9_]+)\{([^}]*)\}/g)]
    .map((m) => ({ metric: m[1]!, labels: [...m[2]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1]!) }));
}

/** The label names of a tend_* metric in the registry; undefined when there is no such metric. */
function registryLabels(name: string): string[] | undefined {
  const m = registry.getSingleMetric(name) as unknown as { labelNames?: string[] } | undefined;
  return m && (m.labelNames ?? []);
}

// Capability sections the chart accepts: the demo configuration's (the sandbox runs it).
const demo = parse(readFileSync(join(repoRoot, 'deploy/demo/config.yaml'), 'utf8')) as Obj;

describe('ship: the alert rules (deploy/helm/tend/files/prometheus-rules.yaml)', function () {
  this.timeout(10 * 60_000);
  let helm = '';
  let promtool = '';
  let work = '';
  let groups: Obj[] = [];

  before(async function () {
    this.timeout(60 * 60_000); // the first run builds helm and promtool (many minutes on 2 cores)
    const started = Date.now();
    helm = (await built('--helm')).path;
    promtool = (await built('--promtool')).path;
    process.stderr.write(`      helm: ${helm}, promtool: ${promtool} (${Math.round((Date.now() - started) / 1000)} s)\n`);
    work = mkdtempSync(join(tmpdir(), 'tend-alert-rules-'));
    groups = chartRuleGroups(helm);
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('scripts/binaries.sh --promtool builds the pinned promtool once: a second run prints the same path at once; it names its release', async () => {
    const script = readFileSync(join(repoRoot, 'scripts/binaries.sh'), 'utf8');
    const version = /^PROMETHEUS_VERSION=v0\.(\d)(\d\d)\.(\d+)$/m.exec(script);
    assert.ok(version, 'scripts/binaries.sh sets PROMETHEUS_VERSION=v0.3NN.M');
    assert.ok(promtool.endsWith(`/promtool-v0.${version[1]}${version[2]}.${version[3]}/promtool`), promtool);
    const again = await built('--promtool');
    assert.equal(again.path, promtool);
    assert.doesNotMatch(again.stderr, /building/);
    const v = await run(promtool, ['--version']);
    assert.equal(v.code, 0, v.stderr);
    assert.match(v.stdout + v.stderr, new RegExp(`promtool, version ${version[1]}\\.${Number(version[2])}\\.${version[3]} `));
  });

  it('the kustomize component and deploy/prometheus/tend-rules.yaml hold the chart\'s groups, as scripts/alert-rules.ts makes them now', () => {
    for (const [file, text] of expected(helm)) {
      assert.equal(readFileSync(join(repoRoot, file), 'utf8'), text, `${file} is not made from the rules file as it stands: run node scripts/alert-rules.ts`);
    }
    const component = parse(readFileSync(join(repoRoot, COMPONENT_RULE), 'utf8'));
    assert.deepEqual(component.spec.groups, groups);
    assert.deepEqual(parse(readFileSync(join(repoRoot, PLAIN_RULES), 'utf8')).groups, groups);
    assert.equal(component.kind, 'PrometheusRule');
    assert.equal(component.metadata.namespace, 'tend-system');
    const kustomization = parse(readFileSync(join(repoRoot, 'deploy/kubernetes/components/alerts/kustomization.yaml'), 'utf8'));
    assert.equal(kustomization.kind, 'Component');
    assert.deepEqual(kustomization.resources, ['prometheusrule.yaml']);
  });

  it("kustomize renders the component beside the base and the metrics component, and docs/alerts.md's patch changes a threshold", async () => {
    const doc = readFileSync(join(repoRoot, 'docs/alerts.md'), 'utf8');
    const example = /```yaml\n(patches:[\s\S]*?)```/.exec(doc.replace(/^ {2}/gm, ''))?.[1];
    assert.ok(example, 'docs/alerts.md shows a kustomize patch');
    const overlay = join(repoRoot, '.tend', `alerts-overlay-${process.pid}`);
    mkdirSync(overlay, { recursive: true });
    try {
      writeFileSync(join(overlay, 'kustomization.yaml'), `${stringify({
        resources: ['../../deploy/kubernetes'],
        components: ['../../deploy/kubernetes/components/metrics', '../../deploy/kubernetes/components/alerts'],
      })}${example}`);
      const r = await run((await ensureBinaries()).kubectl, ['kustomize', overlay]);
      assert.equal(r.code, 0, r.stderr);
      const objects = parseAllDocuments(r.stdout).map((d) => d.toJS());
      const rule = objects.find((o) => o.kind === 'PrometheusRule');
      assert.equal(rule.metadata.namespace, 'tend-system');
      assert.ok(objects.some((o) => o.kind === 'ServiceMonitor'));
      const patched = alertsOf(rule.spec.groups).find((a) => a.alert === 'TendCapabilityPausedTooLong');
      assert.match(patched.expr, /tend_paused_since_timestamp_seconds\) > 28800$/);
      assert.deepEqual(alertsOf(rule.spec.groups).map((a) => a.alert), alertsOf(groups).map((a) => a.alert));
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
  });

  it('promtool check rules passes on the rules as shipped and as the chart renders them with every option set', async () => {
    const plain = await run(promtool, ['check', 'rules', PLAIN_RULES]);
    assert.equal(plain.code, 0, plain.stdout + plain.stderr);
    assert.match(plain.stdout, new RegExp(`SUCCESS: ${alertsOf(groups).length} rules found`));
    const values = join(work, 'every-option.yaml');
    writeFileSync(values, stringify({
      temporal: { taskQueue: 'tend-main' },
      config: { weeder: demo.weeder, repair: { ...demo.repair, taskQueue: 'tend-commands' } },
      metrics: { prometheusRule: { runbookBaseUrl: 'https://runbooks.example/tend', alerts: { repairStuckFor: '2h', pausedLongerThanSeconds: 60 } } },
    }));
    const rendered = join(work, 'every-option-rules.yaml');
    writeFileSync(rendered, plainText(chartRuleGroups(helm, [values])));
    const r = await run(promtool, ['check', 'rules', rendered]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

  it('the chart fills the rules from its values: task queues, thresholds, runbook links, the configured capabilities', async () => {
    const values = join(work, 'values.yaml');
    writeFileSync(values, stringify({
      temporal: { taskQueue: 'tend-main' },
      config: {
        weeder: demo.weeder, apps: {}, repair: { ...demo.repair, taskQueue: 'tend-commands' },
        nodeRepair: { nodeSelector: { matchLabels: { pool: 'a' } }, machineTypeLabel: 'node.kubernetes.io/instance-type', limits: { maximumRepairQueueEntries: 1 } },
      },
      metrics: { prometheusRule: { runbookBaseUrl: 'https://runbooks.example/tend', alerts: { repairStuckFor: '2h', pausedLongerThanSeconds: 60, observeModeFor: '3d' } } },
    }));
    const rules = new Map(alertsOf(chartRuleGroups(helm, [values])).map((r) => [r.alert, r]));
    const polling = rules.get('TendWorkerNotPolling').expr;
    assert.match(polling, /task_queue="tend-main", poller_type="workflow_task"/);
    assert.match(polling, /task_queue="tend-commands", poller_type="activity_task"/);
    assert.doesNotMatch(polling, /task_queue="tend-commands", poller_type="workflow_task"/, 'the command worker polls activities only');
    assert.match(rules.get('TendActivityFailures').expr, /task_queue=~"tend-main\|tend-commands"/);
    assert.match(rules.get('TendRepairQueueStuck').expr, /\[2h\]/);
    assert.match(rules.get('TendCapabilityPausedTooLong').expr, /> 60$/);
    assert.equal(rules.get('TendObserveModeTooLong').for, '3d');
    assert.match(rules.get('TendObserveModeTooLong').expr, /capability=~"apps\|nodeRepair\|repair\|weeder"/);
    assert.equal(rules.get('TendTaintBreakerOpen').annotations.runbook_url, 'https://runbooks.example/tend#tendtaintbreakeropen');
    // The defaults: tend's one task queue, every capability.
    const defaults = new Map(alertsOf(groups).map((r) => [r.alert, r]));
    assert.doesNotMatch(defaults.get('TendWorkerNotPolling').expr, /tend-commands|task_queue="(?!tend")/);
    assert.match(defaults.get('TendObserveModeTooLong').expr, /capability=~"\.\+"/);
  });

  it('every alert has a severity, a summary, a description and a runbook_url naming its section of docs/alerts.md', () => {
    const doc = readFileSync(join(repoRoot, 'docs/alerts.md'), 'utf8');
    const anchors = new Set([...doc.matchAll(/^#{2,3} (.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-')));
    const alerts = alertsOf(groups);
    assert.ok(alerts.length >= 13, `${alerts.length} alerts`);
    for (const a of alerts) {
      assert.match(a.alert, /^Tend[A-Za-z]+$/);
      assert.ok(['critical', 'warning', 'info'].includes(a.labels?.severity), `${a.alert}: severity ${a.labels?.severity}`);
      assert.ok(a.annotations?.summary && a.annotations?.description, `${a.alert}: summary and description`);
      assert.equal(a.annotations.runbook_url, `docs/alerts.md#${a.alert.toLowerCase()}`);
      assert.ok(anchors.has(a.alert.toLowerCase()), `docs/alerts.md has no section ${a.alert}`);
    }
    assert.equal(new Set(alerts.map((a) => a.alert)).size, alerts.length, 'alert names are unique');
    assert.ok(doc.split('\n').length <= 300, 'docs/alerts.md is at most 300 lines');
    assert.doesNotMatch(doc, /https?:\/\/|\]\((\.\.\/){2,}/, 'docs/alerts.md links nothing outside the repository');
  });

  it("every tend_* metric a rule reads is in src/metrics/registry.ts with the labels it matches on; every temporal_* one is the SDK core's", () => {
    const core = readFileSync(join(repoRoot, 'node_modules/@temporalio/core-bridge/sdk-core/crates/sdk-core/src/telemetry/metrics.rs'), 'utf8');
    const missing: string[] = [];
    for (const rule of rulesOf(groups)) {
      for (const name of metricsOf(rule)) {
        if (name.startsWith('tend_') && !registryLabels(name)) missing.push(`${rule.alert}: ${name}`);
        if (name.startsWith('temporal_')) {
          const bare = name.slice('temporal_'.length).replace(/_total$/, '');
          assert.ok(core.includes(`"${bare}"`), `${rule.alert}: ${name} is not a metric of the SDK's core`);
        }
      }
      for (const { metric, labels } of selectorsOf(rule)) {
        const known = metric.startsWith('tend_') ? registryLabels(metric) : undefined;
        for (const label of labels) {
          if (known) assert.ok(known.includes(label), `${rule.alert}: ${metric} has no label ${label} (it has ${known.join(', ')})`);
          if (metric.startsWith('temporal_')) assert.match(core, new RegExp(`const KEY_[A-Z_]+: &str = "${label}";`), `${rule.alert}: the SDK sets no label ${label}`);
        }
      }
    }
    assert.deepEqual(missing, [], 'metrics the rules read that src/metrics/registry.ts does not register');
    // The label values the rules match on, as the core writes them.
    for (const value of ['NonDeterminismError', 'workflow_task', 'activity_task']) assert.ok(core.includes(`"${value}"`), value);
  });

  it('the cluster-wide state gauges are read with max (every replica serves the same value), never summed across replicas', () => {
    const cluster = Object.keys(GAUGE_SCOPE).filter((g) => GAUGE_SCOPE[g] === 'cluster');
    let seen = 0;
    for (const rule of rulesOf(groups)) {
      const text = [rule.expr, ...Object.values(rule.annotations ?? {})].join('\n');
      for (const m of text.matchAll(/\b(tend_[a-z0-9_]+)\b/g)) {
        if (!cluster.includes(m[1]!)) continue;
        seen++;
        // What the gauge is read in: max, max by (...), changes() (then max), or one replica's own sum by (instance) (then max).
        const before = text.slice(0, m.index).trimEnd();
        assert.match(before, /(max(\s+by\s+\([^)]*\))?\s*\(|changes\(|sum\s+by\s+\(instance\)\s*\()$/, `${rule.alert}: ${m[1]} read otherwise than with max: ...${before.slice(-40)}`);
        if (/(changes|sum\s+by\s+\(instance\)\s*)\($/.test(before)) assert.match(before, /max\((sum\s+by\s+\(instance\)\s*\(|changes\()$/, `${rule.alert}: ${m[1]}`);
      }
    }
    assert.ok(seen >= 8, `${seen} reads of cluster-wide gauges`);
  });

  it('promtool test rules passes, with a case that fires and one that stays silent for every alert', async () => {
    const cases = new Map<string, { fires: number; silent: number }>(alertsOf(groups).map((a) => [a.alert, { fires: 0, silent: 0 }]));
    for (const file of testFiles()) {
      const t = parse(readFileSync(file, 'utf8'));
      assert.deepEqual(t.rule_files, ['../tend-rules.yaml'], file);
      for (const test of t.tests) {
        for (const c of test.alert_rule_test ?? []) {
          const seen = cases.get(c.alertname);
          assert.ok(seen, `${file}: no alert named ${c.alertname}`);
          if ((c.exp_alerts ?? []).length > 0) seen.fires++;
          else seen.silent++;
        }
      }
    }
    for (const [alert, { fires, silent }] of cases) {
      assert.ok(fires > 0, `${alert}: no promtool case in which it fires`);
      assert.ok(silent > 0, `${alert}: no promtool case in which it stays silent`);
    }
    const r = await run(promtool, ['test', 'rules', ...testFiles()]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /SUCCESS/);
  });

  it('the unit tests fail when the rules change under them: other runbook links, other thresholds', async () => {
    /** promtool test rules on the chart rendered with these values; what it says. */
    const against = async (name: string, values: Obj): Promise<CliResult> => {
      const dir = join(work, name);
      mkdirSync(dir);
      cpSync(TESTS_DIR, join(dir, 'tests'), { recursive: true });
      const file = join(dir, 'values.yaml');
      writeFileSync(file, stringify(values));
      writeFileSync(join(dir, 'tend-rules.yaml'), plainText(chartRuleGroups(helm, [file])));
      return run(promtool, ['test', 'rules', ...readdirSync(join(dir, 'tests')).sort().map((f) => join(dir, 'tests', f))]);
    };
    const failedAlerts = (r: CliResult) => new Set([...(r.stdout + r.stderr).matchAll(/alertname: (Tend[A-Za-z]+)/g)].map((m) => m[1]!));

    // Every firing case checks the annotations: a different runbook link fails each alert's.
    const links = await against('links', { metrics: { prometheusRule: { runbookBaseUrl: 'elsewhere.md' } } });
    assert.notEqual(links.code, 0, 'promtool test rules passed with other runbook links');
    assert.deepEqual([...failedAlerts(links)].sort(), alertsOf(groups).map((a) => a.alert).sort());

    // Thresholds far past what the firing cases reach: each alert with a threshold stays silent there.
    const loose = await against('thresholds', { metrics: { prometheusRule: { alerts: {
      workerNotPollingFor: '2h', workflowTaskFailures: 100, activityFailuresPerMinute: 10, pausedLongerThanSeconds: 86400,
      observeModeFor: '30d', taintBreakerOpenFor: '2h', taintNotGrantedFor: '2h', repairStuckFor: '3h',
      weederWindowOpenSeconds: 86400, informerNotSyncedFor: '2h', stateStaleSeconds: 86400,
    } } } });
    assert.notEqual(loose.code, 0, 'promtool test rules passed with other thresholds');
    const tuned = ['TendWorkerNotPolling', 'TendWorkflowTaskFailures', 'TendActivityFailures', 'TendCapabilityPausedTooLong', 'TendObserveModeTooLong',
      'TendTaintBreakerOpen', 'TendTaintReplacementsNotGranted', 'TendRepairQueueStuck', 'TendWeederWindowNotClosing', 'TendInformerNotSynced', 'TendStateGaugesStale'];
    for (const alert of tuned) assert.ok(failedAlerts(loose).has(alert), `${alert}: its unit tests passed with a threshold it should not meet`);
  });
});
