// The informer's merge rules, on their own: what a watch event or a relist
// does to the cache and what the handlers are told.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { eventDelivery, mergeRelist, namespacedPath, startInformer, VersionedStore, type RunningInformer } from '../../src/kube/informer.ts';
import { log } from '../../src/log.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';

interface Obj { metadata: { namespace?: string; name: string; resourceVersion: string }; tag: string }
const o = (name: string, rv: string, tag = `${name}@${rv}`, namespace = 'ns'): Obj => ({ metadata: { namespace, name, resourceVersion: rv }, tag });
const tags = (xs: Obj[]) => xs.map((x) => x.tag).sort();

describe('informer: a relist merged by resourceVersion', () => {
  const cases: [string, Obj[], Obj[], string, { objects: string[]; upserts: string[]; deletes: string[] }][] = [
    ['adds what the watch missed', [o('a', '5')], [o('a', '5'), o('b', '7')], '8',
      { objects: ['a@5', 'b@7'], upserts: ['b@7'], deletes: [] }],
    ['a newer listed version replaces the cached one (a missed update)', [o('a', '5')], [o('a', '9')], '9',
      { objects: ['a@9'], upserts: ['a@9'], deletes: [] }],
    ['an older listed version never overwrites a newer watched one', [o('a', '9')], [o('a', '5')], '6',
      { objects: ['a@9'], upserts: [], deletes: [] }],
    ['the same version is not delivered again', [o('a', '5')], [o('a', '5')], '5',
      { objects: ['a@5'], upserts: [], deletes: [] }],
    ['a cached object missing from the list was deleted (a missed delete)', [o('a', '5'), o('b', '6')], [o('a', '5')], '10',
      { objects: ['a@5'], upserts: [], deletes: ['b@6'] }],
    ['a cached object newer than the list is kept (the watch saw it after the list was taken)', [o('a', '5'), o('b', '12')], [o('a', '5')], '10',
      { objects: ['a@5', 'b@12'], upserts: [], deletes: [] }],
    ['a recreated object (same name, newer version) replaces the old one', [o('a', '5', 'old')], [o('a', '11', 'new')], '11',
      { objects: ['new'], upserts: ['new'], deletes: [] }],
    ['an empty list deletes everything not newer than it', [o('a', '5'), o('b', '20')], [], '10',
      { objects: ['b@20'], upserts: [], deletes: ['a@5'] }],
  ];
  for (const [name, cached, listed, listVersion, want] of cases) {
    it(name, () => {
      const r = mergeRelist(cached, listed, listVersion);
      assert.deepEqual({ objects: tags(r.objects), upserts: tags(r.upserts), deletes: tags(r.deletes) }, want);
    });
  }
});

