// What a destructive activity asks right before it writes: may this capability
// act now? Two switches answer (docs/safety.md):
// - the capability's mode (`mode: act | observe` in the worker's own
//   configuration, read again when it changes: src/safety/modes.ts): in observe
//   mode the write is replaced by a record of it (`recordWould`);
// - the durable pause (`tend pause`, src/safety/pause.ts): while paused, or
//   while the pause state cannot be confirmed, the write waits.
// Observe is asked first: it never writes, so a pause has nothing to stop.
// Activities built without gates (tests of the activities alone) act as before.
// The gates and holds themselves live in src/safety/gate.ts; this module adds
// the record observe mode leaves, and re-exports them for the activities.
import { recordEvent, type EventTarget } from '../kube/events.ts';
import type { KubeClients } from '../kube/client.ts';
import { log } from '../log.ts';
import { wouldCounters, type WOULD_ACTIONS } from '../metrics/registry.ts';

export {
  GATE_POLL_MS, pauseHold, waitForGates, writeHold, type ModeGate, type PauseGate, type SafetyGates, type WriteHold,
} from '../safety/gate.ts';

/** The occurrences this process has recorded (by dedupKey), so that each is counted and logged once. */
const recorded = new Set<string>();
const RECORDED_MAX = 10_000;

type ActionOf<C extends keyof typeof WOULD_ACTIONS> = (typeof WOULD_ACTIONS)[C][number];

export interface WouldRecord<C extends keyof typeof WOULD_ACTIONS> {
  capability: C;
  action: ActionOf<C>;
  /** The object the write was for (the pod, the Node, the App). */
  regarding: EventTarget;
  related?: EventTarget;
  /** What would have been done and why: "would delete pod shop/web-1: CrashLoopBackOff while shop/db became ready". */
  note: string;
  /** One Event per occurrence (see recordEvent): e.g. workflow id + pod uid. */
  dedupKey: string;
  /** Metric labels beyond the namespace: the kind and verb of an App write. */
  kind?: string;
  verb?: string;
}

/**
 * The record observe mode leaves instead of a write: a Kubernetes Event on the
 * object (reason Would<Action>, action Observe), a log line, and the
 * tend_<capability>_would_<action>_total counter. Never throws: a record that
 * cannot be written is logged, the workflow still learns what would have happened.
 */
export async function recordWould<C extends keyof typeof WOULD_ACTIONS>(kube: KubeClients | undefined, r: WouldRecord<C>): Promise<void> {
  // The same occurrence asked again (a workflow re-checking what it observed): recorded once.
  if (recorded.has(r.dedupKey)) return;
  if (recorded.size >= RECORDED_MAX) recorded.clear();
  recorded.add(r.dedupKey);
  wouldCounters.get(`${r.capability}/${r.action}`)?.inc({ namespace: r.regarding.namespace ?? '', kind: r.kind ?? r.regarding.kind, verb: r.verb ?? r.action });
  log.info({ capability: r.capability, action: r.action, object: `${r.regarding.kind} ${r.regarding.namespace ? `${r.regarding.namespace}/` : ''}${r.regarding.name}` }, `observe mode: ${r.note}`);
  if (!kube) return;
  const reason = `Would${r.action[0]!.toUpperCase()}${r.action.slice(1)}`;
  try {
    await recordEvent(kube, { regarding: r.regarding, ...(r.related ? { related: r.related } : {}), reason, action: 'Observe', note: r.note, dedupKey: `would/${r.dedupKey}` });
  } catch (err) {
    log.warn({ err: (err as Error).message, reason }, 'observe mode: the Event could not be recorded');
  }
}
