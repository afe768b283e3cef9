// writeTaintConditions re-reads the pods it writes before any write: with one
// LIST of the node's managed pods (paged), not a GET per pod, so that a zone
// outage costs the API server's flow control about one request per pod. A pod
// the list does not show is read by name: gone is skipped, a pod that is no
// longer managed is refused before anything is written.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { createTaintActivities, LIST_PAGE, TAINT_UNTAINTED } from '../../src/activities/taint.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import type { TaintReplacementConfig } from '../../src/config/taint-replacement.ts';
import { firstMark, newNodeTaintData, observeTaints, type ConditionWrite, type TaintSettings } from '../../src/taint/node.ts';

const KEY = 'example.org/maintenance';
const T0 = Date.parse('2026-11-25T20:00:00Z');

const config = {
  enabled: true,
  podSelector: { matchLabels: { managed: 'yes' } },
  namespaces: ['shop'],
  taintReplacementOptions: [{ key: KEY, durationInSeconds: 60 }],
  taintReplacementTimeSeconds: 30,
  maxConcurrentReplacements: 1,
  breaker: { maxTaintedNodes: '50%' },
} as unknown as TaintReplacementConfig;

function pod(i: number, o: { node?: string; managed?: boolean } = {}): k8s.V1Pod {
  return {
    metadata: { uid: `uid-${i}`, name: `db-${i}`, namespace: 'shop', labels: { managed: o.managed === false ? 'no' : 'yes' } },
    spec: { nodeName: o.node ?? 'sim-1', containers: [] },
    status: { phase: 'Running', conditions: [] },
  };
}

/** An API server holding `pods` and one tainted node sim-1; counts each call by kind. */
function stubKube(pods: k8s.V1Pod[], nodeTaints: { key: string; effect: string }[] = [{ key: KEY, effect: 'NoSchedule' }]) {
  const calls = { list: 0, get: 0, patch: 0, nodes: 0 };
  const patched: string[] = [];
  const notFound = () => Object.assign(new Error('not found'), { code: 404 });
  const kube = {
    core: {
      readNamespacedPod: async ({ namespace, name }: { namespace: string; name: string }) => {
        calls.get++;
        return pods.find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name) ?? Promise.reject(notFound());
      },
    },
    nodes: {
      taints: async (name: string) => {
        calls.nodes++;
        return name === 'sim-1' ? nodeTaints : undefined;
      },
    },
    pods: {
      list: async (q: { namespace: string; labelSelector: string; fieldSelector: string; limit?: number; _continue?: string }) => {
        calls.list++;
        const node = q.fieldSelector.replace('spec.nodeName=', '');
        const [k, v] = q.labelSelector.split('=');
        const all = pods.filter((p) => p.metadata?.namespace === q.namespace && p.spec?.nodeName === node && p.metadata?.labels?.[k!] === v);
        const from = Number(q._continue ?? 0);
        const to = q.limit ? from + q.limit : all.length;
        return { items: all.slice(from, to), metadata: to < all.length ? { _continue: String(to) } : {} };
      },
      patchStatus: async (_namespace: string, name: string) => {
        calls.patch++;
        patched.push(name);
        return {};
      },
    },
  } as unknown as KubeClients;
  return { kube, calls, patched };
}

const mark = (p: k8s.V1Pod): ConditionWrite => ({
  uid: p.metadata!.uid!, namespace: 'shop', name: p.metadata!.name!,
  detected: { since: T0, message: `node sim-1 has taint ${KEY}:NoSchedule` }, replacing: null,
});

