// A history as it reads when a local activity's answer and the code after it
// fall in two workflow tasks: the first task ends with the local activity's
// marker alone, and the commands the code made after the answer are the next
// task's. Core records a history so when the answer comes as the task is being
// completed (seen under load); a replay then runs that code in the first task.
// Used to prove that a workflow's code asks for its patches where such a
// history still replays (src/workflows/patches.ts).

/** One event of a history in the JSON form `temporal workflow show -o json` prints. */
export type HistoryEvent = Record<string, unknown> & { eventId: string; eventType: string };
type Event = HistoryEvent;

const WFT = ['EVENT_TYPE_WORKFLOW_TASK_SCHEDULED', 'EVENT_TYPE_WORKFLOW_TASK_STARTED', 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED'] as const;

const attributesOf = (e: Event): Record<string, unknown> => {
  const key = Object.keys(e).find((k) => k.endsWith('EventAttributes'));
  return key ? (e[key] as Record<string, unknown>) : {};
};

/**
 * The history with its first local activity's marker ending its workflow task:
 * the commands recorded after the marker in the same task move to a task of
 * their own (three events inserted, every later event id and reference moved
 * on). Undefined when there is no such marker or nothing follows it in its task.
 */
export function splitAfterFirstLocalActivity(json: { events: Event[] }): { events: Event[] } | undefined {
  const events = structuredClone(json.events);
  const at = events.findIndex((e) => e.eventType === 'EVENT_TYPE_MARKER_RECORDED' && attributesOf(e).markerName === 'core_local_activity');
  if (at < 0) return undefined;
  const completedBy = String(attributesOf(events[at]!).workflowTaskCompletedEventId);
  const markerId = Number(events[at]!.eventId);
  let end = at + 1;
  while (end < events.length && String(attributesOf(events[end]!).workflowTaskCompletedEventId) === completedBy) end++;
  if (end === at + 1) return undefined;
  const shift = (id: unknown) => (Number(id) > markerId ? String(Number(id) + 3) : id);
  for (const e of events.slice(at + 1)) {
    e.eventId = String(shift(e.eventId));
    const attrs = attributesOf(e);
    for (const k of Object.keys(attrs)) if (k.endsWith('EventId')) attrs[k] = shift(attrs[k]);
  }
  const scheduled = events.slice(0, at).reverse().find((e) => e.eventType === WFT[0])!;
  const time = String(events[at]!.eventTime);
  const [s, st, c] = [markerId + 1, markerId + 2, markerId + 3].map(String) as [string, string, string];
  const inserted: Event[] = [
    { eventId: s, eventTime: time, eventType: WFT[0], workflowTaskScheduledEventAttributes: { ...attributesOf(scheduled) } },
    { eventId: st, eventTime: time, eventType: WFT[1], workflowTaskStartedEventAttributes: { scheduledEventId: s, identity: 'split', requestId: 'split' } },
    { eventId: c, eventTime: time, eventType: WFT[2], workflowTaskCompletedEventAttributes: { scheduledEventId: s, startedEventId: st, identity: 'split' } },
  ];
  for (const e of events.slice(at + 1, end)) attributesOf(e).workflowTaskCompletedEventId = c;
  events.splice(at + 1, 0, ...inserted);
  return { events };
}

/** The ids of the patches a history's markers record, in order. */
export function patchesOf(json: { events: Event[] }): string[] {
  const ids: string[] = [];
  for (const e of json.events) {
    const attrs = attributesOf(e);
    if (e.eventType !== 'EVENT_TYPE_MARKER_RECORDED' || attrs.markerName !== 'core_patch') continue;
    const data = (attrs.details as Record<string, { payloads?: { data?: string }[] }> | undefined)?.['patch-data']?.payloads?.[0]?.data;
    const id = data ? (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { id?: unknown }).id : undefined;
    if (typeof id === 'string') ids.push(id);
  }
  return ids;
}
