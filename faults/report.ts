// The fault run's record of its rounds, the seeded random numbers that chose
// them, and the table printed at the end.
import type { Violation } from './invariants.ts';

export const CAPABILITIES = ['weeder', 'taint', 'repair', 'apps'] as const;
export type Capability = (typeof CAPABILITIES)[number];

export const FAULT_KINDS = ['kill-worker', 'kill-watcher', 'restart-temporal', 'restart-apiserver', 'drop-watches', 'api-error'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRecord {
  kind: FaultKind;
  /** Milliseconds after the round's action began. */
  atMs: number;
  /** Whether it happened: an armed API error may find no matching write before the round ends. */
  injected: boolean;
  detail: string;
}

export interface RoundRecord {
  capability: Capability;
  round: number;
  fault?: FaultRecord;
  violations: Violation[];
  notes: string[];
  durationMs: number;
  /** The round could not be driven to its end (the scenario itself failed): a violation too. */
  error?: string;
}

/** A small seeded generator (mulberry32): the same seed, the same rounds. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The fault of each round: every kind once, in a shuffled order, then again,
 * so that a few rounds already cover every kind.
 */
export function faultPlan(rounds: number, kinds: readonly FaultKind[], random: () => number): FaultKind[] {
  const plan: FaultKind[] = [];
  while (plan.length < rounds) {
    const deck = [...kinds];
    for (let i = deck.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [deck[i], deck[j]] = [deck[j]!, deck[i]!];
    }
    plan.push(...deck);
  }
  return plan.slice(0, rounds);
}

export interface Summary {
  capability: Capability;
  rounds: number;
  faults: Partial<Record<FaultKind | 'api-error (not triggered)', number>>;
  violations: number;
}

export function summarize(records: RoundRecord[]): Summary[] {
  const out: Summary[] = [];
  for (const capability of CAPABILITIES) {
    const mine = records.filter((r) => r.capability === capability);
    if (!mine.length) continue;
    const faults: Summary['faults'] = {};
    for (const r of mine) {
      if (!r.fault) continue;
      const key = r.fault.injected ? r.fault.kind : `${r.fault.kind} (not triggered)` as const;
      faults[key as keyof Summary['faults']] = (faults[key as keyof Summary['faults']] ?? 0) + 1;
    }
    out.push({ capability, rounds: mine.length, faults, violations: mine.reduce((n, r) => n + r.violations.length + (r.error ? 1 : 0), 0) });
  }
  return out;
}

/** The table, then every violation with its round, fault and details. */
export function formatReport(records: RoundRecord[], seed: number): string {
  const rows = summarize(records).map((s) => [
    s.capability, String(s.rounds),
    Object.entries(s.faults).map(([k, n]) => `${k} ${n}`).join(', ') || '-',
    String(s.violations),
  ]);
  const head = ['CAPABILITY', 'ROUNDS', 'FAULTS INJECTED', 'VIOLATIONS'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const lines = [`fault run, seed ${seed}`, line(head), ...rows.map(line)];
  const bad = records.filter((r) => r.violations.length || r.error);
  if (bad.length) {
    lines.push('', 'VIOLATIONS');
    for (const r of bad) {
      const fault = r.fault ? `${r.fault.kind}${r.fault.injected ? '' : ' (not triggered)'} at +${(r.fault.atMs / 1000).toFixed(1)} s: ${r.fault.detail}` : 'no fault';
      lines.push(`- ${r.capability} round ${r.round} (${fault})`);
      for (const v of r.violations) lines.push(`    ${v.invariant}: ${v.detail}`);
      if (r.error) lines.push(`    the round did not complete: ${r.error}`);
    }
  } else {
    lines.push('', 'no violations');
  }
  return lines.join('\n');
}