describe('taint: condition writes re-read their pods with one LIST of the node', () => {
  it('marks a node\'s pods with one LIST (paged), one Node read and a patch each: no GET per pod', async () => {
    const pods = Array.from({ length: LIST_PAGE + 5 }, (_, i) => pod(i));
    const { kube, calls } = stubKube(pods);
    const r = await createTaintActivities(kube, config).writeTaintConditions({ node: 'sim-1', writes: pods.map(mark) });
    assert.equal(r.written, pods.length);
    assert.deepEqual(calls, { list: 2, get: 0, patch: pods.length, nodes: 1 });
  });

  it('a pod missing from the list is read by name: gone is skipped, the others written', async () => {
    const pods = [pod(1), pod(2), pod(3)];
    const { kube, calls, patched } = stubKube(pods);
    const writes = [...pods.map(mark), { ...mark(pod(4)) }];
    const r = await createTaintActivities(kube, config).writeTaintConditions({ node: 'sim-1', writes });
    assert.equal(r.written, 3);
    assert.equal(r.gone, 1);
    assert.deepEqual(calls, { list: 1, get: 1, patch: 3, nodes: 1 });
    assert.deepEqual(patched.sort(), ['db-1', 'db-2', 'db-3']);
  });

  it('a mark for a node whose taint has lifted meanwhile is not written, and is not a refusal (the workflow goes on and clears)', async () => {
    const pods = [pod(1), pod(2)];
    const { kube, calls } = stubKube(pods, []);
    await assert.rejects(
      createTaintActivities(kube, config).writeTaintConditions({ node: 'sim-1', writes: pods.map(mark) }),
      (err: Error & { type?: string; nonRetryable?: boolean }) => err.type === TAINT_UNTAINTED && err.nonRetryable === true && /carries none of the configured taints any more/.test(err.message),
    );
    assert.equal(calls.patch, 0);
    // Clears go on: an untainted node is where they are wanted.
    const clear = pods.map((p) => ({ ...mark(p), detected: null }));
    const r = await createTaintActivities(kube, config).writeTaintConditions({ node: 'sim-1', writes: clear });
    assert.equal(r.written, 2);
  });

  it('a pod the list leaves out because it is no longer managed is refused, and nothing is written', async () => {
    const pods = [pod(1), pod(2), pod(3, { managed: false })];
    const { kube, calls } = stubKube(pods);
    await assert.rejects(
      createTaintActivities(kube, config).writeTaintConditions({ node: 'sim-1', writes: pods.map(mark) }),
      /refused: pod shop\/db-3 is not managed by taint replacement/,
    );
    assert.equal(calls.patch, 0);
  });

  it('clears: a pod no longer managed, or on another node, is left out and the others cleared (an ending never keeps them all)', async () => {
    const pods = [pod(1), pod(2, { managed: false }), pod(3, { node: 'sim-9' }), pod(4)];
    const { kube, calls, patched } = stubKube(pods);
    const clear = (p: k8s.V1Pod) => ({ ...mark(p), detected: null, replacing: null });
    const r = await createTaintActivities(kube, config).writeTaintConditions({ node: 'sim-1', writes: pods.map(clear) });
    assert.equal(r.skipped, 2);
    assert.deepEqual(patched.sort(), ['db-1', 'db-4']);
    assert.equal(calls.patch, 2);
  });

  it('a pod on another node (a forged write) is refused, and nothing is written', async () => {
    const pods = [pod(1), pod(2, { node: 'sim-9' })];
    const { kube, calls } = stubKube(pods);
    await assert.rejects(
      createTaintActivities(kube, config).writeTaintConditions({ node: 'sim-1', writes: pods.map(mark) }),
      /refused: pod shop\/db-2 runs on node sim-9, not on sim-1/,
    );
    assert.equal(calls.patch, 0);
  });

  it('a write of one pod reads it by name (a GET is cheaper than a LIST for one)', async () => {
    const { kube, calls } = stubKube([pod(1), pod(2)]);
    const r = await createTaintActivities(kube, config).writeTaintConditions({ node: 'sim-1', writes: [mark(pod(1))] });
    assert.equal(r.written, 1);
    assert.deepEqual(calls, { list: 0, get: 1, patch: 1, nodes: 1 });
  });

  it('a pod with the UID of a listed pod but another name is read by name, not taken from the list', async () => {
    const { kube, calls } = stubKube([pod(1), pod(2)]);
    const forged = { ...mark(pod(1)), name: 'db-2' };
    const r = await createTaintActivities(kube, config).writeTaintConditions({ node: 'sim-1', writes: [forged, mark(pod(2))] });
    // db-2's UID is uid-2, not uid-1: a namesake, skipped as gone.
    assert.equal(r.gone, 1);
    assert.equal(r.written, 1);
    assert.equal(calls.get, 1);
  });
});

