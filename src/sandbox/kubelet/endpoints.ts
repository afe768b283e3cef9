// Which Services are ready right now, kept current from an EndpointSlice
// informer, for the pods that depend on them. The rule itself is in
// readiness.ts.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { KubeClients } from '../../kube/client.ts';
import type { Logger } from '../../log.ts';
import { serviceKeyOf, serviceReady } from './readiness.ts';
import { startInformer } from '../../kube/informer.ts';
import type { RunningInformer } from '../../kube/informer.ts';

export type ReadinessListener = (serviceKey: string, ready: boolean) => void;

export class ServiceReadiness {
  /** Service key → slices by `namespace/name`. */
  private readonly slices = new Map<string, Map<string, V1EndpointSlice>>();
  /** Slice `namespace/name` → the Service key it was filed under (a slice's label could change). */
  private readonly owner = new Map<string, string>();
  private readonly ready = new Map<string, boolean>();
  private readonly listeners: ReadinessListener[] = [];
  private informer?: RunningInformer<V1EndpointSlice>;
  private readonly clients: KubeClients;
  private readonly log: Logger;

  constructor(clients: KubeClients, log: Logger) {
    this.clients = clients;
    this.log = log;
  }

  /** Starts watching; resolves once every existing slice has been seen. */
  async start(): Promise<void> {
    const { discovery } = this.clients;
    this.informer = startInformer<V1EndpointSlice>({
      kc: this.clients.kc,
      path: '/apis/discovery.k8s.io/v1/endpointslices',
      list: () => discovery.listEndpointSliceForAllNamespaces(),
      log: this.log,
      onUpsert: (slice) => this.upsert(slice),
      onDelete: (slice) => this.remove(slice),
    });
    await this.informer.synced;
  }

  async stop(): Promise<void> {
    await this.informer?.stop();
  }

  isReady(serviceKey: string): boolean {
    return this.ready.get(serviceKey) ?? false;
  }

  onChange(listener: ReadinessListener): void {
    this.listeners.push(listener);
  }

  private upsert(slice: V1EndpointSlice): void {
    const id = sliceId(slice);
    const key = serviceKeyOf(slice);
    const before = this.owner.get(id);
    if (before !== undefined && before !== key) this.drop(id, before);
    if (key === undefined) return;
    this.owner.set(id, key);
    let bySlice = this.slices.get(key);
    if (!bySlice) this.slices.set(key, (bySlice = new Map()));
    bySlice.set(id, slice);
    this.recompute(key);
  }

  private remove(slice: V1EndpointSlice): void {
    const id = sliceId(slice);
    const key = this.owner.get(id);
    if (key !== undefined) this.drop(id, key);
  }

  private drop(id: string, key: string): void {
    this.owner.delete(id);
    const bySlice = this.slices.get(key);
    bySlice?.delete(id);
    if (bySlice?.size === 0) this.slices.delete(key);
    this.recompute(key);
  }

  private recompute(key: string): void {
    const now = serviceReady(this.slices.get(key)?.values() ?? []);
    const before = this.ready.get(key) ?? false;
    if (now) this.ready.set(key, true);
    else this.ready.delete(key);
    if (now === before) return;
    this.log.debug({ service: key, ready: now }, 'service readiness changed');
    for (const listener of this.listeners) listener(key, now);
  }
}

function sliceId(slice: V1EndpointSlice): string {
  return `${slice.metadata?.namespace ?? ''}/${slice.metadata?.name ?? ''}`;
}
