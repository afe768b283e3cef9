// A repair queue entry, as CKE's RepairQueueEntry (docs/repair.md in CKE):
// the same fields and JSON names, so `tend repair-queue list` prints what
// `ckecli repair-queue list` prints. Pure: imported by workflow code.
import { preview } from '../checks/preview.ts';

/**
 * queued -> processing -> succeeded | failed. An entry stays until deleted.
 * Transitions: the queue starts a queued entry (processing) when a slot is
 * free and no other entry for its address is unfinished; the entry's
 * workflow ends it succeeded (healthy, success_command ok) or failed
 * (repair_command or success_command failed, every step watched in vain, no
 * procedure for it any more).
 */
export const repairStatuses = ['queued', 'processing', 'succeeded', 'failed'] as const;
export type RepairStatus = (typeof repairStatuses)[number];

/**
 * Within a step: waiting (for the queue to be enabled, for a drain back-off
 * to expire), draining (cordoned, pods going), watching (the repair command
 * ran; the health check is polled until watch_seconds pass).
 */
export const repairStepStatuses = ['waiting', 'draining', 'watching'] as const;
export type RepairStepStatus = (typeof repairStepStatuses)[number];

export interface RepairQueueEntry {
  /** CKE formats the index as a string in JSON (`json:"index,string"`). */
  index: string;
  address: string;
  nodename: string;
  machine_type: string;
  operation: string;
  serial?: string;
  status: RepairStatus;
  step: number;
  step_status: RepairStepStatus;
  /** RFC 3339; changes when status, step or step_status changes. */
  last_transition_time?: string;
  drain_backoff_count: number;
  /** RFC 3339; zero time when no back-off is pending. */
  drain_backoff_expire: string;
  /**
   * CKE's `deleted`: true while a deleted entry's workflow cleans up (lifts
   * its cordon); it then leaves the list. Set on what `list` shows only.
   */
  deleted?: boolean;
}

export const ZERO_TIME = '0001-01-01T00:00:00Z';

/** A time as Go's encoding/json writes a time.Time (RFC 3339, no trailing zeros in the fraction). */
export function goTime(t: string | undefined): string {
  if (!t) return ZERO_TIME;
  return t.replace(/\.(\d*?)0*(Z|[+-]\d{2}:\d{2})$/, (_m, frac: string, zone: string) => (frac ? `.${frac}${zone}` : zone));
}

/**
 * An entry as ckecli prints it: CKE's RepairQueueEntry fields in its order, `serial` and
 * `drain_backoff_count` left out when empty (omitempty), times as Go writes them.
 */
export function ckeEntryJson(e: RepairQueueEntry): Record<string, unknown> {
  return {
    index: e.index, address: e.address, nodename: e.nodename,
    ...(e.serial ? { serial: e.serial } : {}),
    machine_type: e.machine_type, operation: e.operation, status: e.status, step: e.step, step_status: e.step_status,
    deleted: e.deleted ?? false,
    last_transition_time: goTime(e.last_transition_time),
    ...(e.drain_backoff_count ? { drain_backoff_count: e.drain_backoff_count } : {}),
    drain_backoff_expire: goTime(e.drain_backoff_expire),
  };
}

/** `ckecli repair-queue list`'s output: Go's json.Encoder with a 4-space indent; `null` for no entries (a nil slice). */
export function ckeListJson(entries: readonly RepairQueueEntry[]): string {
  return JSON.stringify(entries.length === 0 ? null : entries.map(ckeEntryJson), null, 4);
}

export function isFinished(e: Pick<RepairQueueEntry, 'status'>): boolean {
  return e.status === 'succeeded' || e.status === 'failed';
}

export interface RepairRequest {
  operation: string;
  machine_type: string;
  address: string;
  serial?: string;
}

const ipv4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const hex16 = /^[0-9A-Fa-f]{1,4}$/;

/** RFC 4291 text form: eight groups, one `::`, an IPv4 tail. No zone (`%eth0`): it is not an address of a machine. */
function isIPv6(address: string): boolean {
  let s = address;
  const tail = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (tail) {
    if (!ipv4.test(tail[2]!)) return false;
    s = `${tail[1]}0:0`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return false;
  const groups = (x: string) => (x === '' ? [] : x.split(':'));
  if (halves.length === 2) {
    const all = [...groups(halves[0]!), ...groups(halves[1]!)];
    return all.length <= 7 && all.every((g) => hex16.test(g));
  }
  const all = s.split(':');
  return all.length === 8 && all.every((g) => hex16.test(g));
}
const hostname = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

/** The longest address (a DNS name's 253 characters) and serial an entry may carry. */
export const ADDRESS_MAX = 253;
export const SERIAL_MAX = 128;

/**
 * Why an address cannot be repaired, or undefined. The address becomes the
 * last argument of operator commands, so only an IP address or a DNS name is
 * accepted: no shell metacharacters, no option-like leading dash.
 */
export function addressProblem(address: string): string | undefined {
  if (address === '') return 'address is empty';
  if (address.length > ADDRESS_MAX) return `address ${preview(address, 40)} is ${address.length} characters long, past the most an address may have (${ADDRESS_MAX}, a DNS name's)`;
  if (ipv4.test(address)) return undefined;
  if (address.includes(':')) return isIPv6(address) ? undefined : `address ${preview(address, 80)} is not a valid IPv6 address`;
  if (/^[\d.]+$/.test(address)) return `address ${preview(address, 80)} is not a valid IPv4 address`;
  if (hostname.test(address)) return undefined;
  return `address ${preview(address, 80)} is not an IP address or a DNS name (letters, digits, "-" and "." only)`;
}

/** Serial numbers are labels for people: printable, no shell metacharacters either. */
export function serialProblem(serial: string | undefined): string | undefined {
  if (serial === undefined) return undefined;
  if (serial.length > SERIAL_MAX) return `serial ${preview(serial, 40)} is ${serial.length} characters long, past the most a serial may have (${SERIAL_MAX})`;
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(serial) ? undefined : `serial ${preview(serial, 80)} must be letters, digits, ".", "_" or "-"`;
}
