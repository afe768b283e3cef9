// The informer against the real API server: a namespace filter, a periodic
// relist that repairs what a silently stalled watch missed, and a stale list
// that never rolls back what the watch delivered.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { KubeClients } from '../../src/kube/client.ts';
import { startInformer, type RunningInformer } from '../../src/kube/informer.ts';
import { log } from '../../src/log.ts';
import { admin, deleteNamespace, tempNamespace } from '../harness/kube.ts';
import { waitFor } from '../harness/wait.ts';

const LABEL = 'test.tend.dev/informer';
const labelSelector = `${LABEL}=yes`;

const cm = (namespace: string, name: string, value = '1'): k8s.V1ConfigMap => ({
  metadata: { namespace, name, labels: { [LABEL]: 'yes' } }, data: { value },
});

/** Records what an informer delivers. */
class Seen {
  upserts: k8s.V1ConfigMap[] = [];
  deletes: k8s.V1ConfigMap[] = [];
  names = (xs: k8s.V1ConfigMap[]) => xs.map((x) => `${x.metadata!.namespace}/${x.metadata!.name}`);
}

/**
 * Watches on paths holding `marker` connect and then say nothing: a watch
 * that stalls without an error, the case a periodic relist is for. Returns
 * a function that restores the real watch.
 */
function stallWatchesOn(marker: string): () => void {
  const real = k8s.Watch.prototype.watch;
  k8s.Watch.prototype.watch = async function (this: k8s.Watch, path: string, ...rest: unknown[]) {
    if (path.includes(marker)) return new AbortController();
    return (real as (...a: unknown[]) => Promise<AbortController>).call(this, path, ...rest);
  };
  return () => {
    k8s.Watch.prototype.watch = real;
  };
}

