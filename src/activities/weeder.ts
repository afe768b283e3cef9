// The weeding itself: for the rest of a window, watch the Service's slices and
// its dependants, and delete the dependants that wait in CrashLoopBackOff while
// the Service is ready. Watching (not polling on a timer) keeps a quiet window
// at one activity and a few heartbeats.
//
// The activity returns as soon as it has acted (after a short linger that
// gathers the other pods of the same burst), so every deletion is in the
// workflow's history the moment it happens; the workflow starts it again for
// the rest of the window. A retried attempt (after a worker crash) starts from
// the UIDs the workflow already recorded.
//
// Armed (the Service is not ready; `openOnReady`), the activity watches the
// same way through the outage and returns as soon as it has seen the Service
// ready again (and weeded what it found then): the deletions come straight
// from the slice's watch event, and the workflow learns when the window opened.
import type { WeederConfig } from '../config/weeder.ts';
import * as k8s from '@kubernetes/client-node';
import { Context, CancelledFailure } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { toSelectorString } from '../config/label-selector.ts';
import { errorMessage, isConflict, isNotFound } from '../kube/api.ts';
import type { KubeClients } from '../kube/client.ts';
import { recordEvent } from '../kube/events.ts';
import { startInformer, type RunningInformer } from '../kube/informer.ts';
import { log } from '../log.ts';
import { controllerOf, decidePod } from '../weeder/crashloop.ts';
import { SERVICE_NAME_LABEL, serviceReady } from '../weeder/readiness.ts';
import { mergeNewest } from '../weeder/resync.ts';
import { resolveWeederTarget, type WeederTarget } from '../weeder/target.ts';
import type { WeededPod } from '../weeder/window.ts';

/** The failure type of every weeder refusal (a Service or namespace outside the configuration). */
export const WEEDER_REFUSED = 'WeederRefused';

/**
 * Names the Service only: its dependants' selectors come from the worker's
 * configuration, and a Service (or namespace) the configuration does not list
 * is refused, non-retryably, before anything is watched or deleted.
 */
export interface WeedInput {
  namespace: string;
  service: string;
  /** Epoch ms: the window's deadline as the workflow knew it when it scheduled this. */
  until: number;
  /** Armed: return as soon as the Service is seen ready (after weeding what is there then). */
  openOnReady?: boolean;
  /** Pod UIDs already weeded or reported in this window. */
  handled: string[];
}

export interface WeedOutput {
  weeded: WeededPod[];
  reported: WeededPod[];
  /** Armed only: when the Service was seen ready (epoch ms). */
  readyAt?: number;
}

/** How long after its first action the activity gathers more before returning. */
const LINGER_MS = 300;
/** A fresh list of slices and pods this often, in case a watch stalls without an error. */
const RESYNC_MS = 30_000;

/** The configured target, or a non-retryable refusal that names what was asked and why. */
function targetOf(config: WeederConfig | undefined, namespace: unknown, service: unknown): WeederTarget {
  const r = resolveWeederTarget(config, namespace, service);
  if ('refused' in r) throw ApplicationFailure.nonRetryable(`refused: ${r.refused}; nothing was watched or deleted`, WEEDER_REFUSED);
  return r.target;
}

