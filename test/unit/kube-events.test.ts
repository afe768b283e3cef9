// recordEvent (src/kube/events.ts) against an in-memory events.k8s.io/v1 API
// that answers as kube-apiserver does (409 on a name taken, 404 on a name
// gone, 409 on a stale resourceVersion): a repeat is counted in its Event's
// series, an occurrence counted once, and noteEvent never throws.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { recordEvent, OCCURRENCES_ANNOTATION, type TendEvent } from '../../src/kube/events.ts';
import { eventsRecorded, noteEvent } from '../../src/activities/events.ts';
import type { KubeClients } from '../../src/kube/client.ts';

const status = (code: number) => Object.assign(new Error(`HTTP ${code}`), { code });

/** The API's Events by namespace/name, and hooks a test sets to come between two requests. */
function stubApi() {
  const stored = new Map<string, k8s.EventsV1Event>();
  let version = 0;
  const key = (namespace: string, name: string) => `${namespace}/${name}`;
  const hooks: { beforeRead?: () => void; beforePatch?: () => void } = {};
  const events = {
    createNamespacedEvent: async ({ namespace, body }: { namespace: string; body: k8s.EventsV1Event }) => {
      const k = key(namespace, body.metadata!.name!);
      if (stored.has(k)) throw status(409);
      const created = JSON.parse(JSON.stringify({ ...body, metadata: { ...body.metadata, resourceVersion: String(++version) } })) as k8s.EventsV1Event;
      stored.set(k, created);
      return created;
    },
    readNamespacedEvent: async ({ namespace, name }: { namespace: string; name: string }) => {
      hooks.beforeRead?.();
      const found = stored.get(key(namespace, name));
      if (!found) throw status(404);
      return JSON.parse(JSON.stringify(found)) as k8s.EventsV1Event;
    },
    patchNamespacedEvent: async ({ namespace, name, body }: { namespace: string; name: string; body: { metadata: { resourceVersion: string; annotations: Record<string, string> }; series: object } }) => {
      hooks.beforePatch?.();
      const found = stored.get(key(namespace, name));
      if (!found) throw status(404);
      if (body.metadata.resourceVersion !== found.metadata!.resourceVersion) throw status(409);
      found.metadata = { ...found.metadata, annotations: { ...found.metadata!.annotations, ...body.metadata.annotations }, resourceVersion: String(++version) };
      found.series = JSON.parse(JSON.stringify(body.series)) as k8s.EventsV1EventSeries;
      return found;
    },
  };
  return { kube: { events } as unknown as KubeClients, stored, hooks, bump: (k: string) => {
    stored.get(k)!.metadata!.resourceVersion = String(++version);
  } };
}

const refused = (dedupKey: string, over: Partial<TendEvent> = {}): TendEvent => ({
  regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'shop', name: 'db-0', uid: 'uid-0' },
  type: 'Warning', reason: 'TaintEvictionRefused', action: 'Evict',
  note: 'eviction refused, asked again with back-off: Cannot evict pod as it would violate the pod\'s disruption budget.',
  dedupKey, ...over,
});

const only = (stored: Map<string, k8s.EventsV1Event>) => {
  assert.equal(stored.size, 1, [...stored.keys()].join(', '));
  return [...stored.values()][0]!;
};

describe('kube events: repeats aggregate in one Event', () => {
  it('creates the first occurrence, counts the next ones in its series, and each occurrence once', async () => {
    const { kube, stored } = stubApi();
    assert.equal(await recordEvent(kube, refused('run/1')), 'created');
    const first = only(stored);
    assert.match(first.metadata!.name!, /^db-0\.tend-[0-9a-f]{16}$/);
    assert.equal(first.metadata!.namespace, 'shop');
    assert.equal(first.series, undefined, 'a single occurrence has no series');
    assert.equal(await recordEvent(kube, refused('run/2')), 'aggregated');
    assert.equal(await recordEvent(kube, refused('run/3')), 'aggregated');
    assert.equal(await recordEvent(kube, refused('run/2')), 'repeated', 'an activity retried counts nothing');
    const e = only(stored);
    assert.equal(e.series?.count, 3);
    assert.ok(e.series?.lastObservedTime, 'lastObservedTime set');
    assert.equal(e.metadata!.annotations![OCCURRENCES_ANNOTATION]!.split(',').length, 3);
  });

  it('another note, reason, object or related object is another Event; an object without a namespace is recorded in default', async () => {
    const { kube, stored } = stubApi();
    await recordEvent(kube, refused('a'));
    await recordEvent(kube, refused('b', { note: 'eviction refused, asked again with back-off: two budgets' }));
    await recordEvent(kube, refused('c', { reason: 'TaintEvicted', type: 'Normal' }));
    await recordEvent(kube, refused('d', { regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'shop', name: 'db-0', uid: 'uid-namesake' } }));
    await recordEvent(kube, refused('e', { related: { apiVersion: 'v1', kind: 'Node', name: 'sim-1' } }));
    await recordEvent(kube, { regarding: { apiVersion: 'v1', kind: 'Node', name: 'sim-1' }, reason: 'TaintReplacementsDone', action: 'Evict', note: 'done', dedupKey: 'f' });
    assert.equal(stored.size, 6);
    assert.ok([...stored.keys()].some((k) => k.startsWith('default/sim-1.tend-')));
    assert.ok([...stored.values()].every((e) => e.series === undefined));
  });

  it('a write that meets another (a stale resourceVersion) reads again and counts itself once', async () => {
    const { kube, stored, hooks, bump } = stubApi();
    await recordEvent(kube, refused('a'));
    let raced = false;
    hooks.beforePatch = () => {
      if (raced) return;
      raced = true;
      bump([...stored.keys()][0]!);
    };
    assert.equal(await recordEvent(kube, refused('b')), 'aggregated');
    assert.equal(only(stored).series?.count, 2);
  });

  it('an Event gone between the create and the read (its time to live) is created again', async () => {
    const { kube, stored, hooks } = stubApi();
    await recordEvent(kube, refused('a'));
    hooks.beforeRead = () => {
      stored.clear();
      hooks.beforeRead = undefined;
    };
    assert.equal(await recordEvent(kube, refused('b')), 'created');
    assert.equal(only(stored).series, undefined);
  });

  it('remembers the last 16 occurrences only', async () => {
    const { kube, stored } = stubApi();
    for (let i = 0; i < 20; i++) await recordEvent(kube, refused(`o${i}`));
    const e = only(stored);
    assert.equal(e.series?.count, 20);
    assert.equal(e.metadata!.annotations![OCCURRENCES_ANNOTATION]!.split(',').length, 16);
  });

  it('throws what it cannot handle (a 403); noteEvent logs and counts it instead, and never throws', async () => {
    const forbidden = { events: { createNamespacedEvent: async () => Promise.reject(status(403)) } } as unknown as KubeClients;
    await assert.rejects(recordEvent(forbidden, refused('a')), /403/);
    const failed = async () => (await eventsRecorded.get()).values.find((v) => v.labels.reason === 'TaintEvictionRefused' && v.labels.outcome === 'failed')?.value ?? 0;
    const before = await failed();
    assert.equal(await noteEvent(forbidden, refused('a')), 'failed');
    assert.equal(await failed(), before + 1);
    assert.equal(await noteEvent(undefined, refused('a')), undefined, 'no Kubernetes connection: nothing recorded');
  });
});
