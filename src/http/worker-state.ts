// The worker's health check from the SDK Worker's state.
import type { CheckState } from './health.ts';

/**
 * INITIALIZED: created, not polling yet. RUNNING: polling. STOPPING, DRAINING,
 * DRAINED: shutting down (alive, no longer ready). STOPPED, FAILED: its loop
 * has ended.
 */
export function workerCheckOf(state: string): CheckState {
  switch (state) {
    case 'RUNNING':
      return { alive: true, ready: true };
    case 'INITIALIZED':
      return { alive: true, ready: false, reason: 'created, not polling yet' };
    case 'STOPPING':
    case 'DRAINING':
    case 'DRAINED':
      return { alive: true, ready: false, reason: `shutting down (${state})` };
    case 'STOPPED':
      return { alive: false, ready: false, reason: 'stopped' };
    case 'FAILED':
      return { alive: false, ready: false, reason: 'failed' };
    default:
      return { alive: true, ready: false, reason: `state ${state}` };
  }
}
