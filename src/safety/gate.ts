// The two switches a destructive write asks right before it is made
// (docs/safety.md): the capability's mode (act or observe, src/safety/modes.ts)
// and the durable pause (src/safety/pause.ts). What a hold is, and how a write
// waits one out in place; the activities (src/activities/safety-gate.ts) record
// what observe mode replaces. Observe is asked first: it never writes, so a
// pause has nothing to stop.
import type { Mode, ModeCapability } from '../config/mode.ts';
import type { PausableCapability } from './messages.ts';
import { describeCheck, type PauseCheck } from './pause.ts';

export interface PauseGate {
  check(capability: PausableCapability): PauseCheck;
}

export interface ModeGate {
  mode(capability: ModeCapability): Mode;
}

export interface SafetyGates {
  pause?: PauseGate;
  modes?: ModeGate;
}

/** Why a write must not happen now: observe mode (record it instead), or paused (hold it and retry). */
export type WriteHold = { kind: 'observe'; message: string } | { kind: 'paused'; message: string };

/** What stops `capability` from writing now, or undefined when it may write. */
export function writeHold(gates: SafetyGates | undefined, capability: PausableCapability): WriteHold | undefined {
  if (gates?.modes?.mode(capability) === 'observe') return { kind: 'observe', message: `${capability} is in observe mode: recorded, not done` };
  const held = pauseHold(gates?.pause, capability);
  return held === undefined ? undefined : { kind: 'paused', message: held };
}

/** While a write waits in place for the gates, they are asked again this often: the pause is honoured within a second. */
export const GATE_POLL_MS = 250;

/**
 * Waits in place while `waitsFor` says a hold of `capability` is worth waiting out (the pause;
 * for a weeder deletion observe mode too), asking again every GATE_POLL_MS, until `until`
 * (epoch ms) at the latest. `sleep` is the caller's (cancellable) sleep; `onWait` is told the
 * first hold waited for, once. Returns the gates' answer at the end: undefined when the write may go.
 */
export async function waitForGates(
  gates: SafetyGates | undefined, capability: PausableCapability, until: number,
  opts: { waitsFor: (hold: WriteHold) => boolean; sleep: (ms: number) => Promise<unknown>; onWait?: (hold: WriteHold) => void },
): Promise<WriteHold | undefined> {
  for (let told = false; ;) {
    const hold = writeHold(gates, capability);
    if (!hold || !opts.waitsFor(hold) || Date.now() >= until) return hold;
    if (!told) opts.onWait?.(hold);
    told = true;
    await opts.sleep(Math.max(1, Math.min(GATE_POLL_MS, until - Date.now())));
  }
}

/** Why `capability` must not write now (paused, or the pause state unknown), or undefined when it may. */
export function pauseHold(gate: PauseGate | undefined, capability: PausableCapability): string | undefined {
  if (!gate) return undefined;
  const c = gate.check(capability);
  return c.state === 'acting' ? undefined : `${capability}: ${describeCheck(c)}`;
}
