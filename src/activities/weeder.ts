// The weeder's activities. Watching and deleting are apart, so that every
// deletion is in the workflow's history before it is issued:
//
// - `watchDependants` watches the Service's slices and its dependants for the
//   rest of a window (or, armed, through an outage) and deletes nothing: it
//   returns the crash-looping dependants it finds while the Service is ready
//   (candidates), and, armed, when it saw the Service ready. Watching (not
//   polling on a timer) keeps a quiet window at one activity and a few
//   heartbeats. An attempt that is lost or cancelled leaves nothing behind.
// - `weedPods` deletes the candidates the workflow hands it (UID
//   precondition), after looking at each pod and the Service's slices afresh:
//   only a configured dependant that still waits in CrashLoopBackOff, with a
//   controller, while the Service is ready. The workflow schedules it (its
//   input, naming the pods, is in the history) before any deletion is issued,
//   so a worker killed between a deletion and its answer loses nothing: the
//   workflow knows what may have been deleted and a retry, or `checkPods`,
//   finds out what was.
// - `checkPods` only reads: what became of pods whose deletion's answer was lost.
//
// Right before each deletion `weedPods` asks the safety gates (docs/safety.md):
// in observe mode the deletion is recorded instead (a WouldDelete Event on the
// pod, a log line, tend_weeder_would_delete_total) and answered `observed`;
// while the weeder is paused (or its pause state cannot be confirmed) nothing
// is done and the pod is answered `held`. The workflow asks both again with a
// hold: the activity then waits in place, heartbeating and asking the gates
// every 250 ms, until the weeder may delete (or the hold ends), and judges the
// pods afresh. So a held deletion goes out within a second of `tend resume
// weeder`, and an observed one as soon as the worker's configuration says act.
import type { WeederConfig } from '../config/weeder.ts';
import * as k8s from '@kubernetes/client-node';
import diagnostics from 'node:diagnostics_channel';
import { Context, CancelledFailure } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { toSelectorString } from '../config/label-selector.ts';
import { deletePodIfSameUid, errorMessage, statusOf } from '../kube/writes.ts';
import type { KubeClients } from '../kube/client.ts';
import { noteEvent } from './events.ts';
import { startInformer, type RunningInformer } from '../kube/informer.ts';
import { preparedPodDelete, type PreparedPodDelete } from '../kube/prepared.ts';
import { log } from '../log.ts';
import { noteReadyAt, weederOutcomes } from '../metrics/weeder.ts';
import { controllerOf, decidePod, isDependant } from '../weeder/crashloop.ts';
import { SERVICE_NAME_LABEL, serviceReady } from '../weeder/readiness.ts';
import { armedWeedingSignal, WEEDER_REFUSED } from '../weeder/messages.ts';
import { answerAnnounced as answerFor, deleteAtOnce, deletingToken, goneOutcome, toAnnounce } from '../weeder/armed.ts';
import { resolveWeederTarget, type WeederTarget } from '../weeder/target.ts';
import type { Candidate, PodSeen, WatchOutput, WeedOutcome } from '../weeder/window.ts';
import { recordWould, waitForGates, writeHold, type SafetyGates } from './safety-gate.ts';
import { shuttingDown, untilStopped } from '../temporal/worker-shutdown.ts';

/**
 * Names the Service only: its dependants' selectors come from the worker's
 * configuration, and a Service (or namespace) the configuration does not list
 * is refused, non-retryably, before anything is watched or deleted.
 */
export interface WatchInput {
  namespace: string;
  service: string;
  /** Epoch ms: the window's deadline as the workflow knew it when it scheduled this. */
  until: number;
  /** Armed: return as soon as the Service is seen ready (with the candidates there are then). */
  openOnReady?: boolean;
  /** Pod UIDs the window has handled or is handling: never proposed again. */
  handled: string[];
  /**
   * Armed only: delete at once the dependants found when the Service turns
   * ready, each after the workflow has its name (an armedWeeding signal with
   * this token, to this run); their outcomes come back in `weeded`. Absent
   * (or when the signal cannot be sent, or the safety gates hold deletions):
   * they are returned as candidates, for the workflow's deleting activity.
   */
  weedToken?: string;
}

