// Time as the API server stores it, and the kubelet's durations under a time scale.
//
// The simulation keeps every instant as epoch milliseconds and formats only at
// the edge. Formatting matters: metav1.Time is stored with second precision, so
// a status built with milliseconds would never compare equal to what was read
// back; metav1.MicroTime (Lease renewTime) must have exactly six fraction digits
// or the API server refuses it.

/** metav1.Time: RFC 3339, whole seconds. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** metav1.MicroTime: RFC 3339 with exactly six fraction digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

/**
 * Epoch milliseconds of a timestamp read from the API. Objects from a list call
 * are deserialised by the client (Date); objects from a watch are raw JSON
 * (string). Both reach the same informer cache, so accept both.
 */
export function toMs(value: unknown): number | undefined {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'string' && value !== '') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

/** A kubelet duration in seconds, in real milliseconds under `timeScale`. */
export function scaledMs(seconds: number, timeScale: number): number {
  return Math.round(seconds * 1000 * timeScale);
}

/**
 * Go's time.Duration.String() for a whole number of milliseconds ("10s",
 * "5m0s", "1.5s", "500ms"), so back-off messages read like the kubelet's even
 * when scaled down.
 */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = (ms % 60_000) / 1000;
  const s = `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, '')}s`;
  if (hours > 0) return `${hours}h${minutes}m${s}`;
  if (minutes > 0) return `${minutes}m${s}`;
  return s;
}
