// The Kubernetes Events tend leaves where operators look (docs/events.md), end
// to end: a taint replacement's on the pod and on its Node, a repair entry's
// steps on its Node, and a repeat counted in one Event's series rather than
// written as another Event. The real `tend run` under tend's own rights, the
// real API server, controllers and simulated kubelet, the real Temporal.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type * as k8s from '@kubernetes/client-node';
import { TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { admin, deployment, isReady, podsOf, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';
import { budget, cleanUpTaintTest, managedLabel, startTaintTend, taint } from '../harness/taint.ts';
import { add, startRepairTend, type RepairWorld } from '../harness/repair.ts';
import { queueEntry } from '../harness/in-process-reads.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import { REPORTING_CONTROLLER } from '../../src/kube/events.ts';

const MAINTENANCE = 'example.org/maintenance';

/** `kubectl ...` against the sandbox, as docs/events.md has an operator run it. */
async function kubectl(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('kubectl', ['--kubeconfig', sandbox().kubeconfig, ...args], { timeout: 30_000 });
  return stdout;
}

/** When the Event's series was last seen: its last repeat, else its creation. */
const lastSeen = (e: k8s.EventsV1Event) => new Date((e.series?.lastObservedTime ?? e.eventTime) as unknown as string).getTime();
const count = (e: k8s.EventsV1Event) => e.series?.count ?? 1;

const created = (e: k8s.EventsV1Event) => new Date(e.eventTime as unknown as string).getTime();

/**
 * tend's Events about the object, seen since `since` (ms), oldest first. A Pod of the test is new,
 * so its Events are ordered by when each was created. A Node outlives the tests on this sandbox:
 * an earlier test may have created the Event whose series this one repeats, so its Events are
 * ordered by when each was last seen.
 */
async function tendEvents(kube: KubeClients, namespace: string, kind: string, name: string, since: number): Promise<k8s.EventsV1Event[]> {
  const list = await kube.events.listNamespacedEvent({ namespace, fieldSelector: `regarding.kind=${kind},regarding.name=${name}` });
  const at = kind === 'Node' ? lastSeen : created;
  return list.items
    .filter((e) => e.reportingController === REPORTING_CONTROLLER && lastSeen(e) >= since)
    .sort((a, b) => at(a) - at(b));
}

const reasons = (events: k8s.EventsV1Event[]) => [...new Set(events.map((e) => e.reason))];
const show = (events: k8s.EventsV1Event[]) => JSON.stringify(events.map((e) => `${e.reason} x${count(e)}: ${e.note}`), null, 1);

describe('Kubernetes Events', function () {
  this.timeout(240_000);
  let kube: KubeClients;

  before(() => {
    kube = admin();
  });

  describe('taint replacement', () => {
    let ns: string;
    let tend: TendProcess | undefined;
    let config: string | undefined;
    const tainted = new Set<string>();

    before(async () => {
      ns = await tempNamespace(kube, 'events');
      ({ config, tend } = await startTaintTend(ns, { taintReplacementOptions: [{ key: MAINTENANCE, durationInSeconds: 0 }], taintReplacementTimeSeconds: 1 }));
    });
    after(async () => {
      await cleanUpTaintTest({ kube, ns, tend, config, tainted, settleMs: 30_000 });
    });

    it('on the pod: marked, replacement due, eviction asked, refused by a budget (one Event, counted), evicted; on the Node: started, done', async () => {
      await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 1, labels: managedLabel(ns) }) });
      const [pod] = await waitFor('a ready pod of db', async () => {
        const pods = (await podsOf(kube, ns, 'app=db')).filter((p) => isReady(p) && !p.metadata?.deletionTimestamp);
        return pods.length === 1 && pods;
      }, { timeoutMs: 60_000 });
      const name = pod!.metadata!.name!;
      const node = pod!.spec!.nodeName!;
      // The only pod of db, under a budget that keeps it: every eviction is refused (429) until the budget goes.
      await budget(kube, ns, 'db', 1);
      const t0 = Date.now();
      tainted.add(`${node}|${MAINTENANCE}`);
      await taint(kube, node, { key: MAINTENANCE, value: 'x', effect: 'NoSchedule' });

      const refused = await waitFor('the refusal counted twice in one Event', async () => {
        const found = (await tendEvents(kube, ns, 'Pod', name, t0)).filter((e) => e.reason === 'TaintEvictionRefused');
        return found.some((e) => count(e) >= 2) && found;
      }, { timeoutMs: 60_000 });
      assert.equal(refused.length, 1, `one Event for the repeated refusal, not one per refusal: ${show(refused)}`);
      assert.equal(refused[0]!.type, 'Warning');
      assert.match(refused[0]!.note!, /disruption budget/);
      // The core/v1 view (`kubectl get events`, `kubectl describe`) reads the same series.
      const core = await kube.core.readNamespacedEvent({ namespace: ns, name: refused[0]!.metadata!.name! });
      assert.ok((core.series?.count ?? 0) >= 2, `core/v1 series ${JSON.stringify(core.series)}`);

      await kube.policy.deleteNamespacedPodDisruptionBudget({ namespace: ns, name: 'db' });
      const nodeEvents = await waitFor('TaintReplacementsDone on the Node', async () => {
        const found = await tendEvents(kube, 'default', 'Node', node, t0);
        return found.some((e) => e.reason === 'TaintReplacementsDone') && found;
      }, { timeoutMs: 90_000 });
      assert.deepEqual(reasons(nodeEvents), ['TaintReplacementsStarted', 'TaintReplacementsDone'], show(nodeEvents));
      assert.match(nodeEvents[0]!.note!, new RegExp(`node ${node} has taint ${MAINTENANCE.replace('.', '\\.')}`));
      assert.equal(nodeEvents[0]!.regarding?.kind, 'Node');

      const podEvents = await tendEvents(kube, ns, 'Pod', name, t0);
      assert.deepEqual(reasons(podEvents), ['TaintMarked', 'TaintReplacementDue', 'TaintReplacing', 'TaintEvictionRefused', 'TaintEvicted'], show(podEvents));
      // Each reason is one Event: the eviction asked again after each refusal is counted in its series.
      assert.equal(podEvents.length, 5, show(podEvents));
      const asked = podEvents.find((e) => e.reason === 'TaintReplacing')!;
      assert.ok(count(asked) >= 3, `asked at least three times (twice refused, then evicted): ${show(podEvents)}`);
      for (const e of podEvents) assert.equal(e.regarding?.uid, pod!.metadata!.uid, `${e.reason} is about the pod itself`);

      // What an operator types (docs/events.md).
      const forPod = await kubectl(['events', '-n', ns, '--for', `pod/${name}`]);
      for (const r of ['TaintMarked', 'TaintEvictionRefused', 'TaintEvicted']) assert.match(forPod, new RegExp(r));
      const byReason = await kubectl(['get', 'events', '-n', 'default', '--field-selector', `reason=TaintReplacementsDone,involvedObject.name=${node}`]);
      assert.match(byReason, /TaintReplacementsDone/);
    });
  });

  describe('repair', () => {
    let world: RepairWorld;
    let tend: TendProcess;

    before(async () => {
      ({ world, tend } = await startRepairTend(120_000));
    });
    after(async () => {
      await tend?.stop();
    });

    const nodeAt = async (address: string) => (await kube.core.listNode()).items
      .find((n) => n.status?.addresses?.some((a) => a.type === 'InternalIP' && a.address === address))!.metadata!.name!;
    const finished = (index: string) => waitFor(`entry ${index} finished`, async () => {
      const e = await queueEntry(index);
      return e && (e.status === 'succeeded' || e.status === 'failed') && e;
    }, { timeoutMs: 120_000 });
    /**
     * How many times each of tend's Events on the Node has been seen so far: an earlier queue on this
     * sandbox may have had an entry of the same index, whose Events the same notes now count in.
     */
    const counted = async (node: string) => new Map((await tendEvents(kube, 'default', 'Node', node, 0)).map((x) => [x.metadata!.name!, count(x)]));
    /** The entry's Events on the Node (an earlier queue on this sandbox may have had an entry of the same index). */
    const entryEvents = async (node: string, index: string, since: number) =>
      (await tendEvents(kube, 'default', 'Node', node, since)).filter((e) => e.note?.includes(`entry ${index}`));

    it("each step of an entry that succeeds is an Event on its Node: started, cordoned, drained, the command, healthy, uncordoned", async () => {
      const t0 = Date.now();
      const address = '10.88.0.3';
      const node = await nodeAt(address);
      const e = await add(world, 'drain', address);
      assert.equal((await finished(e.index)).status, 'succeeded');
      const events = await waitFor('the uncordon Event', async () => {
        const found = await entryEvents(node, e.index, t0);
        return found.some((x) => x.reason === 'RepairUncordoned') && found;
      });
      assert.deepEqual(reasons(events),
        ['RepairStarted', 'RepairCordoned', 'RepairDrained', 'RepairCommandRunning', 'RepairCommandSucceeded', 'RepairSucceeded', 'RepairUncordoned'], show(events));
      assert.ok(events.every((x) => x.type === 'Normal' && x.regarding?.name === node && x.regarding.uid), show(events));
      const forNode = await kubectl(['events', '-n', 'default', '--for', `node/${node}`]);
      for (const r of ['RepairStarted', 'RepairDrained', 'RepairSucceeded']) assert.match(forNode, new RegExp(r));
    });

    it('an entry that fails: a step unhealthy, a command run twice (one Event, counted), the failure', async () => {
      const t0 = Date.now();
      const address = '10.88.0.2';
      const node = await nodeAt(address);
      // Step 0 runs a command that heals nothing; step 1's command exits 1, run twice (command_retries 1).
      const before = await counted(node);
      const e = await add(world, 'env', address);
      assert.equal((await finished(e.index)).status, 'failed');
      const events = await waitFor('the failure Event', async () => {
        const found = await entryEvents(node, e.index, t0);
        return found.some((x) => x.reason === 'RepairFailed') && found;
      });
      assert.deepEqual(reasons(events), ['RepairStarted', 'RepairCommandRunning', 'RepairCommandSucceeded', 'RepairUnhealthy', 'RepairFailed'], show(events));
      const running = events.filter((x) => x.reason === 'RepairCommandRunning');
      assert.deepEqual(running.map((x) => [x.note, count(x) - (before.get(x.metadata!.name!) ?? 0)]), [
        [`repair queue entry ${e.index}: running the repair_command of step 0`, 1],
        [`repair queue entry ${e.index}: running the repair_command of step 1`, 2],
      ], show(events));
      const failed = events.find((x) => x.reason === 'RepairFailed')!;
      assert.equal(failed.type, 'Warning');
      assert.match(failed.note!, /the repair_command of step 1 failed \(exit code 1; output: tend repair-queue logs \d+\); the entry failed/);
      assert.equal(events.find((x) => x.reason === 'RepairUnhealthy')!.type, 'Warning');
    });
  });
});
