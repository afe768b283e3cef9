// Pod IPs for one simulated node.
//
// Nothing routes these addresses; they exist because the EndpointSlice
// controller only lists a pod that has a podIP, and because two pods with the
// same IP would confuse anything that keys on it. Node i hands out
// 10.244.i.2 – 10.244.i.254 (its /24 of the 10.244.0.0/16 pod network, the way
// a node's podCIDR carves up the cluster CIDR), going round the range rather
// than reusing a just-freed address at once, as host-local IPAM does.

export const POD_NETWORK_PREFIX = '10.244';
const FIRST_HOST = 2;
const LAST_HOST = 254;

export class PodIPAllocator {
  private readonly subnet: string;
  private readonly inUse = new Set<number>();
  private next = FIRST_HOST;

  /** `nodeIndex` 1..254 picks the node's /24. */
  constructor(nodeIndex: number) {
    if (!Number.isInteger(nodeIndex) || nodeIndex < 1 || nodeIndex > 254) {
      throw new RangeError(`node index ${nodeIndex} is outside 1..254`);
    }
    this.subnet = `${POD_NETWORK_PREFIX}.${nodeIndex}`;
  }

  /** A free address; throws when the node's range is exhausted (it holds more than its 110 pods). */
  allocate(): string {
    for (let i = 0; i <= LAST_HOST - FIRST_HOST; i++) {
      const host = this.next;
      this.next = host >= LAST_HOST ? FIRST_HOST : host + 1;
      if (!this.inUse.has(host)) {
        this.inUse.add(host);
        return `${this.subnet}.${host}`;
      }
    }
    throw new Error(`no free pod IP left in ${this.subnet}.0/24`);
  }

  /** Marks an address as taken (a pod adopted from an earlier run). False when it is not from this node's range. */
  reserve(ip: string): boolean {
    const host = this.hostOf(ip);
    if (host === undefined) return false;
    this.inUse.add(host);
    if (host >= this.next) this.next = host >= LAST_HOST ? FIRST_HOST : host + 1;
    return true;
  }

  release(ip: string): void {
    const host = this.hostOf(ip);
    if (host !== undefined) this.inUse.delete(host);
  }

  get size(): number {
    return this.inUse.size;
  }

  private hostOf(ip: string): number | undefined {
    if (!ip.startsWith(`${this.subnet}.`)) return undefined;
    const host = Number(ip.slice(this.subnet.length + 1));
    return Number.isInteger(host) && host >= FIRST_HOST && host <= LAST_HOST ? host : undefined;
  }
}
