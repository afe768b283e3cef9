// Kubernetes Events that tend records on the objects it acts on, so that an
// operator sees with `kubectl describe` / `kubectl events` what tend did and
// which workflow did it (docs/events.md lists every one).
//
// Events aggregate rather than flood: an Event's name is derived from its
// series key (the object it is about, the related object, reason, type,
// action, note, and the reporting controller and instance), so the same thing
// happening again on the same object updates the one Event's series (count,
// lastObservedTime) instead of creating another, as Kubernetes' own recorders
// do. The note is part of the key because it cannot change once written: a
// different note is a different Event, never a stale one counted twice. Each
// call also names its occurrence (`dedupKey`): an activity retried after a
// crash finds its occurrence among the Event's recent ones and counts nothing.
import * as k8s from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import type { KubeClients } from './client.ts';
import { isConflict, isNotFound, mergePatch } from './api.ts';

export const REPORTING_CONTROLLER = 'tend.dev/tend';

/** Events about objects without a namespace (Nodes) are recorded here, as the kubelet's are. */
export const CLUSTER_EVENTS_NAMESPACE = 'default';

/** On each Event: the hashes of its most recent occurrences (dedupKey), comma-separated. */
export const OCCURRENCES_ANNOTATION = 'tend.dev/occurrences';
/** How many occurrences an Event remembers: a retry comes soon after its first attempt. */
const OCCURRENCES_KEPT = 16;
/** Tries of a write that meets a concurrent one (a 409 on create or on the resourceVersion). */
const WRITE_TRIES = 5;
/** The most the API server takes in a note. */
const NOTE_MAX = 1024;

export interface EventTarget {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

export interface TendEvent {
  /** The object the event is about (a pod's owner, a node, an App). */
  regarding: EventTarget;
  /** A related object, e.g. the pod that was deleted when `regarding` is its ReplicaSet. */
  related?: EventTarget;
  type?: 'Normal' | 'Warning';
  /** UpperCamelCase, machine-readable: `WeededPod`, `TaintReplacing`. */
  reason: string;
  /** What tend did: `Delete`, `Evict`, `Cordon`. */
  action: string;
  /** Part of the series key: keep what changes from one occurrence to the next (counts, times, attempts) out of it. */
  note: string;
  /**
   * A stable key for this occurrence (e.g. workflow id + pod uid): the same
   * occurrence recorded again (an activity retried after a crash) counts once.
   */
  dedupKey: string;
}

/** created: a new Event; aggregated: a repeat, counted in an existing Event's series; repeated: this occurrence was counted already. */
export type EventOutcome = 'created' | 'aggregated' | 'repeated';

const ref = (t: EventTarget): k8s.V1ObjectReference => ({
  apiVersion: t.apiVersion, kind: t.kind, namespace: t.namespace, name: t.name, uid: t.uid,
});

const digest = (text: string, chars: number): string => createHash('sha256').update(text).digest('hex').slice(0, chars);

/** This process, as the Events it writes name it (the pod's name in a cluster). */
export function reportingInstance(): string {
  return `${REPORTING_CONTROLLER}-${process.env.HOSTNAME ?? 'local'}`.slice(0, 128);
}

/** An object as a series key names it: its UID when known, else what names it. */
const identity = (t: EventTarget | undefined): string =>
  t === undefined ? '' : (t.uid ?? `${t.apiVersion}/${t.kind}/${t.namespace ?? ''}/${t.name}`);

/** The Event's name: the object's name and the hash of the series key (so one name per series). */
export function eventName(e: Omit<TendEvent, 'dedupKey'>, instance = reportingInstance()): string {
  const key = JSON.stringify([
    identity(e.regarding), identity(e.related), e.reason, e.type ?? 'Normal', e.action, e.note.slice(0, NOTE_MAX), REPORTING_CONTROLLER, instance,
  ]);
  return `${e.regarding.name.slice(0, 200)}.tend-${digest(key, 16)}`;
}

/**
 * Records an Event (events.k8s.io/v1), or counts a repeat in the Event of its
 * series (series.count, series.lastObservedTime). Throws what the API server
 * answers otherwise (a 403 when the rights are missing): callers record an
 * Event as a courtesy and never fail on it (src/activities/events.ts).
 */
export async function recordEvent(kube: KubeClients, e: TendEvent): Promise<EventOutcome> {
  const namespace = e.regarding.namespace ?? CLUSTER_EVENTS_NAMESPACE;
  const instance = reportingInstance();
  const name = eventName(e, instance);
  const occurrence = digest(e.dedupKey, 12);
  const body: k8s.EventsV1Event = {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name, namespace, annotations: { [OCCURRENCES_ANNOTATION]: occurrence } },
    eventTime: new k8s.V1MicroTime(),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: instance,
    action: e.action,
    reason: e.reason,
    note: e.note.slice(0, NOTE_MAX),
    type: e.type ?? 'Normal',
    regarding: ref(e.regarding),
    related: e.related && ref(e.related),
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await kube.events.createNamespacedEvent({ namespace, body });
      return 'created';
    } catch (err) {
      if (!isConflict(err) || attempt >= WRITE_TRIES) throw err;
    }
    // The series has its Event: this occurrence is counted in it, once.
    let found: k8s.EventsV1Event;
    try {
      found = await kube.events.readNamespacedEvent({ name, namespace });
    } catch (err) {
      // Gone since (its time to live passed, or someone deleted it): created again.
      if (isNotFound(err)) continue;
      throw err;
    }
    const seen = (found.metadata?.annotations?.[OCCURRENCES_ANNOTATION] ?? '').split(',').filter((o) => o !== '');
    if (seen.includes(occurrence)) return 'repeated';
    const patch = {
      metadata: {
        resourceVersion: found.metadata?.resourceVersion,
        annotations: { [OCCURRENCES_ANNOTATION]: [...seen, occurrence].slice(-OCCURRENCES_KEPT).join(',') },
      },
      // A series counts every occurrence, the first included: its first repeat makes it 2.
      series: { count: (found.series?.count ?? 1) + 1, lastObservedTime: new k8s.V1MicroTime() },
    };
    try {
      await kube.events.patchNamespacedEvent({ name, namespace, body: patch }, mergePatch);
      return 'aggregated';
    } catch (err) {
      // Another write of the series came first (resourceVersion), or the Event went: read again.
      if ((!isConflict(err) && !isNotFound(err)) || attempt >= WRITE_TRIES) throw err;
    }
  }
}
