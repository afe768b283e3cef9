// Two replicas of `tend run` (one configuration, one task queue) with state to show: a weeder
// window open, a taint replacement held by a PodDisruptionBudget (one slot in flight, one pod
// queued), a repair entry succeeded, a capability paused. Both replicas' /metrics are scraped
// in Prometheus text format, labelled job and instance as Prometheus does, and every query of
// deploy/grafana/tend.json that reads a tend_* gauge is evaluated over the union of the two
// scrapes (test/harness/promql.ts): a cluster-wide gauge's query (GAUGE_SCOPE) equals what one
// replica's scrape gives and never adds the replicas up; a per-process gauge's query keeps one
// series per instance. Every label value of every tend_* series comes from a bounded set.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { allCapabilities } from '../harness/all-capabilities.ts';
import { runTend, TendProcess, withHttpAddress } from '../harness/cli.ts';
import { repoRoot } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deleteNamespace, grantConfiguredRights, isReady, podsOf, tempNamespace } from '../harness/kube.ts';
import { byLabels, evaluate, metricNames, parseExposition, parseQuery, type Sample } from '../harness/promql.ts';
import { add, repairWorld, resetRepairQueue, temporalCli, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import { budget, readyPodsOn, taint, taintStatusFor, untaint } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';
import { dbBack, dbWithDependants } from '../harness/weeder.ts';
import { metricsOf } from '../harness/metrics.ts';
import { GAUGE_SCOPE } from '../../src/metrics/registry.ts';
import { LABEL_BOUNDS } from '../../src/metrics/labels.ts';
import { configuredOperations, OTHER_OPERATION } from '../../src/metrics/state.ts';
import { mergePatch } from '../../src/kube/api.ts';
import type { Config } from '../../src/config/load.ts';
import { repairStatuses } from '../../src/repair/entry.ts';
import { PAUSABLE } from '../../src/safety/messages.ts';
import { MODE_SECTIONS } from '../../src/config/mode.ts';
import { DETECTED, REPLACING, SLOTS_WORKFLOW_ID } from '../../src/taint/messages.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const TASK_QUEUE = 'tend-metrics-two';
const KEY = 'example.org/metrics-replicas';
const NODE = 'sim-1';
const ADDRESS = '192.0.2.231';
/** Gauges that are an age reckoned at scrape time: two scrapes a moment apart differ by that moment. */
const AGES = new Set(['tend_weeder_window_oldest_open_seconds']);

interface Panel { title?: string; targets?: { expr: string }[]; panels?: Panel[] }
interface Query { panel: string; expr: string }

/** Every query of the dashboard, `$job` as Grafana sends it with "All" picked (its allValue). */
function dashboardQueries(): Query[] {
  const d = JSON.parse(readFileSync(join(repoRoot, 'deploy/grafana/tend.json'), 'utf8')) as { panels: Panel[]; templating: { list: { name: string; allValue?: string }[] } };
  const all = d.templating.list.find((v) => v.name === 'job')?.allValue;
  assert.ok(all, 'the job variable has an allValue');
  const flat = (ps: Panel[]): Panel[] => ps.flatMap((p) => [p, ...flat(p.panels ?? [])]);
  return flat(d.panels).flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title ?? '?', expr: t.expr.replaceAll('$job', all) })));
}

/** The tend_* gauges a query reads (by name, before parsing: a query this evaluator cannot read must still be found). */
const gaugesOf = (expr: string) => [...new Set([...expr.matchAll(/\b(tend_[a-z_]+)\b/g)].map((m) => m[1]!))].filter((n) => Object.hasOwn(GAUGE_SCOPE, n));

