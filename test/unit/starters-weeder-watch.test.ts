// The watcher's ReadinessTracker with stub Kubernetes and Temporal clients:
// what it signals and records on each transition, and that on a not ready ->
// ready transition of the same Service (its workflow armed, its watch deleting
// at that moment) the signal and the record wait ARMED_YIELD_MS, and on no
// other.
import assert from 'node:assert/strict';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ARMED_YIELD_MS, ReadinessTracker } from '../../src/starters/weeder-watch.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import type { ReadinessStore } from '../../src/weeder/record.ts';
import type { Observed } from '../../src/weeder/transition.ts';
import type { WeederConfig } from '../../src/config/weeder.ts';
import type { SliceLike } from '../../src/weeder/readiness.ts';
import { log } from '../../src/log.ts';

const config = {
  servicesAndDependantSelectors: { etcd: [{ matchLabels: { app: 'api' } }] },
  watchDuration: { ms: 5000, text: '5s' },
} as unknown as WeederConfig;

/** Slices of Service ns/etcd (UID `uid`): one endpoint, ready or not. */
const slices = (ready: boolean, uid = 'svc-1'): SliceLike[] => [{
  metadata: {
    namespace: 'ns', name: 'etcd-abc', labels: { 'kubernetes.io/service-name': 'etcd' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'etcd', uid, controller: true }],
  },
  endpoints: [{ addresses: ['10.0.0.1'], targetRef: { kind: 'Pod', name: 'etcd-0', uid: 'pod-1' }, conditions: { ready } }],
} as unknown as SliceLike];

/** What a describe of the Service's workflow id finds: nothing (absent), or a run of this type on this task queue. */
interface Found { type: string; taskQueue: string; status?: string }

function setup(recorded: Observed | undefined, found?: Found) {
  const events: string[] = [];
  const store = {
    read: async () => recorded,
    write: async (_ns: string, _svc: string, o: Observed) => { events.push(`record ${o.readiness}`); },
  } as unknown as ReadinessStore;
  const client = {
    workflow: {
      signalWithStart: async (_wf: string, o: { signal: { name: string } }) => { events.push(`signal ${o.signal.name}`); },
      getHandle: (id: string) => ({
        describe: async () => {
          if (!found) throw new WorkflowNotFoundError('not found', id, undefined);
          return { type: found.type, taskQueue: found.taskQueue, status: { name: found.status ?? 'RUNNING' } };
        },
      }),
    },
  } as unknown as Client;
  const kube = { core: { readNamespacedService: async () => ({ metadata: {} }) } } as unknown as KubeClients;
  const pauses: number[] = [];
  const pause = async (ms: number) => {
    pauses.push(ms);
    events.push(`pause ${ms}`);
  };
  const tracker = new ReadinessTracker(kube, store, client, config, 'q', log.child({}, { level: 'silent' }), pause);
  const judge = async (s: SliceLike[]) => {
    tracker.schedule('ns/etcd', () => s);
    await tracker.idle();
  };
  return { events, pauses, judge };
}

const notReady: Observed = { readiness: 'not-ready', endpoints: [], service: 'svc-1' };
const readyOn = (...endpoints: string[]): Observed => ({ readiness: 'ready', endpoints, service: 'svc-1' });

describe('weeder: the watcher\'s readiness tracker', () => {
  it('not ready -> ready, the same Service: the window\'s signal and the record wait ARMED_YIELD_MS, after the armed watch\'s moment', async () => {
    const t = setup(notReady);
    await t.judge(slices(true));
    assert.deepEqual(t.events, [`pause ${ARMED_YIELD_MS}`, 'signal extend', 'record ready']);
  });

  it('on no other transition: first seen ready, the Service re-created, going not ready, no change', async () => {
    const unrecorded = setup(undefined);
    await unrecorded.judge(slices(true));
    assert.deepEqual(unrecorded.events, ['signal extend', 'record ready']);

    // Recorded not ready for another Service of the same name: it was never armed for this one.
    const recreated = setup(notReady);
    await recreated.judge(slices(true, 'svc-2'));
    assert.deepEqual(recreated.events, ['signal extend', 'record ready']);

    const down = setup(readyOn('pod-1'));
    await down.judge(slices(false));
    assert.deepEqual(down.events, ['signal arm', 'record not-ready']);

    const same = setup(readyOn('pod-1'));
    await same.judge(slices(true));
    assert.deepEqual(same.events, []);
  });

  it('down and back while it watches: arms when it goes down, waits only when it comes back', async () => {
    const t = setup(readyOn('pod-1'));
    await t.judge(slices(false));
    await t.judge(slices(true));
    assert.deepEqual(t.events, ['signal arm', 'record not-ready', `pause ${ARMED_YIELD_MS}`, 'signal extend', 'record ready']);
  });

  it('an impostor under the Service\'s id (another type, or another task queue) is not signalled; tend\'s own run, or an ended one, is', async () => {
    for (const impostor of [{ type: 'evilWorkflow', taskQueue: 'q' }, { type: 'weederWorkflow', taskQueue: 'elsewhere' }]) {
      const t = setup(readyOn('pod-1'), impostor);
      await t.judge(slices(false));
      assert.deepEqual(t.events, [], `nothing signalled (nor recorded: the next resync tries again) to ${impostor.type} on ${impostor.taskQueue}`);
    }
    const own = setup(readyOn('pod-1'), { type: 'weederWorkflow', taskQueue: 'q' });
    await own.judge(slices(false));
    assert.deepEqual(own.events, ['signal arm', 'record not-ready']);
    const ended = setup(readyOn('pod-1'), { type: 'evilWorkflow', taskQueue: 'q', status: 'COMPLETED' });
    await ended.judge(slices(false));
    assert.deepEqual(ended.events, ['signal arm', 'record not-ready'], 'an ended run is replaced by tend\'s own');
  });
});