describe('informer: watch events against the cache', () => {
  it('delivers an add, a newer update, and not an older or repeated one', () => {
    const s = new VersionedStore<Obj>();
    assert.equal(s.upsert(o('a', '5')), true);
    assert.equal(s.upsert(o('a', '5')), false);
    assert.equal(s.upsert(o('a', '4')), false);
    assert.equal(s.upsert(o('a', '6')), true);
    assert.equal(s.get('a', 'ns')?.tag, 'a@6');
  });

  it('treats versions it cannot compare as newer (resourceVersion is opaque by contract)', () => {
    const s = new VersionedStore<Obj>();
    s.upsert(o('a', 'x1'));
    assert.equal(s.upsert(o('a', 'x0')), true);
  });

  it('delivers a delete once, and not one of an object replaced by a newer one meanwhile', () => {
    const s = new VersionedStore<Obj>();
    s.upsert(o('a', '5'));
    assert.equal(s.remove(o('a', '6'))?.tag, 'a@6');
    assert.equal(s.remove(o('a', '6')), undefined);
    s.upsert(o('b', '9', 'recreated'));
    assert.equal(s.remove(o('b', '7', 'old')), undefined);
    assert.equal(s.get('b', 'ns')?.tag, 'recreated');
  });

  it('never brings back an object whose deletion the watch delivered while a list was in flight', () => {
    const s = new VersionedStore<Obj>();
    s.upsert(o('a', '5'));
    s.listStarted(undefined); // the list snapshot is taken at 6, before the delete
    s.remove(o('a', '7'));
    const r = s.relisted(undefined, [o('a', '5')], '6');
    assert.deepEqual(r, { upserts: [], deletes: [] });
    assert.equal(s.get('a', 'ns'), undefined);
  });

  it('lets an object recreated after such a deletion in', () => {
    const s = new VersionedStore<Obj>();
    s.upsert(o('a', '5'));
    s.listStarted(undefined);
    s.remove(o('a', '7'));
    s.relisted(undefined, [], '6');
    assert.equal(s.upsert(o('a', '8', 'recreated')), true);
  });

  it('forgets deletions once no list is in flight (nothing left to guard against)', () => {
    const s = new VersionedStore<Obj>();
    s.upsert(o('a', '5'));
    s.listStarted('ns');
    s.remove(o('a', '7'));
    s.listFailed('ns');
    // A list taken from now on cannot predate the deletion, so an older version listed is a real object again.
    s.listStarted('ns');
    assert.deepEqual(tags(s.relisted('ns', [o('a', '5')], '9').upserts), ['a@5']);
  });

  it('relists one namespace without touching the others', () => {
    const s = new VersionedStore<Obj>();
    s.upsert(o('a', '5', 'a-in-x', 'x'));
    s.upsert(o('b', '6', 'b-in-y', 'y'));
    s.listStarted('x');
    const r = s.relisted('x', [], '10');
    assert.deepEqual(tags(r.deletes), ['a-in-x']);
    assert.deepEqual(tags(s.list()), ['b-in-y']);
    assert.deepEqual(tags(s.list('y')), ['b-in-y']);
    assert.deepEqual(s.list('x'), []);
  });

  it('keeps cluster-scoped objects under their name', () => {
    const s = new VersionedStore<Obj>();
    s.upsert({ metadata: { name: 'node-1', resourceVersion: '3' }, tag: 'node' });
    assert.equal(s.get('node-1')?.tag, 'node');
  });
});

describe('informer: namespaced paths', () => {
  const cases: [string, string][] = [
    ['/api/v1/pods', '/api/v1/namespaces/ns/pods'],
    ['/apis/discovery.k8s.io/v1/endpointslices', '/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices'],
    ['/apis/tend.dev/v1alpha1/apps', '/apis/tend.dev/v1alpha1/namespaces/ns/apps'],
  ];
  for (const [path, want] of cases) it(`${path} -> ${want}`, () => assert.equal(namespacedPath(path, 'ns'), want));
  it('refuses a path that is already namespaced, naming it', () => {
    assert.throws(() => namespacedPath('/api/v1/namespaces/x/pods', 'ns'), /\/api\/v1\/namespaces\/x\/pods.*cluster-wide collection path/);
  });
});

describe('informer: urgency (the weeder\'s armed watch goes first)', () => {
  const run = (fn: () => void) => fn();

  it('delivers at once while no urgent informer runs', () => {
    const seen: string[] = [];
    const plain = eventDelivery(false, run);
    plain.event(() => seen.push('a'));
    assert.deepEqual(seen, ['a']);
    plain.stop();
  });

  it('while an urgent one runs, the others deliver a turn later and in order; the urgent one at once', async () => {
    const seen: string[] = [];
    const plain = eventDelivery(false, run);
    const urgent = eventDelivery(true, run);
    try {
      plain.event(() => seen.push('plain 1'));
      plain.event(() => seen.push('plain 2'));
      urgent.event(() => seen.push('urgent'));
      assert.deepEqual(seen, ['urgent']);
      await nextTurn();
      assert.deepEqual(seen, ['urgent', 'plain 1', 'plain 2']);
    } finally {
      urgent.stop();
      plain.stop();
    }
  });

  it('a flush (a list\'s deliveries) runs what waits first; a stopped one drops it; once the urgent one stops, at once again', async () => {
    const seen: string[] = [];
    const plain = eventDelivery(false, run);
    const dropped = eventDelivery(false, run);
    const urgent = eventDelivery(true, run);
    plain.event(() => seen.push('waiting'));
    dropped.event(() => seen.push('never'));
    plain.flush();
    assert.deepEqual(seen, ['waiting']);
    dropped.stop();
    urgent.stop();
    plain.event(() => seen.push('at once'));
    assert.deepEqual(seen, ['waiting', 'at once']);
    await nextTurn();
    assert.deepEqual(seen, ['waiting', 'at once']);
    plain.stop();
  });
});

