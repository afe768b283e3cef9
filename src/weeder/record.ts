// The weeder's readiness record: what the watcher last saw of each configured
// Service, kept in ONE ConfigMap that tend owns (`tend-weeder-readiness`, in
// tend's own namespace), one key per Service (`<namespace>.<service>`, both
// DNS labels, so the dot is unambiguous), the value JSON. tend needs no write
// access to Services for it.
//
// Writes are read-modify-replace with the ConfigMap's resourceVersion, retried
// on conflict: two watcher replicas recording different Services never lose
// each other's writes.
import type * as k8s from '@kubernetes/client-node';
import { errorMessage, isConflict, isNotFound } from '../kube/api.ts';
import type { KubeClients } from '../kube/client.ts';
import type { Observed } from './transition.ts';

export const READINESS_CONFIGMAP = 'tend-weeder-readiness';

/** The ConfigMap key of a Service's record. */
export function recordKey(namespace: string, service: string): string {
  return `${namespace}.${service}`;
}

export interface StoredRecord extends Observed {
  /** When it was recorded (ISO 8601), for people. */
  at?: string;
}

export function recordValue(o: Observed, at = new Date()): string {
  return JSON.stringify({ readiness: o.readiness, endpoints: [...o.endpoints].sort(), ...(o.service ? { service: o.service } : {}), at: at.toISOString() });
}

/** A stored value read back; undefined when it is not one (then the Service counts as unrecorded). */
export function parseRecordValue(text: string | undefined): Observed | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as Partial<StoredRecord>;
    if (v.readiness !== 'ready' && v.readiness !== 'not-ready') return undefined;
    const endpoints = Array.isArray(v.endpoints) ? v.endpoints.filter((e): e is string => typeof e === 'string').sort() : [];
    return { readiness: v.readiness, endpoints, ...(typeof v.service === 'string' && v.service ? { service: v.service } : {}) };
  } catch {
    return undefined;
  }
}

const CONFLICT_RETRIES = 20;

export class ReadinessStore {
  private readonly kube: KubeClients;
  readonly namespace: string;

  constructor(kube: KubeClients, namespace: string) {
    this.kube = kube;
    this.namespace = namespace;
  }

  private async get(): Promise<k8s.V1ConfigMap | undefined> {
    try {
      return await this.kube.core.readNamespacedConfigMap({ namespace: this.namespace, name: READINESS_CONFIGMAP });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The Service's record; undefined when there is none. */
  async read(namespace: string, service: string): Promise<Observed | undefined> {
    return parseRecordValue((await this.get())?.data?.[recordKey(namespace, service)]);
  }

  /** Records what was seen of the Service, keeping every other key as it is now. */
  async write(namespace: string, service: string, o: Observed): Promise<void> {
    const key = recordKey(namespace, service);
    for (let attempt = 1; ; attempt++) {
      const cm = await this.get();
      try {
        if (!cm) {
          await this.kube.core.createNamespacedConfigMap({
            namespace: this.namespace,
            body: {
              metadata: {
                name: READINESS_CONFIGMAP, namespace: this.namespace,
                labels: { 'app.kubernetes.io/name': 'tend', 'app.kubernetes.io/component': 'weeder' },
              },
              data: { [key]: recordValue(o) },
            },
          });
        } else {
          // The resourceVersion read is the precondition: a write by anyone since is a 409, and read again.
          await this.kube.core.replaceNamespacedConfigMap({
            namespace: this.namespace, name: READINESS_CONFIGMAP,
            body: { ...cm, data: { ...cm.data, [key]: recordValue(o) } },
          });
        }
        return;
      } catch (err) {
        // 409: a concurrent create (AlreadyExists) or write (Conflict); anything else is not ours to retry here.
        if (!isConflict(err) || attempt >= CONFLICT_RETRIES) {
          throw new Error(`could not record the readiness of Service ${namespace}/${service} in ConfigMap ` +
            `${this.namespace}/${READINESS_CONFIGMAP}: ${errorMessage(err)}`);
        }
      }
    }
  }
}