describe('two replicas of tend run: the dashboard\'s gauge queries equal one replica\'s value (e2e)', function () {
  this.timeout(300_000);
  let kube: KubeClients;
  let config: string;
  let world: RepairWorld;
  let weederNs: string;
  let taintNs: string;
  let appsNs: string;
  const replicas: { tend: TendProcess; address: string }[] = [];
  /** The two scrapes once the state settled. */
  let scrapes: Sample[][] = [];
  let index = '';

  const terminateOurs = async () => {
    const { stdout } = await temporalCli(['workflow', 'list', '--query', `TaskQueue="${TASK_QUEUE}" AND ExecutionStatus="Running"`, '--output', 'json']);
    for (const w of stdout.trim() ? (JSON.parse(stdout) as { execution: { workflowId: string } }[]) : []) {
      await temporalCli(['workflow', 'terminate', '--workflow-id', w.execution.workflowId, '--reason', 'test reset']).catch(() => undefined);
    }
    await temporalCli(['workflow', 'terminate', '--workflow-id', SLOTS_WORKFLOW_ID, '--reason', 'test reset']).catch(() => undefined);
  };
  const scrape = async () => Promise.all(replicas.map(async (r) => parseExposition(await metricsOf(r.address), { job: 'tend', instance: r.address })));
  /** A series' value in one scrape (labels as given, exactly those besides job and instance), or undefined. */
  const valueIn = (samples: Sample[], name: string, labels: Record<string, string> = {}) => samples.find((s) => {
    const rest = Object.entries(s.labels).filter(([k]) => !['__name__', 'job', 'instance'].includes(k));
    return s.labels.__name__ === name && JSON.stringify(rest.sort()) === JSON.stringify(Object.entries(labels).sort());
  })?.value;
  /** Each cluster-wide gauge's series where the two scrapes disagree (ages aside). */
  const disagreements = ([a, b]: Sample[][]) => {
    const of = (s: Sample[]) => byLabels(s.filter((x) => GAUGE_SCOPE[x.labels.__name__!] === 'cluster' && !AGES.has(x.labels.__name__!))
      .map((x) => ({ labels: { ...x.labels, instance: '', job: '' }, value: x.value })));
    const [ma, mb] = [of(a!), of(b!)];
    return [...new Set([...ma.keys(), ...mb.keys()])].filter((k) => ma.get(k) !== mb.get(k)).map((k) => `${k}: ${ma.get(k)} / ${mb.get(k)}`);
  };

  before(async () => {
    kube = admin();
    await resetRepairQueue();
    await terminateOurs();
    [weederNs, taintNs, appsNs] = await Promise.all(['mx-weeder', 'mx-taint', 'mx-apps'].map((p) => tempNamespace(kube, p)));
    const weeder = await dbWithDependants(kube, weederNs, 1);
    world = repairWorld();
    const all = allCapabilities({ taskQueue: TASK_QUEUE, kubeconfig: sandbox().tendKubeconfig, weeder, taintNs, taintKey: KEY, appsNs, world }) as
      { weeder: object; taintReplacement: object };
    // A window that stays open through the test; one replacement at a time, so that the second pod waits for a slot.
    all.weeder = { ...all.weeder, watchDuration: '10m' };
    all.taintReplacement = { ...all.taintReplacement, maxConcurrentReplacements: 1 };
    config = join(await mkdtemp(join(tmpdir(), 'tend-metrics-two-')), 'tend.yaml');
    writeFileSync(config, stringify(all));
    await grantConfiguredRights(config);
    world = { ...world, config };
    for (let i = 0; i < 2; i++) {
      const args = withHttpAddress(['run', '--config', config]);
      replicas.push({ tend: new TendProcess(args), address: args[args.indexOf('--http-address') + 1]! });
    }
    await waitFor('two replicas polling and synced', () => replicas.every((r) => r.tend.output.includes('worker started') && r.tend.output.includes('taint watch synced')),
      { timeoutMs: 180_000 });
  });

  after(async () => {
    await untaint(kube, NODE, KEY).catch(() => undefined);
    if (replicas.some((r) => !r.tend.exited)) {
      await runTend(['resume', '--config', config]).catch(() => undefined);
      await waitFor('the node workflows to end', async () => (await taintStatusFor(config)).nodes.length === 0, { timeoutMs: 60_000 })
        .catch((err: Error) => process.stderr.write(`cleanup: ${err.message}\n`));
    }
    await Promise.all(replicas.map((r) => r.tend.stop()));
    await terminateOurs();
    await Promise.all([weederNs, taintNs, appsNs].filter(Boolean).map((ns) => deleteNamespace(kube, ns)));
    await resetRepairQueue();
  });

  it('shows state in both replicas: a window open, a slot in flight and a pod queued, an entry succeeded, apps paused', async () => {
    const paused = await runTend(['pause', 'apps', '--reason', 'metrics test', '--config', config]);
    assert.equal(paused.code, 0, paused.stderr);
    const e = await add(world, 'heal', ADDRESS);
    index = e.index;
    // The weeder: db goes away (its window arms) and comes back (the window opens).
    await kube.apps.patchNamespacedDeploymentScale({ namespace: weederNs, name: 'db', body: { spec: { replicas: 0 } } }, mergePatch);
    await waitFor('db down', async () => (await podsOf(kube, weederNs, 'app=db')).length === 0, { timeoutMs: 60_000 });
    await waitFor('a weeder window armed', async () => (await scrape()).every((s) => (valueIn(s, 'tend_weeder_windows', { state: 'armed' }) ?? 0) >= 1), { timeoutMs: 60_000 });
    await dbBack(kube, weederNs);
    await waitFor('db back', async () => (await podsOf(kube, weederNs, 'app=db')).some(isReady), { timeoutMs: 60_000 });
    // Taint: two pods on a node, a budget that refuses every eviction: one slot stays in flight, the other pod waits.
    await readyPodsOn(kube, taintNs, 'held', NODE, 2);
    await budget(kube, taintNs, 'held', 2);
    await taint(kube, NODE, { key: KEY, value: 'x', effect: 'NoSchedule' });
    await waitFor('the entry succeeded', async () => (await queueEntry(index))?.status === 'succeeded', { timeoutMs: 120_000 });

    const want: [string, Record<string, string>][] = [
      ['tend_weeder_windows', { state: 'open' }], ['tend_weeder_window_oldest_open_seconds', {}],
      ['tend_taint_replacements_in_flight', {}], ['tend_taint_replacements_queued', {}], ['tend_taint_nodes_tainted', {}],
      ['tend_taint_pods', { condition: REPLACING }],
      ['tend_repair_queue_items', { status: 'succeeded' }], ['tend_repair_queue_entries', { operation: 'heal', status: 'succeeded' }],
      ['tend_repair_queue_enabled', {}], ['tend_paused_since_timestamp_seconds', { capability: 'apps' }],
    ];
    let last: string[] = [];
    scrapes = await waitFor('both replicas showing the state, and agreeing on every cluster-wide gauge', async () => {
      const s = await scrape();
      const missing = want.filter(([n, l]) => s.some((x) => !((valueIn(x, n, l) ?? 0) > 0))).map(([n, l]) => `${n}${JSON.stringify(l)}`);
      last = [...missing.map((m) => `${m}: 0 or absent`), ...disagreements(s)];
      return last.length === 0 && s;
    }, { timeoutMs: 120_000 }).catch((err: Error) => assert.fail(`${err.message}\n${last.join('\n')}`));
    const [a] = scrapes;
    assert.equal(valueIn(a!, 'tend_taint_replacements_in_flight'), 1);
    assert.equal(valueIn(a!, 'tend_taint_replacements_queued'), 1);
    assert.equal(valueIn(a!, 'tend_weeder_windows', { state: 'open' }), 1);
    const since = valueIn(a!, 'tend_paused_since_timestamp_seconds', { capability: 'apps' })!;
    assert.ok(Math.abs(since * 1000 - Date.now()) < 300_000, `paused since ${since}: not a Unix time of this test`);
  });

  it('evaluates every dashboard query of a tend_* gauge over both scrapes: cluster-wide ones equal one replica\'s value, per-process ones stay per instance', () => {
    assert.equal(scrapes.length, 2, 'the scenario ran');
    const [a, b] = scrapes as [Sample[], Sample[]];
    const union = [...a, ...b];
    const queries = dashboardQueries().filter((q) => gaugesOf(q.expr).length > 0);
    const read = new Set(queries.flatMap((q) => gaugesOf(q.expr)));
    for (const [name, scope] of Object.entries(GAUGE_SCOPE)) {
      if (scope === 'cluster') assert.ok(read.has(name), `the dashboard shows no panel of the cluster-wide gauge ${name}`);
    }
    const problems: string[] = [];
    let bites = 0;
    for (const q of queries) {
      const at = `${q.panel}: ${q.expr}`;
      const tree = parseQuery(q.expr);
      const names = metricNames(tree);
      const scopes = new Set(names.map((n) => GAUGE_SCOPE[n]));
      assert.equal(scopes.size, 1, `${at}: reads cluster-wide and per-process gauges together`);
      const [u, ra, rb] = [union, a, b].map((s) => evaluate(tree, s));
      const [mu, ma, mb] = [u!, ra!, rb!].map((r) => byLabels(r.result));
      if (scopes.has('cluster')) {
        const added = [...new Set(u!.acrossInstances.filter((op) => op !== 'max' && op !== 'min'))];
        if (added.length) problems.push(`${at}: ${added.join(', ')} adds the replicas' values (read a cluster-wide gauge with max)`);
        if (u!.result.some((s) => 'instance' in s.labels)) problems.push(`${at}: keeps one series per replica`);
        if (JSON.stringify([...mu.keys()].sort()) !== JSON.stringify([...ma.keys()].sort())) problems.push(`${at}: series ${[...mu.keys()]} against one replica's ${[...ma.keys()]}`);
        for (const [k, v] of mu) {
          const [va, vb] = [ma.get(k)!, mb.get(k)!];
          const ok = names.some((n) => AGES.has(n)) ? v >= Math.min(va, vb) && v <= Math.max(va, vb) : v === va && va === vb;
          if (!ok) problems.push(`${at}: ${k} is ${v} over both replicas, ${va} and ${vb} over each`);
          if (v !== 0) bites++;
        }
        // The same query adding the replicas up gives another answer wherever the value is not 0: the check above can fail.
        if (!added.length) {
          const summed = byLabels(evaluate(parseQuery(q.expr.replace(/\b(max|min)\b/g, 'sum')), union).result);
          for (const [k, v] of mu) if (v !== 0 && summed.get(k) === v) problems.push(`${at}: adding the replicas up gives the same ${k}: the check cannot tell`);
        }
      } else {
        if (u!.acrossInstances.length) problems.push(`${at}: ${u!.acrossInstances.join(', ')} over the replicas of a per-process gauge (read it per instance)`);
        const both = new Map([...ma, ...mb]);
        if (ma.size === 0 || mb.size === 0) problems.push(`${at}: a replica serves none of it`);
        if (u!.result.some((s) => !('instance' in s.labels))) problems.push(`${at}: a series without its instance`);
        if (JSON.stringify([...mu].sort()) !== JSON.stringify([...both].sort())) problems.push(`${at}: not each replica's series as it serves them`);
      }
    }
    assert.deepEqual(problems, []);
    assert.ok(bites >= 10, `only ${bites} cluster-wide series are not 0: the scenario shows too little to tell max from sum`);
    console.log(`      metrics-replicas: ${queries.length} queries evaluated over two replicas, ${bites} cluster-wide series not 0`);
  });

  it('no tend_* series carries a label value that grows with events: each comes from a bounded set', async () => {
    assert.equal(scrapes.length, 2, 'the scenario ran');
    const namespaces = new Set(['', ...(await kube.core.listNamespace()).items.map((n) => n.metadata!.name!)]);
    const pods = (await kube.core.listPodForAllNamespaces()).items;
    const nodes = (await kube.core.listNode()).items;
    // Names and ids of the objects the scenario made: none may be a label value.
    const objects = new Set([
      ...pods.flatMap((p) => [p.metadata!.name!, p.metadata!.uid!]), ...nodes.flatMap((n) => [n.metadata!.name!, n.metadata!.uid!]), ADDRESS, index,
    ]);
    const fixed: Record<string, Set<string>> = {
      capability: new Set([...PAUSABLE, ...Object.keys(MODE_SECTIONS)]), status: new Set(repairStatuses), state: new Set(['open', 'armed']), condition: new Set([DETECTED, REPLACING]),
      mode: new Set(['act', 'observe']), service: new Set(['db']), namespace: namespaces,
      operation: new Set([...configuredOperations((parse(readFileSync(config, 'utf8')) as Config).repair), OTHER_OPERATION]),
    };
    const problems: string[] = [];
    const perBuild = new Map<string, Set<string>>();
    for (const s of scrapes.flat().filter((x) => x.labels.__name__!.startsWith('tend_'))) {
      for (const [label, value] of Object.entries(s.labels)) {
        // Prometheus's own (job, instance: added at the scrape; le: a histogram's buckets, fixed in code).
        if (label === '__name__' || label === 'job' || label === 'instance' || (label === 'le' && s.labels.__name__!.endsWith('_bucket'))) continue;
        const at = `${s.labels.__name__}{${label}="${value}"}`;
        if (!Object.hasOwn(LABEL_BOUNDS, label)) problems.push(`${at}: label not in LABEL_BOUNDS`);
        if (fixed[label] && !fixed[label].has(value)) problems.push(`${at}: not one of ${[...fixed[label]].join(', ')}`);
        if (label === 'version' || label === 'commit') perBuild.set(label, (perBuild.get(label) ?? new Set()).add(value));
        else if (!fixed[label] && !/^[A-Za-z][A-Za-z0-9_-]{0,40}$/.test(value)) problems.push(`${at}: not a name from a fixed set`);
        if (label !== 'namespace' && label !== 'service' && objects.has(value)) problems.push(`${at}: the name or id of an object`);
      }
    }
    for (const [label, values] of perBuild) if (values.size !== 1) problems.push(`${label}: ${values.size} values across two replicas of one build`);
    assert.deepEqual(problems, []);
  });
});