// An informer's `keep` trims objects, and only objects: a watch's ERROR (a 410 Status, after which
// client-node's ListWatch lists again) and BOOKMARK (the version it resumes from) reach ListWatch as
// they came. The watch is stubbed here: what ListWatch is handed is what is checked.
type Handler = (phase: string, obj: unknown, watchObj?: unknown) => void;
interface Cm { metadata: { name: string; namespace: string; resourceVersion: string }; data: Record<string, string> }

describe('informer: keep trims objects, never a watch\'s status or bookmark', () => {
  const realWatch = k8s.Watch.prototype.watch;
  const proto = k8s.ListWatch.prototype as unknown as { watchHandler: Handler };
  const realHandler = proto.watchHandler;
  let informer: RunningInformer<Cm> | undefined;
  afterEach(async () => {
    k8s.Watch.prototype.watch = realWatch;
    proto.watchHandler = realHandler;
    await informer?.stop();
    informer = undefined;
  });

  it('hands ListWatch and the handlers the kept object; an ERROR and a BOOKMARK go to ListWatch untouched', async () => {
    let emit: Handler | undefined;
    k8s.Watch.prototype.watch = async function (_path: string, _params: unknown, callback: Handler) {
      emit = callback;
      return new AbortController();
    } as typeof realWatch;
    const handed: [string, unknown][] = [];
    proto.watchHandler = function (this: unknown, phase: string, obj: unknown, watchObj?: unknown) {
      handed.push([phase, obj]);
      return realHandler.call(this, phase, obj, watchObj);
    };
    const upserts: Cm[] = [];
    const full = (name: string, rv: string): Cm => ({ metadata: { name, namespace: 'ns', resourceVersion: rv }, data: { value: '1', extra: 'x'.repeat(100) } });
    const keep = (o: Cm): Cm => ({ metadata: o.metadata, data: { value: o.data.value! } });
    informer = startInformer<Cm>({
      kc: new k8s.KubeConfig(), path: '/api/v1/configmaps', log, keep,
      list: async () => ({ items: [full('listed', '5')], metadata: { resourceVersion: '5' } }),
      onUpsert: (o) => upserts.push(o), onDelete: () => undefined,
    });
    await informer.synced;
    for (let i = 0; i < 100 && !emit; i++) await new Promise((r) => setImmediate(r));
    assert.ok(emit, 'the watch was opened');

    emit('ADDED', full('watched', '6'));
    const bookmark = { kind: 'ConfigMap', metadata: { resourceVersion: '7' } };
    emit('BOOKMARK', bookmark);
    const gone = { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 410, reason: 'Expired', message: 'too old resource version' };
    emit('ERROR', gone);

    assert.deepEqual(handed.map(([p]) => p), ['ADDED', 'BOOKMARK', 'ERROR']);
    assert.deepEqual(handed[0]![1], keep(full('watched', '6')), 'an object: trimmed');
    assert.equal(handed[1]![1], bookmark, 'a bookmark: as it came');
    assert.equal(handed[2]![1], gone, 'a status: as it came');
    assert.deepEqual(upserts.map((o) => Object.keys(o.data)), [['value'], ['value']], 'the listed and the watched object, both kept');
    assert.deepEqual(informer.get('watched', 'ns'), keep(full('watched', '6')));
  });
});