describe('taint: the listing activity writes the first mark of the pods it finds new', () => {
  const first = { detected: { since: T0, message: `node sim-1 has taint ${KEY}:NoSchedule` }, replacing: null };

  it('one LIST and one Node read, a patch for each pod not known, no GET; answers the pods and those it marked', async () => {
    const pods = Array.from({ length: 12 }, (_, i) => pod(i));
    const { kube, calls, patched } = stubKube(pods);
    const r = await createTaintActivities(kube, config).listTaintPods({ node: 'sim-1', mark: { known: ['uid-0', 'uid-1'], ...first } });
    assert.ok(!Array.isArray(r));
    assert.equal(r.pods.length, 12);
    assert.deepEqual([...r.written].sort(), pods.slice(2).map((p) => p.metadata!.uid!).sort());
    assert.deepEqual(calls, { list: 1, get: 0, patch: 10, nodes: 1 });
    assert.ok(!patched.includes('db-0') && !patched.includes('db-1'), 'known pods are left to the workflow');
  });

  it('without a mark it only lists (as before the patch): a plain list of pods', async () => {
    const { kube, calls } = stubKube([pod(1), pod(2)]);
    const r = await createTaintActivities(kube, config).listTaintPods({ node: 'sim-1' });
    assert.ok(Array.isArray(r));
    assert.equal(r.length, 2);
    assert.deepEqual(calls, { list: 1, get: 0, patch: 0, nodes: 0 });
  });

  it('writes nothing when the node no longer carries a configured taint', async () => {
    const { kube, calls } = stubKube([pod(1), pod(2)], []);
    const r = await createTaintActivities(kube, config).listTaintPods({ node: 'sim-1', mark: { known: [], ...first } });
    assert.ok(!Array.isArray(r));
    assert.deepEqual(r.written, []);
    assert.equal(calls.patch, 0);
  });

  it('refuses a malformed mark before writing anything', async () => {
    const { kube, calls } = stubKube([pod(1)]);
    await assert.rejects(
      createTaintActivities(kube, config).listTaintPods({ node: 'sim-1', mark: { known: [], detected: { since: 'soon' }, replacing: null } as never }),
      /refused: mark must be/,
    );
    assert.equal(calls.patch, 0);
  });

  it('firstMark is what the workflow\'s first decision writes for a pod listed now', () => {
    const settings: TaintSettings = {
      taintReplacementOptions: [{ key: KEY, durationInSeconds: 60 }], taintReplacementTimeSeconds: 30, maxConcurrentReplacements: 1,
      podSelector: { matchLabels: { managed: 'yes' } },
    };
    const d = newNodeTaintData('sim-1', settings);
    observeTaints(d, [{ key: KEY, effect: 'NoSchedule', durationInSeconds: 60, matchedBy: KEY, timeAdded: new Date(T0).toISOString() }], settings, T0);
    assert.deepEqual(firstMark(d, T0 + 1000), { detected: { since: T0 + 1000, message: `node sim-1 has taint ${KEY}:NoSchedule` }, replacing: null });
    const due = firstMark(d, T0 + 61_000)!;
    assert.equal(due.replacing?.since, T0 + 61_000, 'due already: NodeTaintReplacing since the pod was first seen');
    assert.equal(firstMark(newNodeTaintData('sim-1', settings), T0), undefined, 'no taint: nothing to mark');
  });
});

