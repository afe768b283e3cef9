// The fault run's invariants: pure functions over what one round recorded
// (writes from the kube-apiserver audit log, and what the run itself saw), each
// returning the violations it finds. Unit-tested in test/unit/faults-invariants.test.ts.
import { ok, type Write } from './audit.ts';

export interface Violation {
  invariant: string;
  detail: string;
}

const fmt = (ms: number) => new Date(ms).toISOString().slice(11, 23);

// ---------------------------------------------------------------------------
// Weeder: every crash-looping dependant weeded once per window, none while the upstream is down.

export interface ReadinessChange {
  /** When the change became visible (the write's answer, epoch ms). */
  at: number;
  ready: boolean;
}

interface SliceBody {
  metadata?: { name?: string; labels?: Record<string, string> };
  endpoints?: { conditions?: { ready?: boolean | null } }[] | null;
}

/**
 * A Service's readiness over time, from the writes to its EndpointSlices: ready
 * while at least one endpoint of one of its slices is not explicitly not-ready.
 * Only changes are returned, in order.
 */
export function serviceReadiness(writes: Write[], namespace: string, service: string, initiallyReady: boolean): ReadinessChange[] {
  const slices = new Map<string, boolean>();
  const changes: ReadinessChange[] = [];
  let ready = initiallyReady;
  const sorted = writes.filter((w) => w.resource === 'endpointslices' && w.namespace === namespace && ok(w)).sort((a, b) => a.done - b.done);
  for (const w of sorted) {
    const body = w.body as SliceBody | undefined;
    const name = w.name ?? body?.metadata?.name;
    if (!name) continue;
    if (w.verb === 'delete') {
      if (!slices.has(name)) continue;
      slices.delete(name);
    } else if (w.verb === 'create' || w.verb === 'update') {
      if (body?.metadata?.labels?.['kubernetes.io/service-name'] !== service) continue;
      slices.set(name, (body.endpoints ?? []).some((e) => e.conditions?.ready !== false));
    } else {
      continue;
    }
    const now = [...slices.values()].some(Boolean);
    if (now !== ready) {
      ready = now;
      changes.push({ at: w.done, ready });
    }
  }
  return changes;
}

function readyAt(changes: ReadinessChange[], initiallyReady: boolean, t: number): boolean {
  let ready = initiallyReady;
  for (const c of changes) {
    if (c.at > t) break;
    ready = c.ready;
  }
  return ready;
}

export interface WeederFacts {
  service: string;
  /** The dependants crash-looping when the upstream came back: each is due for one deletion. */
  due: { name: string; uid: string; recoveredAt?: number }[];
  readiness: ReadinessChange[];
  initiallyReady: boolean;
  /** tend's pod deletions in the namespace (any answer). */
  deletes: Write[];
  /**
   * The round's fault, when it is one that can keep tend from acting for a
   * while (a killed worker, a restarted server, a failed write) and it struck:
   * a due pod that restarted by itself (its back-off over) after the fault
   * struck, and the fault struck no earlier than 10 s before the upstream came
   * back, is excused. Any other due pod had seconds of back-off left when its
   * upstream came back: time enough.
   */
  excuse?: { kind: string; at: number };
}

