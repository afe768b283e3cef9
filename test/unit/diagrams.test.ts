// The diagrams in the docs (Mermaid, rendered by the code hosts) drawn from the code: each state
// diagram's states are exactly the states the code has, read from the code's own lists, so that a
// state added, renamed or dropped on one side fails here until the other follows. The architecture
// diagram in README.md connects the parts as they talk.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { podStates } from '../../src/taint/messages.ts';
import { repairStatuses, repairStepStatuses } from '../../src/repair/entry.ts';
import { windowStates } from '../../src/weeder/window.ts';
import { nodeRepairPhases } from '../../src/noderepair/messages.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The Mermaid blocks of a page whose first line is `kind`. */
function diagrams(page: string, kind: string): string[][] {
  const text = readFileSync(join(repoRoot, page), 'utf8');
  const out: string[][] = [];
  for (const m of text.matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)) {
    const lines = m[1].split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('%%'));
    if (lines[0] === kind) out.push(lines.slice(1));
  }
  return out;
}

function onlyDiagram(page: string, kind: string): string[] {
  const found = diagrams(page, kind);
  assert.equal(found.length, 1, `${page} has ${found.length} ${kind} diagrams, not one`);
  return found[0];
}

interface StateDiagram {
  /** Every state, by the composite state it is drawn in ('' for the top level). */
  states: Map<string, Set<string>>;
}

/** The states of a `stateDiagram-v2`: ends of transitions, `state X {` blocks, `state "..." as X`, `X: description`. */
function statesOf(lines: string[]): StateDiagram {
  const states = new Map<string, Set<string>>([['', new Set()]]);
  const within: string[] = [''];
  const add = (name: string) => {
    if (name !== '[*]') states.get(within.at(-1)!)!.add(name);
  };
  for (const line of lines) {
    if (line === '}') {
      assert.ok(within.length > 1, `a } closes no state: ${line}`);
      within.pop();
      continue;
    }
    const block = /^state\s+(\S+)\s*\{$/.exec(line);
    if (block) {
      add(block[1]);
      within.push(block[1]);
      states.set(block[1], states.get(block[1]) ?? new Set());
      continue;
    }
    const transition = /^(\S+)\s*-->\s*([^\s:]+)\s*(?::.*)?$/.exec(line);
    if (transition) {
      add(transition[1]);
      add(transition[2]);
      continue;
    }
    const alias = /^state\s+"[^"]*"\s+as\s+(\S+)$/.exec(line) ?? /^([A-Za-z_][\w-]*)\s*:/.exec(line);
    if (alias) {
      add(alias[1]);
      continue;
    }
    if (/^(direction|note|classDef|class)\b/.test(line) || line === 'end note') continue;
    assert.fail(`a line the test does not read: ${line}`);
  }
  assert.equal(within.length, 1, 'a state block is not closed');
  return { states };
}

const sorted = (names: Iterable<string>) => [...names].sort();

describe('the diagrams in the docs', () => {
  it('a weeder window (docs/weeder.md) has the states of windowStates', () => {
    const { states } = statesOf(onlyDiagram('docs/weeder.md', 'stateDiagram-v2'));
    assert.deepEqual(sorted(states.get('')!), sorted(windowStates));
    assert.equal(states.size, 1, 'a window has no composite state');
  });

  it('a pod on a tainted node (docs/taint.md) has the states of podStates', () => {
    const { states } = statesOf(onlyDiagram('docs/taint.md', 'stateDiagram-v2'));
    assert.deepEqual(sorted(states.get('')!), sorted(podStates));
    assert.equal(states.size, 1, 'a pod has no composite state');
  });

  it("a repair entry (docs/repair.md) has CKE's statuses, and the step statuses inside processing", () => {
    const { states } = statesOf(onlyDiagram('docs/repair.md', 'stateDiagram-v2'));
    assert.deepEqual(sorted(states.get('')!), sorted(repairStatuses));
    assert.deepEqual(sorted(states.get('processing') ?? []), sorted(repairStepStatuses));
    assert.deepEqual(sorted(states.keys()), ['', 'processing']);
  });

  it("a Node's countdown (docs/node-repair.md) has the phases of nodeRepairPhases", () => {
    const { states } = statesOf(onlyDiagram('docs/node-repair.md', 'stateDiagram-v2'));
    assert.deepEqual(sorted(states.get('')!), sorted(nodeRepairPhases));
    assert.equal(states.size, 1, 'a countdown has no composite state');
  });

  it('the architecture (README.md) connects the watcher, Temporal, the worker and Kubernetes as they talk', () => {
    const lines = onlyDiagram('README.md', 'flowchart LR');
    const labels = new Map<string, string>();
    const edges = new Set<string>();
    for (const line of lines) {
      const node = /^(\w+)\["([^"]+)"\]$/.exec(line);
      if (node) labels.set(node[1], node[2]);
      const edge = /^(\w+)\s*-->\|"[^"]*"\|\s*(\w+)$/.exec(line);
      if (edge) edges.add(`${edge[1]} -> ${edge[2]}`);
      assert.ok(node || edge, `a line the test does not read: ${line}`);
    }
    const id = (label: string) => [...labels].find(([, l]) => l === label)?.[0] ?? assert.fail(`no node ${label}`);
    const [kube, watcher, temporal, worker] = ['Kubernetes API server', 'tend watcher', 'Temporal', 'tend worker'].map(id);
    for (const [from, to] of [[kube, watcher], [watcher, temporal], [temporal, worker], [worker, kube]]) {
      assert.ok(edges.has(`${from} -> ${to}`), `no arrow from ${labels.get(from)} to ${labels.get(to)}`);
    }
    assert.ok(!edges.has(`${watcher} -> ${kube}`), 'the watcher only watches: it writes nothing to Kubernetes');
  });

  it('read what a state diagram draws, and refuse a line they cannot read', () => {
    const { states } = statesOf(['[*] --> a: start', 'state b {', '[*] --> c', 'c --> d', '}', 'a --> b', 'state "E e" as e', 'f: a description', 'b --> [*]']);
    assert.deepEqual(sorted(states.get('')!), ['a', 'b', 'e', 'f']);
    assert.deepEqual(sorted(states.get('b')!), ['c', 'd']);
    assert.throws(() => statesOf(['a -> b']), /does not read/);
    assert.throws(() => statesOf(['state b {', 'a --> b']), /not closed/);
  });
});