describe('taint: a new node workflow reads the node, lists and marks in one activity (taintNodeStart)', () => {
  const taintId = `${KEY}:NoSchedule`;

  it('one Node read and one LIST; every pod listed gets the first mark it decides; the taints come back with their first sight', async () => {
    const pods = Array.from({ length: 5 }, (_, i) => pod(i));
    const { kube, calls, patched } = stubKube(pods);
    const before = Date.now();
    const r = await createTaintActivities(kube, config).taintNodeStart({ node: 'sim-1' });
    assert.deepEqual(calls, { list: 1, get: 0, patch: 5, nodes: 1 });
    assert.deepEqual([...r.written!].sort(), pods.map((p) => p.metadata!.uid!).sort());
    assert.equal(patched.length, 5);
    assert.equal(r.taints.length, 1);
    assert.ok(r.taints[0]!.seenAt! >= before && r.taints[0]!.seenAt === r.listedAt, 'no hint: first seen as it is read');
    assert.equal(r.mark!.replacing, null, 'due 60 s after: Detected only');
    assert.equal(r.settings.taintReplacementTimeSeconds, 30, 'the settings of the worker\'s configuration');
  });

  it("a hint of the watcher's first sight is believed up to 5 minutes back: a taint seen 2 minutes ago is due already", async () => {
    const { kube } = stubKube([pod(1)]);
    const seen = Date.now() - 120_000;
    const r = await createTaintActivities(kube, config).taintNodeStart({ node: 'sim-1', hints: { [taintId]: seen } });
    assert.equal(r.taints[0]!.seenAt, seen);
    assert.ok(r.mark!.replacing, 'NodeTaintReplacing in the first mark');
    const old = Date.now() - 3_600_000;
    const r2 = await createTaintActivities(stubKube([pod(1)]).kube, config).taintNodeStart({ node: 'sim-1', hints: { [taintId]: old } });
    assert.ok(r2.taints[0]!.seenAt! - r2.listedAt! >= -300_000 - 1, 'an hour back is believed only 5 minutes back');
    const ahead = await createTaintActivities(stubKube([pod(1)]).kube, config).taintNodeStart({ node: 'sim-1', hints: { [taintId]: Date.now() + 3_600_000 } });
    assert.equal(ahead.taints[0]!.seenAt, ahead.listedAt, 'a hint ahead of now is now');
  });

  it('a node without a configured taint: its state only, nothing listed or written', async () => {
    const { kube, calls } = stubKube([pod(1)], []);
    const r = await createTaintActivities(kube, config).taintNodeStart({ node: 'sim-1' });
    assert.deepEqual(r.taints, []);
    assert.equal(r.pods, undefined);
    assert.deepEqual(calls, { list: 0, get: 0, patch: 0, nodes: 1 });
  });

  it("dated with the asking workflow task's time (at), never ahead of the worker's clock nor more than 5 minutes back", async () => {
    const at = Date.now() - 2000;
    const r = await createTaintActivities(stubKube([pod(1)]).kube, config).taintNodeStart({ node: 'sim-1', at });
    assert.equal(r.listedAt, at, 'listed at the task\'s time');
    assert.equal(r.mark!.detected!.since, at, 'the first mark dated so too');
    const ahead = await createTaintActivities(stubKube([pod(1)]).kube, config).taintNodeStart({ node: 'sim-1', at: Date.now() + 60_000 });
    assert.ok(ahead.listedAt! <= Date.now(), 'a time ahead of the worker\'s clock is its now');
    const before = Date.now();
    const old = await createTaintActivities(stubKube([pod(1)]).kube, config).taintNodeStart({ node: 'sim-1', at: before - 3_600_000 });
    assert.ok(old.listedAt! >= before - 300_000, 'an hour back is believed only 5 minutes back');
    const { kube, calls } = stubKube([pod(1)]);
    await assert.rejects(createTaintActivities(kube, config).taintNodeStart({ node: 'sim-1', at: 'now' as never }), /refused: at must be a time in ms/);
    assert.deepEqual(calls, { list: 0, get: 0, patch: 0, nodes: 0 }, 'refused before any read');
  });

  it('a read or write refused by flow control (429) waits and goes again inside the activity, which succeeds', async function () {
    this.timeout(10_000); // three waits of 0.5 to 1.5 s
    const pods = Array.from({ length: 3 }, (_, i) => pod(i));
    const { kube, calls } = stubKube(pods);
    const throttled = () => Object.assign(new Error('Too many requests'), { code: 429 });
    const apis = { core: kube.core, pods: kube.pods, nodes: kube.nodes } as unknown as Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>>;
    for (const [api, name] of [['nodes', 'taints'], ['pods', 'list'], ['pods', 'patchStatus']] as const) {
      const answer = apis[api]![name]!;
      let refused = 0;
      apis[api]![name] = async (...args: unknown[]) => (refused++ === 0 ? Promise.reject(throttled()) : answer(...args));
    }
    const r = await createTaintActivities(kube, config).taintNodeStart({ node: 'sim-1' });
    assert.equal(r.written!.length, 3, 'every pod marked');
    assert.deepEqual(calls, { list: 1, get: 0, patch: 3, nodes: 1 }, 'each request answered once, after its refusal (the first patch\'s too)');
  });

  it('a read refused by anything else than flow control fails the activity at once', async () => {
    const { kube, calls } = stubKube([pod(1)]);
    (kube.nodes as unknown as { taints: () => Promise<never> }).taints = async () => {
      calls.nodes++;
      throw Object.assign(new Error('forbidden'), { code: 403 });
    };
    await assert.rejects(createTaintActivities(kube, config).taintNodeStart({ node: 'sim-1' }), /forbidden/);
    assert.deepEqual(calls, { list: 0, get: 0, patch: 0, nodes: 1 });
  });

  it('refuses malformed hints and a bad node name before reading anything', async () => {
    const { kube, calls } = stubKube([pod(1)]);
    await assert.rejects(createTaintActivities(kube, config).taintNodeStart({ node: 'sim-1', hints: [1] as never }), /refused: hints must be an object/);
    await assert.rejects(createTaintActivities(kube, config).taintNodeStart({ node: 'Not A Node' }), /refused: "Not A Node" is not a node name/);
    assert.deepEqual(calls, { list: 0, get: 0, patch: 0, nodes: 0 });
  });
});
