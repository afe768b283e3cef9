// The taint watch keeps of each pod and Node only what it reads, and lists pods a page at a time:
// on a 1,000-node cluster its informers hold every managed pod and every Node.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import type { KubeClients } from '../../src/kube/client.ts';
import type { ListPage, ListQuery, PodPage } from '../../src/kube/prepared.ts';
import { keptNode, keptPod, listKeptNodes, listKeptPods, NODE_LIST_PAGE, POD_LIST_PAGE } from '../../src/starters/taint-watch.ts';

const fullPod = (i: number, o: { deleting?: boolean; marked?: boolean } = {}): k8s.V1Pod => ({
  metadata: {
    name: `app-${i}`, namespace: 'shop', uid: `uid-${i}`, resourceVersion: String(100 + i), labels: { managed: 'yes' },
    annotations: { big: 'x'.repeat(1000) }, managedFields: [{ manager: 'kubelet', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: {} }],
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'app-5d8f', uid: 'rs-1', controller: true }],
    ...(o.deleting && { deletionTimestamp: '2026-11-26T18:00:00Z' as unknown as Date }),
  },
  spec: { nodeName: 'sim-1', containers: [{ name: 'app', image: 'app:1' }] },
  status: {
    phase: 'Running', podIP: '10.0.0.1',
    conditions: [
      { type: 'Ready', status: 'True' },
      ...(o.marked ? [{ type: 'NodeTaintDetected', status: 'True', message: 'node sim-1 has taint k:NoSchedule' }] : []),
    ],
  },
});

describe('taint watch: what its informers keep', () => {
  it('a pod: its name, namespace, uid, version, node, deletion and NodeTaintDetected condition, nothing else', () => {
    assert.deepEqual(keptPod(fullPod(1, { deleting: true, marked: true })), {
      metadata: { name: 'app-1', namespace: 'shop', uid: 'uid-1', resourceVersion: '101', deletionTimestamp: '2026-11-26T18:00:00Z' },
      spec: { nodeName: 'sim-1', containers: [] },
      status: { conditions: [{ type: 'NodeTaintDetected', status: 'True', message: 'node sim-1 has taint k:NoSchedule' }] },
    });
    assert.deepEqual(keptPod(fullPod(2)), {
      metadata: { name: 'app-2', namespace: 'shop', uid: 'uid-2', resourceVersion: '102' },
      spec: { nodeName: 'sim-1', containers: [] },
    });
    assert.deepEqual(keptPod(keptPod(fullPod(3, { marked: true }))), keptPod(fullPod(3, { marked: true })), 'keeping twice changes nothing');
  });

  it('a Node: its name, version and taints', () => {
    const node: k8s.V1Node = {
      metadata: { name: 'sim-1', resourceVersion: '7', labels: { zone: 'a' }, managedFields: [{ manager: 'kubelet' }] },
      spec: { podCIDR: '10.0.0.0/26', taints: [{ key: 'k', effect: 'NoSchedule', timeAdded: '2026-11-26T18:00:00Z' as unknown as Date }] },
      status: { conditions: [{ type: 'Ready', status: 'True' }], images: [{ names: ['app:1'], sizeBytes: 1 }] },
    };
    assert.deepEqual(keptNode(node), {
      metadata: { name: 'sim-1', resourceVersion: '7' },
      spec: { taints: [{ key: 'k', effect: 'NoSchedule', timeAdded: '2026-11-26T18:00:00Z' }] },
    });
    assert.deepEqual(keptNode({ metadata: { name: 'sim-2', resourceVersion: '8' }, spec: {} }), { metadata: { name: 'sim-2', resourceVersion: '8' } });
  });
});

