// What a destructive activity asks right before it writes: may this capability act now? The
// worker's PauseState (src/safety/pause.ts) answers from the durable pause (`tend pause`), failing
// closed when it cannot confirm the state. Activities built without a gate (tests of the
// activities alone) act as before.
import { describeCheck, type PauseCheck } from '../safety/pause.ts';
import type { PausableCapability } from '../safety/messages.ts';

export interface PauseGate {
  check(capability: PausableCapability): PauseCheck;
}

/** Why `capability` must not write now (paused, or the pause state unknown), or undefined when it may. */
export function pauseHold(gate: PauseGate | undefined, capability: PausableCapability): string | undefined {
  if (!gate) return undefined;
  const c = gate.check(capability);
  return c.state === 'acting' ? undefined : `${capability}: ${describeCheck(c)}`;
}