export function createWeederActivities(kube: KubeClients, config?: WeederConfig) {
  return {
    /**
     * What the worker's configuration says of a Service: the window's length
     * (and that it is configured at all). The workflow asks this first.
     */
    async weederSettings(input: { namespace: string; service: string }): Promise<{ watchDuration: { text: string; ms: number } }> {
      return { watchDuration: targetOf(config, input?.namespace, input?.service).watchDuration };
    },

    async weedDependants(input: WeedInput): Promise<WeedOutput> {
      const ctx = Context.current();
      const { namespace, service, podSelectors } = targetOf(config, input?.namespace, input?.service);
      const workflowId = ctx.info.workflowExecution?.workflowId ?? ctx.info.workflowType ?? 'unknown workflow';
      const handled = new Set(Array.isArray(input.handled) ? input.handled.filter((u) => typeof u === 'string') : []);
      const until = typeof input.until === 'number' && Number.isFinite(input.until) ? input.until : Date.now();
      const found: WeedOutput = { weeded: [], reported: [] };
      const inflight = new Set<Promise<void>>();
      const wlog = log.child({ workflowId });
      const target = { workflowId, namespace, service };
      let slicesNow: readonly k8s.V1EndpointSlice[] | undefined;
      const podsNow = new Map<string, k8s.V1Pod>();

      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      let linger: NodeJS.Timeout | undefined;
      // Set once the activity is returning: nothing more is started after that.
      let done = false;
      let synced = false;

      const act = (pod: k8s.V1Pod) => {
        if (done) return;
        const decision = decidePod(pod, {
          namespace, podSelectors, serviceReady: serviceReady(slicesNow ?? []), handled,
        });
        if (decision.action === 'none') return;
        const uid = pod.metadata!.uid!;
        const name = pod.metadata!.name!;
        handled.add(uid);
        const at = new Date().toISOString();
        const p = (decision.action === 'delete'
          ? weed(kube, target, pod, decision.containers, at).then((w) => { if (w) found.weeded.push(w); })
          : report(kube, target, pod, decision.containers, at).then((r) => { found.reported.push(r); })
        ).catch((err) => {
          // Not handled after all: a later event or resync tries again.
          handled.delete(uid);
          wlog.warn({ pod: name, err: errorMessage(err) }, 'weeding a pod failed; will retry');
        }).finally(() => inflight.delete(p));
        inflight.add(p);
        linger ??= setTimeout(finish, LINGER_MS);
      };
      const evaluate = () => {
        if (slicesNow === undefined || done) return;
        for (const pod of podsNow.values()) act(pod);
        // Armed: once every watch has listed, the first sight of the Service
        // ready opens the window; with nothing to weed, say so at once.
        if (input.openOnReady && synced && found.readyAt === undefined && serviceReady(slicesNow)) {
          found.readyAt = Date.now();
          if (!linger) finish();
        }
      };

      const sliceSelector = `${SERVICE_NAME_LABEL}=${service}`;
      const slices = startInformer<k8s.V1EndpointSlice>({
        kc: kube.kc,
        path: `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`,
        list: () => kube.discovery.listNamespacedEndpointSlice({ namespace, labelSelector: sliceSelector }),
        labelSelector: sliceSelector,
        log: wlog,
        onUpsert: () => { slicesNow = slices.cache.list(namespace); evaluate(); },
        onDelete: () => { slicesNow = slices.cache.list(namespace); },
      });
      const pods: RunningInformer<k8s.V1Pod>[] = podSelectors.map((selector) => {
        const labelSelector = toSelectorString(selector);
        const informer: RunningInformer<k8s.V1Pod> = startInformer<k8s.V1Pod>({
          kc: kube.kc,
          path: `/api/v1/namespaces/${namespace}/pods`,
          list: () => kube.core.listNamespacedPod({ namespace, labelSelector }),
          labelSelector,
          log: wlog,
          onUpsert: (pod) => { podsNow.set(pod.metadata!.uid!, pod); if (slicesNow) act(pod); },
          onDelete: (pod) => { podsNow.delete(pod.metadata!.uid!); },
        });
        return informer;
      });
      // The slices informer may deliver its list after the pods': the first
      // slice event evaluates every pod seen so far.
      void Promise.all([slices.synced, ...pods.map((p) => p.synced)]).then(() => {
        synced = true;
        slicesNow = slices.cache.list(namespace);
        evaluate();
      });

      const resync = setInterval(() => {
        void (async () => {
          try {
            const [s, ...ps] = await Promise.all([
              kube.discovery.listNamespacedEndpointSlice({ namespace, labelSelector: sliceSelector }),
              ...podSelectors.map((sel) => kube.core.listNamespacedPod({ namespace, labelSelector: toSelectorString(sel) })),
            ]);
            // Merged with what the watches delivered meanwhile: the newer version of each object wins.
            slicesNow = mergeNewest(slicesNow ?? [], s.items);
            const listed = ps.flatMap((l) => l.items);
            for (const p of mergeNewest([...podsNow.values()], listed)) podsNow.set(p.metadata!.uid!, p);
            evaluate();
          } catch (err) {
            wlog.warn({ err: errorMessage(err) }, 'weeder resync failed');
          }
        })();
      }, RESYNC_MS);
      const heartbeatEvery = Math.max(1000, (ctx.info.heartbeatTimeoutMs ?? 60_000) / 2);
      const heartbeat = setInterval(() => ctx.heartbeat(), heartbeatEvery);
      const deadline = setTimeout(finish, Math.max(0, until - Date.now()));

      try {
        await Promise.race([finished, ctx.cancelled]).finally(() => (done = true));
        await Promise.all(inflight);
        return found;
      } catch (err) {
        if (err instanceof CancelledFailure) wlog.info('weeding stopped: the window was stopped or cancelled');
        throw err;
      } finally {
        clearTimeout(deadline);
        clearTimeout(linger);
        clearInterval(resync);
        clearInterval(heartbeat);
        await Promise.all([slices.stop(), ...pods.map((p) => p.stop())]);
      }
    },
  };
}

