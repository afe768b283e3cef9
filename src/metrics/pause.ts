// tend_paused and tend_paused_since_timestamp_seconds from one read of the
// durable pause (src/safety/pause.ts calls this after each good read). The
// shape is the part of tend-safety's state they need, so that this layer
// needs nothing from src/safety/.
import { pausedGauge, pausedSince } from './registry.ts';

export interface PauseSnapshot {
  capabilities: Readonly<Record<string, { paused: boolean; since?: string } | undefined>>;
}

/** Sets both gauges for each of `capabilities`; `state` undefined: no tend-safety workflow runs, nothing is paused. */
export function notePauseState(capabilities: readonly string[], state: PauseSnapshot | undefined): void {
  for (const capability of capabilities) {
    const p = state?.capabilities[capability];
    pausedGauge.set({ capability }, p?.paused ? 1 : 0);
    // A pause with no readable start (a state written before `since` was kept) shows no time rather than a made-up one.
    const since = p?.paused && p.since !== undefined ? Date.parse(p.since) : NaN;
    if (Number.isFinite(since)) pausedSince.set({ capability }, since / 1000);
    else pausedSince.remove({ capability });
  }
}