/** The pods a workflow asks to be weeded: names and UIDs only; each is checked afresh before anything is done. */
export interface WeedPodsInput {
  namespace: string;
  service: string;
  pods: Candidate[];
  /**
   * Asked again after an `observed` or `held` answer: first wait in place, up
   * to this long (ms, at most WEED_HOLD_MAX_MS), while observe mode or the
   * pause stops the weeder from deleting; then judge the pods afresh.
   */
  holdMs?: number;
  /** UIDs whose deletion observe mode has recorded already: not recorded again. */
  observed?: string[];
}

/** The longest a deleting activity waits in place for the weeder to be let act. */
export const WEED_HOLD_MAX_MS = 15 * 60_000;

/**
 * How long after a pod's own event made it a candidate the watch gathers more
 * before returning (pods of one burst crash together). Candidates found when
 * the Service turns ready are returned at once: that is the reaction time.
 */
const LINGER_MS = 100;
/** A fresh list of slices and pods this often, in case a watch stalls without an error. */
const RESYNC_MS = 30_000;

/** The configured target, or a non-retryable refusal that names what was asked and why. */
function targetOf(config: WeederConfig | undefined, namespace: unknown, service: unknown): WeederTarget {
  const r = resolveWeederTarget(config, namespace, service);
  if ('refused' in r) throw ApplicationFailure.nonRetryable(`refused: ${r.refused}; nothing was watched or deleted`, WEEDER_REFUSED);
  return r.target;
}

/** Now, as epoch milliseconds with sub-millisecond precision: the reaction's timings, comparable across processes. */
const epochNow = () => performance.timeOrigin + performance.now();

/** New connections undici has opened in this process (to any server): the reaction's timings say whether a delete needed one. */
let connectsOpened = 0;
/** The armed deletions' requests (method and path) whose body was written to the socket, and when (epoch ms). */
const deletesWritten = new Map<string, number | undefined>();
// Only when the timings are logged (TEND_LOG_LEVEL=debug, as `bench/weeder.ts --trace` runs tend):
// otherwise every request of the process would pass through these.
if (log.isLevelEnabled('debug')) {
  diagnostics.channel('undici:client:beforeConnect').subscribe(() => { connectsOpened++; });
  diagnostics.channel('undici:request:bodySent').subscribe((m) => {
    const request = (m as { request?: { method?: string; path?: string } }).request;
    const key = `${request?.method} ${request?.path}`;
    if (deletesWritten.has(key) && deletesWritten.get(key) === undefined) deletesWritten.set(key, epochNow());
  });
}