interface Acting { workflowId: string; namespace: string; service: string }

async function weed(kube: KubeClients, input: Acting, pod: k8s.V1Pod, containers: string[], at: string): Promise<WeededPod | undefined> {
  const { name, uid, namespace } = pod.metadata as { name: string; uid: string; namespace: string };
  const owner = controllerOf(pod)!;
  try {
    // The UID precondition: never delete a pod that replaced this one under the same name.
    await kube.core.deleteNamespacedPod({ name, namespace, body: { preconditions: { uid } } });
  } catch (err) {
    if (isNotFound(err) || isConflict(err)) return undefined; // gone already, or a different pod now
    throw err;
  }
  log.info({ workflowId: input.workflowId, pod: name, uid, containers }, 'weeded a crash-looping pod');
  const weeded: WeededPod = { name, uid, containers, owner: `${owner.kind}/${owner.name}`, at };
  await recordEvent(kube, {
    regarding: { apiVersion: owner.apiVersion, kind: owner.kind, namespace, name: owner.name, uid: owner.uid },
    related: { apiVersion: 'v1', kind: 'Pod', namespace, name, uid },
    reason: 'WeededPod',
    action: 'Delete',
    note: `deleted pod ${name}: ${containers.join(', ')} in CrashLoopBackOff after Service ${input.namespace}/${input.service} ` +
      `became ready (workflow ${input.workflowId})`,
    dedupKey: `${input.workflowId}/${uid}`,
  }).catch((err) => log.warn({ pod: name, err: errorMessage(err) }, 'could not record the WeededPod event'));
  return weeded;
}

async function report(kube: KubeClients, input: Acting, pod: k8s.V1Pod, containers: string[], at: string): Promise<WeededPod> {
  const { name, uid, namespace } = pod.metadata as { name: string; uid: string; namespace: string };
  log.warn({ workflowId: input.workflowId, pod: name, containers }, 'crash-looping pod has no controller: not deleted');
  await recordEvent(kube, {
    regarding: { apiVersion: 'v1', kind: 'Pod', namespace, name, uid },
    type: 'Warning',
    reason: 'WeederSkippedPod',
    action: 'None',
    note: `not deleted although ${containers.join(', ')} in CrashLoopBackOff after Service ${input.namespace}/${input.service} ` +
      `became ready: the pod has no controller to recreate it (workflow ${input.workflowId})`,
    dedupKey: `${input.workflowId}/${uid}/skipped`,
  }).catch((err) => log.warn({ pod: name, err: errorMessage(err) }, 'could not record the WeederSkippedPod event'));
  return { name, uid, containers, at };
}
