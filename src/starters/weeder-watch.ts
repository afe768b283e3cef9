// The weeder's part of the watcher: an EndpointSlice informer on the
// configured Services, readiness per Service across all of its slices, and the
// last-known readiness recorded durably in a ConfigMap tend owns
// (tend-weeder-readiness in tend's namespace, src/weeder/record.ts; the
// annotation weeder.tend.dev/last-readiness that earlier versions wrote on the
// Service is read once, when there is no record yet, and never written).
// Comparing with that record, not with memory,
// is what makes a transition that happened while the watcher was down still
// open a window, and a restart without one open nothing.
//
// Only the Service's workflow costs Temporal actions: one signal-with-start
// when the Service goes not ready (arm: the workflow watches it and weeds the
// moment it is ready again), and one on the not-ready -> ready transition
// (extend: the window's deadline, and the path that works when nothing was armed).
import * as k8s from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { WeederConfig } from '../config/weeder.ts';
import { errorMessage, isNotFound } from '../kube/writes.ts';
import { statusOf } from '../kube/client.ts';
import { kubeClients, type KubeClients } from '../kube/client.ts';
import type { RunningInformer } from '../kube/informer.ts';
import { log } from '../log.ts';
import { startWatchedInformer } from '../metrics/informer.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import { impostor, type Expected } from '../temporal/identity.ts';
import { armSignal, extendSignal, WEEDER_WORKFLOW_TYPE, weederWorkflowId } from '../weeder/messages.ts';
import { readyEndpointIds, SERVICE_NAME_LABEL, serviceKeyOf, serviceReady, serviceUidOf, type SliceLike } from '../weeder/readiness.ts';
import { READINESS_CONFIGMAP, ReadinessStore } from '../weeder/record.ts';
import { decideTransition, parseRecorded, type Observed } from '../weeder/transition.ts';
import type { WeederInput } from '../weeder/window.ts';
import type { CapabilityWatch } from './watcher.ts';

/** A fresh list this often, so that a watch that stalls silently costs at most this much. */
const RESYNC_MS = 30_000;

/**
 * How long the window's signal and the record wait on a not ready -> ready
 * transition. The Service's workflow was armed when it went not ready, and its
 * watch (in the worker) deletes the crash-looping dependants the moment it sees
 * the same slice event this watcher does. The signal (a Temporal write, then
 * a workflow task on the worker) and the record (an API server write) would
 * otherwise go out in the same millisecond as those DELETEs, on the same
 * API server and, on a small control plane, the same cores. The window opens
 * this much later, which nothing waits on: the armed watch does not need it,
 * and its deadline runs from the moment the Service was seen ready. (After an
 * outage longer than the arming limit, ARM_LIMIT_MS, nothing is armed: the
 * window's deletions then start this much later. npm run bench -- weeder
 * measures the reaction; docs/weeder.md has the runs.)
 */
export const ARMED_YIELD_MS = 50;

/** `tendNamespace`: where the readiness record is kept (config/weeder.ts tendNamespace()). */
export function weederWatch(config: WeederConfig, tendNamespace: string): CapabilityWatch {
  return async ({ client, kc, temporal, signal }) => {
    const kube = kubeClients(kc);
    const services = Object.keys(config.servicesAndDependantSelectors).sort();
    const labelSelector = `${SERVICE_NAME_LABEL} in (${services.join(',')})`;
    const wlog = log.child({ capability: 'weeder' });
    const store = new ReadinessStore(kube, tendNamespace);
    const tracker = new ReadinessTracker(kube, store, client, config, temporal.taskQueue, wlog);

    // One informer over the configured namespaces (or the whole cluster), relisting every
    // RESYNC_MS so that a watch that stalls silently costs at most that long. After each
    // relist every Service is judged again: a reconcile that failed (a signal Temporal
    // did not take) is retried then.
    const informer: RunningInformer<k8s.V1EndpointSlice> = startWatchedInformer<k8s.V1EndpointSlice>('weeder', 'endpointslices', {
      kc,
      path: '/apis/discovery.k8s.io/v1/endpointslices',
      ...(config.namespaces ? { namespaces: config.namespaces } : {}),
      list: (namespace) => (namespace
        ? kube.discovery.listNamespacedEndpointSlice({ namespace, labelSelector })
        : kube.discovery.listEndpointSliceForAllNamespaces({ labelSelector })),
      labelSelector,
      log: wlog,
      resyncMs: RESYNC_MS,
      onUpsert: (slice) => {
        const key = serviceKeyOf(slice);
        if (key) tracker.schedule(key, () => slicesOf(informer, key));
      },
      // A deleted slice is no transition (as in dependency-watchdog): the
      // next update of the Service's slices is judged against the record
      // (a Service deleted and applied again has a new UID: a transition).
      onDelete: () => undefined,
      onResync: (all) => {
        for (const key of new Set(all.map(serviceKeyOf))) if (key) tracker.schedule(key, () => slicesOf(informer, key));
      },
    });

    wlog.info({ services, namespaces: config.namespaces ?? 'all', record: `${tendNamespace}/${READINESS_CONFIGMAP}` }, 'weeder watching EndpointSlices');
    await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    await informer.stop();
    await tracker.idle();
  };
}

function slicesOf(informer: RunningInformer<k8s.V1EndpointSlice>, key: string): k8s.V1EndpointSlice[] {
  const namespace = key.slice(0, key.indexOf('/'));
  return informer.list(namespace).filter((s) => serviceKeyOf(s) === key);
}

