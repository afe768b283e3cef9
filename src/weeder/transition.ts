// What the watcher does when it has looked at a Service's slices: compare what
// it sees with what it last recorded (durably, on the Service), and decide.
// Pure, table-tested.
//
//   recorded            now        decision
//   (none)              ready      open a window (a Service first seen ready)
//   (none)              not ready  -
//   not ready           ready      open (or extend) the window
//   ready               not ready  - (nothing is deleted while not ready)
//   ready (by others)   ready      open, on the first look after a restart only: none of the pods
//                                  recorded as serving serves now, so the Service went down and
//                                  came back while the watcher was away
//   ready               ready      - (ready -> ready; a restart without a transition)
//   not ready           not ready  -
//   a Service with another UID     as if unrecorded: the Service was deleted and applied again,
//                                  so its dependants may have crash-looped meanwhile (open when
//                                  ready, arm when not)
// and in every row: record what is seen when it differs from the record.
//
// Besides, whenever the Service is not ready and was not seen so before (a
// change to not ready, or the first look after a start), arm its workflow: it
// then watches the Service itself and weeds the instant it is ready again. So
// a not ready -> ready of the same Service opens a window after arming.

export type Readiness = 'ready' | 'not-ready';

export interface Observed {
  readiness: Readiness;
  /** readyEndpointIds(): the pods serving now (empty when not ready). */
  endpoints: string[];
  /** The Service's UID, from its slices' owner (serviceUidOf); absent when they name none. */
  service?: string;
}

export interface TransitionDecision {
  /** Signal-with-start the Service's window workflow. */
  open: boolean;
  /** Signal-with-start the Service's workflow armed: not ready now. */
  arm: boolean;
  /**
   * Opening on the Service's return from a not ready this watcher recorded (the
   * same Service): its workflow was armed then, and its watch deletes on the
   * very event that opens the window.
   */
  afterArming: boolean;
  /** What to record, when it differs from the record. */
  record?: Observed;
  /** Why, for the signal and the log: `<recorded> -> <now>`. */
  reason: string;
}

/**
 * `firstLook`: the record was read from the Service (the watcher has not
 * judged this Service since it started), not remembered from its own last look.
 */
export function decideTransition(recorded: Observed | undefined, now: Observed, firstLook: boolean): TransitionDecision {
  const same = recorded !== undefined && recorded.readiness === now.readiness && recorded.service === now.service &&
    recorded.endpoints.length === now.endpoints.length && recorded.endpoints.every((e, i) => e === now.endpoints[i]);
  const record = same ? {} : { record: now };
  // Another Service under the same name: the one recorded was deleted, so nothing recorded of it holds.
  const recreated = recorded?.service !== undefined && now.service !== undefined && recorded.service !== now.service;
  const from = recreated ? 'Service re-created' : recorded?.readiness ?? 'unrecorded';
  const reason = `${from} -> ${now.readiness}`;
  if (recreated) {
    return now.readiness === 'ready' ? { open: true, arm: false, afterArming: false, reason, ...record } : { open: false, arm: true, afterArming: false, reason, ...record };
  }
  if (now.readiness !== 'ready') return { open: false, arm: firstLook || recorded?.readiness !== 'not-ready', afterArming: false, reason, ...record };
  if (recorded?.readiness !== 'ready') return { open: true, arm: false, afterArming: recorded?.readiness === 'not-ready', reason, ...record };
  const wentAwayAndBack = firstLook && recorded.endpoints.length > 0 && !recorded.endpoints.some((e) => now.endpoints.includes(e));
  return { open: wentAwayAndBack, arm: false, afterArming: false, reason: wentAwayAndBack ? 'went down and came back while the watcher was away' : reason, ...record };
}

/** The annotations on a Service where earlier versions recorded its readiness (read once, to migrate; never written). */
export const LAST_READINESS_ANNOTATION = 'weeder.tend.dev/last-readiness';
export const READY_ENDPOINTS_ANNOTATION = 'weeder.tend.dev/ready-endpoints';

export function parseRecorded(annotations: Record<string, string> | undefined): Observed | undefined {
  const readiness = annotations?.[LAST_READINESS_ANNOTATION];
  if (readiness !== 'ready' && readiness !== 'not-ready') return undefined;
  const endpoints = (annotations?.[READY_ENDPOINTS_ANNOTATION] ?? '').split(',').filter((e) => e !== '').sort();
  return { readiness, endpoints };
}
