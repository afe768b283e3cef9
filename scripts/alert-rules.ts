// tend's alert rules have one source, deploy/helm/tend/files/prometheus-rules.yaml, which the
// chart renders with its values. This script renders it with the chart's default values (helm
// template, helm from scripts/binaries.sh --helm) into the two files made from it:
//   deploy/kubernetes/components/alerts/prometheusrule.yaml   the kustomize component's PrometheusRule
//   deploy/prometheus/tend-rules.yaml                         Prometheus' own rules format (rule_files),
//                                                             which deploy/prometheus/tests test
// test/ship/alert-rules.test.ts fails when either differs from what this writes. docs/alerts.md
// has a runbook for each alert.
//
//   node scripts/alert-rules.ts            write both files
//   node scripts/alert-rules.ts --check    exit 1, naming them, when either is not up to date
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';

const root = fileURLToPath(new URL('..', import.meta.url));
export const RULES_SOURCE = 'deploy/helm/tend/files/prometheus-rules.yaml';
export const COMPONENT_RULE = 'deploy/kubernetes/components/alerts/prometheusrule.yaml';
export const PLAIN_RULES = 'deploy/prometheus/tend-rules.yaml';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Groups = any[];

/** The chart's rule groups, rendered by `helm template` with the given values files (none: the defaults). */
export function chartRuleGroups(helm: string, valuesFiles: string[] = []): Groups {
  const home = mkdtempSync(join(tmpdir(), 'tend-alert-rules-'));
  try {
    const out = execFileSync(helm, [
      'template', 'tend', join(root, 'deploy/helm/tend'), '-n', 'tend-system', '--set', 'metrics.prometheusRule.enabled=true',
      ...valuesFiles.flatMap((f) => ['-f', f]), '--show-only', 'templates/prometheusrule.yaml',
    ], {
      encoding: 'utf8', maxBuffer: 16 << 20,
      // Nothing of the user's helm set-up is read or written.
      env: { ...process.env, HELM_CACHE_HOME: join(home, 'cache'), HELM_CONFIG_HOME: join(home, 'config'), HELM_DATA_HOME: join(home, 'data') },
    });
    const rule = parseAllDocuments(out).map((d) => d.toJS()).find((o) => o?.kind === 'PrometheusRule');
    if (!Array.isArray(rule?.spec?.groups)) throw new Error(`helm template rendered no PrometheusRule with groups from ${RULES_SOURCE}`);
    return rule.spec.groups;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const generated = `# Made by \`node scripts/alert-rules.ts\` from ${RULES_SOURCE} with the chart's
# default values: edit that file, then run the script (test/ship/alert-rules.test.ts fails while
# this one differs). docs/alerts.md has a runbook for each alert.`;

const yaml = (value: unknown) => stringify(value, { lineWidth: 0 });

/** Each rule's keys in the order people write them (helm's toYaml sorts them). */
const KEY_ORDER = ['alert', 'record', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations'];
const readable = (groups: Groups): Groups => groups.map((g) => ({
  ...g,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  rules: g.rules.map((r: any) => Object.fromEntries(Object.entries(r).sort(([a], [b]) => KEY_ORDER.indexOf(a) - KEY_ORDER.indexOf(b)))),
}));

/** The kustomize component's PrometheusRule, in tend-system beside deploy/kubernetes. */
export function componentText(groups: Groups): string {
  return `${generated}
# The thresholds are the chart's defaults (deploy/helm/tend/values.yaml, metrics.prometheusRule.alerts);
# change one with a patch from your overlay (docs/alerts.md, "Installing the rules").
${yaml({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'tend', namespace: 'tend-system', labels: { 'app.kubernetes.io/name': 'tend', 'app.kubernetes.io/part-of': 'tend' } },
    spec: { groups: readable(groups) },
  })}`;
}

/** The same groups as a Prometheus rules file (rule_files; promtool check rules). */
export function plainText(groups: Groups): string {
  return `${generated}
# For a Prometheus without the Prometheus Operator: list this file under rule_files.
${yaml({ groups: readable(groups) })}`;
}

/** Each made file and the text it should hold. */
export function expected(helm: string): Map<string, string> {
  const groups = chartRuleGroups(helm);
  return new Map([[COMPONENT_RULE, componentText(groups)], [PLAIN_RULES, plainText(groups)]]);
}

/** helm's path, built by scripts/binaries.sh --helm when missing (its last line). */
export function helmPath(): string {
  return execFileSync('bash', [join(root, 'scripts/binaries.sh'), '--helm'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').at(-1)!;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  const stale: string[] = [];
  for (const [file, text] of expected(helmPath())) {
    const path = join(root, file);
    let have: string | undefined;
    try {
      have = readFileSync(path, 'utf8');
    } catch {
      have = undefined;
    }
    if (have === text) continue;
    if (check) stale.push(file);
    else {
      writeFileSync(path, text);
      console.log(`alert-rules: wrote ${file}`);
    }
  }
  if (stale.length) {
    console.error(`alert-rules: not made from ${RULES_SOURCE} as it stands: ${stale.join(', ')}; run node scripts/alert-rules.ts`);
    process.exit(1);
  }
}