/**
 * Per Service, one reconcile at a time, and at most one waiting: a burst of
 * slice updates is judged once, on the latest slices.
 */
export class ReadinessTracker {
  private readonly recorded = new Map<string, Observed>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly queued = new Map<string, () => SliceLike[]>();
  private readonly kube: KubeClients;
  private readonly store: ReadinessStore;
  private readonly client: Client;
  private readonly config: WeederConfig;
  private readonly taskQueue: string;
  private readonly log: typeof log;
  private readonly pause: (ms: number) => Promise<unknown>;

  constructor(
    kube: KubeClients, store: ReadinessStore, client: Client, config: WeederConfig, taskQueue: string, logger: typeof log,
    pause: (ms: number) => Promise<unknown> = sleep,
  ) {
    this.pause = pause;
    this.kube = kube;
    this.store = store;
    this.client = client;
    this.config = config;
    this.taskQueue = taskQueue;
    this.log = logger;
  }

  schedule(key: string, slices: () => SliceLike[]): void {
    const wasQueued = this.queued.has(key);
    this.queued.set(key, slices);
    if (wasQueued) return;
    const prev = this.running.get(key) ?? Promise.resolve();
    const next = prev.then(async () => {
      const latest = this.queued.get(key);
      this.queued.delete(key);
      if (latest) await this.reconcile(key, latest());
    }).catch((err) => {
      this.log.warn({ service: key, err: errorMessage(err) }, 'weeder could not act on a readiness change; the next resync retries');
      this.recorded.delete(key); // re-read the record next time
    });
    this.running.set(key, next);
    void next.finally(() => {
      if (this.running.get(key) === next) this.running.delete(key);
    });
  }

  async idle(): Promise<void> {
    await Promise.all(this.running.values());
  }

  private async reconcile(key: string, slices: SliceLike[]): Promise<void> {
    const [namespace, name] = key.split('/') as [string, string];
    const selectors = this.config.servicesAndDependantSelectors[name];
    if (!selectors) return;
    const ready = serviceReady(slices);
    const uid = serviceUidOf(slices);
    const now: Observed = { readiness: ready ? 'ready' : 'not-ready', endpoints: ready ? readyEndpointIds(slices) : [], ...(uid ? { service: uid } : {}) };
    let recorded = this.recorded.get(key);
    const firstLook = recorded === undefined;
    if (firstLook) {
      recorded = await this.store.read(namespace, name);
      if (!recorded) {
        // No record yet: the Service itself says whether it still exists, and
        // (once, as a migration) what an earlier tend recorded on it.
        try {
          recorded = parseRecorded((await this.kube.core.readNamespacedService({ name, namespace })).metadata?.annotations);
        } catch (err) {
          if (isNotFound(err)) return; // slices outliving their Service: nothing to weed for
          // Without `get services` (not granted): no migration, and the slices stand for the Service.
          if (statusOf(err) !== 403) throw err;
        }
      }
    }
    const decision = decideTransition(recorded, now, firstLook);
    // Armed, its watch is deleting now: the bookkeeping waits its turn.
    if (decision.afterArming) await this.pause(ARMED_YIELD_MS);
    if (decision.open) await this.signal(namespace, name, 'extend', decision.reason);
    if (decision.arm) await this.signal(namespace, name, 'arm', decision.reason);
    if (decision.record) {
      await this.store.write(namespace, name, decision.record);
      if (recorded?.readiness !== now.readiness || recorded?.service !== now.service) {
        this.log.info({ service: key, change: decision.reason }, 'Service readiness changed');
      }
    }
    this.recorded.set(key, now);
  }

  private async signal(namespace: string, service: string, what: 'extend' | 'arm', reason: string): Promise<void> {
    // The Service's name only: the worker looks up its selectors and window in its own configuration.
    const input: WeederInput = { namespace, service };
    const workflowId = weederWorkflowId(namespace, service);
    // Not to an impostor under the Service's id: the reconcile fails, naming it, and the next resync tries again.
    await refuseImpostor(this.client, workflowId, { type: WEEDER_WORKFLOW_TYPE, taskQueues: [this.taskQueue] });
    await this.client.workflow.signalWithStart('weederWorkflow', {
      workflowId,
      taskQueue: this.taskQueue,
      args: [input],
      signal: what === 'extend' ? extendSignal : armSignal,
      signalArgs: [{ reason }],
      staticSummary: `weeder: Service ${namespace}/${service}: deletes its dependants stuck in CrashLoopBackOff ` +
        `for ${this.config.watchDuration.text} once it is ready`,
      typedSearchAttributes: [
        { key: TendCapability, value: 'weeder' },
        { key: TendTarget, value: `${namespace}/${service}` },
      ],
    });
    this.log.info({ workflowId, reason }, what === 'extend' ? 'weeder window opened (or extended)' : 'weeder armed: Service not ready');
  }
}

/**
 * Throws, naming it, when what runs under `workflowId` is not tend's workflow
 * (another type, or another task queue: anyone who may write to the namespace
 * can start one there): nothing is sent to it. Nothing running, or a run that
 * has ended: a signal-with-start starts tend's own.
 */
export async function refuseImpostor(client: Client, workflowId: string, expected: Expected): Promise<void> {
  let found;
  try {
    found = await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return;
    throw err;
  }
  if (found.status.name !== 'RUNNING') return;
  const why = impostor(workflowId, { type: found.type, taskQueue: found.taskQueue }, expected);
  if (why) throw new Error(`${why}; nothing sent to it`);
}