describe('taint watch: the pod list, a page at a time', () => {
  /** An API holding `count` pods, answering pages with continue tokens; records each query. */
  const paged = (count: number) => {
    const queries: Record<string, unknown>[] = [];
    const kube = {
      pods: {
        list: async (q: { limit?: number; _continue?: string }): Promise<PodPage> => {
          queries.push({ ...q });
          const from = Number(q._continue ?? 0);
          const to = Math.min(count, from + (q.limit ?? count));
          return {
            items: Array.from({ length: to - from }, (_, i) => fullPod(from + i)),
            // The snapshot's version on the first page; later pages may carry another, which must not win.
            metadata: { resourceVersion: from === 0 ? '5000' : '9999', ...(to < count && { _continue: String(to) }) },
          };
        },
      },
    } as unknown as Pick<KubeClients, 'pods'>;
    return { kube, queries };
  };

  it('reads every page, trims each pod, and answers with the first page\'s version', async () => {
    const { kube, queries } = paged(2 * POD_LIST_PAGE + 3);
    const list = await listKeptPods(kube, { namespace: 'shop', labelSelector: 'managed=yes', fieldSelector: 'spec.nodeName!=' });
    assert.equal(list.items.length, 2 * POD_LIST_PAGE + 3);
    assert.deepEqual(list.items[POD_LIST_PAGE + 1], keptPod(fullPod(POD_LIST_PAGE + 1)));
    assert.equal(list.metadata?.resourceVersion, '5000');
    assert.deepEqual(queries.map((q) => q._continue), [undefined, String(POD_LIST_PAGE), String(2 * POD_LIST_PAGE)]);
    // Consistent reads: no resourceVersion (0 would have the API server send every pod in one page).
    assert.deepEqual(queries.map((q) => q.resourceVersion), [undefined, undefined, undefined]);
    for (const q of queries) {
      assert.equal(q.limit, POD_LIST_PAGE);
      assert.equal(q.namespace, 'shop');
      assert.equal(q.labelSelector, 'managed=yes');
      assert.equal(q.fieldSelector, 'spec.nodeName!=');
    }
  });

  it('lists every namespace when none is given; an empty list is one page', async () => {
    const { kube, queries } = paged(0);
    const list = await listKeptPods(kube, { labelSelector: 'managed=yes', fieldSelector: 'spec.nodeName!=' });
    assert.deepEqual(list.items, []);
    assert.equal(queries.length, 1);
    assert.equal('namespace' in queries[0]!, false);
  });

  it('a page that fails fails the list (the informer lists again after its back-off)', async () => {
    const { kube: whole } = paged(2 * POD_LIST_PAGE);
    let pages = 0;
    const kube = {
      pods: {
        list: async (q: Parameters<KubeClients['pods']['list']>[0]) => (++pages === 2
          ? Promise.reject(new Error('HTTP 410: the continue token expired'))
          : whole.pods.list(q)),
      },
    } as unknown as Pick<KubeClients, 'pods'>;
    await assert.rejects(listKeptPods(kube, { labelSelector: 'a=b', fieldSelector: '' }), /continue token expired/);
    assert.equal(pages, 2);
  });
});

describe('taint watch: the Node list, a page at a time', () => {
  const fullNode = (i: number): k8s.V1Node => ({
    metadata: { name: `sim-${i}`, resourceVersion: String(i), labels: { zone: 'a' }, managedFields: [{ manager: 'kubelet' }] },
    spec: { podCIDR: '10.0.0.0/26', ...(i % 2 ? { taints: [{ key: 'k', effect: 'NoSchedule' }] } : {}) },
    status: { images: [{ names: ['app:1'], sizeBytes: 1 }] },
  });

  it('reads every page, trims each Node, and answers with the first page\'s version', async () => {
    const count = NODE_LIST_PAGE + 7;
    const queries: ListQuery[] = [];
    const kube = {
      nodes: {
        list: async (q: ListQuery): Promise<ListPage<k8s.V1Node>> => {
          queries.push({ ...q });
          const from = Number(q._continue ?? 0);
          const to = Math.min(count, from + q.limit!);
          return {
            items: Array.from({ length: to - from }, (_, i) => fullNode(from + i)),
            metadata: { resourceVersion: from === 0 ? '700' : '701', ...(to < count && { _continue: String(to) }) },
          };
        },
      },
    } as unknown as Pick<KubeClients, 'nodes'>;
    const list = await listKeptNodes(kube);
    assert.equal(list.items.length, count);
    assert.deepEqual(list.items.map((n) => n.metadata?.name), Array.from({ length: count }, (_, i) => `sim-${i}`));
    assert.deepEqual(list.items[NODE_LIST_PAGE + 1], keptNode(fullNode(NODE_LIST_PAGE + 1)));
    assert.deepEqual(list.items[NODE_LIST_PAGE + 1]?.spec?.taints, [{ key: 'k', effect: 'NoSchedule' }]);
    assert.equal(list.metadata?.resourceVersion, '700');
    assert.deepEqual(queries, [{ limit: NODE_LIST_PAGE }, { limit: NODE_LIST_PAGE, _continue: String(NODE_LIST_PAGE) }]);
  });
});