export function checkWeeder(f: WeederFacts): Violation[] {
  const out: Violation[] = [];
  const done = f.deletes.filter((w) => w.resource === 'pods' && w.verb === 'delete' && !w.subresource && ok(w));
  for (const d of done) {
    if (!readyAt(f.readiness, f.initiallyReady, d.at)) {
      out.push({ invariant: 'weeder: none while the upstream is down', detail: `pod ${d.name} deleted at ${fmt(d.at)} while Service ${f.service} had no ready endpoint` });
    }
  }
  const byName = new Map<string, Write[]>();
  for (const d of done) byName.set(d.name ?? '', [...(byName.get(d.name ?? '') ?? []), d]);
  for (const [name, ds] of byName) {
    if (ds.length > 1) {
      out.push({ invariant: 'weeder: weeded once per window', detail: `pod ${name} deleted ${ds.length} times (${ds.map((d) => fmt(d.at)).join(', ')})` });
    }
    if (!f.due.some((p) => p.name === name)) {
      out.push({ invariant: 'weeder: only crash-looping dependants', detail: `pod ${name} deleted at ${fmt(ds[0]!.at)} but it was not a crash-looping dependant` });
    }
  }
  for (const p of f.due) {
    if (byName.has(p.name)) continue;
    const back = f.readiness.filter((c) => c.ready).at(-1)?.at;
    if (p.recoveredAt !== undefined && f.excuse && back !== undefined && f.excuse.at >= back - 10_000 && f.excuse.at <= p.recoveredAt) continue;
    out.push({
      invariant: 'weeder: every crash-looping dependant weeded',
      detail: `pod ${p.name} was crash-looping when ${f.service} came back and was never deleted`
        + (p.recoveredAt === undefined ? '' : ` (it restarted by itself at ${fmt(p.recoveredAt)}, its back-off over${f.excuse ? `, before the ${f.excuse.kind} at ${fmt(f.excuse.at)}` : ''})`),
    });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Taint: every due pod evicted exactly once, in-flight never above the limit,
// marked NodeTaintReplacing for taintReplacementTimeSeconds before its eviction,
// no NodeTaint* condition left after an untaint.

export interface ReplicaSetStatus {
  at: number;
  readyReplicas: number;
  replicas: number;
}

interface ReplicaSetBody {
  spec?: { replicas?: number };
  status?: { readyReplicas?: number; replicas?: number };
}

/** A ReplicaSet's status as its controller wrote it, in order. */
export function replicaSetStatuses(writes: Write[], namespace: string): ReplicaSetStatus[] {
  return writes
    .filter((w) => w.resource === 'replicasets' && w.subresource === 'status' && w.namespace === namespace && ok(w) && w.body)
    .sort((a, b) => a.done - b.done)
    .map((w) => {
      const b = w.body as ReplicaSetBody;
      return { at: w.done, readyReplicas: b.status?.readyReplicas ?? 0, replicas: b.spec?.replicas ?? 0 };
    });
}

interface StatusPatchBody {
  status?: { conditions?: { type?: string; status?: string; $patch?: string }[] };
}

/** When each pod's NodeTaintReplacing condition was first written True (the answer's time). */
export function replacingMarks(writes: Write[]): Map<string, number> {
  const marks = new Map<string, number>();
  for (const w of writes.filter((x) => x.resource === 'pods' && x.subresource === 'status' && ok(x)).sort((a, b) => a.done - b.done)) {
    const conditions = (w.body as StatusPatchBody | undefined)?.status?.conditions ?? [];
    if (conditions.some((c) => c.type === 'NodeTaintReplacing' && c.status === 'True' && !c.$patch) && !marks.has(w.name!)) marks.set(w.name!, w.done);
  }
  return marks;
}

export interface TaintFacts {
  limit: number;
  replacementTimeMs: number;
  /** Managed pods on a node whose taint became due: each to be evicted once. */
  due: string[];
  /** Managed pods on a node untainted before its taint was due: never to be evicted. */
  notDue: string[];
  /** tend's writes in the namespace (evictions and pod status patches among them). */
  writes: Write[];
  replicaSets: ReplicaSetStatus[];
  /** Pods still carrying a NodeTaint* condition once every taint is gone and tend had time to clear them. */
  leftConditions: { pod: string; conditions: string[] }[];
}

const evictionsOf = (writes: Write[]) =>
  writes.filter((w) => w.resource === 'pods' && w.subresource === 'eviction' && w.verb === 'create' && ok(w)).sort((a, b) => a.at - b.at);

/**
 * In flight, seen from outside: an eviction is in flight from its request until
 * its ReplicaSet, having dipped below its replicas after it, reports all
 * replicas ready again (tend's definition, docs/taint.md).
 */
export function peakInFlight(evictions: Write[], rs: ReplicaSetStatus[]): { peak: number; at?: number; pods: string[] } {
  const released = (e: Write): number => {
    let dipped = false;
    for (const s of rs) {
      if (s.at <= e.at) continue;
      if (s.readyReplicas < s.replicas) dipped = true;
      else if (dipped) return s.at;
    }
    return Infinity;
  };
  const spans = evictions.map((e) => ({ pod: e.name ?? '', from: e.at, to: released(e) }));
  let best = { peak: 0, at: undefined as number | undefined, pods: [] as string[] };
  for (const s of spans) {
    const open = spans.filter((o) => o.from <= s.from && o.to > s.from);
    if (open.length > best.peak) best = { peak: open.length, at: s.from, pods: open.map((o) => o.pod) };
  }
  return best;
}

export function checkTaint(f: TaintFacts): Violation[] {
  const out: Violation[] = [];
  const evictions = evictionsOf(f.writes);
  const count = (pod: string) => evictions.filter((e) => e.name === pod);
  for (const pod of f.due) {
    const es = count(pod);
    if (es.length !== 1) {
      out.push({ invariant: 'taint: every due pod evicted exactly once', detail: `pod ${pod} evicted ${es.length} times${es.length ? ` (${es.map((e) => fmt(e.at)).join(', ')})` : ''}` });
    }
  }
  for (const pod of f.notDue) {
    const es = count(pod);
    if (es.length) out.push({ invariant: 'taint: nothing evicted once its taint is gone', detail: `pod ${pod} evicted at ${fmt(es[0]!.at)} though its node was untainted before the taint was due` });
  }
  for (const e of evictions) {
    if (!f.due.includes(e.name!) && !f.notDue.includes(e.name!)) {
      out.push({ invariant: 'taint: only due pods evicted', detail: `pod ${e.name} evicted at ${fmt(e.at)}, not on a node with a due taint` });
    }
  }
  const inFlight = peakInFlight(evictions.filter((e, i) => evictions.findIndex((x) => x.name === e.name) === i), f.replicaSets);
  if (inFlight.peak > f.limit) {
    out.push({ invariant: 'taint: in flight never above the limit', detail: `${inFlight.peak} replacements in flight at ${fmt(inFlight.at!)} (limit ${f.limit}): ${inFlight.pods.join(', ')}` });
  }
  const marks = replacingMarks(f.writes);
  for (const pod of new Set(evictions.map((e) => e.name!))) {
    const first = count(pod)[0]!;
    const marked = marks.get(pod);
    // 100 ms: the audit log's two timestamps are taken at slightly different points of a request.
    if (marked === undefined || first.at - marked < f.replacementTimeMs - 100) {
      out.push({
        invariant: 'taint: marked NodeTaintReplacing for taintReplacementTimeSeconds before eviction',
        detail: marked === undefined
          ? `pod ${pod} evicted at ${fmt(first.at)} without NodeTaintReplacing ever written`
          : `pod ${pod} marked at ${fmt(marked)}, evicted ${((first.at - marked) / 1000).toFixed(2)} s later (at least ${f.replacementTimeMs / 1000} s)`,
      });
    }
  }
  for (const l of f.leftConditions) {
    out.push({ invariant: 'taint: no conditions left after an untaint', detail: `pod ${l.pod} still has ${l.conditions.join(', ')}` });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Repair: every entry reaches a final status, no Node left cordoned, no command run twice at once.

export interface RepairFacts {
  entries: { index: string; address: string; status: string; step_status?: string }[];
  /** Nodes unschedulable once every entry of the round has finished (or the round gave up waiting). */
  cordoned: string[];
  /** Lines the repair command wrote when it found its lock taken: `<epoch ms> <address>`. */
  overlaps: string[];
}

export function checkRepair(f: RepairFacts): Violation[] {
  const out: Violation[] = [];
  for (const e of f.entries) {
    if (e.status !== 'succeeded' && e.status !== 'failed') {
      out.push({ invariant: 'repair: every entry reaches a final status', detail: `entry ${e.index} (${e.address}) is still ${e.status}${e.step_status ? `/${e.step_status}` : ''}` });
    }
  }
  for (const n of f.cordoned) out.push({ invariant: 'repair: no Node left cordoned', detail: `Node ${n} is cordoned after the round's entries finished` });
  for (const o of f.overlaps) {
    const [ms, address] = o.trim().split(/\s+/);
    out.push({ invariant: 'repair: no command run twice at once', detail: `a repair command for ${address} started at ${fmt(Number(ms))} while another run for it held the lock` });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Apps: every restart rolls the pods exactly once.

export interface AppsFacts {
  app: string;
  /** Stop + start pairs the round made. */
  restarts: number;
  /**
   * Of those, how many were made entirely while the watcher was down (killed,
   * not yet serving again): with kubectl's spec edits, nothing records that a
   * stop happened, so such a restart may roll the pods once or not at all.
   */
  unobservable: number;
  processes: number;
  /** Writes in the App's namespace: tend's, and the ReplicaSet creations (each one a roll). */
  writes: Write[];
  settled: boolean;
  /** Pods from before the round still running at its end. */
  oldPodsLeft: string[];
}

export function checkApps(f: AppsFacts): Violation[] {
  const out: Violation[] = [];
  const rolls = f.writes.filter((w) => w.resource === 'replicasets' && !w.subresource && w.verb === 'create' && ok(w));
  const created = f.writes.filter((w) => w.resource === 'deployments' && !w.subresource && w.verb === 'create' && ok(w));
  const most = f.restarts * f.processes;
  const least = (f.restarts - f.unobservable) * f.processes;
  if (rolls.length > most || rolls.length < least) {
    out.push({
      invariant: 'apps: every restart rolls the pods exactly once',
      detail: `${f.restarts} restart(s) of App ${f.app} (${f.processes} process type(s)${f.unobservable ? `, ${f.unobservable} made while the watcher was down` : ''}) rolled the pods ${rolls.length} times; `
        + `workloads created: ${created.map((w) => `${w.name} at ${fmt(w.at)}`).join(', ') || 'none'}`,
    });
  }
  if (!f.settled) out.push({ invariant: 'apps: the App runs again after its restarts', detail: `App ${f.app} not Ready/STARTED at its generation at the end of the round` });
  if (f.oldPodsLeft.length) {
    out.push({ invariant: 'apps: every restart rolls the pods exactly once', detail: `pods from before the restarts still running: ${f.oldPodsLeft.join(', ')}` });
  }
  return out;
}