export function createWeederActivities(kube: KubeClients, config?: WeederConfig, gates?: SafetyGates) {
  // The armed watch's deletions: prepared (credentials resolved while it waits), sent with no await before them.
  const podDelete = preparedPodDelete(kube.requests);
  /**
   * Waits in place, heartbeating, while observe mode or the pause stops the
   * weeder from deleting, until `until` (epoch ms) at the latest. A
   * cancellation (the window stopped) ends it with a CancelledFailure.
   */
  async function waitForGate(ctx: Context, until: number, wlog: typeof log): Promise<void> {
    const stopped = untilStopped();
    await waitForGates(gates, 'weeder', until, {
      waitsFor: () => true,
      sleep: (ms) => Promise.race([ctx.sleep(ms), stopped]),
      onWait: (hold) => wlog.info({ reason: hold.message }, 'weeder: deletions wait in place for the weeder to act (tend resume weeder, or mode: act)'),
    });
  }

  return {
    /**
     * What the worker's configuration says of a Service: the window's length
     * (and that it is configured at all). The workflow asks this first.
     */
    async weederSettings(input: { namespace: string; service: string }): Promise<{ watchDuration: { text: string; ms: number } }> {
      return { watchDuration: targetOf(config, input?.namespace, input?.service).watchDuration };
    },

    async watchDependants(input: WatchInput): Promise<WatchOutput> {
      const ctx = Context.current();
      const { namespace, service, podSelectors } = targetOf(config, input?.namespace, input?.service);
      const workflowId = ctx.info.workflowExecution?.workflowId ?? ctx.info.workflowType ?? 'unknown workflow';
      const handled = new Set(Array.isArray(input.handled) ? input.handled.filter((u) => typeof u === 'string') : []);
      const until = typeof input.until === 'number' && Number.isFinite(input.until) ? input.until : Date.now();
      const out: WatchOutput = { candidates: [] };
      const wlog = log.child({ workflowId });
      let slicesNow: readonly k8s.V1EndpointSlice[] | undefined;
      const podsNow = new Map<string, k8s.V1Pod>();

      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      let linger: NodeJS.Timeout | undefined;
      // Set once the activity is returning: nothing more is proposed after that.
      let done = false;
      let synced = false;
      // Armed with a token: the dependants announced to the workflow while the
      // Service was down, and the deletions made the moment it was seen ready.
      const weedToken = deletingToken(input);
      const run = ctx.info.workflowExecution;
      const announced = new Map<string, Candidate>();
      let announcing: Promise<void> | undefined;
      let announceAgain = false;
      let weeding: Promise<void> | undefined;
      const outcomes = new Map<string, WeedOutcome>();
      const target = { workflowId, namespace, service };
      // The reaction's timings (epoch ms), logged at debug level once the deletions are answered:
      // the ready slice's event delivered, the deletions started, each DELETE handed to the client.
      // sliceEventMono: the same moment on the monotonic clock, in a CPU profile's (node --cpu-prof) microseconds.
      const timing: { sliceEvent?: number; sliceEventMono?: bigint; weedStart?: number; sent: number[]; keys: string[]; connects?: number } = { sent: [], keys: [] };

      /**
       * Armed to delete: the DELETE's credentials resolved and an idle connection
       * to the API server ready, off the reaction's path. Called when the watch
       * starts, once its watches run, at each heartbeat and at each pod event while
       * the Service is down (the watches take connections as they start).
       */
      const prepare = () => {
        if (weedToken === undefined || done) return;
        podDelete.prepare().then((opened) => {
          if (opened) wlog.debug('weeder: opened a connection to the API server for the armed deletions (the pool had no idle one)');
        }, (err: unknown) => wlog.warn({ err: errorMessage(err) }, 'weeder: could not prepare the delete; it is prepared when sent'));
      };

      /** Tells the workflow these pods are to be deleted (armedWeeding): in its history before any is. */
      const announce = async (pods: Candidate[]): Promise<boolean> => {
        try {
          await ctx.client.workflow.getHandle(run!.workflowId, run!.runId).signal(armedWeedingSignal, { token: weedToken!, pods });
          for (const c of pods) announced.set(c.uid, c);
          return true;
        } catch (err) {
          wlog.warn({ err: errorMessage(err) }, 'weeder: could not announce crash-looping dependants to the workflow; they are handed to its deleting activity instead');
          return false;
        }
      };

      /**
       * While the Service is down: the dependants that would be weeded were it
       * ready (crash-looping, with a controller) are announced as they appear,
       * one signal per burst, so that the deletions need no round trip when it
       * is ready.
       */
      const announceAhead = () => {
        if (weedToken === undefined || !run || done || !synced) return;
        if (announcing) {
          announceAgain = true;
          return;
        }
        const fresh = toAnnounce(podsNow.values(), { announced, handled }, { namespace, podSelectors });
        if (fresh.length === 0) return;
        announcing = announce(fresh).then(() => undefined).finally(() => {
          announcing = undefined;
          if (announceAgain) {
            announceAgain = false;
            announceAhead();
          }
        });
      };

      /**
       * The moment the Service is seen ready: every candidate with a controller
       * is deleted at once (UID precondition), on the watch's view, as fresh as
       * its events. One not announced yet is announced first. Held by the safety
       * gates, or not announced: nothing is deleted here; the candidates go back
       * to the workflow, whose deleting activity judges them afresh.
       */
      const weedAtOnce = async (): Promise<void> => {
        if (!run) return;
        // Timed out and told so (a heartbeat's answer): another attempt has the watch; this one deletes nothing.
        const hold = writeHold(gates, 'weeder');
        const held = hold !== undefined || ctx.cancellationSignal.aborted;
        // Observe mode: recorded at the instant act mode would delete, on this view, before the workflow's
        // deleting activity looks again (by then another weeder, dependency-watchdog beside tend, may have
        // deleted the pod, and there would be nothing to record: docs/weeder.md, "Coming from dependency-watchdog").
        if (hold?.kind === 'observe' && !ctx.cancellationSignal.aborted) {
          const would = out.candidates.filter((c) => c.owner !== undefined && podsNow.has(c.uid));
          await Promise.all(would.map((c) => recordWouldDelete(kube, target, c, c.containers)));
        }
        await announcing;
        const { announceFirst, deletable: wanted } = deleteAtOnce(out.candidates, { present: podsNow, announced, held });
        if (announceFirst.length > 0) await announce(announceFirst);
        // Not announced (the signal could not be sent): not deleted here; handed back to the workflow.
        const deletable = wanted.filter((c) => announced.has(c.uid));
        await Promise.all(deletable.map(async (c) => {
          const at = new Date().toISOString();
          try {
            timing.sent.push(epochNow());
            timing.keys.push(`DELETE /api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(c.name)}`);
            deletesWritten.set(timing.keys.at(-1)!, undefined);
            if (await weed(kube, target, podsNow.get(c.uid)!, c.containers, podDelete)) outcomes.set(c.uid, { uid: c.uid, outcome: 'deleted', at });
            else outcomes.set(c.uid, goneOutcome(c.uid, at, ctx.info.attempt));
          } catch (err) {
            const refused = refusedForGood(err, c.uid, at);
            if (refused) outcomes.set(c.uid, refused);
            // Not known to be deleted: handed back; the workflow's deleting activity tries again, judging it afresh.
            else wlog.warn({ pod: c.name, err: errorMessage(err) }, 'weeder: a deletion failed; handed to the deleting activity');
          }
        }));
      };

      /**
       * The answer for every pod announced: its outcome, or, for one not in the
       * candidates handed back, why it was not deleted (it recovered, or the
       * Service did not come back while this watch ran).
       */
      const answerAnnounced = (why: string) => {
        if (weedToken === undefined || announced.size === 0) return;
        weederOutcomes(namespace, service, [...outcomes.values()]);
        const answer = answerFor([...announced.values()], outcomes, out.candidates, why);
        out.weeded = answer.weeded;
        out.candidates = answer.candidates;
      };

      /** Whether the pod became a candidate. */
      const consider = (pod: k8s.V1Pod): boolean => {
        if (done) return false;
        const decision = decidePod(pod, { namespace, podSelectors, serviceReady: serviceReady(slicesNow ?? []), handled });
        if (decision.action === 'none') return false;
        const uid = pod.metadata!.uid!;
        handled.add(uid);
        const owner = decision.action === 'delete' ? controllerOf(pod)! : undefined;
        out.candidates.push({ name: pod.metadata!.name!, uid, containers: decision.containers, ...(owner ? { owner: `${owner.kind}/${owner.name}` } : {}) });
        return true;
      };
      const evaluate = () => {
        if (slicesNow === undefined || done || !synced) return;
        let found = false;
        for (const pod of podsNow.values()) found = consider(pod) || found;
        // Armed: once every watch has listed, the first sight of the Service
        // ready opens the window, returned at once with what there is to weed.
        if (input.openOnReady && out.readyAt === undefined && serviceReady(slicesNow)) {
          timing.weedStart = epochNow();
          timing.connects = connectsOpened;
          out.readyAt = Date.now();
          noteReadyAt(namespace, service, out.readyAt);
          // Nothing more is proposed once the deletions start: what they act on is what this answer lists.
          if (weedToken !== undefined) {
            done = true;
            weeding = weedAtOnce().catch((err: unknown) => {
              wlog.warn({ err: errorMessage(err) }, 'weeder: deleting at once failed');
            }).finally(() => {
              const { sliceEvent, sliceEventMono, weedStart, sent } = timing;
              if (sliceEvent !== undefined && sent.length > 0) {
                wlog.debug({
                  sliceEvent, sliceEventUs: Number(sliceEventMono! / 1000n), weedStart, sent, sinceEventMs: sent.map((t) => +(t - sliceEvent).toFixed(3)),
                  connectionsOpened: connectsOpened - (timing.connects ?? connectsOpened),
                  written: timing.keys.map((k) => deletesWritten.get(k)),
                }, 'weeder: armed deletions sent');
              }
              for (const k of timing.keys) deletesWritten.delete(k);
              finish();
            });
          } else {
            finish();
          }
        } else if (found) {
          finish();
        } else if (input.openOnReady && out.readyAt === undefined) {
          announceAhead();
        }
      };

      // Each informer relists every RESYNC_MS, merged by resourceVersion: a watch that
      // stalls without an error costs at most that long.
      const sliceSelector = `${SERVICE_NAME_LABEL}=${service}`;
      const slices: RunningInformer<k8s.V1EndpointSlice> = startInformer<k8s.V1EndpointSlice>({
        kc: kube.kc,
        path: '/apis/discovery.k8s.io/v1/endpointslices',
        namespaces: [namespace],
        list: () => kube.discovery.listNamespacedEndpointSlice({ namespace, labelSelector: sliceSelector }),
        labelSelector: sliceSelector,
        log: wlog,
        resyncMs: RESYNC_MS,
        // Armed to delete: its slice event goes before the other informers' (the watcher's on the same slice).
        urgent: weedToken !== undefined,
        onUpsert: () => {
          if (timing.weedStart === undefined) {
            timing.sliceEvent = epochNow();
            timing.sliceEventMono = process.hrtime.bigint();
          }
          slicesNow = slices.list(namespace);
          evaluate();
        },
        onDelete: () => { slicesNow = slices.list(namespace); },
      });
      const pods: RunningInformer<k8s.V1Pod>[] = podSelectors.map((selector) => {
        const labelSelector = toSelectorString(selector);
        const informer: RunningInformer<k8s.V1Pod> = startInformer<k8s.V1Pod>({
          kc: kube.kc,
          path: '/api/v1/pods',
          namespaces: [namespace],
          list: () => kube.core.listNamespacedPod({ namespace, labelSelector }),
          labelSelector,
          log: wlog,
          resyncMs: RESYNC_MS,
          onUpsert: (pod) => {
            podsNow.set(pod.metadata!.uid!, pod);
            if (synced && slicesNow && consider(pod)) linger ??= setTimeout(finish, LINGER_MS);
            // Armed, the Service down: a dependant that starts crash-looping is announced now, not when the Service is back.
            else if (input.openOnReady && out.readyAt === undefined) {
              announceAhead();
              prepare();
            }
          },
          onDelete: (pod) => { podsNow.delete(pod.metadata!.uid!); },
        });
        return informer;
      });
      // Judged once every watch has listed: the slices may arrive after the pods.
      void Promise.all([slices.synced, ...pods.map((p) => p.synced)]).then(() => {
        synced = true;
        slicesNow = slices.list(namespace);
        evaluate();
        prepare();
      });

      const heartbeatEvery = Math.max(1000, (ctx.info.heartbeatTimeoutMs ?? 60_000) / 2);
      prepare();
      const heartbeat = setInterval(() => {
        ctx.heartbeat();
        prepare();
      }, heartbeatEvery);
      const deadline = setTimeout(finish, Math.max(0, until - Date.now()));

      try {
        await Promise.race([finished, ctx.cancelled, untilStopped()]).finally(() => (done = true));
        await announcing;
        answerAnnounced(out.readyAt === undefined ? `the Service ${namespace}/${service} did not turn ready while armed` : 'not in CrashLoopBackOff when the Service turned ready');
        return out;
      } catch (err) {
        // Deleting already (the workflow has the pods' names): the deletions are finished and answered, not abandoned.
        if (weeding) await weeding;
        await announcing;
        // Pods announced: the workflow is told what became of them rather than left to look. The
        // worker shutting down before the Service is ready: the next attempt, on another worker,
        // watches on and deletes at once, and answers.
        if (weeding || (announced.size > 0 && !(shuttingDown.aborted && !ctx.cancellationSignal.aborted))) {
          answerAnnounced('the armed watch was stopped before the Service turned ready');
          return out;
        }
        if (err instanceof CancelledFailure) wlog.info('weeder watch ended: the window was stopped, cancelled or carried over');
        throw err;
      } finally {
        clearTimeout(deadline);
        clearTimeout(linger);
        clearInterval(heartbeat);
        await Promise.all([slices.stop(), ...pods.map((p) => p.stop())]);
      }
    },

    /**
     * Weeds the pods the workflow names, each judged afresh: read the pod and
     * the Service's slices now, delete (UID precondition) a configured
     * dependant that waits in CrashLoopBackOff while the Service is ready,
     * report one without a controller. A retried attempt (its predecessor's
     * answer was lost) counts a pod gone or being deleted as its deletion.
     */
    async weedPods(input: WeedPodsInput): Promise<WeedOutcome[]> {
      const ctx = Context.current();
      const { namespace, service, podSelectors } = targetOf(config, input?.namespace, input?.service);
      const workflowId = ctx.info.workflowExecution?.workflowId ?? ctx.info.workflowType ?? 'unknown workflow';
      const retried = ctx.info.attempt > 1;
      const asked = candidatesOf(input?.pods);
      const target = { workflowId, namespace, service };
      const observedBefore = new Set(Array.isArray(input?.observed) ? input.observed.filter((u) => typeof u === 'string') : []);
      const holdMs = typeof input?.holdMs === 'number' && Number.isFinite(input.holdMs) ? Math.min(Math.max(0, input.holdMs), WEED_HOLD_MAX_MS) : 0;
      const judgeAndWeed = async (): Promise<WeedOutcome[]> => {
        const sliceSelector = `${SERVICE_NAME_LABEL}=${service}`;
        const [slices, ...found] = await Promise.all([
          kube.discovery.listNamespacedEndpointSlice({ namespace, labelSelector: sliceSelector }),
          ...asked.map((c) => readPod(kube, namespace, c.name)),
        ]);
        const ready = serviceReady(slices.items);
        const outcomes = await Promise.all(asked.map(async (c, i): Promise<WeedOutcome> => {
          const pod = found[i];
          const at = new Date().toISOString();
          const gone = !pod || pod.metadata?.uid !== c.uid;
          if (gone || pod.metadata?.deletionTimestamp) {
            // A retry: the earlier attempt's deletion, most likely, whose answer was lost.
            if (retried) return { uid: c.uid, outcome: 'deleted', at, earlier: true };
            return { uid: c.uid, outcome: 'skipped', reason: gone ? 'gone (or replaced) already' : 'being deleted already' };
          }
          const decision = decidePod(pod, { namespace, podSelectors, serviceReady: ready, handled: new Set() });
          if (decision.action === 'none') {
            return { uid: c.uid, outcome: 'skipped', reason: !ready ? `Service ${namespace}/${service} is not ready`
              : !isDependant(pod, namespace, podSelectors) ? 'not a configured dependant' : 'not in CrashLoopBackOff' };
          }
          if (decision.action === 'report') {
            await report(kube, target, pod, decision.containers);
            return { uid: c.uid, outcome: 'reported', at };
          }
          // Right before the deletion: observe mode records it, the pause holds it.
          const hold = writeHold(gates, 'weeder');
          if (hold?.kind === 'observe') {
            const note = observedNote(target, c.name, decision.containers);
            if (!observedBefore.has(c.uid)) await recordWouldDelete(kube, target, c, decision.containers);
            return { uid: c.uid, outcome: 'observed', at, note };
          }
          if (hold) return { uid: c.uid, outcome: 'held', reason: hold.message };
          try {
            const deleted = await weed(kube, target, pod, decision.containers);
            if (deleted) return { uid: c.uid, outcome: 'deleted', at };
            if (retried) return { uid: c.uid, outcome: 'deleted', at, earlier: true };
            return { uid: c.uid, outcome: 'skipped', reason: 'gone (or replaced) when deleted' };
          } catch (err) {
            const refused = refusedForGood(err, c.uid, at);
            if (refused) return refused;
            throw err;
          }
        }));
        weederOutcomes(namespace, service, outcomes);
        return outcomes;
      };
      if (holdMs === 0) return judgeAndWeed();
      // Asked again with a hold: heartbeating throughout (a stop reaches it; a dead worker is noticed).
      const beat = setInterval(() => ctx.heartbeat(), 1000);
      try {
        await waitForGate(ctx, Date.now() + holdMs, log.child({ workflowId }));
        return await judgeAndWeed();
      } finally {
        clearInterval(beat);
      }
    },

    /** What became of pods whose deletion's answer was lost: gone, being deleted, or still there. Reads only. */
    async checkPods(input: WeedPodsInput): Promise<PodSeen[]> {
      const { namespace } = targetOf(config, input?.namespace, input?.service);
      const asked = candidatesOf(input?.pods);
      const found = await Promise.all(asked.map((c) => readPod(kube, namespace, c.name)));
      return asked.map((c, i): PodSeen => {
        const pod = found[i];
        if (!pod || pod.metadata?.uid !== c.uid) return { uid: c.uid, seen: 'gone' };
        return { uid: c.uid, seen: pod.metadata?.deletionTimestamp ? 'deleting' : 'present' };
      });
    },
  };
}

