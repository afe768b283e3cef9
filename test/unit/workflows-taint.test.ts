// What the taint workflows show in the Web UI's Current Details.
import assert from 'node:assert/strict';
import { nodeDetails, slotsDetails } from '../../src/workflows/taint.ts';
import { emptySlots } from '../../src/taint/slots.ts';
import type { NodeTaintData, PodEntry } from '../../src/taint/node.ts';

const pod = (name: string, state: PodEntry['state']): PodEntry => ({ uid: name, namespace: 'ns', name, state, detectedAt: 0, attempts: 0, written: {} });

describe('taint workflows: Current Details', () => {
  it('a node: its taints, its pods by state, what it waits for', () => {
    const d = {
      node: 'sim-1', settings: {} as never, firstSeen: {},
      taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }],
      pods: { a: pod('a', 'Replacing'), b: pod('b', 'Evicting'), c: pod('c', 'Replacing') },
      outbox: { request: ['x'], release: [] },
    } as unknown as NodeTaintData;
    assert.equal(nodeDetails(d, 1, Date.UTC(2030, 0, 1), false), [
      'Node sim-1 carries node.kubernetes.io/unreachable:NoExecute.',
      'Evicting (1): ns/b.',
      'Replacing (2): ns/a, ns/c.',
      'Replacement steps under way: 1.',
      'Slots asked for or granted, not yet used: 1.',
      'Next look: 2030-01-01T00:00:00.000Z.',
    ].join('\n\n'));
  });

  it('a node whose taint has gone, with no pods', () => {
    const d = { node: 'sim-2', settings: {} as never, firstSeen: {}, taints: [], pods: {} } as NodeTaintData;
    assert.equal(nodeDetails(d, 0, undefined, true),
      "Node sim-2: no configured taint left; clearing its pods' conditions.\n\nNo managed pods on it.\n\nA step failed; trying again.");
  });

  it('the coordinator: slots, breaker, queue', () => {
    const s = {
      ...emptySlots(), maxConcurrentReplacements: 2, maxTaintedNodes: '50%', taintedNodes: 2, totalNodes: 3, granted: 5, peakInFlight: 2,
      inFlight: [{ node: 'sim-1', uid: 'a', pod: 'ns/a', requestedAt: 0, grantedAt: 1 }],
      queue: [{ node: 'sim-2', uid: 'b', pod: 'ns/b', requestedAt: 0 }],
    };
    assert.equal(slotsDetails(s, true, false), [
      'Replacements in flight: 1 of 2; waiting for a slot: 1.',
      'Tainted nodes: 2 of 3 (limit 50%): breaker OPEN, no replacement is granted.',
      'In flight: ns/a on sim-1.',
      'Next in the queue: ns/b on sim-2.',
      'Granted since it started: 5; most in flight at once: 2.',
    ].join('\n\n'));
  });
});
