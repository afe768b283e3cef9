// The knobs a test turns on the simulated kubelet: annotations on Nodes and Pods.
// Everything the sandbox reads from an object's metadata is named here.

/** On a Node: "stopped" silences its heartbeats (status and Lease) and freezes its pods. */
export const HEARTBEAT_ANNOTATION = 'sim.tend.dev/heartbeat';
export const HEARTBEAT_STOPPED = 'stopped';

/** On a Pod: the Service(s) it needs, `name` or `namespace/name`, comma-separated. */
export const DEPENDS_ON_ANNOTATION = 'sim.tend.dev/depends-on';
/** On a Pod: "true" makes its app containers crash-loop whatever else holds. */
export const FAIL_ANNOTATION = 'sim.tend.dev/fail';
/**
 * On a Pod: init containers, by name (comma-separated), that exit 1 each time
 * they run and crash-loop (restartPolicy Never: the pod fails), for as long as
 * the annotation names them. The app containers wait in PodInitializing.
 */
export const FAIL_INIT_ANNOTATION = 'sim.tend.dev/fail-init';
/**
 * On a Pod: init containers, by name (comma-separated), that wait for the
 * pod's depends-on Services: they exit 1 and crash-loop while any of those
 * Services has no ready endpoint, and complete on their first run after.
 */
export const INIT_DEPENDS_ON_ANNOTATION = 'sim.tend.dev/init-depends-on';
/** On a Pod: how long a doomed container runs before it exits 1 (kubelet seconds; default 1). */
export const CRASH_AFTER_ANNOTATION = 'sim.tend.dev/crash-after-seconds';
/** On a Pod with restartPolicy Never/OnFailure: its containers exit 0 after this long (kubelet seconds). */
export const EXIT_AFTER_ANNOTATION = 'sim.tend.dev/exit-after-seconds';

/** Label on every simulated Node, so the sandbox and tests can find them. */
export const SIM_NODE_LABEL = 'sim.tend.dev/node';

export const DEFAULT_CRASH_AFTER_SECONDS = 1;

interface Meta {
  namespace?: string;
  annotations?: { [key: string]: string };
}

/** What a pod's annotations ask of its containers right now. Durations in unscaled seconds. */
export interface PodBehaviour {
  /** Services as `namespace/name`. */
  dependsOn: string[];
  fail: boolean;
  crashAfterSeconds: number;
  exitAfterSeconds?: number;
  /** Init containers told to fail (fail-init). */
  failInits: string[];
  /** Init containers that fail while a depends-on Service is not ready (init-depends-on). */
  initDependsOn: string[];
}

export function podBehaviour(meta: Meta | undefined): PodBehaviour {
  const annotations = meta?.annotations ?? {};
  const namespace = meta?.namespace || 'default';
  return {
    dependsOn: parseDependsOn(annotations[DEPENDS_ON_ANNOTATION], namespace),
    fail: annotations[FAIL_ANNOTATION]?.trim().toLowerCase() === 'true',
    crashAfterSeconds: parseSeconds(annotations[CRASH_AFTER_ANNOTATION]) ?? DEFAULT_CRASH_AFTER_SECONDS,
    exitAfterSeconds: parseSeconds(annotations[EXIT_AFTER_ANNOTATION]),
    failInits: parseNames(annotations[FAIL_INIT_ANNOTATION]),
    initDependsOn: parseNames(annotations[INIT_DEPENDS_ON_ANNOTATION]),
  };
}

/** `svc`, `ns/svc`, or a comma-separated list of them, as `namespace/name` keys. */
export function parseDependsOn(value: string | undefined, namespace: string): string[] {
  if (!value) return [];
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => (s.includes('/') ? s : `${namespace}/${s}`));
}

/** A comma-separated list of container names. */
export function parseNames(value: string | undefined): string[] {
  if (!value) return [];
  return [...new Set(value.split(',').map((s) => s.trim()).filter((s) => s !== ''))];
}

/**
 * The init containers (not sidecars) of `initContainers` that fail now: those
 * named by fail-init, and those named by init-depends-on while `servicesReady`
 * is false.
 */
export function failingInits(b: Pick<PodBehaviour, 'failInits' | 'initDependsOn'>, servicesReady: boolean): string[] {
  return [...new Set([...b.failInits, ...(servicesReady ? [] : b.initDependsOn)])];
}

/** Names in the init-container annotations that are no init container of the pod (not a sidecar either), for a warning. */
export function unknownInitNames(
  b: Pick<PodBehaviour, 'failInits' | 'initDependsOn'>, initContainers: readonly { name: string; restartPolicy?: string }[],
): string[] {
  const inits = new Set(initContainers.filter((c) => c.restartPolicy !== 'Always').map((c) => c.name));
  return [...new Set([...b.failInits, ...b.initDependsOn])].filter((n) => !inits.has(n));
}

/** A non-negative number of seconds; anything else is ignored (undefined). */
export function parseSeconds(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

export function heartbeatStopped(meta: Meta | undefined): boolean {
  return meta?.annotations?.[HEARTBEAT_ANNOTATION] === HEARTBEAT_STOPPED;
}

/** The field manager of every write the simulated kubelet makes. */
export const FIELD_MANAGER = 'tend-sim-kubelet';
