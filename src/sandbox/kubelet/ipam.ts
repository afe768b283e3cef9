// Addresses for the simulated nodes and their pods.
//
// Nothing routes these addresses; they exist because the EndpointSlice
// controller only lists a pod that has a podIP, and because two pods with the
// same IP would confuse anything that keys on it.
//
// Node i (1-based) is 10.88.0.0 + i in the 10.88.0.0/16 node network, and owns
// the i-th /26 of the 10.244.0.0/16 pod network as its podCIDR, the way the
// node IPAM controller carves a cluster CIDR (--node-cidr-mask-size=26): 1,024
// nodes at most. A /26 is 64 addresses: the network and broadcast addresses and
// the bridge's .1 leave 61 for pods, so the node advertises a capacity of 61
// pods and never admits more than its range holds. Pod addresses go round the
// range rather than reusing a just-freed one at once, as host-local IPAM does.

const NODE_NETWORK = '10.88.0.0/16';
export const POD_NETWORK = '10.244.0.0/16';
/** Each node's share of POD_NETWORK (kube-controller-manager's --node-cidr-mask-size). */
export const NODE_POD_PREFIX = 26;
/** Every node gets a range of its own: this many fit in POD_NETWORK. */
export const MAX_NODES = 2 ** (NODE_POD_PREFIX - prefixOf(POD_NETWORK));

/** Node `index`'s InternalIP. */
export function nodeIP(index: number): string {
  checkIndex(index);
  return formatIP(parseCIDR(NODE_NETWORK).base + index);
}

/** Node `index`'s podCIDR, the range its pods' addresses come from. */
export function podCIDR(index: number): string {
  checkIndex(index);
  const size = 2 ** (32 - NODE_POD_PREFIX);
  return `${formatIP(parseCIDR(POD_NETWORK).base + (index - 1) * size)}/${NODE_POD_PREFIX}`;
}

/** How many pods a range holds: every address but the network, the broadcast and the bridge (.1). */
export function podCapacity(cidr: string): number {
  const { prefix } = parseCIDR(cidr);
  return 2 ** (32 - prefix) - 3;
}

export class PodIPAllocator {
  readonly cidr: string;
  private readonly base: number;
  private readonly first: number;
  private readonly last: number;
  private readonly inUse = new Set<number>();
  private next: number;

  /** `cidr` is the node's podCIDR, an IPv4 range of at least 4 addresses (a /30). */
  constructor(cidr: string) {
    const { base, prefix } = parseCIDR(cidr);
    if (prefix > 30) throw new RangeError(`pod range ${cidr} is too small: a /30 at least`);
    this.cidr = cidr;
    this.base = base;
    this.first = 2;
    this.last = 2 ** (32 - prefix) - 2;
    this.next = this.first;
  }

  /** A free address; throws when the node's range is exhausted. */
  allocate(): string {
    for (let i = 0; i <= this.last - this.first; i++) {
      const host = this.next;
      this.next = host >= this.last ? this.first : host + 1;
      if (!this.inUse.has(host)) {
        this.inUse.add(host);
        return formatIP(this.base + host);
      }
    }
    throw new Error(`no free pod IP left in ${this.cidr}`);
  }

  /** Marks an address as taken (a pod adopted from an earlier run). False when it is not from this node's range. */
  reserve(ip: string): boolean {
    const host = this.hostOf(ip);
    if (host === undefined) return false;
    this.inUse.add(host);
    if (host >= this.next) this.next = host >= this.last ? this.first : host + 1;
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
    const n = parseIP(ip);
    if (n === undefined) return undefined;
    const host = n - this.base;
    return host >= this.first && host <= this.last ? host : undefined;
  }
}

function checkIndex(index: number): void {
  if (!Number.isInteger(index) || index < 1 || index > MAX_NODES) {
    throw new RangeError(`node index ${index} is outside 1..${MAX_NODES}`);
  }
}

/** An IPv4 CIDR as its first address (a number) and prefix length; throws on anything else, or on host bits set. */
export function parseCIDR(cidr: string): { base: number; prefix: number } {
  const m = /^([^/]+)\/(\d{1,2})$/.exec(cidr);
  const base = m ? parseIP(m[1]) : undefined;
  const prefix = m ? Number(m[2]) : NaN;
  if (base === undefined || !(prefix >= 0 && prefix <= 32)) throw new RangeError(`not an IPv4 CIDR: ${cidr}`);
  if (base % 2 ** (32 - prefix) !== 0) throw new RangeError(`${cidr} has host bits set`);
  return { base, prefix };
}

function prefixOf(cidr: string): number {
  return parseCIDR(cidr).prefix;
}

function parseIP(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

function formatIP(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}
