// An informer's `keep` trims objects, and only objects: a watch's ERROR (a 410 Status, after which
// client-node's ListWatch lists again) and BOOKMARK (the version it resumes from) reach ListWatch as
// they came. The watch is stubbed here: what ListWatch is handed is what is checked.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { startInformer, type RunningInformer } from '../../src/kube/informer.ts';
import { log } from '../../src/log.ts';

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
