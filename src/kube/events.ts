// Kubernetes Events that tend records on the objects it acts on, so that an
// operator sees with `kubectl describe` / `kubectl events` what tend did and
// which workflow did it.
import * as k8s from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import type { KubeClients } from './client.ts';

export const REPORTING_CONTROLLER = 'tend.dev/tend';

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
  note: string;
  /**
   * A stable key for this occurrence (e.g. workflow id + pod uid). The event's
   * name is derived from it, so an activity retried after a crash records the
   * event once, not twice.
   */
  dedupKey: string;
}

const ref = (t: EventTarget): k8s.V1ObjectReference => ({
  apiVersion: t.apiVersion, kind: t.kind, namespace: t.namespace, name: t.name, uid: t.uid,
});

/** Records an Event (events.k8s.io/v1); a second call with the same dedupKey is a no-op. */
export async function recordEvent(kube: KubeClients, e: TendEvent): Promise<void> {
  const namespace = e.regarding.namespace ?? 'default';
  const hash = createHash('sha256').update(e.dedupKey).digest('hex').slice(0, 16);
  const name = `${e.regarding.name.slice(0, 200)}.tend-${hash}`;
  const body: k8s.EventsV1Event = {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name, namespace },
    eventTime: new k8s.V1MicroTime(),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: `${REPORTING_CONTROLLER}-${process.env.HOSTNAME ?? 'local'}`.slice(0, 128),
    action: e.action,
    reason: e.reason,
    note: e.note.slice(0, 1024),
    type: e.type ?? 'Normal',
    regarding: ref(e.regarding),
    related: e.related && ref(e.related),
  };
  try {
    await kube.events.createNamespacedEvent({ namespace, body });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}