describe('informer (one watch mechanism) against the API server', function () {
  let kube: KubeClients;
  const namespaces: string[] = [];
  let informer: RunningInformer<k8s.V1ConfigMap> | undefined;
  let restore: (() => void) | undefined;

  before(async () => {
    kube = admin();
    for (let i = 0; i < 3; i++) namespaces.push(await tempNamespace(kube, 'informer'));
  });
  afterEach(async () => {
    restore?.();
    restore = undefined;
    await informer?.stop();
    informer = undefined;
  });
  after(async () => {
    for (const ns of namespaces) await deleteNamespace(kube, ns);
  });

  const listIn = (namespace?: string) => (namespace
    ? kube.core.listNamespacedConfigMap({ namespace, labelSelector })
    : kube.core.listConfigMapForAllNamespaces({ labelSelector }));

  it('watches only the namespaces it is given, as one cache', async () => {
    const [a, b, c] = namespaces as [string, string, string];
    for (const ns of [a, b, c]) await kube.core.createNamespacedConfigMap({ namespace: ns, body: cm(ns, 'before') });
    const seen = new Seen();
    informer = startInformer<k8s.V1ConfigMap>({
      kc: kube.kc, path: '/api/v1/configmaps', namespaces: [a, b], list: listIn, labelSelector, log,
      onUpsert: (o) => seen.upserts.push(o), onDelete: (o) => seen.deletes.push(o),
    });
    await informer.synced;
    const mine = (xs: string[]) => xs.filter((x) => namespaces.some((ns) => x.startsWith(`${ns}/`))).sort();
    assert.deepEqual(mine(seen.names(informer.list())), [`${a}/before`, `${b}/before`].sort());
    assert.equal(informer.get('before', a)?.metadata?.namespace, a);
    assert.equal(informer.get('before', c), undefined);

    for (const ns of [c, a, b]) await kube.core.createNamespacedConfigMap({ namespace: ns, body: cm(ns, 'after') });
    await waitFor('the new ConfigMaps of both watched namespaces', () =>
      [a, b].every((ns) => seen.names(seen.upserts).includes(`${ns}/after`)));
    await informer.resync();
    assert.deepEqual(mine(seen.names(seen.upserts)).filter((x) => x.startsWith(`${c}/`)), [], 'nothing of the unwatched namespace');
    assert.equal(informer.list().length, 4, 'before and after, in each watched namespace');
    assert.deepEqual(informer.list(c), []);
  });

  it('keeps only what `keep` returns, of listed and of watched objects alike', async () => {
    const ns = await tempNamespace(kube, 'informer');
    namespaces.push(ns);
    const withExtra = (name: string, value: string): k8s.V1ConfigMap => ({ ...cm(ns, name, value), data: { value, extra: 'x'.repeat(4096) } });
    await kube.core.createNamespacedConfigMap({ namespace: ns, body: withExtra('listed', '1') });
    const seen = new Seen();
    const kept: k8s.V1ConfigMap[] = [];
    informer = startInformer<k8s.V1ConfigMap>({
      kc: kube.kc, path: '/api/v1/configmaps', namespaces: [ns], list: listIn, labelSelector, log,
      keep: (o) => {
        const k = { metadata: { name: o.metadata?.name, namespace: o.metadata?.namespace, resourceVersion: o.metadata?.resourceVersion }, data: { value: o.data?.value ?? '' } };
        kept.push(k);
        return k;
      },
      onUpsert: (o) => seen.upserts.push(o), onDelete: (o) => seen.deletes.push(o),
    });
    await informer.synced;
    await kube.core.createNamespacedConfigMap({ namespace: ns, body: withExtra('watched', '1') });
    await kube.core.patchNamespacedConfigMap({ namespace: ns, name: 'watched', body: { data: { value: '2' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    await kube.core.deleteNamespacedConfigMap({ namespace: ns, name: 'listed' });
    await waitFor('the add, the update and the delete', () =>
      seen.upserts.some((o) => o.metadata!.name === 'watched' && o.data?.value === '2') && seen.deletes.some((o) => o.metadata!.name === 'listed'));
    // Every object the handlers were given, and every one the cache holds, is one `keep` made.
    for (const o of [...seen.upserts, ...seen.deletes, ...informer.list()]) {
      assert.ok(kept.includes(o), `${o.metadata!.name} is what keep returned`);
      assert.deepEqual(Object.keys(o.data ?? {}), ['value'], `${o.metadata!.name}: nothing but what keep kept`);
    }
    assert.deepEqual(seen.names(seen.upserts), [`${ns}/listed`, `${ns}/watched`, `${ns}/watched`]);
    assert.equal(informer.get('watched', ns)?.data?.value, '2');
    assert.equal(informer.get('listed', ns), undefined);
    // A relist compares the kept resourceVersions: nothing is delivered again.
    await informer.resync();
    assert.equal(seen.upserts.length, 3);
  });

  it('a periodic relist delivers the update and the delete a stalled watch missed', async () => {
    const ns = namespaces[0]!;
    await kube.core.createNamespacedConfigMap({ namespace: ns, body: cm(ns, 'stays') });
    await kube.core.createNamespacedConfigMap({ namespace: ns, body: cm(ns, 'goes') });
    const seen = new Seen();
    restore = stallWatchesOn(`/namespaces/${ns}/configmaps`);
    informer = startInformer<k8s.V1ConfigMap>({
      kc: kube.kc, path: '/api/v1/configmaps', namespaces: [ns], list: listIn, labelSelector, log, resyncMs: 1000,
      onUpsert: (o) => seen.upserts.push(o), onDelete: (o) => seen.deletes.push(o),
    });
    await informer.synced;
    assert.equal(informer.get('stays', ns)?.data?.value, '1');

    await kube.core.patchNamespacedConfigMap({ namespace: ns, name: 'stays', body: { data: { value: '2' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    await kube.core.deleteNamespacedConfigMap({ namespace: ns, name: 'goes' });
    await kube.core.createNamespacedConfigMap({ namespace: ns, body: cm(ns, 'new') });

    await waitFor('the relist to deliver the missed update, delete and add', () =>
      seen.upserts.some((o) => o.metadata!.name === 'stays' && o.data?.value === '2') &&
      seen.deletes.some((o) => o.metadata!.name === 'goes') &&
      seen.upserts.some((o) => o.metadata!.name === 'new'), { timeoutMs: 30_000 });
    assert.equal(informer.get('stays', ns)?.data?.value, '2');
    assert.equal(informer.get('goes', ns), undefined);
    assert.equal(seen.deletes.filter((o) => o.metadata!.name === 'goes').length, 1, 'the delete is delivered once');
    assert.equal(seen.upserts.filter((o) => o.metadata!.name === 'stays' && o.data?.value === '2').length, 1,
      'later relists do not deliver the same version again');
  });

  it('a stale list never overwrites what the watch delivered, nor deletes what it created since', async () => {
    const ns = namespaces[1]!;
    await kube.core.createNamespacedConfigMap({ namespace: ns, body: cm(ns, 'changes') });
    const seen = new Seen();
    let stale: k8s.V1ConfigMapList | undefined;
    informer = startInformer<k8s.V1ConfigMap>({
      kc: kube.kc, path: '/api/v1/configmaps', namespaces: [ns], labelSelector, log,
      // The first list is kept and answered again later: a list served from a lagging cache.
      list: async (namespace) => {
        if (stale) return stale;
        const l = await listIn(namespace);
        stale = l;
        return l;
      },
      onUpsert: (o) => seen.upserts.push(o), onDelete: (o) => seen.deletes.push(o),
    });
    await informer.synced;
    await kube.core.patchNamespacedConfigMap({ namespace: ns, name: 'changes', body: { data: { value: '2' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    await kube.core.createNamespacedConfigMap({ namespace: ns, body: cm(ns, 'created') });
    await waitFor('the watch to deliver the update and the new ConfigMap', () =>
      informer!.get('changes', ns)?.data?.value === '2' && informer!.get('created', ns) !== undefined);
    const upsertsBefore = seen.upserts.length;

    await informer.resync();
    assert.equal(informer.get('changes', ns)?.data?.value, '2', 'the older listed version did not replace the newer one');
    assert.notEqual(informer.get('created', ns), undefined, 'an object newer than the list is not deleted');
    assert.equal(seen.upserts.length, upsertsBefore, 'nothing older delivered');
    assert.deepEqual(seen.deletes, []);
  });
});