/** The pods a workflow named, checked for shape (names and UIDs are all that is used). */
function candidatesOf(pods: unknown): Candidate[] {
  if (!Array.isArray(pods) || !pods.every((p) => typeof p === 'object' && p !== null &&
    typeof (p as Candidate).name === 'string' && typeof (p as Candidate).uid === 'string')) {
    throw ApplicationFailure.nonRetryable('refused: pods must be a list of {name, uid}; nothing was deleted', WEEDER_REFUSED);
  }
  return (pods as Candidate[]).map((p) => ({ name: p.name, uid: p.uid, containers: Array.isArray(p.containers) ? p.containers : [] }));
}

/**
 * The pod of that name, or undefined when there is none. A list with a field
 * selector, not a get: the weeder's rights on pods are list and watch (and
 * delete).
 */
async function readPod(kube: KubeClients, namespace: string, name: string): Promise<k8s.V1Pod | undefined> {
  return (await kube.core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${name}` })).items[0];
}

interface Acting { workflowId: string; namespace: string; service: string }

const observedNote = (input: Acting, pod: string, containers: readonly string[]) =>
  `would delete pod ${input.namespace}/${pod}: CrashLoopBackOff (${containers.join(', ')}) while ${input.namespace}/${input.service} became ready`;

/**
 * Observe mode's record of a deletion (docs/safety.md): a WouldDelete Event on the pod, related to
 * the Service, once per window and pod (the armed watch's record at the Service's return and the
 * deleting activity's later one are the same Event).
 */
async function recordWouldDelete(kube: KubeClients, input: Acting, pod: { name: string; uid: string }, containers: readonly string[]): Promise<void> {
  await recordWould(kube, {
    capability: 'weeder', action: 'delete', note: observedNote(input, pod.name, containers), dedupKey: `${input.workflowId}/${pod.uid}`,
    regarding: { apiVersion: 'v1', kind: 'Pod', namespace: input.namespace, name: pod.name, uid: pod.uid },
    related: { apiVersion: 'v1', kind: 'Service', namespace: input.namespace, name: input.service },
  });
}

/** A delete the API refused for good (forbidden, invalid, a webhook's no): recorded as failed, not retried. Anything else: undefined. */
function refusedForGood(err: unknown, uid: string, at: string): WeedOutcome | undefined {
  const code = statusOf(err);
  if (code === undefined || code < 400 || code >= 500 || code === 429) return undefined;
  return { uid, outcome: 'failed', reason: `delete refused (${code}): ${errorMessage(err)}`, at };
}

/**
 * Deletes the pod (UID precondition) and records the Event: false when it was gone or replaced already.
 * `prepared`: the delete is sent by it (the armed watch's), else by client-node.
 */
async function weed(kube: KubeClients, input: Acting, pod: k8s.V1Pod, containers: string[], prepared?: PreparedPodDelete): Promise<boolean> {
  const { name, uid, namespace } = pod.metadata as { name: string; uid: string; namespace: string };
  const owner = controllerOf(pod)!;
  // The UID precondition: never delete a pod that replaced this one under the same name.
  const ref = { namespace, name, uid };
  if ((await (prepared ? prepared.delete(ref) : deletePodIfSameUid(kube, ref))).outcome === 'gone') return false;
  log.info({ workflowId: input.workflowId, pod: name, uid, containers }, 'weeded a crash-looping pod');
  await noteEvent(kube, {
    regarding: { apiVersion: owner.apiVersion, kind: owner.kind, namespace, name: owner.name, uid: owner.uid },
    related: { apiVersion: 'v1', kind: 'Pod', namespace, name, uid },
    reason: 'WeededPod',
    action: 'Delete',
    note: `deleted pod ${name}: ${containers.join(', ')} in CrashLoopBackOff after Service ${input.namespace}/${input.service} ` +
      `became ready (workflow ${input.workflowId})`,
    dedupKey: `${input.workflowId}/${uid}`,
  });
  return true;
}

async function report(kube: KubeClients, input: Acting, pod: k8s.V1Pod, containers: string[]): Promise<void> {
  const { name, uid, namespace } = pod.metadata as { name: string; uid: string; namespace: string };
  log.warn({ workflowId: input.workflowId, pod: name, containers }, 'crash-looping pod has no controller: not deleted');
  await noteEvent(kube, {
    regarding: { apiVersion: 'v1', kind: 'Pod', namespace, name, uid },
    type: 'Warning',
    reason: 'WeederSkippedPod',
    action: 'None',
    note: `not deleted although ${containers.join(', ')} in CrashLoopBackOff after Service ${input.namespace}/${input.service} ` +
      `became ready: the pod has no controller to recreate it (workflow ${input.workflowId})`,
    dedupKey: `${input.workflowId}/${uid}/skipped`,
  });
}
